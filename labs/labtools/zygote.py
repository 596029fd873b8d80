"""The warm start: one parent in the sandbox imports once, each notebook is a fresh child.

Started by :class:`labtools.judge` (one per grading worker) as ``python -m labtools.zygote``
in a bubblewrap sandbox (:func:`labtools.sandbox.zygote_command`). It imports what every
lab needs (numpy, matplotlib with Agg, IPython, ipywidgets, the package; BLAS with one
thread), then waits on its control socket (file descriptor 3). It holds nothing secret and
nothing of any student: a request carries only the notebook's limits and user id, and the
pipes of that notebook, which it hands on without reading.

For each request it forks a *keeper*, which enters new mount, pid, network, IPC and host
name namespaces and forks the *agent*, pid 1 of the new pid namespace. The agent, before
any student code runs:

- mounts a fresh ``/proc`` (its own processes only), an empty ``/tmp`` and ``/dev/shm``
  (tmpfs of the notebook's ``tmp`` size), so nothing of an earlier child is there;
- leaves root for the notebook's user id (which clears every capability), joins a fresh
  session keyring, takes the notebook's limits (memory, processes, CPU, files) and the
  seccomp filter of the cold sandbox (:mod:`labtools.seccomp`), dies with its keeper;
- keeps only its pipes (requests 3, answers 4, output 1 and 2) and runs
  :func:`labtools.agent.main`.

The keeper sends the grader a pidfd of the agent (signals for interrupts and the kill),
then waits: when the grader closes the notebook's *lifeline* pipe (or dies), it kills the
agent, and with it, as pid 1, every process of the notebook; once it has reaped the
agent, it closes its reply socket, which tells the grader that nothing of the notebook
is left. A child cannot see the parent
or another notebook's processes (pid namespace), cannot signal or trace them (another user
id, no capabilities, seccomp), and finds nothing left by the one before (fresh ``/tmp``,
``/dev/shm``, IPC and network; every other folder is read-only or not writable by it).

This needs the grader to run as root (the parent keeps ``CAP_SYS_ADMIN``, ``CAP_SETUID``
and ``CAP_SETGID``, the rights bubblewrap gives the cold sandbox's ``setpriv``); as an
ordinary user the cold sandbox is used (:func:`labtools.sandbox.warm_available`).
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
SECCOMP_MODE_FILTER = 2
KEYCTL_JOIN_SESSION_KEYRING = 1
SYS_KEYCTL = 250  # x86-64, the only machine the seccomp filter is written for

libc = ctypes.CDLL(None, use_errno=True)


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


def prepare() -> None:
    """Import what every notebook needs, once; the parent then holds those modules only. (No
    font is opened here, nor any file: a child's agent closes or reuses every descriptor
    above its pipes, and a font's open file would be one of them.)"""
    from labtools import agent

    agent.warm_matplotlib_cache()
    from labtools import reach, seccomp, wire  # noqa: F401

    reach.preload()  # the modules every notebook needs (a cold agent imports the same)
    reach.snapshot()  # what the modules hold, read once for every child (labtools.reach)

    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # its memory is nobody's to read
    if threading.active_count() != 1 or len(os.listdir("/proc/self/task")) != 1:
        raise RuntimeError("the warm parent must be single-threaded when it forks")


def _seccomp() -> None:
    from labtools import seccomp

    program = seccomp.program()
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _Fprog(len(program) // 8, ctypes.addressof(buffer))
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    _check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0), "seccomp")


def _agent(job: dict, requests: int, answers: int, output: int) -> None:
    """pid 1 of the notebook's namespaces: a clean room, then the student's agent."""
    size = f"size={job['tmp']},mode=1777"
    _check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "private mounts")
    _mount("proc", "/proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    _fresh_tmp(size)
    if os.path.isdir("/dev/shm"):
        _mount("tmpfs", "/dev/shm", MS_NOSUID | MS_NODEV, size)
    uid = job["uid"]
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)  # from root to another uid: every capability is gone
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
    null = os.open(os.devnull, os.O_RDONLY)
    high = [os.dup(fd) for fd in (requests, answers, output, null)]
    for target, fd in zip((3, 4, 1, 0), high, strict=True):
        os.dup2(fd, target)
    os.dup2(1, 2)
    os.closerange(5, 1 << 16)  # the control socket, the keeper's ends: none stay
    os.chdir("/tmp")
    for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    _seccomp()
    import numpy

    numpy.random.seed()  # noqa: NPY002 - the global generator a student may use, reseeded
    from labtools import agent

    agent.AGENT = os.getpid()
    sys.argv[:] = [agent.__file__]  # as the cold start's python -m labtools.agent has it
    agent.main()


def _keeper(job: dict, fds: list[int]) -> None:
    """The notebook's keeper: starts the agent, hands the grader a pidfd of it, and kills
    it when the grader closes the lifeline."""
    reply, requests, answers, output, lifeline = fds
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
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
                print(f"labtools.zygote: a keeper failed: {error!r}", file=sys.stderr)
            finally:
                os._exit(code)
        for fd in fds:
            os.close(fd)


if __name__ == "__main__":
    serve()
