"""Grading one notebook: the student's code in the sandbox, every verdict out of its reach.

:func:`evaluate` walks the cells that :func:`labtools.notebook.plan` gives, in order, with
two namespaces side by side: the student's, in a :class:`~labtools.sandbox.Sandbox`, and
the grader's own, in this process, where no student code ever runs. Locked cells run in
both, except those that only show something (:func:`labtools.notebook.shown_only`: no later
verdict reads what they make), which run in the sandbox only. A test cell runs here only,
after the names it reads that the student's answers define
(:func:`labtools.notebook.declared`) are fetched from the sandbox: values as plain data
(:mod:`labtools.wire`), functions as :class:`StudentFunction` stand-ins whose calls go to
the sandbox with plain data and come back as plain data. A test passes when it runs to its
end here; nothing the student's code printed, patched or raised can change that."""

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
    """The student's function, called in the sandbox with plain data only. While it runs,
    the names in ``references`` ({name: the instructor's function, on this side}) stand
    for the instructor's versions: their calls come back here as callbacks."""

    def __init__(self, box: Sandbox, name: str, forbid: list[str], references: dict):
        self.box, self.name, self.forbid, self.references = box, name, forbid, references

    def __repr__(self) -> str:
        return f"<student function {self.name}>"

    def _callback(self, name: str, args: list, kwargs: dict) -> wire.Reply:
        """One call of the instructor's ``name`` made by the student's code: run here, on
        plain data, and its value sent back as plain data."""
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                value = self.references[name](*args, **kwargs)
            return wire.Reply(value=wire.to_plain(value))
        except Exception as err:  # noqa: BLE001 - the student's arguments made it fail
            return wire.Reply(raised=f"{type(err).__name__}: {str(err)[:500]}")

    def __call__(self, *args, **kwargs):
        try:
            sent = wire.to_plain([list(args), kwargs])
        except wire.NotPlainData as err:  # the test itself passes something else
            raise TypeError(f"cannot send {err} to the student's {self.name}") from None
        request = wire.Call(self.name, sent[0], sent[1], self.forbid, sorted(self.references))
        try:
            answer = self.box.request(request, callback=self._callback)
        except SandboxError as err:
            raise StudentCodeError(f"{self.name} could not be called: {err}") from None
        for category, message in answer.warnings:
            kind = getattr(builtins, category, None)
            is_warning = isinstance(kind, type) and issubclass(kind, Warning)
            warnings.warn(message, kind if is_warning else UserWarning, stacklevel=2)
        if answer.interrupted:
            raise StudentCodeError(f"{self.name}: {answer.interrupted}")
        if answer.missing:
            raise StudentCodeError(f"{self.name} is no longer defined")
        if answer.raised is not None:
            raise StudentCodeError(f"{self.name} raised {answer.raised}")
        if answer.refused is not None:
            raise WrongAnswer(
                f"{self.name} returned {answer.refused}, not plain data ({PLAIN}): "
                "counted as a wrong answer"
            )
        changed = _changed_argument(sent, answer.args_plain)
        if changed:  # our arguments stay as they were: the test's data is never the student's
            raise WrongAnswer(
                f"{self.name} changed {changed} in place; the lab's functions must leave "
                "what they are given unchanged"
            )
        if not answer.has_value:
            raise WrongAnswer(f"{self.name} sent no value")
        return answer.value


def fetch(box: Sandbox, name: str, forbid: list[str], references: dict | None = None):
    """The student's ``name`` as the grader may use it (see the module's docstring)."""
    try:
        answer = box.request(wire.Get(name))
    except SandboxError as err:
        return Unavailable(name, f"could not be read: the notebook's process stopped ({err})")
    if answer.missing:
        return Unavailable(
            name, "is not defined: did the cell that defines it run without an error?"
        )
    if answer.function:
        return StudentFunction(box, name, forbid, references or {})
    if answer.refused is not None:
        return Unavailable(
            name, f"is {answer.refused}, not plain data ({PLAIN}): counted as a wrong answer"
        )
    if not answer.has_value:
        return Unavailable(name, "was sent without a value: counted as a wrong answer")
    return answer.value


def instructor_versions(names, solutions: dict[str, str], ours: dict) -> dict:
    """The instructor's ``names``, defined on the grader's side: each one's solution cell
    run in a copy of the grader's namespace (the locked cells' imports and data)."""
    found = {}
    for name in names:
        if name in solutions:
            scratch = dict(ours)
            exec(compile(solutions[name], f"<the instructor's {name}>", "exec"), scratch)
            found[name] = scratch[name]
    return found


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


class OutputBudget:
    """Cuts what a notebook's outputs may hold, on the grader's side: each text to
    ``per_cell`` characters, all of them together to ``total``; past that, a note says what
    was dropped. The autograded notebook, the feedback and the logs are built from these
    outputs, so no file grows with what a submission prints."""

    def __init__(self, per_cell: int, total: int):
        self.per_cell, self.left = per_cell, total
        self.total, self.dropped = total, 0

    def take(self, text: str) -> str:
        """``text`` as kept: cut to what is left; "" once the notebook's budget is spent."""
        text = str(text)
        if self.left <= 0:
            self.dropped += len(text)
            return ""
        if len(text) > self.per_cell:
            self.dropped += len(text) - self.per_cell
            text = text[: self.per_cell] + "\n[... output cut: cell_output limit]"
        if len(text) > self.left:
            self.dropped += len(text) - self.left
            text = text[: self.left] + "\n[... output cut: notebook_output limit]"
        self.left -= len(text)  # below 0 by the note's length at most, once
        return text

    def stream(self, outputs: list, name: str, content: str) -> None:
        """Append a stream output with what is kept of ``content`` (nothing if nothing is)."""
        text = self.take(content)
        if text:
            outputs.append({"output_type": "stream", "name": name, "text": text})

    def error(self, err: BaseException, cell_name: str, hidden: set[str] = frozenset()) -> dict:
        """An error output; ``hidden``: the stripped lines of the cell's hidden tests, which
        no traceback line may quote (the message is kept)."""
        frames = [
            self.take(_unquoted(line, hidden))
            for line in traceback.format_exception(type(err), err, err.__traceback__)[-20:]
            if "labtools" not in line  # the grader's own frames say nothing to the student
        ]
        return {
            "output_type": "error",
            "ename": type(err).__name__,
            "evalue": self.take(str(err)[:2000]),
            "traceback": [f"in {cell_name}:", *frames],
        }


def _unquoted(frame: str, hidden: set[str]) -> str:
    """A traceback frame without the lines that quote ``hidden`` source (and the ``^``
    marks under them)."""
    kept, dropped = [], False
    for line in frame.splitlines(keepends=True):
        if line.strip() in hidden or (dropped and set(line.strip()) <= set("^~")):
            dropped = True
            continue
        kept.append(line)
        dropped = False
    return "".join(kept)


class SourceBudget:
    """What the graded notebook keeps of the student's own cells: each to ``per_cell``
    characters, all together to ``total``; an added cell past the total is left out of
    the graded notebook (it still ran). The feedback and formgrader's pages render the
    graded notebook, so neither grows with what a submission holds."""

    def __init__(self, per_cell: int, total: int):
        self.per_cell, self.left = per_cell, total
        self.cut, self.left_out = 0, 0

    def take(self, text: str) -> str:
        if len(text) > self.per_cell:
            self.cut += 1
            text = text[: self.per_cell] + "\n[... cut here: cell_source limit]"
        self.left -= len(text)
        return text

    def keeps(self, cell: notebook.Cell) -> bool:
        """Whether an added cell is kept in the graded notebook (the lab's cells always)."""
        if cell.role == "extra" and self.left <= 0:
            self.left_out += 1
            return False
        return True


def kept(cell: notebook.Cell, sources: SourceBudget) -> dict:
    """A cell as the graded notebook keeps it, before it runs: role, grade id, source (the
    student's cut to the budget), metadata, no outputs; a written answer also as ``html``,
    rendered and cleaned (:func:`labtools.render.written_html`)."""
    from labtools import render

    student = cell.role in ("answer", "written", "extra")
    source = sources.take(cell.source) if student else cell.source
    entry = {"role": cell.role, "grade_id": cell.grade_id, "source": source}
    entry["metadata"] = cell.metadata
    entry["outputs"] = []
    if cell.role in ("test", "written"):
        entry["points"] = cell.points
    if cell.role == "written":
        entry["html"] = render.written_html(source)
    return entry


def evaluate(
    source_nb: dict,
    student_nb: dict,
    limits: Limits,
    *,
    unsafe: bool = False,
    mpl_cache: Path | None = None,
    zygote=None,
    report=None,
) -> dict:
    """Grade one notebook; returns plain data (see :func:`labtools.worker.grade_task`).

    ``cells``: for every cell of the plan, its role, grade id, source, outputs and, for
    tests, ``passed`` and ``score``; ``notes``: what the instructor should know; ``stopped``:
    why the student's process stopped early, if it did. ``report``, if given, is called
    with ``{"plan": [...], "notes": [...]}`` before any cell runs and with
    ``{"cell": index, "entry": ...}`` as each is graded (:mod:`labtools.judge`).
    """
    import matplotlib.pyplot as plt

    report = report or (lambda _: None)
    started = time.monotonic()
    cells, notes = notebook.plan(source_nb, student_nb)
    sources = SourceBudget(limits.cell_source, limits.notebook_source)
    planned = [kept(cell, sources) if sources.keeps(cell) else None for cell in cells]
    report({"plan": [entry for entry in planned if entry is not None], "notes": notes})
    names = notebook.declared(source_nb)
    instructor = notebook.solutions(source_nb)
    functions = notebook.defined_functions(source_nb)
    shown_only = notebook.shown_only(cells, set(names))  # no verdict needs them run here
    ours: dict = {"__name__": "__main__"}
    graded = []
    budget = OutputBudget(limits.cell_output, limits.notebook_output)
    interrupted = []
    box = Sandbox(limits, unsafe=unsafe, mpl_cache=mpl_cache, zygote=zygote)
    with box, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for index, (cell, entry) in enumerate(zip(cells, planned, strict=True)):
            kept_cell = entry is not None  # else an added cell left out of the graded notebook
            entry = entry if kept_cell else {"outputs": []}
            label = f"cell {cell.grade_id or '(no id)'}"
            if cell.role in ("locked", "test") and index not in shown_only:
                needed = sorted(notebook.used_names(cell.source) & names.keys())
                if cell.role == "locked":  # the grader's data never comes from a student's
                    # function: a locked cell calls the instructor's (values stay the
                    # student's: they are the answers a later test may grade)
                    mine = instructor_versions(set(needed) & functions, instructor, ours)
                    ours.update(mine)
                    needed = [n for n in needed if n not in mine]
                references = instructor_versions(cell.reference, instructor, ours)
                for name in needed:
                    ours[name] = fetch(box, name, names[name], references)
                missing = [ours[n] for n in needed if isinstance(ours[n], Unavailable)]
                left = box.deadline - time.monotonic()
                out = io.StringIO()
                try:
                    if left <= 0:
                        raise TimeoutError(
                            "not run: the notebook's time limit was reached "
                            f"(notebook_seconds = {limits.notebook_seconds:g} s)"
                        )
                    if cell.role == "test" and missing:
                        missing[0]._fail()
                    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                        with time_limit(min(max(limits.cell_seconds * 4, 60), left)):
                            exec(compile(cell.source, f"<{label}>", "exec"), ours)
                    failure = None
                except Exception as err:  # noqa: BLE001 - any failure of a test is a verdict
                    failure = err
                if out.getvalue():
                    budget.stream(entry["outputs"], "stdout", out.getvalue())
                if failure is not None:
                    seen = {line.strip() for line in (cell.sandbox or "").splitlines()}
                    hidden = {line.strip() for line in cell.source.splitlines()} - seen - {""}
                    entry["outputs"].append(budget.error(failure, label, hidden))
                if cell.role == "test":
                    entry["passed"] = failure is None
                    entry["points"] = cell.points
                    entry["score"] = cell.points if failure is None else 0.0
                    entry["message"] = (
                        None
                        if failure is None
                        else f"{type(failure).__name__}: {str(failure)[:1000]}"
                    )
            if cell.sandbox and box.stopped is None:
                try:
                    answer = box.request(wire.Run(cell.sandbox))
                except SandboxError:
                    answer = None
                if answer is not None and answer.interrupted:
                    interrupted.append(cell.grade_id or "added by the student")
                if answer is not None and cell.role in ("answer", "extra"):
                    for stream in ("stdout", "stderr"):
                        if getattr(answer, stream):
                            budget.stream(entry["outputs"], stream, getattr(answer, stream))
                    if answer.interrupted:
                        budget.stream(entry["outputs"], "stderr", answer.interrupted)
            if kept_cell:
                report({"cell": len(graded), "entry": entry})
                graded.append(entry)
        stopped = box.stopped if box.stopped != "done" else None
        output = bytes(box.output[:4000]).decode(errors="replace")
    if box.note:
        notes.append(box.note)
    if interrupted:
        shown = ", ".join(interrupted[:5]) + (", ..." if len(interrupted) > 5 else "")
        notes.append(
            f"{len(interrupted)} cell(s) interrupted at the time limit "
            f"(cell_seconds = {limits.cell_seconds:g} s): {shown}"
        )
    if budget.dropped:
        notes.append(
            f"output cut, at least {budget.dropped} characters (cell_output = "
            f"{limits.cell_output}, notebook_output = {limits.notebook_output})"
        )
    if sources.cut or sources.left_out:
        notes.append(
            f"the graded notebook keeps part of the student's cells: {sources.cut} cut "
            f"(cell_source = {limits.cell_source}), {sources.left_out} added cells left out "
            f"(notebook_source = {limits.notebook_source}); they all ran; the submitted "
            "notebook has them whole"
        )
    plt.close("all")
    return {
        "cells": graded,
        "notes": notes,
        "stopped": stopped,
        "output": output,
        "seconds": round(time.monotonic() - started, 3),
    }
