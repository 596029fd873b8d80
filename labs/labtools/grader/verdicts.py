"""Grading one notebook: the student's code in the sandbox, every verdict out of its reach.

:func:`evaluate` walks the cells that :func:`labtools.grader.notebook.plan` gives, in order, with
two namespaces side by side: the student's, in a :class:`~labtools.grader.sandbox.Sandbox`, and
the grader's own, in this process, where no student code ever runs. Locked cells run in
both, except those that only show something (:func:`labtools.grader.notebook.shown_only`: no later
verdict reads what they make), which run in the sandbox only; the graded notebook shows what
the sandbox printed and drew for them, as the student's kernel would. A test cell runs here
only, after the names it reads that the student's answers define
(:func:`labtools.grader.notebook.declared`) are fetched from the sandbox: values as plain data
(:mod:`labtools.wire`), functions as :class:`StudentFunction` stand-ins whose calls go to
the sandbox with plain data and come back as plain data. A test passes when it runs to its
end here; nothing the student's code printed, patched or raised can change that.

A test cell with hidden tests is graded after the notebook's last cell has run, on a copy of
the notebook as it was at the test's place (:class:`~labtools.wire.Checkpoint`), and nothing
the sandbox prints from then on is kept: no cell of the student's runs after a hidden test
has called its functions, so nothing a hidden test passes reaches what the student sees. Its
failure is shown without values (:func:`hidden_message`); the instructor's copy of the
message (the results file, the logs) keeps them.

The rules a student can check before handing in (:mod:`perceptrons.handin`) are applied here
too: what cannot be absent from the sandbox is held for the instructor (``review``).
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

from labtools import wire
from labtools.grader import closed, notebook
from labtools.grader.limits import Limits
from labtools.grader.sandbox import Sandbox, SandboxError

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


def callbacks(box: Sandbox, references: dict, *, graded: bool):
    """What answers the student's code when it calls back during a request: the instructor's
    versions of ``references`` ({name: the instructor's function, on this side}), and the
    package functions the lab closes (:func:`labtools.grader.closed.answer`: refused when
    ``graded``, else run here). Anything else stops the sandbox (None)."""
    budget = box.limits.budget()

    def answer(call: tuple) -> wire.Reply | None:
        name = call[0]
        if closed.is_package(name):
            return closed.answer(call, budget, graded=graded, closed=closed.closed_in(box.package))
        if name not in references:
            return None
        try:
            args, kwargs = wire.decode_arguments(call, budget)
        except wire.NotPlainData as err:
            return wire.Reply(raised=f"TypeError: an argument could not be sent: {err}")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                value = references[name](*args, **kwargs)
            return wire.Reply(value=wire.to_plain(value))
        except Exception as err:  # noqa: BLE001 - the student's arguments made it fail
            return wire.Reply(raised=f"{type(err).__name__}: {str(err)[:500]}")

    return answer


class StudentFunction:
    """The student's function, called in the sandbox with plain data only. While it runs,
    the names in ``references`` ({name: the instructor's function, on this side}) stand
    for the instructor's versions: their calls come back here as callbacks; a package
    function the lab closes is refused."""

    def __init__(self, box: Sandbox, name: str, references: dict):
        self.box, self.name, self.references = box, name, references

    def __repr__(self) -> str:
        return f"<student function {self.name}>"

    def __call__(self, *args, **kwargs):
        try:
            sent = wire.to_plain([list(args), kwargs])
        except wire.NotPlainData as err:  # the test itself passes something else
            raise TypeError(f"cannot send {err} to the student's {self.name}") from None
        request = wire.Call(self.name, sent[0], sent[1], sorted(self.references))
        try:
            answer = self.box.request(
                request, callback=callbacks(self.box, self.references, graded=True)
            )
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


def fetch(box: Sandbox, name: str, references: dict | None = None):
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
        return StudentFunction(box, name, references or {})
    if answer.refused is not None:
        return Unavailable(
            name, f"is {answer.refused}, not plain data ({PLAIN}): counted as a wrong answer"
        )
    if not answer.has_value:
        return Unavailable(name, "was sent without a value: counted as a wrong answer")
    return answer.value


def _masked(words: str) -> str:
    """A check's description without the numbers in it (a hidden test's inputs may be
    among them): '[…]' for a bracketed list, '…' for a number."""
    import re

    words = re.sub(r"\[[^\]]*\]", "[…]", words[:300])
    return re.sub(r"(?<![\w.])-?\d+(?:\.\d*)?(?:e[+-]?\d+)?", "…", words)


def hidden_message(failure: BaseException) -> str:
    """A hidden test's failure as the student may read it: what the check compared, in the
    instructor's words, and which kind of thing went wrong; never a value, an input or text
    the student's code chose (its exception's message, a name it made up), which could carry
    the test's inputs out."""
    from perceptrons.testing import NotSame

    if isinstance(failure, NotSame):
        return f"{_masked(failure.what)}: not what was expected (a hidden test)"
    if isinstance(failure, StudentCodeError):
        text = str(failure)
        name = text.split(" ", 1)[0]
        if " raised " in text:  # not which: the student's code chooses the kind, and
            return f"{name} raised an exception in a hidden test"  # could say the inputs
        if "ran longer than" in text or "interrupted" in text:
            return f"{name} ran past its time limit in a hidden test"
        return f"{name} could not be called in a hidden test"
    if isinstance(failure, WrongAnswer):
        return "a hidden test got an answer it cannot use (not plain data, or changed inputs)"
    if isinstance(failure, TimeoutError):
        return "a hidden test ran past its time limit"
    return "a hidden test failed"


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

    FIGURES = 2 * 2**20  # characters of figures (PNG in base64) kept for the whole notebook

    def __init__(self, per_cell: int, total: int):
        self.per_cell, self.left = per_cell, total
        self.total, self.dropped = total, 0
        self.figures_left = self.FIGURES

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
        """An error output: the frames of the cell's own code (the grader's and the
        package's files are not named: their paths are the grader's machine's), without
        the lines that quote ``hidden`` (the stripped lines of the cell's hidden tests)."""
        frames = [
            self.take(_unquoted(line, hidden))
            for line in traceback.format_exception(type(err), err, err.__traceback__)[-20:]
            if not line.lstrip().startswith('File "/')  # a file of the grader's machine
        ]
        return {
            "output_type": "error",
            "ename": type(err).__name__,
            "evalue": self.take(str(err)[:2000]),
            "traceback": [f"in {cell_name}:", *frames],
        }

    def hidden_error(self, err: BaseException, cell_name: str) -> dict:
        """A hidden test's error output: :func:`hidden_message` only, no traceback."""
        kinds = ((AssertionError, "AssertionError"), (WrongAnswer, "WrongAnswer"))
        kinds += ((StudentCodeError, "StudentCodeError"), (TimeoutError, "TimeoutError"))
        ename = next((name for kind, name in kinds if isinstance(err, kind)), "Failed")
        return {
            "output_type": "error",
            "ename": ename,  # the grader's own kinds, never a name the student's code chose
            "evalue": self.take(hidden_message(err)),
            "traceback": [f"in {cell_name}: {hidden_message(err)}"],
        }

    def figures(self, outputs: list, images: list[str]) -> None:
        """Append the figures a cell drew (PNG images, base64), each counted in the
        notebook's output budget; an image that is not a PNG is left out."""
        import base64
        import binascii

        for image in images:
            try:
                head = base64.b64decode(image[:16], validate=True)
            except (binascii.Error, ValueError):
                continue
            if not head.startswith(b"\x89PNG\r\n\x1a\n") or len(image) > self.figures_left:
                self.dropped += len(image)
                continue
            self.figures_left -= len(image)
            outputs.append(
                {
                    "output_type": "display_data",
                    "data": {"image/png": image, "text/plain": ["<Figure>"]},
                    "metadata": {},
                }
            )


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
    rendered and cleaned (:func:`labtools.grader.render.written_html`)."""
    from labtools.grader import render

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


def _run_test(cell, entry, ours: dict, box, budget: OutputBudget, limits, *, hidden):
    """Run a test cell (or a locked cell) here, in ``ours``; its verdict into ``entry``."""
    label = f"cell {cell.grade_id or '(no id)'}"
    left = (box.deadline if box is not None else float("inf")) - time.monotonic()
    out = io.StringIO()
    needed = notebook.used_names(cell.source)
    missing = [v for k, v in ours.items() if k in needed and isinstance(v, Unavailable)]
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
    if out.getvalue() and not hidden:  # what a hidden test prints may quote its inputs
        budget.stream(entry["outputs"], "stdout", out.getvalue())
    if failure is not None:
        if hidden:
            entry["outputs"].append(budget.hidden_error(failure, label))
        else:
            seen = {line.strip() for line in (cell.sandbox or "").splitlines()}
            concealed = {line.strip() for line in cell.source.splitlines()} - seen - {""}
            entry["outputs"].append(budget.error(failure, label, concealed))
    if cell.role == "test":
        entry["passed"] = failure is None
        entry["points"] = cell.points
        entry["score"] = cell.points if failure is None else 0.0
        entry["message"] = (
            None if failure is None else f"{type(failure).__name__}: {str(failure)[:1000]}"
        )
        if hidden:
            entry["hidden"] = True


def _replay(left, cells, stop_at: int, why: str, limits, budget, sandbox_args, zygote) -> None:
    """Grade the hidden tests in ``left``, whose copy of the notebook was not there (the
    notebook's process stopped, or its own code ended the copy), in a second run of the
    cells before them, in order, as a kernel would: each test where its cell stands. The
    cell during which the first run stopped (``stop_at``) and those after it do not run
    again, and a test after it is not graded (``why``). Nothing of this run is kept but the
    tests' verdicts: not its output, not what the tests' calls left in it."""
    todo = {item[0]: item for item in left if item[0] <= stop_at}
    for index, cell, entry, namespace, _ in left:
        if index not in todo:
            gone = {
                k: Unavailable(k, f"could not be graded: {why}")
                for k, v in namespace.items()
                if isinstance(v, StudentFunction)
            }
            _run_test(cell, entry, {**namespace, **gone}, None, budget, limits, hidden=True)
    if not todo:
        return
    import dataclasses

    within = dataclasses.replace(limits, notebook_seconds=limits.tests_seconds)
    again = Sandbox(within, zygote=zygote, **sandbox_args)
    with again:
        again.output_kept = 0
        for index in range(max(todo) + 1):
            if index in todo:
                _, cell, entry, namespace, _ = todo[index]
                for value in namespace.values():
                    if isinstance(value, StudentFunction):
                        value.box = again
                _run_test(cell, entry, namespace, again, budget, limits, hidden=True)
            sandbox_part = cells[index].sandbox
            if sandbox_part and index < stop_at and again.stopped is None:
                try:
                    again.request(
                        wire.Run(sandbox_part), callback=callbacks(again, {}, graded=False)
                    )
                except SandboxError:
                    pass


def _review(cells: list[notebook.Cell], source_nb: dict) -> list[dict]:
    """What the rules name in the student's cells (:func:`perceptrons.handin.review_cells`):
    each finding as plain data. An added cell is named by its place among the cells."""
    from perceptrons import handin

    lab_own = set()  # the lab's own cells, which a notebook that lost its metadata keeps
    for cell in source_nb["cells"]:  # as cells of its own
        if cell["cell_type"] == "code" and not notebook.is_answer(cell):
            lab_own |= {notebook.text(cell).strip(), notebook.visible(cell).strip()}
    theirs = []
    for number, cell in enumerate(cells, start=1):
        if cell.role == "answer":
            theirs.append((cell.grade_id, handin.exercise_of(cell.grade_id), cell.source))
        elif cell.role == "extra" and cell.source.strip() not in lab_own:
            theirs.append((f"cell {number} (added)", None, cell.source))
    try:
        found = handin.review_cells(theirs, handin.rules(source_nb))
    except RecursionError:
        found = [handin.Finding("the notebook", 1, "code too deep to read", True, None)]
    return [
        {"cell": f.cell, "line": f.line, "what": f.what, "held": f.held, "exercise": f.exercise}
        for f in found
    ]


def _is_held(grade_id: str | None, held: set) -> bool:
    from perceptrons.handin import exercise_of

    return bool(held) and (None in held or exercise_of(grade_id) in held)


def _not_installed(error: str | None) -> str | None:
    """One line for a cell that imported what the grading environment does not have."""
    import re

    found = re.match(r"ModuleNotFoundError: No module named '([\w.]+)'", error or "")
    if not found:
        return None
    return (
        f"{found[1].split('.')[0]} is not in the grading environment: a lab's code may use "
        "numpy, matplotlib, Python's standard library and the package (the lab's Rules)\n"
    )


def evaluate(
    source_nb: dict,
    student_nb: dict,
    limits: Limits,
    *,
    package: Path | None = None,
    unsafe: bool = False,
    mpl_cache: Path | None = None,
    zygote=None,
    report=None,
) -> dict:
    """Grade one notebook; returns plain data (see :func:`labtools.grader.worker.grade_task`).

    ``cells``: for every cell of the plan, its role, grade id, source, outputs and, for
    tests, ``passed`` and ``score``; ``notes``: what the instructor should know; ``stopped``:
    why the student's process stopped early, if it did; ``review``: what the rules name in
    the student's cells (:mod:`perceptrons.handin`). ``package``: the lab's copy of the
    package (:func:`labtools.grader.closed.package_for`), for a notebook without a warm parent.
    ``report``, if given, is called with ``{"plan": [...], "notes": [...]}`` before any cell
    runs and with ``{"cell": index, "entry": ...}`` as each is graded
    (:mod:`labtools.grader.judge`).
    """
    import matplotlib.pyplot as plt

    report = report or (lambda _: None)
    started = time.monotonic()
    cells, notes = notebook.plan(source_nb, student_nb)
    sources = SourceBudget(limits.cell_source, limits.notebook_source)
    planned = [kept(cell, sources) if sources.keeps(cell) else None for cell in cells]
    report({"plan": [entry for entry in planned if entry is not None], "notes": notes})
    position, count = {}, 0
    for index, entry in enumerate(planned):
        if entry is not None:
            position[index], count = count, count + 1
    review = _review(cells, source_nb)
    held = {f["exercise"] for f in review if f["held"]}
    held_note = "".join(
        f"held for the instructor's review (its automatic points wait): {f['cell']}, line "
        f"{f['line']}: {f['what']}\n"
        for f in review
        if f["held"]
    )
    names = notebook.declared(source_nb)
    instructor = notebook.solutions(source_nb)
    functions = notebook.defined_functions(source_nb)
    shown_only = notebook.shown_only(cells, set(names))  # no verdict needs them run here
    ours: dict = {"__name__": "__main__"}
    budget = OutputBudget(limits.cell_output, limits.notebook_output)
    interrupted = []
    deferred = []  # the hidden tests: (index, cell, entry, namespace, copy of the notebook)
    if package is None and zygote is None:
        package = closed.package_for(closed.lab_allow(source_nb))
    box = Sandbox(limits, package=package, unsafe=unsafe, mpl_cache=mpl_cache, zygote=zygote)
    stop_at = len(cells)  # the cell during which the sandbox stopped, if it did
    time_up = None  # the first cell not run: the notebook's time was up
    with box, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for index, (cell, entry) in enumerate(zip(cells, planned, strict=True)):
            if box.stopped is not None and stop_at == len(cells):
                stop_at = index - 1  # (it stopped during the cell before: that one ran last)
            kept_cell = entry is not None  # else an added cell left out of the graded notebook
            entry = entry if kept_cell else {"outputs": []}
            hidden = cell.role == "test" and notebook.visible({"source": cell.source}).strip() != (
                cell.source.strip()
            )
            if time_up is None and box.stopped is None and time.monotonic() >= box.deadline:
                time_up = index  # the cells from here on do not run (the hidden tests do)
            if time_up is not None:
                if cell.role == "test":
                    _run_test(cell, entry, {}, box, budget, limits, hidden=hidden)
                if kept_cell:
                    report({"cell": position[index], "entry": entry})
                continue
            if cell.role in ("locked", "test") and index not in shown_only:
                needed = sorted(notebook.used_names(cell.source) & set(names))
                if cell.role == "locked":  # the grader's data never comes from a student's
                    # function: a locked cell calls the instructor's (values stay the
                    # student's: they are the answers a later test may grade)
                    mine = instructor_versions(set(needed) & functions, instructor, ours)
                    ours.update(mine)
                    needed = [n for n in needed if n not in mine]
                references = instructor_versions(cell.reference, instructor, ours)
                for name in needed:
                    ours[name] = fetch(box, name, references)
                if hidden:  # graded after the last cell, on a copy of the notebook as it is now
                    copy = None
                    if box.stopped is None:
                        try:
                            answer = box.request(wire.Checkpoint())
                            copy = answer.value if answer.has_value else None
                        except SandboxError:
                            copy = None
                    deferred.append((index, cell, entry, dict(ours), copy))
                else:
                    _run_test(cell, entry, ours, box, budget, limits, hidden=False)
                    if cell.role == "locked":
                        entry["outputs"] = []  # what the student's kernel shows: the sandbox's
            if cell.sandbox and box.stopped is None:
                request = wire.Run(cell.sandbox, figures=cell.role == "locked")
                try:
                    answer = box.request(request, callback=callbacks(box, {}, graded=False))
                except SandboxError:
                    answer = None
                if answer is not None and answer.interrupted:
                    interrupted.append(cell.grade_id or "added by the student")
                if answer is not None and cell.role in ("answer", "extra", "locked"):
                    for stream in ("stdout", "stderr"):
                        if getattr(answer, stream):
                            budget.stream(entry["outputs"], stream, getattr(answer, stream))
                    missing = _not_installed(answer.error)
                    if missing:
                        budget.stream(entry["outputs"], "stderr", missing)
                    if answer.interrupted:
                        budget.stream(entry["outputs"], "stderr", answer.interrupted)
                    if cell.role == "locked" and answer.error:
                        budget.stream(entry["outputs"], "stderr", answer.error)
                    budget.figures(entry["outputs"], answer.figures)
            if cell.role == "test" and _is_held(cell.grade_id, held):
                budget.stream(entry["outputs"], "stderr", held_note)
            if kept_cell and not (cell.role == "test" and hidden):
                report({"cell": position[index], "entry": entry})
        if box.stopped is not None and stop_at == len(cells):
            stop_at = len(cells) - 1
        # the hidden tests: every cell of the notebook has run, and nothing the sandbox
        # prints from now on is kept; they have a time of their own
        box.output_kept = len(box.output)
        box.deadline = time.monotonic() + limits.tests_seconds
        if time_up is not None:
            stop_at = min(stop_at, time_up - 1)  # (a second run goes no further)
            timed_out = (
                "the notebook ran longer than its time limit "
                f"(notebook_seconds = {limits.notebook_seconds:g} s)"
            )
        left = []  # the hidden tests whose copy of the notebook was not there
        for item in deferred:
            index, cell, entry, namespace, copy = item
            resumed = False
            if copy is not None and box.stopped is None:
                try:
                    resumed = box.request(wire.Resume(copy)).error is None
                except SandboxError:
                    pass
            if not resumed:
                left.append(item)
                continue
            _run_test(cell, entry, namespace, box, budget, limits, hidden=True)
            if box.stopped is None:
                try:
                    box.request(wire.Release())
                except SandboxError:
                    pass
            if index in position:
                report({"cell": position[index], "entry": entry})
        if left:  # graded in a second run of the cells before them (see _replay)
            sandbox_args = {"package": package, "unsafe": unsafe, "mpl_cache": mpl_cache}
            why = box.stopped or "its copy of the notebook was gone"
            _replay(left, cells, stop_at, why, limits, budget, sandbox_args, zygote)
            for index, _, entry, _, _ in left:
                if index in position:
                    report({"cell": position[index], "entry": entry})
        stopped = box.stopped if box.stopped != "done" else None
        if time_up is not None and stopped is None:
            stopped = timed_out
        output = bytes(box.output[:4000]).decode(errors="replace")
    graded = [entry for entry in planned if entry is not None]
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
        "review": review,
        "seconds": round(time.monotonic() - started, 3),
    }
