"""A sandbox for one student's notebook: bubblewrap, its own user id and namespaces, limits,
and a Python environment that holds only what a lab may use.

What the sandbox gives the student's code:

- its own pid namespace (it sees and can signal only its own processes; when the agent,
  pid 1 there, ends, the kernel ends everything it started), no network, its own IPC and
  host name;
- a user id that is not the grader's: when the grader runs as root, a user id of its own
  (:func:`sandbox_uid`, above 1 000 000, so each sandbox running at the same time has its
  own and the process limit counts that sandbox alone), with no capabilities; as an
  ordinary user, uid 65534 inside an unprivileged user namespace, which the kernel maps to
  the grader's own uid outside, with no capabilities and no further user namespaces;
- a file system built from nothing: the system's ``/usr`` and ``/etc`` and the Python
  installation with every ``site-packages`` and ``dist-packages`` folder emptied, the
  sandbox's own environment ``.venv-sandbox`` (numpy, matplotlib, IPython, ipywidgets: made
  by ``tasks.py`` from ``requirements-sandbox.txt``), the lab's copy of the package
  (:mod:`labtools.closed`: the functions the lab closes are not in it) and the agent
  (:mod:`labtools.inside`), read-only; a private ``/tmp`` of a fixed size. No scipy, no
  scikit-learn, nothing of the grader (nbgrader, the rest of labtools), none of the lab
  sources, submissions or course folder;
- limits (:class:`Limits`): address space per process, memory of the whole notebook (a
  memory cgroup, :class:`MemoryGroup`), processes, CPU seconds, file size, open files,
  output, wall-clock time per request and for the whole notebook;
- a fresh, empty session keyring (the grader's keys stay out of reach) and a seccomp
  filter (:mod:`labtools.inside.seccomp`) that refuses the system calls Docker's default
  profile refuses: the kernel keyring, ptrace and other processes' memory, new namespaces,
  mounts, kernel modules, BPF, perf events, io_uring, clocks and the like.

Every notebook's process is made the same way: a fresh child of a parent that has imported
the libraries once (:class:`Zygote`, :mod:`labtools.inside.zygote`). The warm start keeps
that parent for a worker's notebooks of one lab; the cold start (``--cold``) starts one for
each notebook. Nothing a notebook can observe tells the two apart.

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
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from labtools import wire
from labtools.inside import seccomp

NOBODY = 65534
FIRST_UID = 1_000_000
LABTOOLS = Path(__file__).resolve().parent
INSIDE = LABTOOLS / "inside"  # the agent and the warm parent: the sandbox's only labtools
ROOT = LABTOOLS.parent.parent
SANDBOX_VENV = ROOT / ".venv-sandbox"  # made by tasks.py from requirements-sandbox.txt
LIB = Path("/opt/grading/lib")  # where the package and the agent are, in the sandbox


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
    notebook_memory: int = 2 * 2**30  # memory of all its processes and its /tmp together
    tmp: int = 256 * 2**20  # the private /tmp (a tmpfs, so it is memory too)
    processes: int = 32  # processes and threads the student's code may add
    file_size: int = 64 * 2**20  # largest file it may write
    output: int = 16 * 2**20  # bytes written straight to stdout/stderr before it is stopped
    open_files: int = 256
    # the grader's side
    notebook_seconds: float = 600.0  # wall clock for the notebook's cells, visible tests included
    tests_seconds: float = 120.0  # wall clock for its hidden tests, after its last cell
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
    grader_seconds: float = 15.0  # its time past those two (start-up, render)
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


def sandbox_python() -> Path:
    """The interpreter of the sandbox's own environment (``.venv-sandbox``)."""
    return Path(os.environ.get("LABTOOLS_SANDBOX_VENV", SANDBOX_VENV)) / "bin" / "python"


def available() -> str | None:
    """None when bubblewrap can start a sandbox here; otherwise what is missing."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (`bwrap`, Debian package bubblewrap) is not installed"
    if not sandbox_python().exists():
        return (
            f"the sandbox's Python environment ({sandbox_python().parent.parent.name}/) is "
            "missing: `python3 tasks.py grade ...` makes it (requirements-sandbox.txt)"
        )
    try:
        seccomp.program()
    except seccomp.Unsupported as err:
        return str(err)
    probe = subprocess.run(_bwrap_prefix() + ["--ro-bind", "/", "/", "true"], capture_output=True)
    if probe.returncode != 0:
        reason = probe.stderr.decode(errors="replace").strip()
        return f"bubblewrap cannot create namespaces here ({reason})"
    return None


def warm_available() -> str | None:
    """None when a warm parent can start notebooks here; otherwise why each notebook gets a
    sandbox of its own (:meth:`Sandbox._start_single`)."""
    if os.geteuid() != 0:
        return (
            "the warm start needs the grader to run as root (an ordinary user's sandbox "
            "cannot mount a fresh /proc for each notebook)"
        )
    return available()


def sandbox_uid() -> int:
    """The user id the student's code runs as, seen from outside the sandbox: as root, one
    per grading process (a process runs one sandbox at a time); else the grader's own."""
    return FIRST_UID + os.getpid() if os.geteuid() == 0 else os.getuid()


def _bwrap_prefix(single: bool = False) -> list[str]:
    """bubblewrap's namespaces. For a warm parent (as root): it runs as root of the sandbox,
    with the rights to make each notebook's namespaces and mounts and to leave root for the
    notebook's user id; each notebook drops them all. ``single``: one notebook's sandbox as
    an ordinary user: a user namespace in which it is nobody, without capabilities."""
    argv = ["bwrap", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts"]
    argv += ["--unshare-cgroup-try", "--die-with-parent", "--new-session", "--as-pid-1"]
    if os.geteuid() != 0:  # unprivileged: a user namespace in which we are nobody
        argv += ["--unshare-user", "--disable-userns", "--uid", str(NOBODY), "--gid", str(NOBODY)]
    argv += ["--cap-drop", "ALL"]
    if not single:
        for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_SYS_ADMIN", "CAP_KILL"):
            argv += ["--cap-add", cap]
    return argv


# -P: no folder of the working directory's on sys.path, so a module the notebook writes in
# /tmp (the only folder it may write) cannot be imported: its code would be code the review
# never reads (and a "scipy.py" there would stand in for the absent scipy)
PYTHON_FLAGS = ("-P",)


def single_command(limits: Limits, package: Path, mpl_cache: Path | None = None) -> list[str]:
    """The bubblewrap command line of one notebook's own sandbox, where a warm parent cannot
    run (an ordinary user): bubblewrap makes its namespaces, /proc and /tmp and installs the
    seccomp filter (file descriptor 6); the same module then imports the same libraries and
    runs the agent (:func:`labtools.inside.zygote.single`)."""
    argv = _layout(_bwrap_prefix(single=True), limits.tmp, mpl_cache, package)
    argv += ["--setenv", "LABTOOLS_SINGLE", "1", "--info-fd", "5", "--seccomp", "6"]
    return argv + [str(sandbox_python()), *PYTHON_FLAGS, "-m", "labtools.inside.zygote"]


def _base() -> Path:
    """The Python installation the sandbox's environment was made from (its ``home``)."""
    venv = sandbox_python().parent.parent
    for line in (venv / "pyvenv.cfg").read_text().splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home":
            return Path(os.path.realpath(value.strip())).parent
    raise FileNotFoundError(f"{venv / 'pyvenv.cfg'} names no home")


def _python_paths() -> list[Path]:
    """Folders the sandbox's Python needs: its installation and its environment."""
    system = (Path("/usr"), Path("/etc"))
    paths = {_base(), sandbox_python().parent.parent}
    return sorted(p for p in paths if p.exists() and not any(p.is_relative_to(s) for s in system))


def _emptied() -> list[Path]:
    """Folders of installed packages outside the sandbox's environment (the Python
    installation's own, the system's): bound empty, so nothing in them is there."""
    base = _base()
    found = []
    for top in (base / "lib", Path("/usr/lib"), Path("/usr/local/lib")):
        for folder in (*top.glob("python3*/site-packages"), *top.glob("python3*/dist-packages")):
            if folder.is_dir():
                found.append(folder)
    return sorted(set(found))


def zygote_command(package: Path, mpl_cache: Path | None = None) -> list[str]:
    """The bubblewrap command line that starts a warm parent (:mod:`labtools.inside.zygote`)
    for the lab whose copy of the package is ``package`` (a folder named perceptrons)."""
    argv = _layout(_bwrap_prefix(), 16 * 2**20, mpl_cache, package)
    return argv + [str(sandbox_python()), *PYTHON_FLAGS, "-m", "labtools.inside.zygote"]


def _layout(argv: list[str], tmp: int, mpl_cache: Path | None, package: Path) -> list[str]:
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
    binds.append((package, LIB / "perceptrons"))
    binds.append((INSIDE, LIB / "labtools" / "inside"))
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
    for folder in _emptied():
        argv += ["--perms", "0555", "--size", "4096", "--tmpfs", str(folder)]
    argv += ["--proc", "/proc", "--dev", "/dev"]
    argv += ["--chdir", "/tmp"]
    env = {
        "HOME": "/tmp",
        "PATH": f"{sandbox_python().parent}:/usr/bin:/bin",
        "PYTHONPATH": str(LIB),
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
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


def unsafe_command(package: Path) -> tuple[list[str], dict]:
    """A warm parent without a sandbox (``--unsafe``): the same start and protocol, the
    same Python environment and copy of the package, no isolation."""
    lib = Path(tempfile.mkdtemp(prefix="labtools-unsafe-"))
    (lib / "labtools").mkdir()
    (lib / "perceptrons").symlink_to(package)
    (lib / "labtools" / "inside").symlink_to(INSIDE)
    env = {"PYTHONPATH": str(lib), "MPLBACKEND": "Agg", "PYTHONHASHSEED": "0"}
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", PATH=os.environ.get("PATH", ""))
    env.update(HOME=os.environ.get("HOME", "/tmp"), LABTOOLS_UNSAFE="1")
    return [str(sandbox_python()), "-m", "labtools.inside.zygote"], env


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
    """Runs in the new process before bubblewrap starts (a notebook's own sandbox): a fresh,
    empty session keyring, the notebook's limits, and the pipes and the seccomp filter at 3,
    4, 5 and 6."""
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
    """A warm parent (:mod:`labtools.inside.zygote`) for the notebooks of one lab, in its
    bubblewrap sandbox with the lab's copy of the package (``package``); :class:`Sandbox`
    asks it for a fresh child per notebook through :attr:`control`. It ends when this
    process does (or when :meth:`close` is called)."""

    def __init__(self, package: Path, mpl_cache: Path | None = None, *, unsafe: bool = False):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        keyctl = SYS_KEYCTL.get(os.uname().machine)
        libc = ctypes.CDLL(None, use_errno=True)
        control = theirs.fileno()
        self.package = package

        def setup():  # a fresh session keyring; the control socket at 3
            import fcntl
            import resource

            signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # bubblewrap waits for its child
            if keyctl is not None and not unsafe:
                libc.syscall(keyctl, KEYCTL_JOIN_SESSION_KEYRING, None)
            os.dup2(fcntl.fcntl(control, fcntl.F_DUPFD, 64), 3)
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

        if unsafe:
            argv, env = unsafe_command(package)
        else:
            argv, env = zygote_command(package, mpl_cache), None
        self.process = subprocess.Popen(
            argv,
            env=env,
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


class MemoryGroup:
    """A memory cgroup that holds every process of one notebook: the kernel counts their
    memory together (and the pages of its /tmp, which they write), and a notebook over
    ``limit`` bytes loses a process to the kernel's out-of-memory killer, inside the group.

    cgroup v2 where the machine gives one a writable memory controller, else v1's memory
    hierarchy; :meth:`make` returns None where neither is writable (an ordinary user
    without a delegated cgroup): the grader then says so once, and each process keeps its
    own ``memory`` limit only."""

    def __init__(self, path: Path, version: int):
        self.path, self.version = path, version

    @classmethod
    def home(cls) -> tuple[Path, int] | None:
        """Where this process may make memory cgroups, and which version."""
        try:
            lines = Path("/proc/self/cgroup").read_text().splitlines()
        except OSError:
            return None
        for line in lines:
            number, controllers, path = line.split(":", 2)
            if number == "0":  # v2: the unified hierarchy, if memory is enabled below us
                top = Path("/sys/fs/cgroup") / path.lstrip("/")
                try:
                    if "memory" in (top / "cgroup.subtree_control").read_text().split():
                        return top, 2
                except OSError:
                    pass
            elif "memory" in controllers.split(","):
                top = Path("/sys/fs/cgroup/memory") / path.lstrip("/")
                if (top / "memory.limit_in_bytes").exists() and os.access(top, os.W_OK):
                    return top, 1
        return None

    @classmethod
    def make(cls, limit: int) -> MemoryGroup | None:
        found = cls.home()
        if found is None:
            return None
        top, version = found
        path = top / f"labtools-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        try:
            path.mkdir()
            group = cls(path, version)
            if version == 2:
                group._write("memory.max", limit)
                group._write("memory.swap.max", 0, optional=True)
            else:
                group._write("memory.limit_in_bytes", limit)
                group._write("memory.memsw.limit_in_bytes", limit, optional=True)
            return group
        except OSError:
            with contextlib.suppress(OSError):
                path.rmdir()
            return None

    def _write(self, name: str, value: int, optional: bool = False) -> None:
        try:
            (self.path / name).write_text(str(value))
        except OSError:
            if not optional:
                raise

    def add(self, pid: int) -> bool:
        try:
            (self.path / "cgroup.procs").write_text(str(pid))
            return True
        except OSError:
            return False

    def ran_out(self) -> bool:
        """Whether the kernel killed a process of the group for want of memory."""
        try:
            if self.version == 2:
                events = (self.path / "memory.events").read_text().split()
                return int(events[events.index("oom_kill") + 1]) > 0
            control = (self.path / "memory.oom_control").read_text().split()
            killed = int(control[control.index("oom_kill") + 1]) if "oom_kill" in control else 0
            return killed > 0 or int((self.path / "memory.failcnt").read_text()) > 0
        except (OSError, ValueError, IndexError):
            return False

    def close(self) -> None:
        """Remove the group once its processes are gone (they are, once the keeper has
        reaped the notebook's pid 1; a last one may take a moment to leave)."""
        for _ in range(100):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.02)


class MemoryWatch:
    """Where no memory cgroup can be made: the resident memory of every process of the
    notebook (its user id's, as root; the descendants of its bubblewrap, as an ordinary
    user) and of its /tmp, added up every ``interval`` seconds, and the notebook stopped
    once the sum passes the limit. A sampled bound, not a hard one: between two looks a
    notebook can allocate what it writes in ``interval`` seconds more."""

    def __init__(self, box: Sandbox, interval: float = 0.05):
        self.box, self.interval = box, interval
        self.done = threading.Event()
        self.peak = 0
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _processes(self) -> list[str]:
        box = self.box
        if box.process is None:  # a child of a warm parent: the notebook's user id
            uid = sandbox_uid()
            found = []
            for entry in os.listdir("/proc"):
                if entry.isdigit():
                    with contextlib.suppress(OSError):
                        if os.stat(f"/proc/{entry}").st_uid == uid:
                            found.append(entry)
            return found
        children: dict[str, list[str]] = {}  # a sandbox of its own: bubblewrap's descendants
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                with contextlib.suppress(OSError, IndexError):
                    parent = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1]
                    children.setdefault(parent, []).append(entry)
        found, todo = [], [str(box.process.pid)]
        while todo:
            pid = todo.pop()
            found.append(pid)
            todo += children.get(pid, [])
        return found

    @staticmethod
    def inside(pids: list[str]) -> str | None:
        """The first of ``pids`` whose root is the sandbox's: whose /tmp is the notebook's
        (bubblewrap itself sees this machine's /tmp)."""
        host = os.stat("/")
        for pid in pids:
            with contextlib.suppress(OSError):
                root = os.stat(f"/proc/{pid}/root")
                if (root.st_dev, root.st_ino) != (host.st_dev, host.st_ino):
                    return pid
        return None

    def used(self) -> int:
        total, pids = 0, self._processes()
        for pid in pids:
            with contextlib.suppress(OSError, ValueError):
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
        inside = self.inside(pids)
        if inside is not None:  # its /tmp, as a process inside sees it
            with contextlib.suppress(OSError):
                stats = os.statvfs(f"/proc/{inside}/root/tmp")
                total += (stats.f_blocks - stats.f_bfree) * stats.f_frsize
        return total

    def _watch(self) -> None:
        limit = self.box.limits.notebook_memory
        while not self.done.wait(self.interval):
            used = self.used()
            self.peak = max(self.peak, used)
            if used > limit:
                self.box.stop(
                    "it used more memory than the limit for the whole notebook "
                    f"(notebook_memory = {limit / 2**30:g} GiB, all its processes and its /tmp "
                    "together, as sampled every 0.05 s: this machine gives no memory cgroup)"
                )
                return

    def close(self) -> None:
        self.done.set()
        self.thread.join(timeout=5)


def _pid_of(pidfd: int) -> int | None:
    """The pid (in this process's namespace) of the process a pidfd refers to."""
    try:
        for line in Path(f"/proc/self/fdinfo/{pidfd}").read_text().splitlines():
            if line.startswith("Pid:"):
                pid = int(line.split()[1])
                return pid if pid > 0 else None
    except (OSError, ValueError):
        pass
    return None


class Sandbox:
    """One notebook's process. ``with Sandbox(limits, package=...) as box: box.request(...)``.

    With ``zygote`` (the control socket of a :class:`Zygote` of this notebook's lab) it is a
    fresh child of that warm parent (the warm start); without it, a warm parent is started
    for this notebook alone, from the lab's copy of the package ``package``, and closed after
    it (the cold start, and the fallback when the warm parent does not answer, which
    :attr:`note` then says). Either way the notebook's process is made by the same code.
    ``unsafe``: no bubblewrap and no namespaces (``--unsafe``), the same protocol."""

    def __init__(
        self,
        limits: Limits,
        *,
        package: Path | None = None,
        unsafe: bool = False,
        mpl_cache: Path | None = None,
        zygote: socket.socket | None = None,
    ):
        self.limits = limits
        self.package = package
        self.unsafe = unsafe
        self.mpl_cache = mpl_cache
        self.zygote = None if unsafe else zygote
        self.note: str | None = None  # what the instructor should know about the start
        self.stopped: str | None = None  # why it stopped, once it has
        self.output = bytearray()  # the start of what it wrote to stdout/stderr
        self.output_total = 0
        self.output_kept = float("inf")  # bytes of output kept (none after the hidden tests)
        self.deadline = float("inf")  # the notebook's time is up then (set on entering)
        self.own: Zygote | None = None  # the parent started for this notebook alone
        self.process: subprocess.Popen | None = None  # a notebook's own bubblewrap
        self.memory: MemoryGroup | None = None
        self.watch: MemoryWatch | None = None  # where no memory cgroup can be made
        self.agent_pid: int | None = None
        self._pidfd: int | None = None
        self._lifeline: int | None = None
        self._keeper: socket.socket | None = None
        self._requests: int | None = None
        self._answers: int | None = None
        self._output_file = None

    def __enter__(self) -> Sandbox:
        self.deadline = time.monotonic() + self.limits.notebook_seconds
        if os.geteuid() != 0 and not self.unsafe:  # no warm parent for an ordinary user
            self._start_single()
            self._drain = threading.Thread(target=self._read_output, daemon=True)
            self._drain.start()
            return self
        started = self.zygote is not None and self._start_child(self.zygote)
        if self.zygote is not None and not started:
            self.note = "the warm start did not answer: this notebook's own parent started it"
        if not started:
            if self.package is None:
                raise ValueError("a notebook without a warm parent needs its lab's `package`")
            self.own = Zygote(self.package, self.mpl_cache, unsafe=self.unsafe)
            started = self.own.ready() and self._start_child(self.own.control)
        if not started:
            self.stop("the sandbox did not start")
        # the notebook's time starts once its process is there (a parent of its own has
        # imported everything first, as a kept one has), warm or cold alike
        self.deadline = time.monotonic() + self.limits.notebook_seconds
        self._drain = threading.Thread(target=self._read_output, daemon=True)
        self._drain.start()
        return self

    def _start_single(self) -> None:
        """A sandbox of this notebook's own, as an ordinary user (:func:`single_command`)."""
        if self.package is None:
            raise ValueError("a notebook's own sandbox needs its lab's `package`")
        requests_r, self._requests = os.pipe()
        self._answers, answers_w = os.pipe()
        info_r, info_w = os.pipe()
        fds = [requests_r, answers_w, info_w, _filter_fd()]
        self.process = subprocess.Popen(
            single_command(self.limits, self.package, self.mpl_cache),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            pass_fds=(3, 4, 5, 6),
            preexec_fn=_child_setup(self.limits, tuple(fds)),
            start_new_session=True,
        )
        self._output_file = self.process.stdout
        for fd in fds:
            os.close(fd)
        try:  # bubblewrap says which pid (outside) the agent has
            info = wire.read_exactly(info_r, 1, time.monotonic() + 30)
            while not info.rstrip().endswith(b"}"):
                info += wire.read_exactly(info_r, 1, time.monotonic() + 30)
            self.agent_pid = json.loads(info)["child-pid"]
            self._pidfd = os.pidfd_open(self.agent_pid)
        except (TimeoutError, EOFError, ValueError, KeyError, ProcessLookupError):
            self.stop("the sandbox did not start")
        os.close(info_r)
        if self.stopped is None:  # its imports done before its time starts (as a warm child's)
            try:
                ready = wire.read_frame(self._answers, 1024, time.monotonic() + 120)
                if ready is None or wire.decode_answer(ready, self.limits.budget()).id != "ready":
                    self.stop("the sandbox did not start")
            except (TimeoutError, OSError, wire.NotPlainData, wire.FrameTooLarge):
                self.stop("the sandbox did not start")
            self.deadline = time.monotonic() + self.limits.notebook_seconds
        self.watch = MemoryWatch(self)  # an ordinary user has no memory cgroup to give it

    def _start_child(self, control: socket.socket) -> bool:
        """Ask a warm parent for a child; False (nothing left open) if it did not start."""
        limits = self.limits
        requests_r, requests_w = os.pipe()
        answers_r, answers_w = os.pipe()
        output_r, output_w = os.pipe()
        lifeline_r, lifeline_w = os.pipe()
        reply, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        uid = sandbox_uid()  # as the kernel counts its processes; inside, as root, the same
        job = {
            "uid": uid if os.geteuid() == 0 else NOBODY,  # (in a user namespace: nobody)
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
            socket.send_fds(control, [json.dumps(job).encode()], sent)
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
            return False
        self._pidfd, self._lifeline, self._keeper = fds[0], lifeline_w, reply
        self._requests, self._answers = requests_w, answers_r
        self._output_file = open(output_r, "rb")  # noqa: SIM115 - closed in __exit__
        self.agent_pid = _pid_of(self._pidfd)
        # before the first request, while the agent waits for it: every process the
        # notebook makes is in the group, which counts their memory together
        self.memory = None if self.unsafe else MemoryGroup.make(limits.notebook_memory)
        placed = self.memory is not None and self.agent_pid is not None
        if self.memory is not None and not (placed and self.memory.add(self.agent_pid)):
            self.memory.close()
            self.memory = None
        if self.memory is None and not self.unsafe:
            self.watch = MemoryWatch(self)
        return True

    def _signal(self, sig: int) -> None:
        try:
            if self._pidfd is not None:  # immune to the pid being reused
                signal.pidfd_send_signal(self._pidfd, sig)
        except (ProcessLookupError, PermissionError, OSError):
            pass

    def _read_output(self) -> None:
        if self._output_file is None:
            return
        for chunk in iter(lambda: self._output_file.read1(1 << 16), b""):
            self.output_total += len(chunk)
            keep = min(65536, self.output_kept)
            if len(self.output) < keep:
                self.output += chunk[: int(keep) - len(self.output)]
            if self.output_total > self.limits.output:
                self.stop(f"it wrote more than {self.limits.output // 2**20} MB of output")

    def stop(self, reason: str) -> None:
        """Kill everything in the sandbox and remember why (the first reason counts).

        Only the agent is killed: it is pid 1 of the notebook's pid namespace, so the kernel
        kills every other process in it, and the agent's exit completes only once they are
        all gone; its keeper then reaps it (and says so by closing its socket).
        """
        if self.stopped is None:
            self.stopped = reason
        self._signal(signal.SIGKILL)

    def __exit__(self, *exc) -> None:
        self.stop(self.stopped or "done")
        if self.process is not None:  # a notebook's own sandbox: bubblewrap ends with it
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self._lifeline is not None:  # the keeper kills what is left once the lifeline
            os.close(self._lifeline)  # closes, reaps pid 1 (the last to go) and then closes
            self._keeper.settimeout(30)  # its socket
            with contextlib.suppress(OSError):
                while self._keeper.recv(64):
                    pass
            self._keeper.close()
        for fd in (self._requests, self._answers):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        if self._output_file is not None:
            self._drain.join(timeout=5)
            self._output_file.close()
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None
        if self.own is not None:
            self.own.close()
        if self.memory is not None:
            self.memory.close()
        if self.watch is not None:
            self.watch.close()

    def request(
        self,
        message: wire.Request,
        seconds: float | None = None,
        callback=None,
    ) -> wire.Answer:
        """Send one request (:class:`~labtools.wire.Run`, :class:`~labtools.wire.Get` or
        :class:`~labtools.wire.Call`) and return the agent's answer, parsed by
        :func:`labtools.wire.decode_answer` and checked to belong to the request.

        The student's code may call back: the instructor's versions of the names in a
        :class:`~labtools.wire.Call`'s ``reference``, or a package function the lab closes.
        Each such call comes as a callback, which ``callback(call)`` answers here with a
        :class:`~labtools.wire.Reply` (``call``: the name and the arguments as sent, see
        :func:`labtools.wire.decode_arguments`; the time it takes counts in the request's
        time); without ``callback``, a callback stops the sandbox.

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
                self.stop(self._why_ended())
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
            if callback is None:
                self.stop(f"it called {answer.callback[0]!r}, which the grader did not offer")
                raise SandboxError(self.stopped)
            if interrupted:  # past its time: no more of the grader's work for it
                reply = wire.Reply(raised="KeyboardInterrupt: the call ran out of time")
            else:
                reply = callback(answer.callback)
                if reply is None:
                    self.stop(f"it called {answer.callback[0]!r}, which the grader did not offer")
                    raise SandboxError(self.stopped)
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
            self.stop(self._why_ended())
            raise SandboxError(self.stopped) from None

    def _why_ended(self) -> str:
        if self.memory is not None and self.memory.ran_out():
            return (
                "it used more memory than the limit for the whole notebook "
                f"(notebook_memory = {self.limits.notebook_memory / 2**30:g} GiB, all its "
                "processes and its /tmp together)"
            )
        return "the notebook's process ended"
