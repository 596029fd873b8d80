"""Grading one notebook: the student's code in the sandbox, every verdict out of its reach.

:func:`evaluate` walks the cells that :func:`labtools.notebook.plan` gives, in order, with
two namespaces side by side: the student's, in a :class:`~labtools.sandbox.Sandbox`, and
the grader's own, in this process, where no student code ever runs. Locked cells run in
both. A test cell runs here only, after the names it reads that the student's answers
define (:func:`labtools.notebook.declared`) are fetched from the sandbox: values as plain
data (:mod:`labtools.wire`), functions as :class:`StudentFunction` stand-ins whose calls
go to the sandbox with plain data and come back as plain data. A test passes when it runs
to its end here; nothing the student's code printed, patched or raised can change that.
"""

from __future__ import annotations

import builtins
import contextlib
import io
import signal
import threading
import time
import traceback
import warnings
from pathlib import Path

from labtools import notebook, wire
from labtools.sandbox import Limits, Sandbox, SandboxError

PLAIN = "numbers, strings, booleans, None, lists, tuples, dicts, numeric numpy arrays"


class StudentCodeError(Exception):
    """The student's function raised, ran too long, or could not be reached."""


class WrongAnswer(Exception):
    """The student's value cannot be used as an answer (it is not plain data)."""


class Unavailable:
    """Stands for a student's name that could not be fetched; any use raises."""

    def __init__(self, name: str, reason: str):
        self._reason = f"`{name}` {reason}"

    def _fail(self, *args, **kwargs):
        raise WrongAnswer(self._reason)

    __getattr__ = __call__ = __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _fail
    __bool__ = __float__ = __int__ = __index__ = __len__ = __iter__ = __getitem__ = _fail
    __array__ = __format__ = __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = _fail
    __rmul__ = __truediv__ = __rtruediv__ = __neg__ = __abs__ = __hash__ = __pow__ = _fail
    __matmul__ = __rmatmul__ = __contains__ = _fail


def _changed_argument(sent, returned) -> str | None:
    """Which argument the student's function changed, from the plain data sent and the
    plain data of the same arguments after the call (None: not plain data any more)."""
    if returned == sent:
        return None
    if type(returned) is not list or len(returned) != 2 or type(returned[0]) is not list:
        return "its arguments"
    (args, kwargs), (args_after, kwargs_after) = sent, returned
    for k, value in enumerate(args):
        if k >= len(args_after) or args_after[k] != value:
            return f"its argument {k + 1}"
    for name, value in kwargs.items():
        if type(kwargs_after) is not dict or kwargs_after.get(name) != value:
            return f"its argument {name}"
    return "its arguments"


class StudentFunction:
    """The student's function, called in the sandbox with plain data only."""

    def __init__(self, box: Sandbox, name: str, forbid: list[str], reference: dict):
        self.box, self.name, self.forbid, self.reference = box, name, forbid, reference

    def __repr__(self) -> str:
        return f"<student function {self.name}>"

    def __call__(self, *args, **kwargs):
        try:
            sent = wire.to_plain([list(args), kwargs])
        except wire.NotPlainData as err:  # the test itself passes something else
            raise TypeError(f"cannot send {err} to the student's {self.name}") from None
        request = {"op": "call", "name": self.name, "forbid": self.forbid}
        request["reference"] = self.reference
        request.update(args=sent[0], kwargs=sent[1])
        try:
            answer = self.box.request(request)
        except SandboxError as err:
            raise StudentCodeError(f"{self.name} could not be called: {err}") from None
        for category, message in answer.get("warnings") or []:
            kind = getattr(builtins, str(category), None)
            is_warning = isinstance(kind, type) and issubclass(kind, Warning)
            warnings.warn(str(message), kind if is_warning else UserWarning, stacklevel=2)
        if "interrupted" in answer:
            raise StudentCodeError(f"{self.name}: {answer['interrupted']}")
        if answer.get("missing"):
            raise StudentCodeError(f"{self.name} is no longer defined")
        if "raised" in answer:
            raise StudentCodeError(f"{self.name} raised {answer['raised']}")
        if "refused" in answer:
            raise WrongAnswer(
                f"{self.name} returned {answer['refused']}, not plain data ({PLAIN}): "
                "counted as a wrong answer"
            )
        changed = _changed_argument(sent, answer.get("args"))
        if changed:  # our arguments stay as they were: the test's data is never the student's
            raise WrongAnswer(
                f"{self.name} changed {changed} in place; the lab's functions must leave "
                "what they are given unchanged"
            )
        try:
            return wire.from_plain(answer.get("value"))
        except wire.NotPlainData as err:
            raise WrongAnswer(f"{self.name} returned {err}") from None


def fetch(box: Sandbox, name: str, forbid: list[str], reference: dict | None = None):
    """The student's ``name`` as the grader may use it (see the module's docstring)."""
    try:
        answer = box.request({"op": "get", "name": name})
    except SandboxError as err:
        return Unavailable(name, f"could not be read: the notebook's process stopped ({err})")
    if answer.get("missing"):
        return Unavailable(
            name, "is not defined: did the cell that defines it run without an error?"
        )
    if answer.get("function"):
        return StudentFunction(box, name, forbid, reference or {})
    if "refused" in answer:
        return Unavailable(
            name, f"is {answer['refused']}, not plain data ({PLAIN}): counted as a wrong answer"
        )
    try:
        return wire.from_plain(answer.get("value"))
    except wire.NotPlainData as err:
        return Unavailable(name, f"is {err}: counted as a wrong answer")


@contextlib.contextmanager
def time_limit(seconds: float):
    """Stop the grader's own code after ``seconds`` (main thread only; elsewhere no limit)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):
        raise TimeoutError(f"the test ran longer than {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _stream(name: str, content: str) -> dict:
    return {"output_type": "stream", "name": name, "text": content}


def _error(err: BaseException, cell_name: str) -> dict:
    frames = [
        line
        for line in traceback.format_exception(type(err), err, err.__traceback__)
        if "labtools" not in line  # the grader's own frames say nothing to the student
    ]
    return {
        "output_type": "error",
        "ename": type(err).__name__,
        "evalue": str(err),
        "traceback": [f"in {cell_name}:", *frames],
    }


def evaluate(
    source_nb: dict,
    student_nb: dict,
    limits: Limits,
    *,
    unsafe: bool = False,
    mpl_cache: Path | None = None,
) -> dict:
    """Grade one notebook; returns plain data (see :func:`labtools.grade.grade_task`).

    ``cells``: for every cell of the plan, its role, grade id, source, outputs and, for
    tests, ``passed`` and ``score``; ``notes``: what the instructor should know; ``stopped``:
    why the student's process stopped early, if it did.
    """
    import matplotlib.pyplot as plt

    started = time.monotonic()
    cells, notes = notebook.plan(source_nb, student_nb)
    names = notebook.declared(source_nb)
    instructor = notebook.solutions(source_nb)
    ours: dict = {"__name__": "__main__"}
    graded = []
    with Sandbox(limits, unsafe=unsafe, mpl_cache=mpl_cache) as box, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for cell in cells:
            entry = {"role": cell.role, "grade_id": cell.grade_id, "source": cell.source}
            entry["metadata"] = cell.metadata
            entry["outputs"] = []
            if cell.role in ("locked", "test"):
                label = f"cell {cell.grade_id or '(no id)'}"
                needed = sorted(notebook.used_names(cell.source) & names.keys())
                reference = {n: instructor[n] for n in cell.reference if n in instructor}
                for name in needed:
                    ours[name] = fetch(box, name, names[name], reference)
                missing = [ours[n] for n in needed if isinstance(ours[n], Unavailable)]
                out = io.StringIO()
                try:
                    if cell.role == "test" and missing:
                        missing[0]._fail()
                    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                        with time_limit(max(limits.cell_seconds * 4, 60)):
                            exec(compile(cell.source, f"<{label}>", "exec"), ours)
                    failure = None
                except Exception as err:  # noqa: BLE001 - any failure of a test is a verdict
                    failure = err
                if out.getvalue():
                    entry["outputs"].append(_stream("stdout", out.getvalue()[:20_000]))
                if failure is not None:
                    entry["outputs"].append(_error(failure, label))
                if cell.role == "test":
                    entry["passed"] = failure is None
                    entry["points"] = cell.points
                    entry["score"] = cell.points if failure is None else 0.0
                    entry["message"] = (
                        None if failure is None else f"{type(failure).__name__}: {failure}"
                    )
            if cell.sandbox and box.stopped is None:
                try:
                    answer = box.request({"op": "run", "source": cell.sandbox})
                except SandboxError:
                    answer = None
                if answer is not None and cell.role in ("answer", "extra"):
                    for stream in ("stdout", "stderr"):
                        if answer.get(stream):
                            entry["outputs"].append(_stream(stream, str(answer[stream])))
                    if answer.get("interrupted"):
                        entry["outputs"].append(_stream("stderr", str(answer["interrupted"])))
            if cell.role == "written":
                entry["points"] = cell.points
            graded.append(entry)
        stopped = box.stopped if box.stopped != "done" else None
        output = bytes(box.output[:4000]).decode(errors="replace")
    plt.close("all")
    return {
        "cells": graded,
        "notes": notes,
        "stopped": stopped,
        "output": output,
        "seconds": round(time.monotonic() - started, 3),
    }
