"""Where every notebook starts: one parent in the sandbox imports once, each notebook is a
fresh child of it.

Started by the grader (:class:`labtools.grader.start.Zygote`) as
``python -m labtools.inside.zygote`` in a bubblewrap sandbox
(:func:`labtools.grader.bwrap.zygote_command`), whose Python environment holds only what a lab
may use (numpy, matplotlib, IPython, ipywidgets, the standard library) and the lab's own
copy of the package (the functions the lab closes are not in it: :mod:`labtools.grader.closed`).
It imports what every notebook needs (numpy, matplotlib with Agg, IPython, ipywidgets, the
package; BLAS with one thread), then waits on its control socket (file descriptor 3). It
holds nothing secret and nothing of any student: a request carries only the notebook's
limits and user id, and the pipes of that notebook, which it hands on without reading.

The warm start keeps one such parent per grading worker and lab; the cold start
(``--cold``) starts one for a single notebook. The notebook's process is made the same way
in both, by the same code, so that nothing a notebook can observe tells the two apart.

For each request it forks a *keeper*, which enters new mount, pid, network, IPC and host
name namespaces and forks the *agent*, pid 1 of the new pid namespace. The agent, before
any student code runs:

- mounts a fresh ``/proc`` (its own processes only), an empty ``/tmp`` and ``/dev/shm``
  (tmpfs of the notebook's ``tmp`` size), so nothing of an earlier child is there;
- leaves root for the notebook's user id, drops every capability, joins a fresh session
  keyring, takes the notebook's limits (memory, processes, CPU, files) and the seccomp
  filter (:mod:`labtools.inside.seccomp`), dies with its keeper;
- keeps only its pipes (requests 3, answers 4, output 1 and 2) and runs
  :func:`labtools.inside.agent.main`.

The keeper sends the grader a pidfd of the agent (signals for interrupts and the kill),
then waits: when the grader closes the notebook's *lifeline* pipe (or dies), it kills the
agent, and with it, as pid 1, every process of the notebook; once it has reaped the
agent, it closes its reply socket, which tells the grader that nothing of the notebook
is left. A child cannot see the parent or another notebook's processes (pid namespace),
cannot signal or trace them (another user id or no capabilities, seccomp), and finds nothing
left by the one before (fresh ``/tmp``, ``/dev/shm``, IPC and network; every other folder is
read-only or not writable by it).

Where the grader runs as root, the parent keeps ``CAP_SYS_ADMIN``, ``CAP_SETUID`` and
``CAP_SETGID`` and each notebook gets a user id of its own; as an ordinary user, bubblewrap
gives it the same rights inside a user namespace, where the notebook keeps the one user id
there is (nobody) and drops every capability.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import resource
import select
import signal
import socket
import sys
import threading

CONTROL = 3
CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND = 1, 2, 4, 8, 32, 4096
MS_REC, MS_PRIVATE = 0x4000, 0x40000
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_SECCOMP, PR_SET_NO_NEW_PRIVS = 1, 4, 22, 38
PR_CAPBSET_DROP = 24
SECCOMP_MODE_FILTER = 2
KEYCTL_JOIN_SESSION_KEYRING = 1
SYS_KEYCTL, SYS_CAPSET = 250, 126  # x86-64, the only machine the seccomp filter knows

libc = ctypes.CDLL(None, use_errno=True)
# `grade --unsafe` on a machine without bubblewrap: the same start and protocol, without the
# clean room (no namespaces, mounts, user id, filter): the student's code has the grader's rights
UNSAFE = os.environ.get("LABTOOLS_UNSAFE") == "1"


class _Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(kind: str, target: str, flags: int, options: str | None = None) -> None:
    data = options.encode() if options else None
    _check(libc.mount(kind.encode(), target.encode(), kind.encode(), flags, data), target)


def _mount_points_under(top: str) -> list[str]:
    """The mount points below ``top`` in this mount namespace, parents first."""
    points = []
    with open("/proc/self/mountinfo") as info:
        for line in info:
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), line.split()[4])
            if point.startswith(top + "/"):
                points.append(point)
    return sorted(set(points), key=lambda p: p.count("/"))


def _fresh_tmp(size: str) -> None:
    """An empty tmpfs on /tmp that keeps what the sandbox bound below /tmp (a checkout or
    an environment under /tmp), bound again read-only from the tmpfs it covers."""
    kept = _mount_points_under("/tmp")
    old = os.open("/tmp", os.O_PATH | os.O_DIRECTORY)
    _mount("tmpfs", "/tmp", MS_NOSUID | MS_NODEV, size)
    for point in kept:
        source = f"/proc/self/fd/{old}/{os.path.relpath(point, '/tmp')}"
        if os.path.isdir(source):
            os.makedirs(point, mode=0o755, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(point), mode=0o755, exist_ok=True)
            open(point, "a").close()  # noqa: SIM115 - a file to bind a file on
        _check(libc.mount(source.encode(), point.encode(), None, MS_BIND, None), point)
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV
        _check(libc.mount(None, point.encode(), None, flags, None), point)
    os.close(old)


PRELOAD = (
    "numpy",
    "numpy.linalg",
    "matplotlib.pyplot",
    "IPython.core.interactiveshell",
    "ipywidgets",
    "perceptrons",
    "perceptrons.testing",
    "perceptrons.plotting",
    "perceptrons.widgets",
)


def prepare() -> None:
    """Import what every notebook needs, once; the parent then holds those modules only. (No
    font is opened here, nor any file: a child's agent closes or reuses every descriptor
    above its pipes, and a font's open file would be one of them.)"""
    import importlib

    from labtools.inside import agent, protocol, seccomp  # noqa: F401

    agent.warm_matplotlib_cache()
    for name in PRELOAD:
        importlib.import_module(name)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # its memory is nobody's to read
    if threading.active_count() != 1 or len(os.listdir("/proc/self/task")) != 1:
        raise RuntimeError("the warm parent must be single-threaded when it forks")


def _drop_capabilities() -> None:
    """No capability left, in any set, for this process and what it starts (as root, the
    change of user id has cleared them already; in a user namespace it does not)."""
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() == 22:
            break  # EINVAL: past the last capability this kernel knows
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()
    _check(libc.syscall(SYS_CAPSET, header, data), "capset")


def _seccomp() -> None:
    from labtools.inside import seccomp

    program = seccomp.program()
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _Fprog(len(program) // 8, ctypes.addressof(buffer))
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    _check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0), "seccomp")


def _agent(job: dict, requests: int, answers: int, output: int) -> None:
    """pid 1 of the notebook's namespaces: a clean room, then the student's agent."""
    if not UNSAFE:
        _clean_room(job)
    null = os.open(os.devnull, os.O_RDONLY)
    high = [os.dup(fd) for fd in (requests, answers, output, null)]
    for target, fd in zip((3, 4, 1, 0), high, strict=True):
        os.dup2(fd, target)
    os.dup2(1, 2)
    os.closerange(5, 1 << 16)  # the control socket, the keeper's ends: none stay
    if not UNSAFE:
        os.chdir("/tmp")
    for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if not UNSAFE:
        _seccomp()
    import numpy

    numpy.random.seed()  # noqa: NPY002 - the global generator a student may use, reseeded
    from labtools.inside import agent

    sys.argv[:] = [agent.__file__]
    agent.main()


def _clean_room(job: dict) -> None:
    """Fresh /proc, /tmp and /dev/shm; the notebook's user id, no capability, a fresh
    keyring, the notebook's limits."""
    size = f"size={job['tmp']},mode=1777"
    _check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "private mounts")
    _mount("proc", "/proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    _fresh_tmp(size)
    if os.path.isdir("/dev/shm"):
        _mount("tmpfs", "/dev/shm", MS_NOSUID | MS_NODEV, size)
    uid = job["uid"]
    if os.getuid() != uid:  # as root: a user id of its own (in a user namespace: the one)
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)  # from root to another uid: every capability is gone
    _drop_capabilities()  # (and in a user namespace, where the uid stays, here)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # (cleared by the uid change)
    libc.syscall(SYS_KEYCTL, KEYCTL_JOIN_SESSION_KEYRING, None)
    for kind, value in (
        (resource.RLIMIT_AS, job["memory"]),
        (resource.RLIMIT_CPU, job["cpu_seconds"]),
        (resource.RLIMIT_FSIZE, job["file_size"]),
        (resource.RLIMIT_NOFILE, job["open_files"]),
        (resource.RLIMIT_NPROC, job["processes"]),
        (resource.RLIMIT_CORE, 0),
    ):
        resource.setrlimit(kind, (value, value))


def _keeper(job: dict, fds: list[int]) -> None:
    """The notebook's keeper: starts the agent, hands the grader a pidfd of it, and kills
    it when the grader closes the lifeline."""
    reply, requests, answers, output, lifeline = fds
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
    if not UNSAFE:
        _check(libc.unshare(flags), "unshare")
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(reply)
            os.close(lifeline)
            _agent(job, requests, answers, output)
            code = 0
        except BaseException as error:  # noqa: BLE001 - said on the output, then gone
            os.write(output, f"the sandbox did not start: {error!r}\n".encode())
        finally:
            os._exit(code)
    for fd in (requests, answers, output):
        os.close(fd)
    pidfd = os.pidfd_open(pid)
    conn = socket.socket(fileno=reply)  # kept open until the notebook is gone
    socket.send_fds(conn, [b"started"], [pidfd])
    poller = select.poll()
    poller.register(lifeline, select.POLLIN | select.POLLHUP)
    poller.register(pidfd, select.POLLIN)
    while True:
        events = dict(poller.poll())
        if pidfd in events:
            break
        if lifeline in events:  # the grader is done with it (or gone): end it all
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            break
    os.waitpid(pid, 0)  # pid 1 ends last: every process of the notebook is gone
    conn.close()  # which the grader reads as the end of the notebook


def single() -> None:
    """A notebook's own sandbox, as an ordinary user: bubblewrap made its namespaces, /proc
    and /tmp, and installed the seccomp filter; the grader set its limits and keyring.
    Requests on 3, answers on 4, output on 1 and 2."""
    prepare()
    os.closerange(5, 1 << 16)
    from labtools.inside import agent, protocol

    agent.send(protocol.Answer(id="ready"))  # the imports are done: the notebook's time starts
    for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    import numpy

    numpy.random.seed()  # noqa: NPY002 - the global generator a student may use, reseeded
    sys.argv[:] = [agent.__file__]
    agent.main()


def serve() -> None:
    """The parent: a keeper per request on the control socket, until it closes."""
    prepare()
    control = socket.socket(fileno=CONTROL)
    control.send(b"ready")
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # keepers are reaped by the kernel
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, 1 << 16, 8)
        except OSError:
            os._exit(0)
        if not message:
            os._exit(0)
        if len(fds) != 5:
            for fd in fds:
                os.close(fd)
            continue
        job = json.loads(message)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                control.close()
                _keeper(job, fds)
                code = 0
            except BaseException as error:  # noqa: BLE001 - the grader sees no pidfd
                print(f"labtools.inside.zygote: a keeper failed: {error!r}", file=sys.stderr)
            finally:
                os._exit(code)
        for fd in fds:
            os.close(fd)


if __name__ == "__main__":
    single() if os.environ.get("LABTOOLS_SINGLE") == "1" else serve()
