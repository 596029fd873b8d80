"""The grader's side of a notebook under limits: what a student controls reaches the
grader's tests, the rendering and the feedback only within time and memory that a C call
cannot outlive (labtools.grader.judge), and nothing secret reaches the sandbox.

Each test here is one family of the round-4 red team's findings (../shared/reviews/round4/
redteam.md), graded through labtools.grader.worker.grade_task, as a worker of a grading run does.
"""

import json
import time
from dataclasses import asdict

import numpy as np
import pytest
from _helpers import ROOT, answered, need_sandbox, sandbox_lock
from labtools import wire
from labtools.grader import render, sandbox, verdicts, worker
from labtools.grader.limits import Limits

LABS = ROOT / "labs"


def source_of(lab):
    return json.loads((LABS / "source" / lab / f"{lab}.ipynb").read_text())


def grade(lab, nb, source=None, **limits):
    need_sandbox()
    task = wire.Task(
        student="s",
        lab=lab,
        source=source or source_of(lab),
        notebook=json.dumps(nb),
        limits=asdict(Limits(**{"cell_seconds": 10, **limits})),
    )
    started = time.monotonic()
    with sandbox_lock():
        outcome = worker.grade_task(task)
    return outcome, time.monotonic() - started


def scores(outcome):
    return {e["grade_id"]: e["score"] for e in outcome.evaluation["cells"] if e["role"] == "test"}


def test_lab6_grader_data_never_comes_from_the_students_function():
    """Finding 2: Lab 6's locked cell `data` kept `X = taps(u, 3)` from the student's taps
    as the grader's X; an honest taps everywhere but on the lab's own signal (a 190 x 10 000
    array there, within every budget) made ex4-hidden run eigvalsh on a 10 001-square
    matrix on the grader's side: 60 s against a 30 s limit, 1.6 GiB. Now the grader's
    locked cells call the instructor's taps. taps earns what it earns on its own; the
    student's own notebook, which runs its locked cells on its X, stalls in its sandbox
    at the cell limit and loses the exercises after that, its own doing; the grader's
    side never touches the wide array, and the notebook ends within its limit."""
    lab = "lab6_lms_filter"
    wide = (
        "def taps(u, m):\n"
        "    u = np.asarray(u, dtype=float)\n"
        "    if len(u) == 4000:\n"
        "        return np.ones((190, 10000), np.int8)\n"
        "    X = np.zeros((len(u), m))\n"
        "    for j in range(m):\n"
        "        X[j:, j] = u[: len(u) - j]\n"
        "    return X\n"
    )
    nb = answered(lab, {"ex1-code": wide})
    # cell_seconds = 10: the cells before the stall work on the wide array too (the
    # instructor's least squares forms a 10 000-square matrix, about 1 s; with 3 s, a busy
    # machine stopped the notebook there, before ex2-hidden: a test of the machine)
    outcome, seconds = grade(lab, nb, notebook_seconds=60, cell_seconds=10)
    assert outcome.status is wire.Status.GRADED, outcome.detail
    full = {"ex1-visible": 1.0, "ex1-hidden": 1.0, "ex2-visible": 1.0, "ex2-hidden": 2.0}
    full |= {"ex3-visible": 1.0, "ex3-hidden": 2.0}  # all before the student's X is used
    assert scores(outcome) == full | {"ex4-visible": 0.0, "ex4-hidden": 0.0, "ex5-tests": 0.0}
    assert "could not be interrupted" in outcome.evaluation["stopped"]
    assert seconds < 60, seconds


# A lab of our own whose test computes on the student's value without care, as an
# instructor's test might: the grader's side must stay within its limits whatever it is.
def tiny_lab(test_source: str) -> dict:
    def cell(kind, gid, source, **meta):
        nbgrader = {"grade_id": gid, "locked": kind != "answer", "schema_version": 3}
        nbgrader.update(solution=kind == "answer", grade=kind == "test", task=False)
        if kind == "test":
            nbgrader["points"] = 1
        return {
            "cell_type": "code",
            "metadata": {"nbgrader": nbgrader, **meta},
            "source": source,
            "outputs": [],
            "execution_count": None,
        }

    cells = [
        cell("locked", "setup", "import numpy as np\n"),
        cell("answer", "ex1-code", "### BEGIN SOLUTION\nk = 3\n### END SOLUTION\n"),
        cell("test", "ex1-tests", test_source),
        cell("answer", "ex2-code", "### BEGIN SOLUTION\nj = 2\n### END SOLUTION\n"),
        cell("test", "ex2-tests", "assert j == 2\n"),
    ]
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def student(**answers):
    nb = tiny_lab("")
    for c in nb["cells"]:
        gid = c["metadata"]["nbgrader"]["grade_id"]
        if gid in answers:
            c["source"] = answers[gid]
    return nb


def test_a_test_that_runs_long_in_c_on_the_students_value_is_stopped_at_the_limit():
    """Finding 2 in general: a grader's test inside LAPACK, where SIGALRM cannot reach,
    ran 60 s against a 30 s limit. The grader's side is a child process that the worker
    kills at notebook_seconds + tests_seconds + grader_seconds; the tests it reached keep
    their verdicts, the rest score 0 with the reason."""
    source = tiny_lab(
        "assert k >= 0\n"
        "if k > 10:\n"
        "    np.linalg.eigvalsh(np.random.default_rng(0).normal(size=(k, k)))\n"
    )
    limits = {"notebook_seconds": 3, "tests_seconds": 1, "grader_seconds": 2}
    honest, _ = grade("tiny", student(), source, **limits)
    assert scores(honest) == {"ex1-tests": 1.0, "ex2-tests": 1.0}
    outcome, seconds = grade("tiny", student(**{"ex1-code": "k = 6000\n"}), source, **limits)
    assert seconds < 3 + 1 + 2 + 3, seconds  # the limits and a second or so to start
    assert outcome.status is wire.Status.GRADED
    assert scores(outcome) == {"ex1-tests": 0.0, "ex2-tests": 0.0}
    messages = [e["message"] for e in outcome.evaluation["cells"] if e["role"] == "test"]
    assert all("not graded" in m and "grader_seconds = 2" in m for m in messages), messages
    assert "ran past its time limit" in outcome.evaluation["notes"][-1]
    assert outcome.evaluation["seconds"] == pytest.approx(seconds, abs=1)


def test_a_test_that_asks_for_too_much_memory_on_the_students_value_fails_alone():
    """The grader's side has an address-space limit (grader_memory): a test that builds a
    huge array from the student's value fails with MemoryError, and the next test is
    graded as usual; the worker holds nothing of it."""
    source = tiny_lab("assert np.ones(k).sum() == k\n")
    outcome, _ = grade(
        "tiny", student(**{"ex1-code": "k = 3 * 2**30\n"}), source, grader_memory=3 * 2**30
    )
    assert scores(outcome) == {"ex1-tests": 0.0, "ex2-tests": 1.0}
    (message,) = [e["message"] for e in outcome.evaluation["cells"] if e["grade_id"] == "ex1-tests"]
    assert message.startswith("MemoryError"), message


def test_a_long_written_answer_is_cut_before_it_is_rendered():
    """Finding 3: a written answer was rendered and cleaned with no limit, superlinearly
    (1.1 MB: 77 s; 4.5 MB: over 15 minutes), and the row said 1 s. It is cut at
    cell_source characters before rendering (on the grader's side, under its limits), and
    the row's seconds are the wall-clock time of the whole notebook."""
    lab = "lab1_perceptron"
    table = "".join(f"| {i} | *x* | **y** | <b>z</b> |\n" for i in range(120_000))  # 4 MB
    nb = answered(lab, {"ex2-answer": "| a | b | c | d |\n|---|---|---|---|\n" + table})
    outcome, seconds = grade(lab, nb)
    assert outcome.status is wire.Status.GRADED
    assert seconds < 60, seconds
    assert outcome.evaluation["seconds"] == pytest.approx(seconds, abs=1)
    (written,) = [c for c in outcome.autograded["cells"] if c["metadata"].get("nbgrader", {})
                  .get("grade_id") == "ex2-answer"]  # fmt: skip
    limits = Limits()
    html = "".join(written["source"])
    assert len(html) < 40 * limits.cell_source  # the HTML of at most cell_source characters
    assert "cell_source limit" in html
    assert any("cell_source = 100000" in n for n in outcome.evaluation["notes"])
    assert scores(outcome)["ex1-hidden"] == 2.0  # the rest graded as usual


def test_huge_code_cells_and_thousands_of_added_cells_are_kept_within_the_caps():
    """Finding 4: a 4.2 MB code cell made a 25 MB feedback page and a 2 GB worker, and
    20 000 added cells 11 MB. The graded notebook (which the feedback and formgrader
    render) keeps cell_source characters of each student cell and notebook_source in all;
    the added cells past that still run, and are left out of it, with a note."""
    lab = "lab1_perceptron"
    nb = answered(lab)
    big = "".join(f"v{i} = {i}\n" for i in range(20_000))  # 229 kB
    for source in [big] + ["x = 1\n" + "#" * 9_000 + "\n"] * 60:
        nb["cells"].append(
            {"cell_type": "code", "metadata": {}, "source": source, "outputs": [],
             "execution_count": None}
        )  # fmt: skip
    outcome, seconds = grade(lab, nb)
    assert outcome.status is wire.Status.GRADED
    assert scores(outcome) == scores(grade(lab, answered(lab))[0])
    limits = Limits()
    kept = sum(len(c["source"]) for c in outcome.autograded["cells"] if not c["metadata"])
    assert kept <= limits.notebook_source + limits.cell_source + 100, kept
    size = len(json.dumps(outcome.autograded))
    assert size < 2 * limits.notebook_source + 2 * limits.notebook_output + 200_000, size
    (note,) = [n for n in outcome.evaluation["notes"] if "cell_source" in n]
    assert "1 cut" in note and "added cells left out" in note and "they all ran" in note
    left_out = int(note.split(" cut (cell_source = 100000), ")[1].split(" ")[0])
    # after the cut cell (100 034 characters) and the answers, 45 cells of 9 007 fit
    assert left_out == 15, note


def test_the_instructors_reference_code_never_enters_the_sandbox():
    """Finding 7: grading.reference sent the instructor's solution source into the sandbox
    (Labs 1, 2, 3, 5, 7), where a student's function found it. Now a reference name in
    the sandbox is a stand-in that calls back to the grader: every request the agent could
    read carries names and plain data only."""
    need_sandbox()
    sent = []
    real = sandbox.Sandbox._send

    def spy(self, payload):
        sent.append(payload)
        return real(self, payload)

    for lab in ("lab1_perceptron", "lab2_convergence", "lab3_delta_rule", "lab5_logistic",
                "lab7_logistic_training"):  # fmt: skip
        source = source_of(lab)
        solutions = verdicts.notebook.solutions(source)
        sent.clear()
        with pytest.MonkeyPatch.context() as mp, sandbox_lock():
            mp.setattr(sandbox.Sandbox, "_send", spy)
            result = verdicts.evaluate(source, answered(lab), Limits(cell_seconds=10))
        assert all(e["passed"] for e in result["cells"] if e["role"] == "test"), lab
        references = {n for c in source["cells"] for n in
                      c["metadata"].get("grading", {}).get("reference", [])}  # fmt: skip
        assert references, lab
        bodies = [line.strip() for n in references for line in solutions[n].splitlines()[1:]]
        bodies = [b for b in bodies if len(b) > 12 and not b.startswith(('"""', "#"))]
        assert bodies, lab
        calls = [json.loads(p) for p in sent if b'"op": "call"' in p]
        assert any(c["reference"] for c in calls), lab  # the references were used
        for payload in sent:
            text = payload.decode()
            assert not any(body in text for body in bodies if body not in answered_text(lab))


def answered_text(lab):
    """The student's own cells (the instructor's answers here): what the agent runs anyway."""
    return "".join("".join(c["source"]) for c in answered(lab)["cells"] if c["cell_type"] == "code")


def test_the_grader_side_is_killed_with_everything_it_started():
    """A child that is killed at its limit leaves no sandbox behind: bubblewrap dies with
    its parent, and the agent (pid 1 of its namespace) with everything it started."""
    source = tiny_lab("np.linalg.eigvalsh(np.ones((k, k))) if k > 10 else None\n")
    sleeper = "import subprocess\nsubprocess.Popen(['sleep', '4243'])\nk = 6000\n"
    nb = student(**{"ex1-code": sleeper})
    grade("tiny", nb, source, notebook_seconds=3, grader_seconds=1)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        left = [p for p in _cmdlines() if "4243" in p]  # an argument (sleep 4243), not a digit run
        if not left:
            break
        time.sleep(0.2)
    assert not left, left


def _cmdlines() -> list[list[str]]:
    """Every process's arguments."""
    from pathlib import Path

    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                found.append((entry / "cmdline").read_bytes().decode(errors="replace").split("\0"))
            except OSError:
                pass
    return found


def test_written_html_is_the_one_rendering_of_an_answer():
    """The graded notebook shows the HTML rendered on the grader's side (cut first)."""
    entry = {"role": "written", "grade_id": "w", "source": "*a*", "metadata": {}, "outputs": []}
    nb = {"cells": [], "metadata": {}}
    cells = render.autograded_notebook(nb, {"cells": [dict(entry, html="<p>kept</p>")]})["cells"]
    assert "".join(cells[0]["source"]) == "<p>kept</p>"
    cells = render.autograded_notebook(nb, {"cells": [entry]})["cells"]
    assert "".join(cells[0]["source"]).strip() == "<p><em>a</em></p>"
    assert np.isfinite(Limits().grader_seconds)


def test_a_wholly_hidden_test_that_fails_keeps_its_place_and_the_rest_theirs():
    """A test cell whose every line is hidden, failing, is reported in its place: its
    score 0 with its message, and the cells after it keep theirs (a bug once dropped it
    and shifted every later cell's verdict by one)."""
    source = tiny_lab("### BEGIN HIDDEN TESTS\nassert k == 3, 'k is not 3'\n### END HIDDEN TESTS\n")
    outcome, _ = grade("tiny", student(**{"ex1-code": "k = 4\n"}), source)
    assert scores(outcome) == {"ex1-tests": 0.0, "ex2-tests": 1.0}
    (entry,) = [e for e in outcome.evaluation["cells"] if e["grade_id"] == "ex1-tests"]
    assert entry["message"] == "AssertionError: k is not 3"


def test_a_child_that_finishes_without_reporting_every_cell_is_a_grader_failure():
    plan = {"plan": [{"role": "test", "grade_id": "a"}, {"role": "test", "grade_id": "b"}]}
    plan["notes"] = []
    reports = {"cells": {0: {"role": "test", "grade_id": "a", "score": 1.0}}, "stopped": None}
    reports |= {"done": {"notes": [], "stopped": None, "output": ""}, "seconds": 1.0}
    with pytest.raises(RuntimeError, match="reported 1 of 2 cells"):
        worker.assemble(plan, reports)
    reports["done"] = None  # a child stopped at a limit: the rest score 0, with the reason
    reports["stopped"] = "the grader's side of this notebook ran past its time limit"
    cells = worker.assemble(plan, reports)["cells"]
    assert cells[1]["score"] == 0.0 and cells[1]["message"].startswith("not graded: the grader")
