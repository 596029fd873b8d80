"""Answers that do no work earn nothing, in every lab, through the real grader.

Generated from the lab sources, so a new lab is covered without anyone writing plants: for
every solution code cell of every lab (nbgrader ``solution: true``), a family of answers
that compute nothing:

- ``None``; empty arrays of shape (0,), (0, k) and (0, 0, 0), where k is the length of
  the last axis of the instructor's result (the shape that broadcasts against it); an empty
  tuple and an empty list;
- zeros and ones of the shape of the instructor's result (each function runs the
  instructor's code on its arguments, in a private namespace, and answers
  ``zeros_like``/``ones_like`` of that result, item by item for a tuple or a dict);
- for functions, the first argument returned unchanged; a function that raises (for value
  cells: a cell that raises before it assigns anything);
- every number and list of numbers written in the exercise's visible tests (read with
  ``ast``; a number inside a written list only as part of it), returned or assigned as
  the answer.

A function cell gets the null answer as every function it defines; a value cell assigns
it to every name it defines. Each answer must earn 0 on its exercise (a test belongs to
exercise ``ex3`` when its grade id starts with ``ex3-``).

Cost: the answers are packed. Notebook j of a lab gives every solution cell its j-th null
answer (a cell with fewer answers starts its list again), so a lab needs as many notebooks
as its longest list, not one per cell and answer, and each must score exactly 0 on the
exercises it makes null. That is as strong as grading one cell at a time when the tests of
an exercise read, directly or through what the cells before them computed, only names that
the exercise's own solution cells define: a test calls the student's function with the
instructor's versions of the names in its ``grading.reference``, and a null answer calls no
student name, so then an exercise's score depends on its own answer alone, whatever the
other cells hold. :func:`dependencies` finds, statement by statement, the exercises whose
tests read another exercise's answer (Lab 6's data are made with the student's `taps`);
:func:`groups` splits the exercises so that none is null together with one it reads, and
each group gets its own notebooks, with the instructor's answers in the other cells.
"""

from __future__ import annotations

import ast
import json
import time
from pathlib import Path

import pytest
from _helpers import (
    ROOT,
    answered,
    course_made,
    need_sandbox,
    sandbox_lock,
)
from labtools import grade
from labtools.door import layout
from labtools.grader import notebook
from labtools.grader.limits import Limits
from labtools.wire import Status

LABS = ROOT / "labs"
LIMITS = Limits(cell_seconds=10.0)
# the module fixture grades about 150 notebooks once (it graded them twice, warm and cold,
# until the cold start became the same code as the warm one: issue 38)
pytestmark = pytest.mark.timeout(1500)


# What every null cell defines first (idempotent): the instructor's versions, kept apart from
# the student's namespace, and the maps from a result to zeros or ones of its shape.
PRELUDE = '''import numpy as _null_np
_NULL_REF = globals().setdefault("_NULL_REF", {})


def _null_fill(value, x):
    """`value` with every number replaced by x (0 or 1), shapes and types kept."""
    if isinstance(value, bool | _null_np.bool_):
        return bool(x)
    if isinstance(value, int | float | _null_np.number):
        return type(value)(x)
    if isinstance(value, _null_np.ndarray):
        return _null_np.full_like(value, x)
    if isinstance(value, tuple | list):
        return type(value)(_null_fill(v, x) for v in value)
    if isinstance(value, dict):
        return {k: _null_fill(v, x) for k, v in value.items()}
    return value


def _null_last(value):
    """The length of the last axis of the instructor's result (1 for a number)."""
    shape = _null_np.shape(value)
    return shape[-1] if shape else 1


def _null_copied(value):
    """A copy of value's arrays, lists, tuples and dicts (numpy and built-ins only: what a
    graded function may use, labtools.reach)."""
    if isinstance(value, _null_np.ndarray):
        return value.copy()
    if isinstance(value, list | tuple):
        return type(value)(_null_copied(v) for v in value)
    if isinstance(value, dict):
        return {k: _null_copied(v) for k, v in value.items()}
    return value


def _null_ref(name, args, kwargs):
    """The instructor's result for these arguments (on copies: nothing changes)."""
    return _NULL_REF[name](*_null_copied(args), **_null_copied(kwargs))
'''

# The null answers: (label, expression for a function's return value (args, kwargs and
# name are in scope), expression for a value (name is in scope)); None: not for that kind.
NULLS = [
    ("None", "None", "None"),
    ("empty (0,)", "_null_np.zeros((0,))", "_null_np.zeros((0,))"),
    (
        "empty (0, k)",
        "_null_np.zeros((0, _null_last(_null_ref(name, args, kwargs))))",
        "_null_np.zeros((0, _null_last(_NULL_REF[name])))",
    ),
    ("empty (0, 0, 0)", "_null_np.zeros((0, 0, 0))", "_null_np.zeros((0, 0, 0))"),
    ("empty tuple", "()", "()"),
    ("empty list", "[]", "[]"),
    ("zeros", "_null_fill(_null_ref(name, args, kwargs), 0)", "_null_fill(_NULL_REF[name], 0)"),
    ("ones", "_null_fill(_null_ref(name, args, kwargs), 1)", "_null_fill(_NULL_REF[name], 1)"),
    ("first argument", "args[0] if args else None", None),
    ("raises", "RAISE", "RAISE"),
]


def exercise(grade_id: str | None) -> str:
    return (grade_id or "").split("-")[0]


def source_nb(lab: str) -> dict:
    return json.loads((LABS / "source" / lab / f"{lab}.ipynb").read_text())


def instructor_code(cell: dict) -> str:
    lines = notebook.text(cell).splitlines(keepends=True)
    return "".join(line for line in lines if "### " not in line)


def solution_cells(nb: dict) -> list[dict]:
    return [c for c in nb["cells"] if c["cell_type"] == "code" and notebook.is_answer(c)]


def functions_of(code: str) -> set[str]:
    tree = ast.parse(code)
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


def _number(node) -> float | int | None:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        inner = _number(node.operand)
        if inner is not None:
            return -inner if isinstance(node.op, ast.USub) else inner
    return None


def written_numbers(code: str) -> list:
    """Every number and list of numbers written in `code`, each once, in the order they
    appear (a list of lists when every row is a list of numbers of one length). A number
    written inside such a list is part of that list's value, not a value of its own: a
    student who copies an expected value copies it as the test writes it, and the numbers
    inside a list are mostly arguments or entries of an expected array (a tuple of
    arguments and expected values, ``([0.0, 1.0], 2 / 3)``, is not such a list, so its
    numbers count one by one)."""
    found, seen, inside = [], set(), set()
    for node in ast.walk(ast.parse(code)):
        if id(node) in inside:
            continue
        value = _number(node)
        if value is None and isinstance(node, ast.List | ast.Tuple) and node.elts:
            items = [_number(e) for e in node.elts]
            rows = [[_number(x) for x in e.elts] for e in node.elts if isinstance(e, ast.List)]
            if all(i is not None for i in items):
                value = items
            elif len(rows) == len(node.elts) and all(None not in r for r in rows):
                value = rows if len({len(r) for r in rows}) == 1 else None
        if value is None:
            continue
        # what it is made of (the 0.5 of -0.5, the 1.2 of [0.65, 1.2]) is not a value
        inside.update(id(n) for n in ast.walk(node) if n is not node)
        if repr(value) not in seen:
            seen.add(repr(value))
            found.append(value)
    return found


def constants(nb: dict, ex: str) -> list:
    """The numbers and lists of numbers written in the visible part of the exercise's tests
    (:func:`written_numbers`), each once (lists as numpy arrays, as a student would
    return)."""
    found = {}  # by repr, as written_numbers tells them apart: 1 and 1.0 are two answers
    for cell in nb["cells"]:
        if notebook.is_test(cell) and exercise(notebook.grade_id(cell)) == ex:
            for value in written_numbers(notebook.visible(cell)):
                found.setdefault(repr(value), value)
    return list(found.values())


def nulls_for(nb: dict, cell: dict) -> list[tuple[str, str]]:
    """(label, cell source) of every null answer for one solution cell."""
    code = instructor_code(cell)
    names = notebook.assigned_names(code)
    funcs = functions_of(code)
    values = [n for n in names if n not in funcs]
    keep = f"""
_null_ns = dict(globals())
_null_ns.update(_NULL_REF)
exec({code!r}, _null_ns)  # the instructor's answer, in a namespace of its own
_NULL_REF.update({{n: _null_ns[n] for n in {names!r} if n in _null_ns}})
"""
    family = [(label, f, v) for label, f, v in NULLS]
    for value in constants(nb, exercise(notebook.grade_id(cell))):
        literal = f"_null_np.array({value!r})" if isinstance(value, list) else repr(value)
        family.append((f"constant {value!r}", literal, literal))
    answers = []
    for label, for_function, for_value in family:
        if (funcs and for_function is None) or (values and for_value is None):
            continue
        body = [PRELUDE, keep]
        if "RAISE" in (for_function, for_value):
            body.append('raise RuntimeError("a null answer that raises")\n')
        else:
            for name in sorted(funcs):
                body.append(
                    f"\ndef {name}(*args, **kwargs):\n"
                    f"    name = {name!r}\n"
                    f"    return {for_function}\n"
                )
            for name in values:
                body.append(f"name = {name!r}\n{name} = {for_value}\n")
        answers.append((label, "".join(body)))
    return answers


def _targets(node) -> set[str]:
    """Names a target binds (a, (a, b), a[i] binds nothing new: a's value changes)."""
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.Tuple | ast.List):
        return set().union(*(_targets(e) for e in node.elts)) if node.elts else set()
    if isinstance(node, ast.Starred):
        return _targets(node.value)
    if isinstance(node, ast.Subscript | ast.Attribute):  # changes the object: it depends too
        return _targets(node.value)
    return set()


def _flow(statements, made: dict, declared: set, context: frozenset, reads: set) -> None:
    """What each name depends on after ``statements``: made[name] is the set of declared
    names behind its value; ``reads`` collects every declared name read on the way."""

    def behind(node) -> frozenset:
        loads = notebook.loaded_names(node) if node is not None else set()
        found = set(context) | (loads & declared)
        for name in loads & made.keys():
            found |= made[name]
        reads.update(found)
        return frozenset(found)

    def bind(names, value) -> None:
        for name in names - declared:
            made[name] = value

    for st in statements:
        if isinstance(st, ast.For | ast.AsyncFor):
            bind(_targets(st.target), behind(st.iter))
            for _ in range(2):  # what one pass assigns reaches the next
                _flow(st.body, made, declared, context | behind(st.iter), reads)
            _flow(st.orelse, made, declared, context, reads)
        elif isinstance(st, ast.While | ast.If):
            inner = context | behind(st.test)
            for _ in range(2 if isinstance(st, ast.While) else 1):
                _flow(st.body, made, declared, inner, reads)
            _flow(st.orelse, made, declared, inner, reads)
        elif isinstance(st, ast.With | ast.AsyncWith):
            for item in st.items:
                value = behind(item.context_expr)
                if item.optional_vars is not None:
                    bind(_targets(item.optional_vars), value)
            _flow(st.body, made, declared, context, reads)
        elif isinstance(st, ast.Try):
            for part in (st.body, *(h.body for h in st.handlers), st.orelse, st.finalbody):
                _flow(part, made, declared, context, reads)
        elif isinstance(st, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bind({st.name}, behind(st))  # what it reads when it is called
        elif isinstance(st, ast.Import | ast.ImportFrom):
            bind({(a.asname or a.name).split(".")[0] for a in st.names}, frozenset(context))
        elif isinstance(st, ast.Assign):
            value = behind(st.value)
            for target in st.targets:
                bind(_targets(target), value | behind(target))
        elif isinstance(st, ast.AugAssign | ast.AnnAssign):
            value = behind(st.value) | behind(st.target)
            bind(_targets(st.target), value)
        else:  # expressions, asserts, raise, del, ...
            behind(st)


def depends(nb: dict) -> dict[str, set[str]]:
    """For each test cell, the names of solution cells that it reads, directly or through
    what the locked and test cells before it computed from them. A test's calls of a
    student's function run with the instructor's versions of the names in its
    ``grading.reference``, and no null answer calls a student's name, so what the function
    itself reads does not count; what the test reads does."""
    declared = set(notebook.declared(nb))
    made: dict[str, frozenset] = {}
    found = {}
    for cell in nb["cells"]:
        if cell["cell_type"] != "code" or notebook.is_answer(cell):
            continue
        reads: set[str] = set()
        _flow(ast.parse(notebook.text(cell)).body, made, declared, frozenset(), reads)
        if notebook.is_test(cell):
            found[notebook.grade_id(cell)] = reads
    return found


def dependencies(nb: dict) -> dict[str, set[str]]:
    """For each exercise, the other exercises whose answers its tests read."""
    owner = {}
    for cell in solution_cells(nb):
        for name in notebook.assigned_names(instructor_code(cell)):
            owner[name] = exercise(notebook.grade_id(cell))
    found: dict[str, set[str]] = {exercise(notebook.grade_id(c)): set() for c in solution_cells(nb)}
    for test, names in depends(nb).items():
        found.setdefault(exercise(test), set()).update(
            owner[n] for n in names if owner[n] != exercise(test)
        )
    return found


def groups(nb: dict) -> list[list[str]]:
    """The exercises split into groups that may be null together: no exercise in a group
    reads another's answer (greedy colouring of the dependency graph). One group, all the
    exercises, when no test reads another exercise's answer."""
    needs = dependencies(nb)
    found: list[list[str]] = []
    for ex in sorted(needs):
        for group in found:
            if not any(ex in needs[f] or f in needs[ex] for f in group):
                group.append(ex)
                break
        else:
            found.append([ex])
    return found


def plant(folder: Path) -> dict:
    """Write the null notebooks; returns {(student, lab): (exercises checked, {exercise:
    label of its null answer})}."""
    written = {}
    for lab in layout.lab_names(LABS):
        nb = source_nb(lab)
        family = {notebook.grade_id(c): nulls_for(nb, c) for c in solution_cells(nb)}
        plans = []
        for k, group in enumerate(groups(nb)):  # every cell of the group null, the rest answered
            cells = {gid: f for gid, f in family.items() if exercise(gid) in group}
            for j in range(max(len(f) for f in cells.values())):
                chosen = {gid: f[j % len(f)] for gid, f in cells.items()}
                plans.append((f"null{k}-{j:02d}", chosen, set(group)))
        for student, chosen, checked in plans:
            nb = answered(lab, {gid: src for gid, (_, src) in chosen.items()}, LABS)
            path = folder / student / lab / f"{lab}.ipynb"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(nb))
            labels = {exercise(gid): label for gid, (label, _) in chosen.items()}
            written[(student, lab)] = (checked, labels)
    return written


@pytest.fixture(scope="module")
def null_grades(tmp_path_factory):
    """Every null notebook of every lab graded once: [(lab, 'notebook "null answer"', test
    id, score)] for each test of a null exercise that earned points."""
    need_sandbox()
    tmp = tmp_path_factory.mktemp("nulls")
    planted = plant(tmp / "submitted")
    start = time.monotonic()
    with sandbox_lock():  # a module fixture: made before the test's own hold of the lock
        # scores only: no feedback files (a fifth of a notebook's cost), left for later
        summary = grade.grade(
            tmp, course_made(tmp / "course"), jobs=2, limits=LIMITS, progress=False, feedback=False
        )
        seconds = time.monotonic() - start
    # (warm only: the cold start makes each notebook's process with the same code,
    # test_warm_start.py compares what a notebook sees of either, and the planted class and
    # the answer families are graded both ways)
    earned, statuses = [], {}
    for row in summary["graded"]:
        checked, labels = planted[(row.student, row.lab)]
        statuses[(row.student, row.lab)] = row.status, row.text
        for test, verdict in (row.tests or {}).items():
            ex = exercise(test)
            if verdict["score"] and (checked is None or ex in checked):
                earned.append(
                    (
                        row.lab,
                        f'{row.student} "{labels.get(ex, "?")}"',
                        test,
                        verdict["score"],
                    )
                )
    print(f"\n{len(planted)} null notebooks graded in {seconds:.0f} s")
    feedback = sorted((tmp / "course" / "feedback").rglob("*.html"))
    return {
        "earned": earned,
        "planted": planted,
        "statuses": statuses,
        "seconds": seconds,
        "feedback": feedback,
        "course": tmp / "course",
    }


def test_the_family_is_generated_for_every_solution_cell():
    for lab in layout.lab_names(LABS):
        nb = source_nb(lab)
        for cell in solution_cells(nb):
            labels = [label for label, _ in nulls_for(nb, cell)]
            assert {"None", "empty (0,)", "zeros", "ones", "raises"} <= set(labels), lab
            if functions_of(instructor_code(cell)):
                assert "first argument" in labels
    lab2 = source_nb("lab2_convergence")
    ex1 = next(c for c in solution_cells(lab2) if notebook.grade_id(c) == "ex1-code")
    assert "constant 1.25" in [label for label, _ in nulls_for(lab2, ex1)]


def test_written_numbers_are_whole_lists_and_the_numbers_written_alone():
    code = (
        "assert np.allclose(f([0.5, -1], 0.1), [[0.65, 1.2], [0.0, -0.8]])\n"
        "for w, expected in (([0.0, 1.0], 2 / 3), ([-0.5, 1.0], 1.0)):\n"
        "    assert abs(g(w) - expected) < 1e-9\n"
        "assert h(3) == -0.5"
    )
    assert written_numbers(code) == [
        [[0.65, 1.2], [0.0, -0.8]],  # in the order ast.walk meets them (breadth first)
        -0.5,
        [0.5, -1],
        0.1,
        [0.0, 1.0],
        [-0.5, 1.0],
        1.0,
        1e-09,
        3,
        2,  # of 2 / 3
    ]


def test_an_exercise_that_reads_another_exercises_answer_is_found():
    nb = source_nb("lab1_perceptron")
    assert groups(nb) == [["ex1", "ex2", "ex3", "ex5"]]  # train's tests use our pt_step
    for cell in nb["cells"]:
        if notebook.grade_id(cell) == "ex3-visible":
            cell["metadata"]["grading"] = {}
            cell["source"] += "\nassert pt_step is not None"  # reads ex1's answer itself
    assert dependencies(nb)["ex3"] == {"ex1"}
    assert groups(nb) == [["ex1", "ex2", "ex5"], ["ex3"]]


@pytest.mark.slow  # grades every null answer of every lab in the sandbox: minutes
@pytest.mark.parametrize("lab", layout.lab_names(LABS))
def test_null_answers_earn_nothing(null_grades, lab):
    ungraded = [
        (k, text) for k, (s, text) in null_grades["statuses"].items() if s is not Status.GRADED
    ]
    assert not ungraded, ungraded
    assert {k for k in null_grades["planted"]} == set(null_grades["statuses"])
    earned = [e for e in null_grades["earned"] if e[0] == lab]
    assert not earned, "\n".join(
        f"{lab} {null}: {test} earned {score}" for _, null, test, score in earned
    )


@pytest.mark.slow  # reads the null notebooks' run
def test_a_run_without_feedback_leaves_it_to_the_feedback_job(null_grades):
    """`grade --no-feedback` (feedback=False, as the null answers are graded) writes no
    feedback file; the feedback job writes them afterwards, one per graded notebook."""
    from labtools.out.feedback import generate_feedback

    assert null_grades["feedback"] == []
    lab = "lab1_perceptron"
    graded = [k for k, (s, _) in null_grades["statuses"].items() if k[1] == lab]
    assert generate_feedback(null_grades["course"], [lab], missing_only=True) == len(graded)
    for student, _ in graded:
        assert (null_grades["course"] / "feedback" / student / lab / f"{lab}.html").exists()
