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
  changes its input can be caught); the functions named in ``forbid`` raise
  RuntimeError while it runs ("write it yourself", :mod:`labtools.forbid`), and the names
  in ``reference`` are the instructor's versions (charged once: a later exercise is not
  failed by an earlier one's bug). The instructor's code stays with the grader: here such
  a name is a stand-in whose every call goes to the grader as a callback (plain data out,
  plain data back).

Nothing here is trusted: the student's code runs in this process and may change any of
it. The grader reads only plain data from it, checks every message, and computes every
verdict itself.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import sys
import traceback
import types
import warnings

from labtools import wire

REQUESTS, ANSWERS = 3, 4
MAX_OUTPUT = 20_000  # characters of printed output sent per cell (the grader cuts again)
AGENT = os.getpid()
_THIS = sys.modules[__name__]  # (run as __main__, which IPython's shell then takes over)


def receive() -> bytes | None:
    """The grader's next request (trusted: the grader wrote it), or None once it has gone."""
    return wire.read_frame(REQUESTS, limit=2**40)


def send(answer: wire.Answer) -> None:
    wire.write_frame(ANSWERS, wire.encode_answer(answer))


def cut(text: str) -> str:
    return text if len(text) <= MAX_OUTPUT else text[:MAX_OUTPUT] + "\n[... output cut]"


def _refusal(qualified: str) -> RuntimeError:
    return RuntimeError(
        f"{qualified} is not available here: this exercise asks you to write it yourself"
    )


_STAND_INS: dict[str, object] = {}  # qualified name -> the code object that replaces its code
_ORIGINALS: dict[str, tuple] = {}  # qualified name -> (the original as a function, its home)
_SWAPS: dict[str, tuple] = {}  # qualified name -> (the function, its stand-in's code)


def _home(obj) -> str:
    """The folder of the package that defines ``obj`` (calls from there pass, for the
    package's own functions only: see :func:`forbidden`)."""
    module = importlib.import_module(obj.__module__.split(".")[0])
    return os.path.dirname(module.__file__ or "") + os.sep


def forbidden(qualified: str, args: tuple, kwargs: dict, passes: bool):
    """What a forbidden function does while the student's function runs: raise, unless
    ``passes`` and its caller is its own package's code (``P.pt`` calling its engine)."""
    original, home = _ORIGINALS[qualified]
    caller = sys._getframe(2).f_code.co_filename  # 0: here, 1: the stand-in, 2: its caller
    if passes and caller.startswith(home):
        return original(*args, **kwargs)
    raise _refusal(qualified)


def _stand_in_code(qualified: str, passes: bool):
    """A code object with no free variables that hands the call to :func:`forbidden`."""
    if (qualified, passes) not in _STAND_INS:
        name = qualified.rsplit(".", 1)[-1]
        namespace: dict = {}
        exec(
            f"def {name}(*args, **kwargs):\n"
            f"    return __import__('sys').modules['labtools.agent'].forbidden(\n"
            f"        {qualified!r}, args, kwargs, {passes!r})\n",
            namespace,
        )
        _STAND_INS[qualified, passes] = namespace[name].__code__
    return _STAND_INS[qualified, passes]


def _attribute_stand_in(qualified: str):
    def stand_in(*args, **kwargs):
        raise _refusal(qualified)

    stand_in.__name__ = stand_in.__qualname__ = qualified.rsplit(".", 1)[-1]
    return stand_in


def _enforce(qualified: str, namespace: dict | None, swapped: list, replaced: list) -> None:
    """Make ``qualified`` raise (see :func:`forbidding`), noting what to undo."""
    from labtools import forbid

    if qualified in _SWAPS:  # found before: the function and its stand-in's code
        func, stand_in = _SWAPS[qualified]
        swapped.append((func, func.__code__))
        func.__code__ = stand_in
        return
    obj = forbid.resolve(qualified)
    func = forbid.target(obj)
    if func is not None:
        original = types.FunctionType(
            func.__code__, func.__globals__, func.__name__, func.__defaults__
        )
        original.__kwdefaults__ = func.__kwdefaults__
        _ORIGINALS[qualified] = original, _home(func)
        passes = qualified.startswith(f"{forbid.PACKAGE}.")
        _SWAPS[qualified] = func, _stand_in_code(qualified, passes)
        return _enforce(qualified, namespace, swapped, replaced)
    forbid.how(qualified)  # raises ForbidError for what cannot be enforced
    owner_name, _, attr = qualified.rpartition(".")
    owner = forbid.resolve(owner_name)
    if isinstance(owner, type):  # a class's method: replaced on the class
        replaced.append((owner, attr, obj))
        setattr(owner, attr, _attribute_stand_in(qualified))
        return
    top = qualified.split(".")[0]
    stand_in = _attribute_stand_in(qualified)
    spaces = [vars(m) for n, m in list(sys.modules.items()) if n.split(".")[0] == top]
    for space in [*spaces, *([namespace] if namespace is not None else [])]:
        for key in [k for k, v in space.items() if v is obj]:
            replaced.append((space, key, obj))
            space[key] = stand_in


@contextlib.contextmanager
def forbidding(names: list[str], namespace: dict | None = None):
    """While inside, each function named in ``names`` (qualified, see
    :mod:`labtools.forbid`) raises RuntimeError. A function with Python code has its code
    swapped, so every reference to it (aliases, default arguments, closures) reaches the
    stand-in; the package's own functions still run when the package calls them. An object
    without Python code (a ufunc) is replaced in every loaded module of its package and in
    ``namespace`` (the student's), wherever it stands. A name whose package is not
    imported yet (scikit-learn takes seconds) is enforced as soon as an ``import`` inside
    loads it. A name that cannot be enforced raises here: never a silent no-op."""
    import builtins

    sys.modules.setdefault("labtools.agent", _THIS)  # what the stand-ins call
    swapped, replaced, pending = [], [], []
    real_import, depth = builtins.__import__, [0]

    def watching_import(*args, **kwargs):
        depth[0] += 1
        try:
            module = real_import(*args, **kwargs)
        finally:
            depth[0] -= 1
        ready = [q for q in pending if q.split(".")[0] in sys.modules]
        if depth[0] == 0 and ready:  # the outermost import is done: enforce what it loaded
            depth[0] += 1  # (the imports that enforcing makes do not come back here)
            try:
                for qualified in ready:
                    pending.remove(qualified)
                    _enforce(qualified, namespace, swapped, replaced)
            finally:
                depth[0] -= 1
        return module

    try:
        for qualified in names:
            if qualified.split(".")[0] in sys.modules:
                _enforce(qualified, namespace, swapped, replaced)
            else:
                pending.append(qualified)
        if pending:
            builtins.__import__ = watching_import
        yield
    finally:
        builtins.__import__ = real_import
        for func, code in reversed(swapped):
            func.__code__ = code
        for space, key, obj in reversed(replaced):
            if isinstance(space, type):
                setattr(space, key, obj)
            else:
                space[key] = obj


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
        self.reached: dict[tuple, str | None] = {}  # check_reach's verdicts
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

    def check_reach(self, func, request: wire.Call) -> None:
        """Raise :class:`labtools.reach.Refused` if the function reaches anything outside
        numpy, Python and the package (:mod:`labtools.reach`); read once per function and
        set of instructor's stand-ins, which are the grader's, not the student's."""
        from labtools import reach

        key = (id(func), tuple(request.reference))
        if key not in self.reached:
            namespace = self.shell.user_ns
            trusted = frozenset(id(namespace[n]) for n in request.reference if n in namespace)
            try:
                reach.check(func, request.name, trusted)
                self.reached[key] = None
            except reach.Refused as refused:
                self.reached[key] = str(refused)
        if self.reached[key] is not None:
            raise reach.Refused(self.reached[key])

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
                        if request.forbid:  # a "write it yourself" cell: what may it use?
                            self.check_reach(func, request)
                        with forbidding(request.forbid, self.shell.user_ns):
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
    from labtools import reach

    warm_matplotlib_cache()
    reach.preload()  # what the warm parent imported, before the modules are read
    reach.snapshot()  # (in a warm child, only what was loaded since the parent's)
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
