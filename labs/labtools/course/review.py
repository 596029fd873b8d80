"""Answers held for the instructor's review, and accepting them.

A graded notebook whose answer uses what the lab's sandbox cannot leave out (a numpy
function its exercise asks you not to use, code that reaches other code by name, a copy of
the package's own code: :mod:`perceptrons.handin`) keeps its tests' verdicts, but their
automatic points are not given: the gradebook holds 0 for those test cells and marks them
for grading by hand, and ``grades.csv`` says why in its column ``review``. The instructor
reads the answer (formgrader shows the reason on the answer cell) and gives the points,
in formgrader (each held test cell: *Full credit*, or a score) or for a whole notebook with

    python3 tasks.py review                             # every held answer, with why
    python3 tasks.py review --accept STUDENT/LAB ...    # give their tests' points

after which ``export`` counts them as points given by hand.
"""

from __future__ import annotations

from pathlib import Path

from labtools.course import folder as courses
from labtools.course.record import read_row
from labtools.door.layout import UsageError
from labtools.wire import capped


def held(course: Path) -> list[dict]:
    """Every notebook of the course with held answers: student, lab, the points its held
    tests earned (of how many), and why, one line per reason."""
    found = []
    for path in sorted((course / "results").glob("*/*.json")):
        row = read_row(path)
        if not row.held:
            continue
        earned = sum(row.tests[gid]["score"] for gid in row.held)
        points = sum(row.tests[gid]["points"] for gid in row.held)
        found.append(
            {
                "student": row.student,
                "lab": row.lab,
                "tests": row.held,
                "earned": earned,
                "points": points,
                "reasons": row.reasons(),
            }
        )
    return found


def accept(course: Path, student: str, lab: str) -> float:
    """Give the held tests of ``student``'s ``lab`` the points they earned, as scores by hand
    (what *Full credit* in formgrader does for a test that passed); returns the points."""
    from nbgrader.api import Gradebook, MissingEntry

    path = courses.result_path(course, student, lab)
    if not path.exists():
        raise UsageError(f"{student}/{lab} has no graded notebook in {course}")
    row = read_row(path)
    if not row.held:
        raise UsageError(f"{student}/{lab} has no answer held for review")
    with Gradebook(courses.db_url(course)) as gb:
        try:
            notebook = gb.find_submission_notebook(lab, lab, student)
        except MissingEntry:
            raise UsageError(f"the gradebook has no {student}/{lab}: grade it again") from None
        given = 0.0
        for grade in notebook.grades:
            if grade.name in row.held:
                grade.manual_score = row.tests[grade.name]["score"]
                grade.needs_manual_grade = False
                given += grade.manual_score
        gb.db.commit()
    return given


def main(course: Path, accepted: list[str]) -> None:
    """``review``: list the held answers, or accept those named ``STUDENT/LAB``."""
    if not accepted:
        found = held(course)
        if not found:
            print("no answer is held for review")
        for entry in found:
            print(
                f"{entry['student']}/{entry['lab']}: {entry['earned']:g} of "
                f"{entry['points']:g} automatic points held ({', '.join(entry['tests'])})"
            )
            for reason in entry["reasons"]:  # one line each, whatever a result file holds
                print(f"  {capped(reason, 300)}")
        if found:
            print("to give them: python3 tasks.py review --accept STUDENT/LAB ... (then export)")
        return
    for name in accepted:
        student, sep, lab = name.partition("/")
        if not sep or not student or not lab:
            raise UsageError(f"--accept takes STUDENT/LAB; got {name!r}")
        print(f"{student}/{lab}: {accept(course, student, lab):g} points given")
