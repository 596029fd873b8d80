"""Shortcuts earn nothing and correct answers written another way earn every point, in
every lab, through the real grader (issues 29 and 38; decision record
``write-it-yourself-by-construction``). A shortcut earns nothing when its exercise's tests
fail (what it uses is not in the sandbox, or refused there) or when the exercise is held for
the instructor's review (its automatic points are not given); an alternative is never held.

The families are in tests/families.py, one entry per solution code cell of every lab. They
are packed the way the null answers are (tests/labs/test_null_answers.py, whose helpers this
module uses): notebook ``short{g}-{k}`` gives every exercise of dependency group g that has
shortcuts its k-th shortcut (a shorter list starts again) and the instructor's answers
elsewhere; notebook ``alt-{k}`` gives every solution cell its k-th alternative. So a lab
needs as many notebooks as its longest lists, all graded in one ``grade`` call. Expected,
exactly: in a shortcut notebook, 0 on every test of the exercises made shortcuts and every
point on the others; in an alternatives notebook, every point on every test.
"""

from __future__ import annotations

import json
import time

import pytest
from _helpers import answered, course_made, graded_cold, need_sandbox, sandbox_lock, scores
from families import FAMILIES
from labtools import grade
from labtools.door import layout
from labtools.grader import notebook
from labtools.wire import Status
from test_null_answers import (
    LABS,
    LIMITS,
    exercise,
    groups,
    instructor_code,
    solution_cells,
    source_nb,
)


def plant(folder) -> dict:
    """Write the family notebooks; returns {(student, lab): (checked exercises, labels)}:
    the exercises whose tests must score 0 (empty for an alternatives notebook)."""
    written = {}
    for lab in layout.lab_names(LABS):
        nb, family = source_nb(lab), FAMILIES[lab]
        plans = []
        for g, group in enumerate(groups(nb)):
            short = {
                gid: list(f["shortcuts"].items())
                for gid, f in family.items()
                if "shortcuts" in f and exercise(gid) in group
            }
            for k in range(max((len(s) for s in short.values()), default=0)):
                chosen = {gid: s[k % len(s)] for gid, s in short.items()}
                plans.append((f"short{g}-{k}", chosen, {exercise(gid) for gid in short}))
        alts = {gid: list(f["alternatives"].items()) for gid, f in family.items()}
        for k in range(max(len(a) for a in alts.values())):
            plans.append((f"alt-{k}", {gid: a[k % len(a)] for gid, a in alts.items()}, set()))
        for student, chosen, checked in plans:
            nb_answered = answered(lab, {gid: src for gid, (_, src) in chosen.items()}, LABS)
            path = folder / student / lab / f"{lab}.ipynb"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(nb_answered))
            labels = {exercise(gid): label for gid, (label, _) in chosen.items()}
            written[(student, lab)] = (checked, labels)
    return written


@pytest.fixture(scope="module")
def family_grades(tmp_path_factory):
    """Every family notebook of every lab graded once, in one run."""
    need_sandbox()
    tmp = tmp_path_factory.mktemp("families")
    planted = plant(tmp / "submitted")
    start = time.monotonic()
    with sandbox_lock():  # a module fixture: made before the test's own hold of the lock
        summary = grade.grade(
            tmp, course_made(tmp / "course"), jobs=2, limits=LIMITS, progress=False, feedback=False
        )
        # the reference path, a fresh sandbox per notebook: the same scores, every one
        cold = graded_cold(tmp, tmp / "cold", LIMITS)
    print(f"\n{len(planted)} family notebooks graded twice in {time.monotonic() - start:.0f} s")
    rows = {(row.student, row.lab): row for row in summary["graded"]}
    return planted, rows, (scores(summary), scores(cold))


@pytest.mark.slow
def test_the_warm_and_the_cold_start_give_every_family_notebook_the_same_scores(family_grades):
    planted, _, (warm, cold) = family_grades
    assert set(warm) == set(cold) == set(planted)
    assert {k: (v, cold[k]) for k, v in warm.items() if cold[k] != v} == {}


def test_every_solution_code_cell_has_its_family():
    """At least three shortcuts (or the reason there is none) and two alternatives for every
    solution code cell of every lab; no family for a cell that does not exist."""
    for lab in layout.lab_names(LABS):
        cells = solution_cells(source_nb(lab))
        ids = {notebook.grade_id(c) for c in cells if c["cell_type"] == "code"}
        assert set(FAMILIES[lab]) == ids, lab
        for gid, family in FAMILIES[lab].items():
            assert len(family["alternatives"]) >= 2, f"{lab} {gid}"
            assert ("no_shortcut" in family) != (len(family.get("shortcuts", {})) >= 3), (
                f"{lab} {gid}: three shortcuts or the reason there is none"
            )


@pytest.mark.slow  # grades every family notebook of every lab in the sandbox: a minute
@pytest.mark.parametrize("lab", layout.lab_names(LABS))
def test_shortcuts_earn_nothing_and_alternatives_every_point(family_grades, lab):
    planted, rows, _ = family_grades
    wrong = []
    for (student, lab_of), (checked, labels) in planted.items():
        if lab_of != lab:
            continue
        row = rows[(student, lab)]
        assert row.status is Status.GRADED, (student, row.text)
        assert row.tests, student
        for test, verdict in row.tests.items():
            ex = exercise(test)
            want = 0.0 if ex in checked else verdict["points"]
            given = 0.0 if verdict.get("held") else verdict["score"]
            if given != want:
                label = labels.get(ex, "the instructor's answer")
                wrong.append(
                    f'{student} "{label}": {test} earned {verdict["score"]} of '
                    f"{verdict['points']}, expected {want} ({verdict['message']})"
                )
    assert not wrong, "\n".join(wrong)


def lab_namespace(lab: str, monkeypatch) -> tuple[dict, dict]:
    """The lab run in this process with the instructor's answers (sliders not drawn):
    (source notebook, namespace after its last cell)."""
    import matplotlib.pyplot as plt

    from perceptrons import widgets

    monkeypatch.setattr(widgets, "slider_panel", lambda *args, **kwargs: None)
    nb, ns = source_nb(lab), {"__name__": "__main__"}
    for cell in nb["cells"]:
        if cell["cell_type"] == "code" and not notebook.is_test(cell):
            exec(compile(instructor_code(cell), f"<{lab} {notebook.grade_id(cell)}>", "exec"), ns)
            plt.close("all")
    return nb, ns


@pytest.mark.slow  # runs every lab in this process: half a minute
@pytest.mark.parametrize("lab", layout.lab_names(LABS))
def test_every_shortcut_is_real_when_nothing_forbids_it(monkeypatch, lab):
    """The control of the shortcuts' zero: run here, with nothing forbidden, each shortcut
    passes every test of its exercise (so the grader's 0 is the forbid's doing), except
    those that the tests of the idea catch (``caught_by_tests``), which fail one here too."""
    import warnings

    nb, ns = lab_namespace(lab, monkeypatch)
    tests = {}
    for cell in nb["cells"]:
        if notebook.is_test(cell) and notebook.nbgrader(cell).get("points"):
            tests.setdefault(exercise(notebook.grade_id(cell)), []).append(notebook.text(cell))
    wrong = []
    for gid, family in FAMILIES[lab].items():
        caught = family.get("caught_by_tests", set())
        for label, source in family.get("shortcuts", {}).items():
            scratch = dict(ns)
            failed = None
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    exec(compile(source, f"<{label}>", "exec"), scratch)
                    for test in tests[exercise(gid)]:
                        exec(compile(test, f"<{gid} test>", "exec"), scratch)
            except Exception as err:  # noqa: BLE001 - a failed test, whatever it raised
                failed = f"{type(err).__name__}: {str(err)[:200]}"
            if (failed is not None) != (label in caught):
                wrong.append(f"{gid} {label}: {failed or 'passed every test'}")
    assert not wrong, "\n".join(wrong)
