"""The grade tables: ``grades.csv`` (a row per student and lab) and ``grades-wide.csv`` (a
row per student, a column per lab), from the results and the gradebook's manual scores,
with the course's late policy applied (:mod:`labtools.course.late`: the wide table's scores are
the totals after it). Written at the end of every run and again on request (``python -m
labtools export``); while a run grades, ``export`` writes what is graded so far beside
them (``grades-so-far.csv``, ``grades-wide-so-far.csv``) and touches nothing else.

Only the labs that are **set** have rows and columns (:func:`set_labs`): a lab with a
submission in the course folder (graded or not), or with a due date in the late policy.
A lab not set yet is not "missing" for every student, and its points are not in the
maximum (``docs/decisions/a-week-that-says-what-is-pending.md``).

Beside each student id, the name the course folder knows (:func:`labtools.door.intake.
student_names`: Canvas's gradebook export, else the download). Each row says what still
waits (``waiting``: points of answers not yet graded by hand), and :attr:`Exported.pending`
says, in lines with the command that finishes each, what is not final: grading by hand,
answers held for review, notebooks not graded or not placed, labs not set.

The gradebook gets what nbgrader shows with it: each graded notebook's late deduction
(``late_submission_penalty``, which nbgrader's feedback page and formgrader subtract from
the score and show on a line of their own) and each student's name (formgrader's "Show
names": the name as last name, the id as first name).
"""

from __future__ import annotations

import csv
import io
import shlex
from pathlib import Path

from labtools.course import folder as courses
from labtools.course import late
from labtools.course.record import read_row
from labtools.door import layout
from labtools.options import course_args
from labtools.wire import NAME, Status, capped

FIELDS = ["student", "name", "lab", "automatic", "manual", "waiting", "total", "max_score"]
SO_FAR = "-so-far"  # the tables written while a run grades: grades-so-far.csv, ...
SHOWN = 8  # students named per line of what is pending


class Exported(dict):
    """What ``export`` wrote (name -> path, as before: ``grades``, ``wide``) and what it
    found: the rows, the labs set and not set, and what is not final."""

    def __init__(self, paths=(), **found):
        super().__init__(paths)
        self.rows: list[dict] = found.get("rows", [])
        self.labs: list[str] = found.get("labs", [])
        self.unset: list[str] = found.get("unset", [])
        self.names: dict[str, str] = found.get("names", {})
        self.pending: list[str] = found.get("pending", [])  # what is not final, and how
        self.notes: list[str] = found.get("notes", [])  # what the instructor should know
        self.penalties: list[tuple[str, str]] = found.get("penalties", [])  # changed
        self.students: list[str] = found.get("students", [])
        self.maxima: dict[str, float] = found.get("maxima", {})


def set_labs(course: Path, labs: list[str], policy) -> list[str]:
    """The labs of ``labs`` that are set: one with a result in the course folder (a
    submission reached grading, whatever became of it) or a due date in the policy."""
    results = Path(course) / "results"
    handed = {p.stem for p in results.glob("*/*.json")} if results.is_dir() else set()
    due = set(policy.due) if policy is not None else set()
    return [lab for lab in labs if lab in handed or lab in due]


def final(row: dict) -> bool:
    """Whether a row's grade is final: graded, no points waiting for grading by hand, none
    held for review (the column ``review``, where the results have it)."""
    return (
        Status.of(row["status"]) is Status.GRADED
        and not float(row.get("waiting") or 0)
        and not row.get("review")
    )


def collect(course) -> Exported:
    """Every row of the tables and what is pending, read from the course folder (results,
    gradebook, late policy and times, names), nothing written."""
    from nbgrader.api import Gradebook, MissingEntry

    from labtools.door import intake

    course = Path(course)
    courses.check_gradebook(course)  # one line for a gradebook locked, damaged or emptied
    if not courses.server_url(course) and not (course / courses.DB).exists():
        raise layout.UsageError(
            f"{course} has no {courses.DB}: restore it from {courses.BACKUP}, or grade again "
            "with --regrade to rebuild it (manual scores are then lost)"
        )
    policy, times = late.load(course), late.read_times(course)  # refused before any table
    every = layout.lab_names(course)
    labs = set_labs(course, every, policy)
    students = courses.students(course)
    names = intake.student_names(course)
    rows = []
    with Gradebook(courses.db_url(course)) as gb:
        maxima = {lab: gb.find_assignment(lab).max_score for lab in labs}
        for student in students:
            for lab in labs:
                row = {"student": student, "name": capped(names.get(student, ""), NAME)}
                row.update(lab=lab, automatic=0.0, manual=0.0, waiting=0.0, total=0.0)
                row.update(max_score=maxima[lab], status=Status.MISSING.value, digest="")
                row["review"] = ""
                result = courses.result_path(course, student, lab)
                kept = None
                if result.exists():
                    kept = read_row(result)
                    row["status"], row["digest"] = kept.text, kept.digest
                if Status.of(row["status"]) is Status.GRADED:
                    try:
                        notebook = gb.find_submission_notebook(lab, lab, student)
                    except MissingEntry:
                        notebook = None
                    waiting, held = 0.0, 0.0
                    tests = kept.tests or {}
                    for grade in notebook.grades if notebook else []:
                        if grade.manual_score is not None:
                            row["manual"] += grade.manual_score
                        elif tests.get(grade.name, {}).get("held"):  # waits for the
                            held += tests[grade.name]["score"]  # instructor's review
                        elif grade.auto_score is not None:
                            row["automatic"] += grade.auto_score
                        else:
                            waiting += grade.max_score
                    row["total"] = row["automatic"] + row["manual"]
                    row["waiting"] = waiting
                    if waiting:
                        row["status"] += f"; {waiting:g} points wait for manual grading"
                    grades = notebook.grades if notebook else []
                    if any(tests.get(g.name, {}).get("held") and g.manual_score is None
                           for g in grades):  # fmt: skip
                        row["review"] = capped("; ".join(kept.reasons()))
                        row["status"] += (
                            f"; {held:g} automatic points held for review (see the column "
                            "review; `tasks.py review` to give them)"
                        )
                row.update(late.adjust(row, policy, times.of(student, lab, row["digest"])))
                row["status"] = capped(row["status"])  # one cap for every text of a table
                row["final"] = final(row)
                rows.append(row)
    unset = [lab for lab in every if lab not in labs]
    found = Exported(rows=rows, labs=labs, unset=unset, names=names, students=students)
    found.maxima = maxima
    found.pending = pending(course, found)
    found.notes = late.unused(policy, rows, times)
    if policy is not None:
        found.notes += policy.unknown_students(set(students), course.name)
    return found


def _who(students: list[str], names: dict[str, str]) -> str:
    from labtools.door.intake import shown

    listed = ", ".join(shown(s, names) for s in students[:SHOWN])
    return listed + (f" and {len(students) - SHOWN} more" if len(students) > SHOWN else "")


def pending(course: Path, found: Exported) -> list[str]:
    """What is not final, a line each, with what finishes it: points that wait for grading
    by hand, answers held for review, notebooks not graded, notebooks of a download that
    could not be placed, labs not set yet."""
    from labtools.door import intake

    args = course_args(course)
    lines = []
    by_lab: dict[str, dict[str, list[dict]]] = {}
    for row in found.rows:
        kind = Status.of(row["status"])
        mine = by_lab.setdefault(row["lab"], {"waiting": [], "review": [], "not graded": []})
        if kind is Status.GRADED and float(row.get("waiting") or 0):
            mine["waiting"].append(row)
        if kind is Status.GRADED and row.get("review"):
            mine["review"].append(row)
        if kind not in (Status.GRADED, Status.MISSING):
            mine["not graded"].append(row)
    formgrader = shlex.join(["python3", "tasks.py", "formgrader", *args])
    again = shlex.join(["python3", "tasks.py", "export", *args])
    for lab, kinds in by_lab.items():
        rows = kinds["waiting"]
        if rows:
            points = sum(float(r["waiting"]) for r in rows)
            lines.append(
                f"{lab}: {len(rows)} notebooks have {points:g} points of answers that wait for "
                f"grading by hand ({_who([r['student'] for r in rows], found.names)}): grade "
                f"them in formgrader (`{formgrader}`), then run `{again}` again"
            )
        rows = kinds["review"]
        if rows:  # the column review (answers held for the instructor's review)
            lines.append(
                f"{lab}: {len(rows)} notebooks have answers held for review "
                f"({_who([r['student'] for r in rows], found.names)}): the column review of "
                "grades.csv says why; accept or grade them, then export again"
            )
        rows = kinds["not graded"]
        if rows:
            lines.append(
                f"{lab}: {len(rows)} notebooks were not graded "
                f"({_who([r['student'] for r in rows], found.names)}): each one's status in "
                "grades.csv says why and what to do (most often: ask the student to hand it "
                "in again, then grade the new download)"
            )
    graded = {(r["student"], r["lab"]) for r in found.rows if r["status"] != Status.MISSING.value}
    for download, notebooks in sorted(intake.not_placed(course).items()):
        for entry in notebooks if isinstance(notebooks, list) else []:
            if not isinstance(entry, dict):
                continue
            if (entry.get("student"), entry.get("lab")) in graded:
                continue  # placed since (renamed and graded)
            file = capped(repr(entry.get("file", "")), 2 * NAME)
            lines.append(
                f"not placed: {file} of {Path(download).name}: {capped(entry.get('why', ''))}"
            )
    if found.unset:
        lines.append(
            f"labs not set yet (no submission, no due date in {late.POLICY}), left out of "
            f"the tables: {', '.join(found.unset)}; a lab counts from the first download "
            f"that has it, or once {late.POLICY} gives it a due date"
        )
    return lines


def write_tables(course: Path, found: Exported, suffix: str = "") -> dict[str, Path]:
    """``grades.csv`` and ``grades-wide.csv`` (with ``suffix`` before ``.csv``), whole."""
    fields = [*FIELDS, *late.COLUMNS, "review"]
    long_csv = course / f"grades{suffix}.csv"
    wide_csv = course / f"grades-wide{suffix}.csv"
    out = io.StringIO(newline="")
    writer = csv.DictWriter(out, fieldnames=fields, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(found.rows)
    layout.write_whole(long_csv, out.getvalue())  # whole: a full disk keeps the last copy
    out = io.StringIO(newline="")
    writer = csv.writer(out)
    writer.writerow(["student", "name", *found.labs, "total", "max_score"])
    for student in found.students:
        mine = {r["lab"]: r["adjusted_total"] for r in found.rows if r["student"] == student}
        name = capped(found.names.get(student, ""), NAME)
        writer.writerow(
            [student, name, *(mine[lab] for lab in found.labs), sum(mine.values()),
             sum(found.maxima.values())]
        )  # fmt: skip
    layout.write_whole(wide_csv, out.getvalue())
    return {"grades": long_csv, "wide": wide_csv}


def into_gradebook(course: Path, found: Exported) -> list[tuple[str, str]]:
    """Each graded notebook's late deduction into nbgrader's gradebook
    (``late_submission_penalty``: the feedback page and formgrader subtract it and show it
    on a line of its own), and each student's name (formgrader's "Show names"). Returns
    the (student, lab) whose deduction changed: their feedback pages are out of date."""
    import warnings

    from nbgrader.api import Gradebook, MissingEntry

    changed = []
    with Gradebook(courses.db_url(course)) as gb, warnings.catch_warnings():
        warnings.simplefilter("ignore", category=Warning)  # SQLAlchemy on nbgrader's session
        for row in found.rows:
            if Status.of(row["status"]) is not Status.GRADED:
                continue
            try:
                notebook = gb.find_submission_notebook(row["lab"], row["lab"], row["student"])
            except MissingEntry:
                continue
            penalty = float(row["deduction"]) or None
            if notebook.late_submission_penalty != penalty:
                notebook.late_submission_penalty = penalty
                changed.append((row["student"], row["lab"]))
        for student in found.students:
            name = capped(found.names.get(student, ""), NAME)
            if not name:
                continue
            try:
                person = gb.find_student(student)
            except MissingEntry:
                continue
            if (person.last_name, person.first_name) != (name, student):
                person.last_name, person.first_name = name, student
        gb.db.commit()
    return changed


def export(course, *, so_far: bool = False) -> Exported:
    """Write both tables into ``course`` and the gradebook's late deductions and names;
    return what was written and found (:class:`Exported`). ``so_far`` (a run grades the
    course folder now): the tables as ``grades-so-far.csv`` and ``grades-wide-so-far.csv``
    and nothing else, the gradebook only read."""
    course = Path(course)
    found = collect(course)
    found.update(write_tables(course, found, SO_FAR if so_far else ""))
    if not so_far:
        for stale in (course / f"grades{SO_FAR}.csv", course / f"grades-wide{SO_FAR}.csv"):
            stale.unlink(missing_ok=True)  # the run that they were taken from has ended
        found.penalties = into_gradebook(course, found)
    return found
