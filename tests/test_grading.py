"""The labs: student versions up to date, and grading that survives hostile submissions."""

import hashlib
import json
import os
import time
from pathlib import Path

import pytest
from _helpers import load_module

ROOT = Path(__file__).resolve().parents[1]
LABS = ROOT / "labs"


course = load_module("course", LABS / "course.py")


def notebook(kind, lab):
    return json.loads((LABS / kind / lab / f"{lab}.ipynb").read_text())


def test_there_are_at_least_four_labs_with_four_to_eight_exercises():
    labs = course.lab_names()
    assert len(labs) >= 4
    for lab in labs:
        cells = notebook("source", lab)["cells"]
        ids = [c["metadata"]["nbgrader"]["grade_id"] for c in cells if "nbgrader" in c["metadata"]]
        assert len(ids) == len(set(ids)), f"{lab}: grade ids repeat"
        exercises = {i.split("-")[0] for i in ids if i.startswith("ex")}
        assert 4 <= len(exercises) <= 8, f"{lab} has {len(exercises)} exercises"


def test_student_versions_are_up_to_date(tmp_path):
    course.generate(out=tmp_path)
    for lab in course.lab_names():
        fresh = json.loads((tmp_path / lab / f"{lab}.ipynb").read_text())
        assert fresh == notebook("release", lab), f"labs/release/{lab} is stale: run tasks.py labs"


def test_student_versions_hold_no_solutions_and_say_what_to_write():
    for lab in course.lab_names():
        nb = notebook("release", lab)
        text = json.dumps(nb)
        assert "BEGIN SOLUTION" not in text and "BEGIN HIDDEN TESTS" not in text
        code = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
        stubs = code.count("raise NotImplementedError(")
        assert stubs >= 3 and stubs == code.count("raise NotImplementedError('Student exercise: ")


# ---------------------------------------------------------------------------------------
# End to end: a course folder graded from planted submissions

LAB = "lab1_perceptron"


def solved(replace=None):
    """The student version of lab 1 with the instructor's answers filled in."""
    release, source = notebook("release", LAB), notebook("source", LAB)
    answers = {
        c["metadata"]["nbgrader"]["grade_id"]: c
        for c in source["cells"]
        if c["metadata"].get("nbgrader", {}).get("solution")
    }
    for cell in release["cells"]:
        meta = cell["metadata"].get("nbgrader", {})
        if meta.get("solution"):
            lines = "".join(answers[meta["grade_id"]]["source"]).splitlines()
            cell["source"] = "\n".join(line for line in lines if "### " not in line)
            if replace and meta["grade_id"] in replace:
                cell["source"] = replace[meta["grade_id"]]
    return release


def cell_index(nb, grade_id):
    return next(
        i
        for i, c in enumerate(nb["cells"])
        if c["metadata"].get("nbgrader", {}).get("grade_id") == grade_id
    )


PT_STEP = "def pt_step(w, x, c, eta):\n"
SNOOP = """import pathlib
leaked = []
for target in {secrets!r}:
    try:
        leaked.append(pathlib.Path(target).read_text()[:50])  # read the sources or others' work
    except OSError:
        pass
for target in {secrets!r} + {package!r}:
    try:
        pathlib.Path(target).write_text("overwritten")  # and try to change them
        leaked.append("wrote " + target)
    except OSError:
        pass
try:
    import socket
    socket.create_connection(("127.0.0.1", 22), timeout=1)
    leaked.append("network")
except OSError:
    pass
eta_choice = 1.0 if not leaked else 1e-9  # full marks only if the sandbox held
"""


def plant(submitted: Path, others: Path):
    """Write one submission per kind of trouble; return {student: expected autograded score}."""

    def write(student, nb):
        path = submitted / student / LAB / f"{LAB}.ipynb"
        path.parent.mkdir(parents=True)
        path.write_text(nb if isinstance(nb, str) else json.dumps(nb))

    write("correct", solved())
    write("blank", notebook("release", LAB))
    write("wrong", solved({"ex1-code": PT_STEP + "    return w\n"}))
    write("loops", solved({"ex1-code": PT_STEP + "    while True:\n        pass\n"}))
    write("syntax", solved({"ex1-code": PT_STEP + "    return w +\n"}))
    edited = solved()
    del edited["cells"][cell_index(edited, "ex1-visible")]  # a deleted test cell
    edited["cells"][cell_index(edited, "ex2-tests")]["source"] = "pass"  # an edited one
    write("tampered", edited)
    stripped = solved()
    for cell in stripped["cells"]:
        cell["metadata"] = {}
    write("stripped", stripped)
    write("truncated", json.dumps(solved())[:5000])
    write(
        "hog",
        solved(
            {
                "ex2-code": "import numpy as np\nbig = np.ones(3 * 10**9)\n"
                "predicted_updates = 11\npredicted_w = np.array([-3., 2., 1.])"
            }
        ),
    )
    secrets = [
        str(LABS / "source" / LAB / f"{LAB}.ipynb"),
        str(ROOT / "labs" / "course.py"),
        str(submitted / "correct" / LAB / f"{LAB}.ipynb"),
        str(others / "secret.txt"),
    ]
    package = [str(ROOT / "src" / "perceptrons" / "__init__.py")]  # readable, not writable
    write("snoop", solved({"ex5-code": SNOOP.format(secrets=secrets, package=package)}))
    # "stripped" lost its nbgrader metadata: its answers cannot be matched to the source
    # and score nothing; the status line tells the instructor to look at it by hand
    return {
        "correct": 9,
        "blank": 0,
        "wrong": 3,
        "loops": 3,
        "syntax": 3,
        "tampered": 9,
        "stripped": 0,
        "truncated": 0,
        "hog": 7,
        "snoop": 9,
    }


def snapshot(*folders):
    digest = {}
    for folder in folders:
        for path in sorted(Path(folder).rglob("*")):
            if path.is_file() and ".venv" not in path.parts and "__pycache__" not in path.parts:
                digest[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digest


@pytest.mark.timeout(1500)
def test_grading_hostile_submissions_gives_exact_scores_and_touches_nothing_else(tmp_path):
    if os.environ.get("CI") and not course.have_bwrap():
        pytest.fail("CI must install bubblewrap (apt-get install bubblewrap) for the sandbox")
    sandbox = course.have_bwrap()
    submissions, out, others = tmp_path / "download", tmp_path / "grading", tmp_path / "others"
    others.mkdir()
    (others / "secret.txt").write_text("another course's gradebook")
    expected = plant(submissions / "submitted", others)
    before = snapshot(ROOT / "labs", ROOT / "src", submissions, others)

    start = time.monotonic()
    rows = course.grade(
        submissions, out, cell_timeout=10, lab_timeout=240, memory_gb=3, sandbox=sandbox
    )
    elapsed = time.monotonic() - start

    scores = {r["student"]: r["score"] for r in rows}
    if not sandbox:  # without bubblewrap the snoop can read; say so instead of passing
        pytest.fail("bubblewrap is missing: the sandbox could not be tested here")
    assert scores == expected, [r for r in rows if scores[r["student"]] != expected[r["student"]]]
    status = {r["student"]: r["status"] for r in rows}
    assert status["truncated"].startswith("unreadable notebook")
    assert "lost its nbgrader metadata" in status["stripped"] and status["correct"] == "graded"
    assert all(r["max_score"] == 11 for r in rows if r["student"] != "truncated")
    assert elapsed < 1200, f"grading took {elapsed:.0f} s"
    assert snapshot(ROOT / "labs", ROOT / "src", submissions, others) == before
    assert (out / "grades.csv").read_text().count("\n") == len(expected) + 1
    for student in expected:  # feedback for every notebook that nbgrader could grade
        feedback = (out / "feedback" / student / f"{LAB}.html").exists()
        assert feedback == status[student].startswith("graded"), student
