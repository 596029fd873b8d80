"""The student's side of grading: runs inside the sandbox, with the student's code.

Started by :mod:`labtools.sandbox` as ``python -m labtools.agent``. It reads requests on
file descriptor 3 and answers on 4, one JSON message in a frame each (the messages, their
framing and the grader's parser of the answers: :mod:`labtools.wire`):

- :class:`~labtools.wire.Run` runs a cell in an IPython shell (magics work) and answers
  whether it raised, with its printed output (cut to a size);
- :class:`~labtools.wire.Get` answers the value of a name as plain data, or why it cannot
  be sent;
- :class:`~labtools.wire.Call` calls the student's function with plain-data arguments and
  answers its result and the arguments as they are after the call (so a function that
  changes its input can be caught); the package functions named in ``forbid`` raise
  RuntimeError while it runs ("write it yourself"), and the names in ``reference`` are the
  instructor's versions (charged once: a later exercise is not failed by an earlier one's
  bug). The instructor's code stays with the grader: here such a name is a stand-in
  whose every call goes to the grader as a callback (plain data out, plain data back).

Nothing here is trusted: the student's code runs in this process and may change any of
it. The grader reads only plain data from it, checks every message, and computes every
verdict itself.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import traceback
import warnings

from labtools import wire

REQUESTS, ANSWERS = 3, 4
MAX_OUTPUT = 20_000  # characters of printed output sent per cell (the grader cuts again)
AGENT = os.getpid()


def receive() -> bytes | None:
    """The grader's next request (trusted: the grader wrote it), or None once it has gone."""
    return wire.read_frame(REQUESTS, limit=2**40)


def send(answer: wire.Answer) -> None:
    wire.write_frame(ANSWERS, wire.encode_answer(answer))


def cut(text: str) -> str:
    return text if len(text) <= MAX_OUTPUT else text[:MAX_OUTPUT] + "\n[... output cut]"


def _forbidden_code(qualified: str):
    """A code object with no free variables that raises, named like the function."""
    name = qualified.rsplit(".", 1)[-1]
    message = f"{qualified} is not available here: this exercise asks you to write it yourself"
    namespace: dict = {}
    exec(f"def {name}(*args, **kwargs):\n    raise RuntimeError({message!r})\n", namespace)
    return namespace[name].__code__


@contextlib.contextmanager
def forbidding(names: list[str]):
    """While inside, each function named 'module.attr' raises RuntimeError, wherever
    the student keeps a reference to it (its code object is swapped)."""
    swapped = []
    try:
        for qualified in names:
            module, _, attr = qualified.rpartition(".")
            func = getattr(importlib.import_module(module), attr, None)
            code = getattr(func, "__code__", None)
            if code is not None and not code.co_freevars:
                swapped.append((func, code))
                func.__code__ = _forbidden_code(qualified)
        yield
    finally:
        for func, code in swapped:
            func.__code__ = code


def _reference(name: str):
    """The stand-in for the instructor's ``name``: a callback to the grader per call."""

    def instructor_version(*args, **kwargs):
        sent = wire.to_plain(list(args)), wire.to_plain(dict(kwargs))
        send(wire.Answer(id=CURRENT["id"], callback=(name, *sent)))
        payload = receive()
        if payload is None:
            os._exit(0)
        _, reply = wire.decode_request(payload)
        if not isinstance(reply, wire.Reply):
            raise RuntimeError(f"the grader did not answer the call of {name}")
        if reply.raised is not None:
            raise RuntimeError(f"{name} (the instructor's version) raised {reply.raised}")
        return wire.from_plain(reply.value)

    instructor_version.__name__ = instructor_version.__qualname__ = name
    return instructor_version


CURRENT = {"id": None}  # the nonce of the request being answered (a callback carries it)


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


class Agent:
    def __init__(self):
        from IPython.core.interactiveshell import InteractiveShell
        from traitlets.config import Config

        config = Config()
        config.HistoryManager.enabled = False
        config.InteractiveShell.colors = "NoColor"
        config.InteractiveShell.xmode = "Plain"
        self.shell = InteractiveShell.instance(config=config)
        self.shell.user_ns["__name__"] = "__main__"
        import builtins

        builtins.input = no_input

    def run(self, request: wire.Run) -> wire.Answer:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            result = self.shell.run_cell(request.source, store_history=False)
        error = result.error_before_exec or result.error_in_exec
        answer = wire.Answer(stdout=cut(out.getvalue()), stderr=cut(err.getvalue()))
        answer.error = None if error is None else cut(f"{type(error).__name__}: {error}")
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
                    with forbidding(request.forbid), self.references(request.reference):
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


def warm_matplotlib_cache() -> None:
    """Copy the grader's font list into the sandbox's own (empty) matplotlib folder, so
    that matplotlib does not rebuild it for every notebook."""
    source, target = os.environ.get("LABTOOLS_MPLCACHE"), os.environ.get("MPLCONFIGDIR")
    if source and target and os.path.isdir(source):
        import shutil

        shutil.copytree(source, target, dirs_exist_ok=True)


def main() -> None:
    warm_matplotlib_cache()
    agent = Agent()
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


if __name__ == "__main__":
    main()
