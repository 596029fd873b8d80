"""A sandbox for one student's notebook: bubblewrap, its own user id and namespaces, limits.

:class:`Sandbox` starts ``python -m labtools.agent`` (see :mod:`labtools.agent`) and talks
to it through two pipes. What the sandbox gives the student's code:

- its own pid namespace (it sees and can signal only its own processes; when the agent,
  pid 1 there, ends, the kernel ends everything it started), no network, its own IPC and
  host name;
- a user id that is not the grader's: when the grader runs as root, a user id of its own
  (:func:`sandbox_uid`, above 1 000 000, so each sandbox running at the same time has its
  own and the process limit counts that sandbox alone), with no capabilities; as an
  ordinary user, uid 65534 inside an unprivileged user namespace, which the kernel maps to
  the grader's own uid outside (nothing else is possible without privileges), with no
  further user namespaces;
- a file system built from nothing: the system's ``/usr`` and ``/etc``, the Python
  environment and the package ``perceptrons``, read-only; a private ``/tmp`` of a fixed
  size. The lab sources, the submissions, the course folder and every other file are not
  there;
- limits (:class:`Limits`): address space per process, processes, CPU seconds, file size,
  open files, output, wall-clock time per request and for the whole notebook;
- a fresh, empty session keyring (the grader's keys stay out of reach) and a seccomp
  filter (:func:`seccomp_filter`) that refuses the system calls Docker's default profile
  refuses: the kernel keyring, ptrace and other processes' memory, new namespaces, mounts,
  kernel modules, BPF, perf events, io_uring, clocks and the like.

Two ways to start it, with the same isolation and limits: *cold*, a fresh bubblewrap
sandbox per notebook (:func:`command`); *warm*, a fresh child of a parent that has
imported the libraries once (:class:`Zygote`, :mod:`labtools.zygote`), where the grader
runs as root.

What comes back is read by :func:`labtools.wire.read_frame` and parsed by
:func:`labtools.wire.decode_answer` alone, within the limits of the grader's side.

:func:`available` says whether this machine can start it.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from labtools import seccomp, wire

NOBODY = 65534
FIRST_UID = 1_000_000
LABTOOLS = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Limits:
    """What one notebook may use. Sizes in bytes, times in seconds, texts in characters.

    The sandbox enforces the first group on the student's processes; the grader enforces
    the rest on its own side, where the student cannot change them. An instructor sets any
    of them with ``tasks.py grade ... --limit NAME=VALUE``.
    """

    # the student's processes, in the sandbox
    cell_seconds: float = 60.0  # wall clock for one cell or one call of a student function
    cpu_seconds: int = 900  # CPU time of each process
    memory: int = 2 * 2**30  # address space of each process
    tmp: int = 256 * 2**20  # the private /tmp (a tmpfs, so it is memory too)
    processes: int = 32  # processes and threads the student's code may add
    file_size: int = 64 * 2**20  # largest file it may write
    output: int = 16 * 2**20  # bytes written straight to stdout/stderr before it is stopped
    open_files: int = 256
    # the grader's side
    notebook_seconds: float = 600.0  # wall clock for the whole notebook, tests included
    message: int = 16 * 2**20  # bytes of one answer from the sandbox
    items: int = wire.MAX_ITEMS  # items (list items, dict entries, numbers) in one answer
    depth: int = wire.MAX_DEPTH  # nesting of one answer
    keys: int = 1_000  # entries of one dict in an answer
    decode_seconds: float = 10.0  # to decode one answer
    cell_output: int = 20_000  # characters of output kept per cell (and per message)
    notebook_output: int = 200_000  # characters of output kept for the whole notebook
    cell_source: int = 100_000  # characters of a student's cell kept in the graded notebook
    notebook_source: int = 500_000  # characters of the student's cells kept in all
    grader_memory: int = 4 * 2**30  # address space of the grader's side of one notebook
    grader_seconds: float = 15.0  # its time past notebook_seconds (start-up, tests, render)
    feedback_seconds: float = 60.0  # to write one notebook's feedback page

    def __post_init__(self):
        for name, value in vars(self).items():
            if type(value) not in (int, float) or not value > 0 or not math.isfinite(value):
                raise ValueError(
                    f"the limit `{name}` must be a positive, finite number; got {value!r}"
                )

    def budget(self) -> wire.Budget:
        """What one answer may cost the grader (:func:`labtools.wire.decode_answer`)."""
        return wire.Budget(
            message=self.message,
            items=self.items,
            depth=self.depth,
            keys=self.keys,
            seconds=self.decode_seconds,
            text=self.cell_output,
        )


class SandboxError(Exception):
    """The sandbox stopped, timed out, or broke the protocol; the message says which."""


def available() -> str | None:
    """None when bubblewrap can start a sandbox here; otherwise what is missing."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (`bwrap`, Debian package bubblewrap) is not installed"
    try:
        seccomp.program()
    except seccomp.Unsupported as err:
        return str(err)
    probe = subprocess.run(_bwrap_prefix() + ["--ro-bind", "/", "/", "true"], capture_output=True)
    if probe.returncode != 0:
        reason = probe.stderr.decode(errors="replace").strip()
        return f"bubblewrap cannot create namespaces here ({reason})"
    return None


def sandbox_uid() -> int:
    """The user id the student's code runs as, seen from outside the sandbox: as root, one
    per grading process (a process runs one sandbox at a time); else the grader's own."""
    return FIRST_UID + os.getpid() if os.geteuid() == 0 else os.getuid()


def _bwrap_prefix(warm: bool = False) -> list[str]:
    argv = ["bwrap", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts"]
    argv += ["--unshare-cgroup-try", "--die-with-parent", "--new-session", "--as-pid-1"]
    if os.geteuid() == 0:  # a real switch to nobody, done inside by setpriv (or the zygote)
        argv += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        if warm:  # the zygote makes each notebook's namespaces and mounts
            argv += ["--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_KILL"]
    else:  # unprivileged: a user namespace in which we are nobody
        argv += ["--unshare-user", "--disable-userns", "--uid", str(NOBODY), "--gid", str(NOBODY)]
    return argv


def _python_paths() -> list[Path]:
    """Folders the sandbox's Python needs: its installation, the virtual environment and
    the folders that .pth files add (the editable install of perceptrons)."""
    paths = {Path(sys.base_prefix).resolve(), Path(sys.prefix)}
    paths.add(Path(os.path.realpath(sys.executable)).parent.parent)
    for site in {Path(p) for p in sys.path if p.endswith("site-packages")}:
        for pth in site.glob("*.pth"):
            for line in pth.read_text(errors="replace").splitlines():
                if line and not line.startswith(("#", "import")) and Path(line).is_dir():
                    paths.add(Path(line).resolve())
    system = (Path("/usr"), Path("/etc"))
    return sorted(p for p in paths if p.exists() and not any(p.is_relative_to(s) for s in system))


def command(limits: Limits, mpl_cache: Path | None = None) -> list[str]:
    """The bubblewrap command line that starts the agent."""
    argv = _layout(_bwrap_prefix(), limits.tmp, mpl_cache)
    argv += ["--info-fd", "5", "--seccomp", "6"]
    if os.geteuid() == 0:
        uid = sandbox_uid()
        argv += ["/usr/bin/setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
        argv += ["--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]
    return argv + [sys.executable, "-m", "labtools.agent"]


def zygote_command(mpl_cache: Path | None = None) -> list[str]:
    """The bubblewrap command line that starts the warm parent (:mod:`labtools.zygote`):
    the cold sandbox's file system and environment; it runs as root of the sandbox, with
    the rights to make each notebook's namespaces and to leave root for its user id, and
    each notebook's agent takes the seccomp filter itself."""
    argv = _layout(_bwrap_prefix(warm=True), 16 * 2**20, mpl_cache)
    return argv + [sys.executable, "-m", "labtools.zygote"]


def warm_available() -> str | None:
    """None when the warm start can be used here; otherwise why the cold one is used."""
    if os.geteuid() != 0:
        return "the warm start needs the grader to run as root"
    return available()


def _layout(argv: list[str], tmp: int, mpl_cache: Path | None) -> list[str]:
    """``argv`` (bubblewrap's namespaces) with the sandbox's file system and environment."""
    argv = argv + ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            argv += ["--ro-bind", top, top]
    # the private /tmp first: a checkout or environment under /tmp is bound on top of it
    argv += ["--perms", "01777", "--size", str(tmp), "--tmpfs", "/tmp"]
    binds = [(p, p) for p in _python_paths()]
    binds.append((LABTOOLS, Path("/opt/labtools/labtools")))
    if mpl_cache is not None and mpl_cache.is_dir():
        binds.append((mpl_cache, Path("/opt/mplcache")))
    made = set()
    for _, dest in binds:  # parents world-readable, or nobody could reach the binds
        for parent in reversed(dest.parents[:-1]):
            if parent not in made:
                made.add(parent)
                argv += ["--perms", "0755", "--dir", str(parent)]
    for source, dest in binds:
        argv += ["--ro-bind", str(source), str(dest)]
    argv += ["--proc", "/proc", "--dev", "/dev"]
    argv += ["--chdir", "/tmp"]
    env = {
        "HOME": "/tmp",
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "PYTHONPATH": "/opt/labtools",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": "/tmp/matplotlib",
        "LABTOOLS_MPLCACHE": "/opt/mplcache",
        "IPYTHONDIR": "/tmp/ipython",
        "JUPYTER_PLATFORM_DIRS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "LANG": "C.UTF-8",
    }
    argv += ["--clearenv"]
    for key, value in env.items():
        argv += ["--setenv", key, value]
    return argv


def unsafe_command() -> tuple[list[str], dict]:
    """The agent without a sandbox (``--unsafe``): same protocol and limits, no isolation."""
    env = dict(os.environ, PYTHONPATH=str(LABTOOLS.parent), MPLBACKEND="Agg")
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", PYTHONHASHSEED="0")
    return [sys.executable, "-m", "labtools.agent"], env


def _processes_of(uid: int) -> int:
    count = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                count += entry.stat().st_uid == uid
            except OSError:
                pass
    return count


KEYCTL_JOIN_SESSION_KEYRING = 1
SYS_KEYCTL = {"x86_64": 250}


def _filter_fd() -> int:
    """A file descriptor that holds the seccomp filter, read from its start by bwrap."""
    fd = os.memfd_create("labtools-seccomp", 0)
    os.write(fd, seccomp.program())
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _child_setup(limits: Limits, fds: tuple[int, ...]):
    """Runs in the new process before bubblewrap starts: a fresh, empty session keyring,
    limits, and the pipes (and the seccomp filter) at 3, 4, 5 (and 6)."""
    processes = _processes_of(sandbox_uid()) + limits.processes
    libc = ctypes.CDLL(None, use_errno=True)
    keyctl = SYS_KEYCTL.get(os.uname().machine)

    def setup():
        import fcntl
        import resource

        # an anonymous session keyring of its own, so the grader's keys are not its to find;
        # where keyrings are refused to the grader too (a container), there are none to find,
        # and the seccomp filter refuses keyctl inside the sandbox in any case
        if keyctl is not None:
            libc.syscall(keyctl, KEYCTL_JOIN_SESSION_KEYRING, None)
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 64) for fd in fds]
        for target, fd in zip((3, 4, 5, 6), high, strict=False):
            os.dup2(fd, target)
        for kind, value in (
            (resource.RLIMIT_AS, limits.memory),
            (resource.RLIMIT_CPU, limits.cpu_seconds),
            (resource.RLIMIT_FSIZE, limits.file_size),
            (resource.RLIMIT_NOFILE, limits.open_files),
            (resource.RLIMIT_NPROC, processes),
            (resource.RLIMIT_CORE, 0),
        ):
            resource.setrlimit(kind, (value, value))

    return setup


class Zygote:
    """The warm parent of one grading worker (:mod:`labtools.zygote`), running in its
    bubblewrap sandbox; :class:`Sandbox` asks it for a fresh child per notebook through
    :attr:`control`. It ends when this process does (or when :meth:`close` is called)."""

    def __init__(self, mpl_cache: Path | None = None):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        keyctl = SYS_KEYCTL.get(os.uname().machine)
        libc = ctypes.CDLL(None, use_errno=True)
        control = theirs.fileno()

        def setup():  # a fresh session keyring; the control socket at 3
            import fcntl
            import resource

            signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # bubblewrap waits for its child
            if keyctl is not None:
                libc.syscall(keyctl, KEYCTL_JOIN_SESSION_KEYRING, None)
            os.dup2(fcntl.fcntl(control, fcntl.F_DUPFD, 64), 3)
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

        self.process = subprocess.Popen(
            zygote_command(mpl_cache),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            pass_fds=(3,),
            preexec_fn=setup,
            start_new_session=True,
        )
        theirs.close()
        self.control = ours

    def ready(self, seconds: float = 120) -> bool:
        """Wait until the parent has imported everything (it says so once); False if it
        died or took longer than ``seconds``."""
        self.control.settimeout(seconds)
        try:
            return self.control.recv(16) == b"ready"
        except OSError:
            return False
        finally:
            self.control.settimeout(None)

    def alive(self) -> bool:
        return self.process.poll() is None

    def close(self) -> None:
        end_server(self.process, self.control)


def end_server(process: subprocess.Popen, control: socket.socket) -> None:
    """Close a server's control socket, on which it ends by itself; kill it if it has not
    within five seconds (the judge server and the warm parent)."""
    control.close()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class Sandbox:
    """One running agent. ``with Sandbox(limits) as box: box.request({...})``.

    With ``zygote`` (the control socket of a :class:`Zygote`), the agent is a fresh child
    of that warm parent (the warm start); without it, a fresh bubblewrap sandbox (the
    cold start). If the warm parent does not answer, the cold start is used and
    :attr:`note` says so."""

    def __init__(
        self,
        limits: Limits,
        *,
        unsafe: bool = False,
        mpl_cache: Path | None = None,
        zygote: socket.socket | None = None,
    ):
        self.limits = limits
        self.unsafe = unsafe
        self.mpl_cache = mpl_cache
        self.zygote = None if unsafe else zygote
        self.note: str | None = None  # what the instructor should know about the start
        self.stopped: str | None = None  # why it stopped, once it has
        self.output = bytearray()  # the start of what it wrote to stdout/stderr
        self.output_total = 0
        self.deadline = float("inf")  # the notebook's time is up then (set on entering)
        self.process: subprocess.Popen | None = None
        self._pidfd: int | None = None
        self._lifeline: int | None = None

    def __enter__(self) -> Sandbox:
        self.deadline = time.monotonic() + self.limits.notebook_seconds
        if self.zygote is None or not self._start_warm():
            self._start_cold()
        self._drain = threading.Thread(target=self._read_output, daemon=True)
        self._drain.start()
        return self

    def _start_warm(self) -> bool:
        """Ask the warm parent for a child; False (nothing left open) if it did not start."""
        limits = self.limits
        requests_r, requests_w = os.pipe()
        answers_r, answers_w = os.pipe()
        output_r, output_w = os.pipe()
        lifeline_r, lifeline_w = os.pipe()
        reply, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        uid = sandbox_uid()
        job = {
            "uid": uid,
            "memory": limits.memory,
            "cpu_seconds": limits.cpu_seconds,
            "file_size": limits.file_size,
            "open_files": limits.open_files,
            "processes": _processes_of(uid) + limits.processes,
            "tmp": limits.tmp,
        }
        fds = []
        try:
            sent = [theirs.fileno(), requests_r, answers_w, output_w, lifeline_r]
            socket.send_fds(self.zygote, [json.dumps(job).encode()], sent)
            reply.settimeout(30)
            _, fds, _, _ = socket.recv_fds(reply, 64, 1)
        except OSError:
            pass
        finally:
            theirs.close()
            for fd in (requests_r, answers_w, output_w, lifeline_r):
                os.close(fd)
        if len(fds) != 1:
            reply.close()
            for fd in (*fds, requests_w, answers_r, output_r, lifeline_w):
                os.close(fd)
            self.note = "the warm start did not answer: this notebook ran in a fresh sandbox"
            return False
        self._pidfd, self._lifeline, self._keeper = fds[0], lifeline_w, reply
        self._requests, self._answers = requests_w, answers_r
        self._output_file = open(output_r, "rb")  # noqa: SIM115 - closed in __exit__
        self.agent_pid = None
        return True

    def _start_cold(self) -> None:
        requests_r, self._requests = os.pipe()
        self._answers, answers_w = os.pipe()
        info_r, info_w = os.pipe()
        fds = [requests_r, answers_w, info_w]
        if self.unsafe:
            argv, env = unsafe_command()
        else:
            argv, env = command(self.limits, self.mpl_cache), {}
            fds.append(_filter_fd())
        self.process = subprocess.Popen(
            argv,
            env=env or None,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            pass_fds=tuple(range(3, 3 + len(fds))),
            preexec_fn=_child_setup(self.limits, tuple(fds)),
            start_new_session=True,
        )
        self._output_file = self.process.stdout
        for fd in fds:
            os.close(fd)
        self.agent_pid = self.process.pid
        if not self.unsafe:  # bubblewrap says which pid (outside) the agent has
            try:
                info = wire.read_exactly(info_r, 1, time.monotonic() + 30)
                while not info.rstrip().endswith(b"}"):
                    info += wire.read_exactly(info_r, 1, time.monotonic() + 30)
                self.agent_pid = json.loads(info)["child-pid"]
                self._pidfd = os.pidfd_open(self.agent_pid)
            except (TimeoutError, EOFError, ValueError, KeyError, ProcessLookupError):
                self.stop("the sandbox did not start")
        os.close(info_r)

    def _signal(self, sig: int) -> None:
        try:
            if self._pidfd is not None:  # immune to the pid being reused
                signal.pidfd_send_signal(self._pidfd, sig)
            else:
                os.kill(self.agent_pid, sig)
        except (ProcessLookupError, PermissionError, OSError):
            pass

    def _read_output(self) -> None:
        for chunk in iter(lambda: self._output_file.read1(1 << 16), b""):
            self.output_total += len(chunk)
            if len(self.output) < 65536:
                self.output += chunk[: 65536 - len(self.output)]
            if self.output_total > self.limits.output:
                self.stop(f"it wrote more than {self.limits.output // 2**20} MB of output")

    def stop(self, reason: str) -> None:
        """Kill everything in the sandbox and remember why (the first reason counts).

        Only the agent is killed: it is pid 1 of the sandbox's pid namespace, so the kernel
        kills every other process in it, and the agent's exit completes only once they are
        all gone. bubblewrap, its parent, then reaps it and exits by itself. Killing
        bubblewrap too would leave the agent to the machine's init, which may reap it late
        or never (a zombie of the sandbox's user outliving the grading run).
        """
        if self.stopped is None:
            self.stopped = reason
        self._signal(signal.SIGKILL)

    def __exit__(self, *exc) -> None:
        self.stop(self.stopped or "done")
        if self.process is not None:
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:  # bubblewrap itself hangs: end it the hard way
                self.process.kill()
                self.process.wait()
        else:  # the keeper kills what is left once the lifeline closes, reaps pid 1 (the
            os.close(self._lifeline)  # last to go) and then closes its socket
            self._keeper.settimeout(30)
            with contextlib.suppress(OSError):
                while self._keeper.recv(64):
                    pass
            self._keeper.close()
        for fd in (self._requests, self._answers):
            try:
                os.close(fd)
            except OSError:
                pass
        self._drain.join(timeout=5)
        self._output_file.close()
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None

    def request(
        self,
        message: wire.Request,
        seconds: float | None = None,
        callback=None,
    ) -> wire.Answer:
        """Send one request (:class:`~labtools.wire.Run`, :class:`~labtools.wire.Get` or
        :class:`~labtools.wire.Call`) and return the agent's answer, parsed by
        :func:`labtools.wire.decode_answer` and checked to belong to the request.

        During a :class:`~labtools.wire.Call`, the student's code may call the instructor's
        versions of the names in its ``reference``: each such call comes as a callback,
        which ``callback(name, args, kwargs)`` answers here with a
        :class:`~labtools.wire.Reply` (the time it takes counts in the request's time); a
        callback for any other name stops the sandbox.

        A request that runs longer than ``seconds`` (default: the cell limit), or past the
        notebook's time limit, is interrupted (KeyboardInterrupt in the student's code); if
        the agent does not answer soon after, the sandbox is stopped. Once the notebook's
        time is up the sandbox is stopped. Raises :class:`SandboxError` once the sandbox has
        stopped, with the reason, which names the limit that stopped it.
        """
        limits = self.limits
        left = self.deadline - time.monotonic()
        if left <= 0:
            self.stop(
                "the notebook ran longer than its time limit "
                f"(notebook_seconds = {limits.notebook_seconds:g} s)"
            )
        if self.stopped is not None:
            raise SandboxError(self.stopped)
        nonce = uuid.uuid4().hex
        self._send(wire.encode_request(message, nonce))
        offered = set(message.reference) if isinstance(message, wire.Call) else set()
        seconds = min(limits.cell_seconds if seconds is None else seconds, left)
        deadline = time.monotonic() + seconds
        interrupted = False
        while True:
            try:
                if not interrupted and not wire.wait_readable(self._answers, deadline):
                    self._signal(signal.SIGINT)  # KeyboardInterrupt, as Jupyter does
                    interrupted = True
                if interrupted and not wire.wait_readable(self._answers, time.monotonic() + 5):
                    raise TimeoutError
                raw = wire.read_frame(self._answers, limits.message, time.monotonic() + 30)
                if raw is None:
                    raise EOFError
                answer = wire.decode_answer(raw, limits.budget())
            except TimeoutError:
                self.stop(
                    f"a cell or call ran longer than {seconds:g} s and could not be interrupted"
                )
                raise SandboxError(self.stopped) from None
            except (EOFError, OSError):
                time.sleep(0.05)  # let the output reader record a flood first
                self.stop("the notebook's process ended")
                raise SandboxError(self.stopped) from None
            except wire.FrameTooLarge:
                self.stop(
                    f"it sent an answer larger than the limit (message = {limits.message} bytes)"
                )
                raise SandboxError(self.stopped) from None
            except wire.NotPlainData as err:
                self.stop(f"it sent an answer the grader refused: {err}")
                raise SandboxError(self.stopped) from None
            if answer.id != nonce:
                self.stop("it wrote something that is not an answer to the grader's channel")
                raise SandboxError(self.stopped)
            if answer.callback is None:
                break
            name, args, kwargs = answer.callback
            if name not in offered or callback is None:
                self.stop(f"it called {name!r}, which the grader did not offer")
                raise SandboxError(self.stopped)
            if interrupted:  # past its time: no more of the grader's work for it
                reply = wire.Reply(raised="KeyboardInterrupt: the call ran out of time")
            else:
                reply = callback(name, args, kwargs)
            self._send(wire.encode_request(reply, nonce))
        if interrupted:
            cause = (
                f"the notebook's time limit (notebook_seconds = {limits.notebook_seconds:g} s)"
                if seconds >= left
                else f"the cell limit (cell_seconds = {seconds:g} s)"
            )
            answer.interrupted = f"it ran longer than {seconds:g} s and was interrupted at {cause}"
        return answer

    def _send(self, payload: bytes) -> None:
        try:
            wire.write_frame(self._requests, payload)
        except OSError:
            self.stop("the notebook's process ended")
            raise SandboxError(self.stopped) from None
