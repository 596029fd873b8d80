"""The grade tables: ``grades.csv`` (a row per student and lab) and ``grades-wide.csv`` (a
row per student, a column per lab), from the results and the gradebook's manual scores,
with the course's late policy applied (:mod:`labtools.late`: the wide table's scores are
the totals after it).
Written at the end of every run and again on request (``python -m labtools export``)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from labtools import course as courses
from labtools import late, layout
from labtools.record import read_row
from labtools.wire import Status, capped


def export(course) -> dict[str, Path]:
    """Write both tables into ``course``; return their paths (``grades``, ``wide``)."""
    from nbgrader.api import Gradebook, MissingEntry

    course = Path(course)
    courses.check_gradebook(course)  # one line for a gradebook locked, damaged or emptied
    if not courses.server_url(course) and not (course / courses.DB).exists():
        raise layout.UsageError(
            f"{course} has no {courses.DB}: restore it from {courses.BACKUP}, or grade again "
            "with --regrade to rebuild it (manual scores are then lost)"
        )
    policy, times = late.load(course), late.read_times(course)  # refused before any table
    labs = layout.lab_names(course)
    students = courses.students(course)
    rows = []
    with Gradebook(courses.db_url(course)) as gb:
        maxima = {lab: gb.find_assignment(lab).max_score for lab in labs}
        for student in students:
            for lab in labs:
                row = {"student": student, "lab": lab, "automatic": 0.0, "manual": 0.0}
                row.update(total=0.0, max_score=maxima[lab], status=Status.MISSING.value)
                result = courses.result_path(course, student, lab)
                digest = ""
                if result.exists():
                    kept = read_row(result)
                    row["status"], digest = kept.text, kept.digest
                if Status.of(row["status"]) is Status.GRADED:
                    try:
                        notebook = gb.find_submission_notebook(lab, lab, student)
                    except MissingEntry:
                        notebook = None
                    waiting = 0.0
                    for grade in notebook.grades if notebook else []:
                        if grade.manual_score is not None:
                            row["manual"] += grade.manual_score
                        elif grade.auto_score is not None:
                            row["automatic"] += grade.auto_score
                        else:
                            waiting += grade.max_score
                    row["total"] = row["automatic"] + row["manual"]
                    if waiting:
                        row["status"] += f"; {waiting:g} points wait for manual grading"
                row.update(late.adjust(row, policy, times.of(student, lab, digest)))
                row["status"] = capped(row["status"])  # one cap for every text of a table
                rows.append(row)
    fields = ["student", "lab", "automatic", "manual", "total", "max_score", *late.COLUMNS]
    long_csv, wide_csv = course / "grades.csv", course / "grades-wide.csv"
    out = io.StringIO(newline="")
    writer = csv.DictWriter(out, fieldnames=fields)
    writer.writeheader()
    writer.writerows(rows)
    layout.write_whole(long_csv, out.getvalue())  # whole: a full disk keeps the last copy
    out = io.StringIO(newline="")
    writer = csv.writer(out)
    writer.writerow(["student", *labs, "total", "max_score"])
    for student in students:
        mine = {r["lab"]: r["adjusted_total"] for r in rows if r["student"] == student}
        writer.writerow(
            [student, *(mine[lab] for lab in labs), sum(mine.values()), sum(maxima.values())]
        )
    layout.write_whole(wide_csv, out.getvalue())
    return {"grades": long_csv, "wide": wide_csv}
