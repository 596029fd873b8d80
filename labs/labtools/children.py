"""The processes the instructor's commands start, and how they end: every child dies with
the process that started it, in a process group of its own, and a command that is stopped
stops its children before it lets go of the course folder's lock.

- :func:`start` and :func:`run`: a program (nbgrader's ``generate_assignment``), started
  in a new process group, with ``PR_SET_PDEATHSIG`` (the kernel kills it when its parent
  dies, however the parent ends: ``kill -9``, the OOM killer); :func:`run` waits for it,
  and on any way out (an error, Control-C, ``SIGTERM``) kills its whole group and waits
  for it before it lets the exception go on.
- :func:`fork`: a child of this process running a Python function (:mod:`labtools.door.parse`),
  set up the same way.
- :func:`die_with_parent`: the same for a process that starts itself (the pool's workers).
- :func:`stop_on_sigterm`: ``SIGTERM`` handled as ``SIGINT`` (a ``KeyboardInterrupt``),
  so that ``kill PID`` unwinds the command as Control-C does: each ``finally`` runs, the
  children are stopped, and the course folder's lock is released last.

Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent(parent: int) -> None:
    """Have the kernel kill this process when its parent dies (``prctl(PR_SET_PDEATHSIG)``),
    however the parent ends; and exit now if it already has (its pid is not ``parent``)."""
    if sys.platform.startswith("linux"):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(1)


def _setup(parent: int):
    def child_setup() -> None:  # in the child, between fork and exec
        os.setpgid(0, 0)
        die_with_parent(parent)

    return child_setup


def start(argv: list[str], **popen) -> subprocess.Popen:
    """``subprocess.Popen(argv, **popen)`` in a new process group, killed by the kernel
    when this process dies."""
    return subprocess.Popen(argv, preexec_fn=_setup(os.getpid()), **popen)  # noqa: PLW1509


def stop(process: subprocess.Popen) -> None:
    """Kill the process's group (the process and whatever it started) and wait for it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def run(argv: list[str], **popen) -> subprocess.CompletedProcess:
    """Run ``argv`` to its end (as ``subprocess.run(argv, capture_output=True, text=True,
    **popen)``) through :func:`start`; on any way out before that, its group is killed
    and waited for first. Whatever its group left running is killed at the end too."""
    process = start(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)
    try:
        out, err = process.communicate()
    finally:
        stop(process)
    return subprocess.CompletedProcess(argv, process.returncode, out, err)


def fork(target, *args) -> int:
    """A child of this process that runs ``target(*args)`` and exits (0, or 1 if it raised),
    in a process group of its own and killed when this process dies; returns its pid."""
    import warnings

    parent = os.getpid()
    with warnings.catch_warnings():  # (Python 3.12 warns of a fork beside other threads: the
        warnings.simplefilter("ignore", DeprecationWarning)  # child runs our code alone)
        pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        _setup(parent)()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        target(*args)
        code = 0
    finally:
        os._exit(code)


def reap(pid: int) -> None:
    """Kill the child ``pid`` (of :func:`fork`) and its group, and wait for it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def _interrupt(signum, frame):
    raise KeyboardInterrupt


@contextlib.contextmanager
def stop_on_sigterm():
    """While in this block, ``SIGTERM`` raises ``KeyboardInterrupt`` in the main thread, as
    ``SIGINT`` does (see the module); the handler before it is restored after. (Outside the
    main thread, where no handler can be set, nothing changes.)"""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)
