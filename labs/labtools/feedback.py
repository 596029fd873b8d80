"""Feedback: nbgrader's feedback HTML for each graded notebook, with the scores and the
comments in the gradebook (manual ones included).

Written during a run by the workers of the local pool (:func:`feedback_task`, as they share
the course folder), or at the end by the recording process (:func:`generate_feedback`), and
again on request after manual grading (``python -m labtools feedback``). Each page is
written in a child process under limits (:func:`write_limited`): it renders what
a student handed in.
"""

from __future__ import annotations

import traceback
import warnings
from pathlib import Path

from labtools import course as courses
from labtools.layout import write_whole
from labtools.record import read_row


class Feedback:
    """nbgrader's feedback HTML for one notebook at a time, in this process (one nbgrader
    process per lab would cost seconds each): the notebook as graded, with the scores and
    comments in the gradebook, manual ones included."""

    def __init__(self, course: Path):
        from nbgrader.converters import GenerateFeedback
        from nbgrader.coursedir import CourseDirectory
        from traitlets.config import Config

        config = Config()
        config.CourseDirectory.root = str(course)
        config.CourseDirectory.db_url = courses.db_url(course)
        self.course = course
        self.coursedir = CourseDirectory(config=config)
        self.converter = GenerateFeedback(coursedir=self.coursedir, config=config)
        self.converter.force = True

    def write(self, student: str, lab: str) -> None:
        self.coursedir.assignment_id, self.coursedir.student_id = lab, student
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self.converter.start()
        except Exception:  # noqa: BLE001 - no feedback for this one; the log says why
            log = self.course / "logs" / f"feedback--{student}--{lab}.log"
            write_whole(log, traceback.format_exc())


def generate_feedback(course: Path, labs: list[str], *, missing_only: bool = False) -> int:
    """Feedback for every graded notebook of these labs (again after manual grading), or
    only where it is missing or older than the result (``missing_only``: after a run that
    was stopped, or one whose feedback went to workers). Returns how many were written."""
    written = 0
    for lab in labs:
        for result in sorted((course / "results").glob(f"*/{lab}.json")):
            student = result.parent.name
            html = course / "feedback" / student / lab / f"{lab}.html"
            if missing_only and html.exists() and html.stat().st_mtime >= result.stat().st_mtime:
                continue
            if read_row(result).graded:
                write_limited(course, student, lab)
                written += 1
    return written


def write_one(course: str, student: str, lab: str) -> None:
    """One notebook's feedback page, in this process (what :func:`write_limited` runs)."""
    Feedback(Path(course)).write(student, lab)


def write_limited(course: Path, student: str, lab: str, limits=None) -> None:
    """One notebook's feedback page, written in a child under limits
    (:func:`labtools.judge.call`: ``grader_memory``, ``feedback_seconds``); a page that
    could not be written says why in the course folder's log."""
    from labtools import judge
    from labtools.sandbox import Limits

    limits = limits or Limits()
    why = judge.call(
        "labtools.feedback:write_one",
        [str(course), student, lab],
        seconds=limits.feedback_seconds,
        memory=limits.grader_memory,
    )
    if why:
        write_whole(Path(course) / "logs" / f"feedback--{student}--{lab}.log", why + "\n")


def feedback_task(course: str, student: str, lab: str) -> None:
    """Write one notebook's feedback (runs in a worker of the local pool, which shares the
    course folder), in a child under limits (:func:`write_limited`)."""
    write_limited(Path(course), student, lab)
