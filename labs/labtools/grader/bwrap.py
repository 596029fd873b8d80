"""The command lines that start a sandbox: bubblewrap's namespaces
(:func:`_bwrap_prefix`), the file system it builds from nothing and the environment
(:func:`_layout`), for a warm parent (:func:`zygote_command`), a notebook's own sandbox
(:func:`single_command`, with :func:`_child_setup` run before bubblewrap starts) or no
sandbox at all (:func:`unsafe_command`, ``--unsafe``); the user id a notebook runs as
(:func:`sandbox_uid`); and whether this machine can start one (:func:`available`,
:func:`warm_available`). What the sandbox gives the student's code:
:mod:`labtools.grader.sandbox`."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from labtools.grader.limits import Limits
from labtools.inside import seccomp

NOBODY = 65534
FIRST_UID = 1_000_000
LABTOOLS = Path(__file__).resolve().parents[1]
INSIDE = LABTOOLS / "inside"  # the agent and the warm parent: the sandbox's only labtools
ROOT = LABTOOLS.parent.parent
SANDBOX_VENV = ROOT / ".venv-sandbox"  # made by tasks.py from requirements-sandbox.txt
LIB = Path("/opt/grading/lib")  # where the package and the agent are, in the sandbox


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
    sandbox of its own (:func:`labtools.grader.start.single`)."""
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
