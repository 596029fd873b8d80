"""The grader's side of one notebook, in a process of its own, under limits that a C call
cannot outlive.

Everything the grader does with what a student controls happens here: reading the
submitted notebook, the lab's test cells and locked cells on the values that came out of
the sandbox (:func:`labtools.grader.verdicts.evaluate`), and rendering the written answers. A
test can run long inside numpy or LAPACK on an answer's values, where no signal reaches
it, and a notebook can be built to make its rendering slow; so none of it runs in the
worker itself. :func:`judge` runs it in a fresh child process whose address space is
limited (``RLIMIT_AS``: ``grader_memory``) and which the worker kills ``grader_seconds``
after ``notebook_seconds`` and ``tests_seconds``, counted from its start (limits of
:class:`labtools.grader.limits.Limits`). The child
reports each cell as it is graded, so a child that is killed or runs out of memory still
leaves the verdicts it reached; the cells it did not reach score 0, with the reason.

Other work on what a student handed in runs the same way, one child each (:func:`call`):
the feedback pages, nbgrader's HTML of the graded notebook
(:func:`labtools.out.feedback.write_limited`).

The children are forks of one server per worker process (``python -m labtools.grader.judge``,
started on first use), which imports numpy, matplotlib, IPython, nbformat and the
renderer once: a child costs milliseconds instead of the seconds a fresh interpreter
spends on imports. The server is started with :mod:`subprocess` (it works in a process of
the local pool and in a dask worker's threads alike) and holds nothing of any student;
each child handles one notebook and exits. The worker hands a child its end of a fresh
socket pair (``SCM_RIGHTS``), so several threads of one worker may grade at once.

Between the worker and a child, frames of JSON (:func:`labtools.wire.write_frame`):
the child's pid; the :class:`~labtools.wire.Task`; then the child's reports: ``plan``
(the cells, before any runs), ``cell`` (one cell graded), and ``done`` or ``unreadable``.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
import warnings
from dataclasses import asdict
from pathlib import Path

from labtools import wire

FRAME = 256 * 2**20  # the largest report a child may send (its texts are capped before)
SERVER_SECONDS = 300  # to start the server and its warm parent, on a machine under load
PRELOAD = (
    "numpy",
    "matplotlib.pyplot",
    "IPython",
    "ipywidgets",
    "nbformat",
    "bleach",
    "nbconvert.filters.markdown",
    "perceptrons",
    "perceptrons.testing",
    "perceptrons.widgets",
    "perceptrons.handin",
    "labtools.grader.closed",
    "labtools.grader.verdicts",
    "labtools.grader.render",
)
# imported before the first page is rendered (a request of kind b"f"): a server that only
# grades, as each grading worker's does, never needs nbgrader (0.7 s of imports)
PRELOAD_PAGES = ("nbgrader.converters",)


class ServerSilent(Exception):
    """The server did not start a child within :data:`SERVER_SECONDS`."""


class _Server:
    """``python -m labtools.grader.judge``: forks one child per notebook (see the module)."""

    def __init__(self):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        env = dict(os.environ, MPLBACKEND="Agg", PYTHONHASHSEED="0")
        env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        labtools_parent = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join([labtools_parent, *sys.path[1:]])
        self.process = subprocess.Popen(
            [sys.executable, "-m", "labtools.grader.judge"],
            stdin=theirs,
            stdout=subprocess.DEVNULL,
            env=env,
            close_fds=True,
        )
        theirs.close()
        self.control = ours
        self.lock = threading.Lock()
        atexit.register(self.close)

    def close(self) -> None:
        """Stop the server (it also ends by itself when this process does)."""
        from labtools.grader.start import end_server

        end_server(self.process, self.control)

    def alive(self) -> bool:
        return self.process.poll() is None

    def child(self, kind: bytes = b"f") -> socket.socket:
        """A connection to a new child of the server (``kind`` b"g" and a lab's allow list
        as JSON: one that grades a notebook of that lab, and may start it from the warm
        parent of that lab)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with self.lock:
                socket.send_fds(self.control, [kind], [theirs.fileno()])
        finally:
            theirs.close()
        return ours


_SERVER: list[_Server] = []
_SERVER_LOCK = threading.Lock()


def server() -> _Server:
    """This process's server, started (again) if it is not running."""
    with _SERVER_LOCK:
        if not _SERVER or not _SERVER[0].alive():
            _SERVER[:] = [_Server()]
        return _SERVER[0]


def _read(conn: socket.socket, deadline: float):
    raw = wire.read_frame(conn.fileno(), FRAME, deadline)
    if raw is None:
        raise EOFError
    return json.loads(raw)


@contextlib.contextmanager
def _new_child(kind: bytes = b"f"):
    """A new child of this process's server: (its connection, its pid); on leaving, the
    child is killed (through a pidfd, immune to a reused pid) and the connection closed."""
    conn = server().child(kind)
    pidfd = None
    try:
        try:
            pid = _read(conn, time.monotonic() + SERVER_SECONDS)["pid"]
        except TimeoutError:
            raise ServerSilent(
                f"the grader's server did not start a child within {SERVER_SECONDS} s "
                "(is the machine overloaded?); graded again on the next run"
            ) from None
        pidfd = os.pidfd_open(pid)
        yield conn, pid
    finally:
        if pidfd is not None:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            os.close(pidfd)
        conn.close()


def judge(task: wire.Task) -> tuple[dict | None, str | None, dict]:
    """Grade ``task`` in a child under limits. Returns (plan, unreadable, reports): the
    plan report (None if the child never planned), why the notebook is unreadable (or
    None), and {"cells": {index: entry}, "done": the final report or None, "stopped": why
    the child was stopped, or None, "failed": the grader's own traceback, or None,
    "seconds": the wall-clock time from the child's start, "peak": the child's peak memory
    in bytes}."""
    from labtools.grader.limits import Limits

    limits = Limits(**task.limits)
    started = time.monotonic()
    deadline = started + limits.notebook_seconds + limits.tests_seconds + limits.grader_seconds
    plan, unreadable = None, None
    reports: dict = {"cells": {}, "done": None, "stopped": None, "failed": None, "peak": None}
    try:
        from labtools.grader import closed

        allow = json.dumps(list(closed.lab_allow(task.source))).encode()
        with _new_child(b"g" + allow) as (conn, pid):
            started = time.monotonic()  # (a warm parent started for it is the worker's time)
            try:
                wire.write_frame(conn.fileno(), json.dumps({"grade": asdict(task)}).encode())
                while True:
                    report = _read(conn, deadline)
                    if "plan" in report:
                        plan = report
                    elif "cell" in report:
                        reports["cells"][report["cell"]] = report["entry"]
                    elif "unreadable" in report:
                        unreadable = report["unreadable"]
                        break
                    elif "failed" in report:
                        reports["failed"] = report["failed"]
                        break
                    elif "done" in report:
                        reports["done"] = report["done"]
                        break
            finally:  # read before the child is killed
                reports["peak"] = _peak(pid, reports["done"])
    except ServerSilent as err:
        reports["failed"] = str(err)
    except TimeoutError:
        reports["stopped"] = (
            "the grader's side of this notebook ran past its time limit "
            f"(notebook_seconds = {limits.notebook_seconds:g} s + tests_seconds = "
            f"{limits.tests_seconds:g} s + grader_seconds = {limits.grader_seconds:g} s)"
        )
    except (EOFError, OSError, ValueError, KeyError):
        reports["stopped"] = (
            "the grader's side of this notebook ended early: it ran out of memory "
            f"(grader_memory = {limits.grader_memory / 2**30:g} GiB) or failed"
        )
    reports["seconds"] = round(time.monotonic() - started, 3)
    return plan, unreadable, reports


def _peak(pid: int, done: dict | None) -> int | None:
    """The child's peak resident memory in bytes: as it reported it, or read before it is
    killed (None if it is gone)."""
    if done and done.get("peak"):
        return done["peak"]
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


# --- the server and its children (python -m labtools.grader.judge) --------------------------------


def read_submission(text: str) -> tuple[dict | None, str]:
    """The submitted notebook as a dict (nbformat 4, validated), or None and why not."""
    import nbformat

    try:
        with warnings.catch_warnings():  # duplicate or missing cell ids: nbformat fixes them
            warnings.simplefilter("ignore")
            submitted = nbformat.reads(text, as_version=4)
            nbformat.validate(submitted)
    except Exception as err:  # noqa: BLE001 - truncated JSON, not a notebook at all, ...
        return None, f" ({type(err).__name__})"
    return json.loads(nbformat.writes(submitted)), ""


def mpl_cache() -> str:
    """This machine's matplotlib cache folder (its font list built if it was not)."""
    import matplotlib
    import matplotlib.font_manager  # noqa: F401 - builds the font list if it is not there

    return matplotlib.get_cachedir()


def worker_mpl_cache(given: str | None) -> Path | None:
    """The font cache a worker lends its sandboxes: the grading machine's (``given``) if
    that folder is here, else this worker's own (a worker on another machine), else none."""
    if given and Path(given).is_dir():
        return Path(given)
    try:
        return Path(mpl_cache())
    except Exception:  # noqa: BLE001 - no cache: matplotlib builds its font list each time
        return None


def _die_with_parent() -> None:
    import ctypes

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def call(target: str, args: list, *, seconds: float, memory: int) -> str | None:
    """Run ``target`` ('module:function', called with the plain-data ``args``) in a child
    under limits: ``memory`` bytes of address space, killed after ``seconds``. Returns
    None once it has returned, or why it did not (killed at the time, or it failed or ran
    out of memory)."""
    deadline = time.monotonic() + seconds
    why = None
    try:
        with _new_child() as (conn, _):
            job = {"target": target, "args": args, "memory": memory}
            wire.write_frame(conn.fileno(), json.dumps({"call": job}).encode())
            why = _read(conn, deadline).get("failed")
    except ServerSilent as err:
        why = str(err)
    except TimeoutError:
        why = f"stopped at its time limit ({seconds:g} s)"
    except (EOFError, OSError, ValueError, KeyError):
        why = f"ended early: out of memory ({memory} bytes) or failed"
    return why


def _limit_memory(size: int) -> None:
    """This process's address space at most ``size`` bytes (or the hard limit, if lower)."""
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        size = min(size, hard)
    resource.setrlimit(resource.RLIMIT_AS, (size, hard))


def _child(conn: socket.socket) -> None:
    """One job: grade a notebook and report as it goes, or write one feedback page."""
    fd = conn.fileno()

    def send(report: dict) -> None:
        wire.write_frame(fd, json.dumps(report).encode())

    send({"pid": os.getpid()})
    raw = wire.read_frame(fd, 2**31, time.monotonic() + 60)
    if raw is None:
        return
    job = json.loads(raw)
    if "call" in job:
        import importlib

        job = job["call"]
        _limit_memory(job["memory"])
        module, _, name = job["target"].partition(":")
        try:
            getattr(importlib.import_module(module), name)(*job["args"])
        except Exception:  # noqa: BLE001 - said to the caller
            send({"failed": traceback.format_exc()[-4000:]})
            return
        send({"done": True})
        return
    task = wire.Task(**job["grade"])
    from labtools.grader import closed, verdicts
    from labtools.grader.limits import Limits

    limits = Limits(**task.limits)
    _limit_memory(limits.grader_memory)
    submitted, why = read_submission(task.notebook)
    if submitted is None:
        send({"unreadable": why})
        return
    allow = closed.lab_allow(task.source)
    warm = _WARM.get(allow)
    usable = warm is not None and not task.cold
    try:
        result = verdicts.evaluate(
            task.source,
            submitted,
            limits,
            package=closed.package_for(allow),
            unsafe=task.unsafe,
            mpl_cache=worker_mpl_cache(task.mpl_cache),
            zygote=warm.control if usable else None,
            report=send,
        )
    except Exception:  # noqa: BLE001 - the grader's own failure, reported on that row
        send({"failed": traceback.format_exc()})
        return
    done = {k: v for k, v in result.items() if k != "cells"}
    done["peak"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    send({"done": done})


# The server's warm parents (labtools.grader.start.Zygote), by the allow list of their lab
# (each holds its lab's copy of the package), the most recently used last. Up to WARM_KEPT
# are kept: two workers that take turns on the same labs would otherwise start a warm
# parent (0.7 s) for most notebooks; each holds about 80 MB of its own.
_WARM: dict[tuple[str, ...], object] = {}
WARM_KEPT = 4
_WARM_DEATHS = [0]
WARM_GIVE_UP = 3  # after this many deaths of its warm parents, a server grades cold
_WARM_MISSING: list = [None]  # why this machine cannot start one (checked when it starts)


def _warm_parent(allow: tuple[str, ...]) -> None:
    """Have a warm parent for the lab whose allow list is ``allow``, unless this machine
    cannot or they keep dying. Its copy of the package, and the package's fingerprints that
    the review of each notebook reads, are made here once, before the children fork."""
    from labtools.grader import closed, start

    warm = _WARM.pop(allow, None)
    if warm is not None and not warm.alive():
        _WARM_DEATHS[0] += 1
        warm.close()
        warm = None
    if warm is None:
        package = closed.package_for(allow)
        closed.warm_review(allow)
        if _WARM_DEATHS[0] >= WARM_GIVE_UP or _WARM_MISSING[0] is not None:
            return
        warm = start.Zygote(package, worker_mpl_cache(None))
        warm.allow = allow
        if not warm.ready():  # it died or hangs: this notebook (and the next, if it fails
            warm.process.kill()  # again) goes cold
            warm.close()
            _WARM_DEATHS[0] += 1
            return
    _WARM[allow] = warm
    while len(_WARM) > WARM_KEPT:  # the least recently used goes
        _WARM.pop(next(iter(_WARM))).close()


def _warm_up() -> None:
    """Fill, once in the server, the caches every child would otherwise fill again: the
    package's functions (what a lab closes), the HTML cleaner's parser and nbformat's
    validators. Nothing here comes from a student."""
    import nbformat

    from labtools.grader import closed, render
    from perceptrons import handin

    handin.package_functions()
    closed.functions()
    render.written_html("*warm* `up`: [a link](https://example.org)")
    # nbformat's schema validators, compiled on first use (70 ms a notebook in each child)
    read_submission(nbformat.writes(nbformat.v4.new_notebook()))


def _warm_up_pages() -> None:
    """Render one made-up notebook to HTML with nbconvert's classic template, which nbgrader's
    feedback page extends, once in the server: the regular expressions, CSS selectors and
    markdown parser that every page's first rendering compiles are then compiled before the
    children fork (a feedback page: about 2.3 s in a fresh child, 0.95 s after this; the
    rest is each page's own template environment and work). Nothing here comes from a
    student, and no file stays open."""
    import nbformat
    from nbconvert import HTMLExporter

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Warm *up*\n\nA [link](https://example.org), $x^2$."),
        nbformat.v4.new_code_cell(
            "print(1)", outputs=[nbformat.v4.new_output("stream", name="stdout", text="1\n")]
        ),
    ]
    HTMLExporter(template_name="classic").from_notebook_node(nb)


def serve() -> None:
    """The server: one fork per request on the control socket (standard input)."""
    import importlib

    from labtools.grader import bwrap

    _die_with_parent()
    for name in PRELOAD:
        importlib.import_module(name)
    _warm_up()
    gc.freeze()  # what it holds now stays out of collections: a child copies no page for them
    _WARM_MISSING[0] = bwrap.warm_available()  # (runs bubblewrap: before SIGCHLD is ignored)
    control = socket.socket(fileno=0)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the children
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, 1 << 16, 1)
        except OSError:
            os._exit(0)
        if not message:  # the worker has gone
            os._exit(0)
        if not fds:
            continue
        if message.startswith(b"g"):
            try:
                _warm_parent(tuple(json.loads(message[1:] or b"[]")))
            except Exception:  # noqa: BLE001 - the child grades cold, or says why it cannot
                traceback.print_exc()
        elif PRELOAD_PAGES[0] not in sys.modules:
            for name in PRELOAD_PAGES:
                importlib.import_module(name)
            _warm_up_pages()
            gc.freeze()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                null = os.open(os.devnull, os.O_RDONLY)  # fd 0 taken again, not left free
                os.dup2(null, 0)  # (the control socket was there; a pipe made at 0 would be
                os.close(null)  # lost to a subprocess's stdin)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # its own subprocesses
                _die_with_parent()
                _child(socket.socket(fileno=fds[0]))
            except BaseException:  # noqa: BLE001 - the worker sees the report stream end
                code = 1
            finally:
                os._exit(code)
        os.close(fds[0])


if __name__ == "__main__":
    serve()
