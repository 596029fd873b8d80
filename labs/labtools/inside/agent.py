"""The student's side of grading: runs inside the sandbox, with the student's code.

Each notebook's agent is a fresh child of the warm parent (:mod:`labtools.inside.zygote`),
which calls :func:`main`. It reads requests on file descriptor 3 and answers on 4, one
JSON message in a frame each (:mod:`labtools.inside.protocol`):

- :class:`~labtools.inside.protocol.Run` runs a cell in an IPython shell (magics work) and
  answers whether it raised, with its printed output (cut to a size) and, when asked, the
  figures it left open, as PNG images; every run closes the figures it left, as Jupyter's
  inline backend does;
- :class:`~labtools.inside.protocol.Get` answers the value of a name as plain data, or why
  it cannot be sent;
- :class:`~labtools.inside.protocol.Call` calls the student's function with plain-data
  arguments and answers its result and the arguments as they are after the call (so a
  function that changes its input can be caught); the names in ``reference`` are the
  instructor's versions (charged once: a later exercise is not failed by an earlier one's
  bug): stand-ins whose every call goes to the grader as a callback;
- :class:`~labtools.inside.protocol.Checkpoint` forks a copy of the notebook as it is now,
  which waits; :class:`~labtools.inside.protocol.Resume` hands it the channel (it answers
  the hidden tests' calls, after the notebook's last cell has run) until
  :class:`~labtools.inside.protocol.Release` ends it.

A function the lab closes is not in this sandbox's copy of the package: its stand-in calls
:func:`closed_call`, which asks the grader; the grader answers outside a graded call (the
lab's own cells, the student's cells) and refuses inside one (:mod:`labtools.grader.closed`).

Nothing here is trusted: the student's code runs in this process and may change any of it.
The grader reads only plain data from it, checks every message, and computes every verdict
itself; what the grader refuses, no change here can obtain.
"""

from __future__ import annotations

import base64
import contextlib
import importlib
import io
import os
import signal
import sys
import traceback
import warnings

from labtools.inside import protocol as wire

REQUESTS, ANSWERS = 3, 4
MAX_OUTPUT = 20_000  # characters of printed output sent per cell (the grader cuts again)
MAX_FIGURES = 8  # figures sent per run
AGENT = os.getpid()  # the process that answers (set again by the warm parent's child)
CURRENT = {"id": None}  # the nonce of the request being answered (a callback carries it)
SAFE_ERRORS = {
    e.__name__: e
    for e in (
        ValueError,
        TypeError,
        ZeroDivisionError,
        OverflowError,
        FloatingPointError,
        ArithmeticError,
        IndexError,
        KeyError,
        RuntimeError,
        NotImplementedError,
    )
}


def receive() -> bytes | None:
    """The grader's next request (trusted: the grader wrote it), or None once it has gone."""
    return wire.read_frame(REQUESTS, limit=2**40)


def send(answer: wire.Answer) -> None:
    wire.write_frame(ANSWERS, wire.encode_answer(answer))


def cut(text: str) -> str:
    return text if len(text) <= MAX_OUTPUT else text[:MAX_OUTPUT] + "\n[... output cut]"


def _result_class(name: str):
    """The class of a package result named by the grader (``$result``)."""
    module, _, attr = name.rpartition(".")
    if not module.startswith(wire.PACKAGE):
        raise wire.NotPlainData(f"a result of {name}")
    return getattr(importlib.import_module(module), attr)


def _category(name: str):
    for home in ("perceptrons", "builtins"):
        with contextlib.suppress(ImportError):
            found = getattr(importlib.import_module(home), name, None)
            if isinstance(found, type) and issubclass(found, Warning):
                return found
    return UserWarning


def ask_grader(name: str, args: tuple, kwargs: dict):
    """One callback: the grader runs ``name`` on its side with these arguments (plain data,
    package functions by name) and replies. Returns the value; raises what the grader says
    it raised; gives the warnings it gave."""
    sent = wire.to_plain(list(args)), {str(k): wire.to_plain(v) for k, v in kwargs.items()}
    send(wire.Answer(id=CURRENT["id"], callback=(name, *sent)))
    payload = receive()
    if payload is None:
        os._exit(0)
    _, reply = wire.decode_request(payload)
    if not isinstance(reply, wire.Reply):
        raise RuntimeError(f"the grader did not answer the call of {name}")
    for category, message in reply.warnings:
        warnings.warn(message, _category(category), stacklevel=3)
    if reply.raised is not None:
        kind, _, message = reply.raised.partition(": ")
        raise SAFE_ERRORS.get(kind, RuntimeError)(message if kind in SAFE_ERRORS else reply.raised)
    return wire.from_plain(reply.value, results=_result_class)


def closed_call(qualified: str, args: tuple, kwargs: dict):
    """A call of a package function this lab closes (see the module's docstring)."""
    return ask_grader(qualified, args, kwargs)


def _reference(name: str):
    """The stand-in for the instructor's ``name``: a callback to the grader per call."""

    def instructor_version(*args, **kwargs):
        try:
            return ask_grader(name, args, kwargs)
        except (wire.NotPlainData, RuntimeError, *SAFE_ERRORS.values()) as err:
            raise RuntimeError(f"{name} (the instructor's version) raised {err}") from None

    instructor_version.__name__ = instructor_version.__qualname__ = name
    return instructor_version


def valued(value) -> wire.Answer:
    """An answer that carries ``value`` as plain data (its JSON-ready form), or says why
    it cannot."""
    try:
        return wire.Answer(value=wire.to_plain(value), has_value=True)
    except wire.NotPlainData as err:
        return wire.Answer(refused=str(err))


def no_input(prompt: str = "") -> str:
    """``input()`` while grading: nobody answers (a kernel run by nbgrader refuses too)."""
    raise EOFError("input() has no one to answer while the notebook is graded")


SHOWN_WIDGETS: list = []  # the widgets a run displayed (a slider panel), for its view


def _no_text_for_widgets(shell) -> None:
    """A widget (a slider panel) shows no text where no browser draws it: the run sends
    its view instead (:func:`widget_view`)."""
    try:
        from ipywidgets import Widget
    except ImportError:
        return

    def shown(obj, printer, cycle):
        SHOWN_WIDGETS.append(obj)
        printer.text("")

    shell.display_formatter.formatters["text/plain"].for_type(Widget, shown)


def widget_view(widget, texts: list, images: list, depth: int = 0) -> None:
    """What a widget shows without a browser: its labels' text, and the PNG images that its
    HTML holds (a slider panel's figure, as its sliders stand)."""
    import re

    if depth > 8:
        return
    value = getattr(widget, "value", None)
    kind = type(widget).__name__
    if kind == "Label" and isinstance(value, str) and value:
        texts.append(value)
    elif kind == "HTML" and isinstance(value, str):
        images += re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", value)
    for child in getattr(widget, "children", ()) or ():
        widget_view(child, texts, images, depth + 1)


def figures() -> list[str]:
    """The open figures as PNG images (base64), at most :data:`MAX_FIGURES`; then closed."""
    import matplotlib.pyplot as plt

    images = []
    for number in plt.get_fignums()[:MAX_FIGURES]:
        buffer = io.BytesIO()
        try:
            # (not bbox_inches="tight": it draws the figure twice, 0.1 s a plot of the labs)
            plt.figure(number).savefig(buffer, format="png", dpi=72)
        except Exception:  # noqa: BLE001 - a figure that cannot be drawn is left out
            continue
        images.append(base64.b64encode(buffer.getvalue()).decode("ascii"))
    plt.close("all")
    return images


class Agent:
    def __init__(self):
        from IPython.core.interactiveshell import InteractiveShell
        from traitlets.config import Config

        config = Config()
        config.HistoryManager.enabled = False
        config.InteractiveShell.colors = "NoColor"
        config.InteractiveShell.xmode = "Plain"
        self.shell = InteractiveShell.instance(config=config)
        self.shell.displayhook.write_output_prompt = lambda: None  # as Jupyter shows it
        self.shell.user_ns["__name__"] = "__main__"
        _no_text_for_widgets(self.shell)
        self.checkpoints: list[tuple[int, int]] = []  # (pid, the pipe that wakes it)
        self.serving: int | None = None  # the pid of the copy that holds the channel
        import builtins

        builtins.input = no_input

    def run(self, request: wire.Run) -> wire.Answer:
        import matplotlib.pyplot as plt

        out, err = io.StringIO(), io.StringIO()
        SHOWN_WIDGETS.clear()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            result = self.shell.run_cell(request.source, store_history=False)
        error = result.error_before_exec or result.error_in_exec
        printed = out.getvalue() if out.getvalue().strip() else ""
        answer = wire.Answer(stdout=cut(printed), stderr=cut(err.getvalue()))
        answer.error = None if error is None else cut(f"{type(error).__name__}: {error}")
        if request.figures:
            answer.figures = figures()
            texts: list = []
            for widget in SHOWN_WIDGETS[:4]:
                widget_view(widget, texts, answer.figures)
            answer.figures = answer.figures[:MAX_FIGURES]
            if texts:
                answer.stdout = cut(answer.stdout + "\n".join(texts) + "\n")
        SHOWN_WIDGETS.clear()
        plt.close("all")
        return answer

    def get(self, request: wire.Get) -> wire.Answer:
        if request.name not in self.shell.user_ns:
            return wire.Answer(missing=True)
        value = self.shell.user_ns[request.name]
        if callable(value) and not isinstance(value, type):
            return wire.Answer(function=True)
        return valued(value)

    @contextlib.contextmanager
    def references(self, names: list[str]):
        """While inside, the names in ``names`` are the instructor's versions: stand-ins
        that ask the grader, which runs the instructor's code on its side and replies."""
        namespace = self.shell.user_ns
        saved = {name: namespace[name] for name in names if name in namespace}
        try:
            for name in names:
                namespace[name] = _reference(name)
            yield
        finally:
            for name in names:
                namespace.pop(name, None)
            namespace.update(saved)

    def call(self, request: wire.Call) -> wire.Answer:
        func = self.shell.user_ns.get(request.name)
        if func is None or not callable(func):
            return wire.Answer(missing=True)
        args, kwargs = wire.from_plain(request.args), wire.from_plain(request.kwargs)
        out = io.StringIO()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                    with self.references(request.reference):
                        result = func(*args, **kwargs)
            except BaseException as error:  # noqa: BLE001 - reported to the grader as data
                if isinstance(error, SystemExit | KeyboardInterrupt) and os.getpid() != AGENT:
                    os._exit(0)
                text = "".join(traceback.format_exception_only(type(error), error)).strip()
                return wire.Answer(raised=cut(text), warnings=self._warnings(caught))
        try:  # the arguments as they are after the call
            args_after = wire.to_plain([list(args), kwargs])
        except wire.NotPlainData:
            args_after = None
        answer = valued(result)
        answer.args_plain, answer.warnings = args_after, self._warnings(caught)
        return answer

    @staticmethod
    def _warnings(caught) -> list:
        return [(w.category.__name__, cut(str(w.message))) for w in caught[:20]]

    def checkpoint(self) -> wire.Answer:
        """Fork a copy of the notebook as it is now; it waits until :meth:`resume`."""
        wake_r, wake_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the copy: wait, then answer on the channel until released
            global AGENT
            os.close(wake_w)
            for _, other in self.checkpoints:
                os.close(other)
            self.checkpoints = []
            try:  # the Resume request's nonce, to answer it (32 hex digits)
                nonce = wire.read_exactly(wake_r, 32).decode()
            except BaseException:  # noqa: BLE001 - ended while it waited, or it has gone
                os._exit(0)
            os.close(wake_r)
            AGENT = os.getpid()
            send(wire.Answer(id=nonce))
            serve(self, resumed=True)
            os._exit(0)
        os.close(wake_r)
        self.checkpoints.append((pid, wake_w))
        return wire.Answer(value=len(self.checkpoints) - 1, has_value=True)

    def resume(self, number: int, nonce: str) -> wire.Answer | None:
        """Wake copy ``number`` and wait until it ends (it answers the request ``nonce``, and
        those after it, meanwhile); an interrupt goes on to it. None: the copy answered; an
        answer if there is no such copy."""
        if not 0 <= number < len(self.checkpoints) or self.checkpoints[number][1] < 0:
            return wire.Answer(error=f"no copy {number} of the notebook")
        pid, wake = self.checkpoints[number]
        self.checkpoints[number] = (pid, -1)
        try:
            gone = os.waitpid(pid, os.WNOHANG) != (0, 0)
        except ChildProcessError:
            gone = True
        if gone:  # ended by the notebook's own code
            os.close(wake)
            return wire.Answer(error=f"copy {number} of the notebook has gone")
        self.serving = pid
        try:
            os.write(wake, nonce.encode()[:32].ljust(32, b"0"))
            os.close(wake)
            while True:
                try:
                    os.waitpid(pid, 0)
                    break
                except KeyboardInterrupt:  # for the copy, which holds the channel
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGINT)
                except ChildProcessError:
                    break
        finally:
            self.serving = None
        return None


def warm_matplotlib_cache() -> None:
    """Copy the grader's font list into the sandbox's own (empty) matplotlib folder, so
    that matplotlib does not rebuild it for every notebook."""
    source, target = os.environ.get("LABTOOLS_MPLCACHE"), os.environ.get("MPLCONFIGDIR")
    if source and target and os.path.isdir(source):
        import shutil

        shutil.copytree(source, target, dirs_exist_ok=True)


def serve(agent: Agent, resumed: bool = False) -> None:
    """Answer requests until the grader closes the channel (or, in a copy, releases it)."""
    while True:
        try:
            payload = receive()
        except KeyboardInterrupt:  # an interrupt that came just after an answer
            continue
        if payload is None or os.getpid() != AGENT:  # a forked child never answers
            os._exit(0)
        nonce = None
        try:
            nonce, request = wire.decode_request(payload)
            CURRENT["id"] = nonce
            if isinstance(request, wire.Resume) and resumed:
                raise wire.BadRequest("a copy cannot resume another", nonce)
            if isinstance(request, wire.Resume):
                answer = agent.resume(request.number, nonce)
                if answer is None:
                    continue  # the copy answered it, and what came after
            elif isinstance(request, wire.Release):
                if not resumed:
                    raise wire.BadRequest("nothing to release", nonce)
                send(wire.Answer(id=nonce))
                os._exit(0)
            elif isinstance(request, wire.Checkpoint):
                if resumed:
                    raise wire.BadRequest("a copy keeps no copies", nonce)
                answer = agent.checkpoint()
            else:
                handle = {wire.Run: agent.run, wire.Get: agent.get, wire.Call: agent.call}
                if type(request) not in handle:
                    raise wire.BadRequest(f"a {request.op} outside a call", nonce)
                answer = handle[type(request)](request)
        except wire.BadRequest as error:
            nonce, answer = error.id, wire.Answer(error=str(error))
        except BaseException as error:  # noqa: BLE001
            answer = wire.Answer(error=cut(f"{type(error).__name__}: {error}"))
        if os.getpid() != AGENT:
            os._exit(0)
        answer.id = nonce
        send(answer)


def main() -> None:
    """The agent of one notebook, in the warm parent's child (after the clean room)."""
    global AGENT
    AGENT = os.getpid()
    agent = Agent()
    serve(agent)


if __name__ == "__main__":  # pragma: no cover - always started by the warm parent
    sys.exit("labtools.inside.agent is started by labtools.inside.zygote")
