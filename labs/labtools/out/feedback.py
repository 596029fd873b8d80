"""Feedback: nbgrader's feedback HTML for each graded notebook, with the scores and the
comments in the gradebook (manual ones included).

Written during a run by the workers of the local pool (:func:`feedback_task`, as they share
the course folder), or at the end by the recording process (:func:`generate_feedback`), and
again on request after manual grading (``python -m labtools feedback``). Each page is
written in a child process under limits (:func:`write_limited`): it renders what
a student handed in.

A page is never lost to a page that could not be written: nbgrader deletes a notebook's
feedback folder before it converts the notebook, so it writes into a folder of its own
under :data:`STAGING`, and each file it wrote then replaces the old one (``os.replace``).
A page that could not be written keeps the old one, its log says why
(``logs/feedback--STUDENT--LAB.log``), and :func:`generate_feedback` raises
:class:`FeedbackFailed` once it has written the others.
"""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import traceback
import warnings
from pathlib import Path

from labtools.course import folder as courses
from labtools.course.record import read_row
from labtools.door.layout import UsageError, write_whole
from labtools.options import course_args

STAGING = ".feedback-new"  # in the course folder: one folder per writing process


class FeedbackFailed(UsageError):
    """Some feedback pages could not be written (their old pages are kept); the message
    says which, why (the first one's reason) and what to do. ``written``: how many were."""

    def __init__(self, message: str, written: int, failed: list[tuple[str, str, str]]):
        super().__init__(message)
        self.written, self.failed = written, failed


def log_path(course: Path, student: str, lab: str) -> Path:
    return Path(course) / "logs" / f"feedback--{student}--{lab}.log"


# lines of a logged traceback that are not the error itself
NOT_THE_ERROR = ("Traceback", "During handling", "The above exception", "(Background")


def reason(exc: BaseException, logged: list[str]) -> str:
    """One line saying what went wrong: the error at the bottom of the first traceback
    nbgrader logged (it catches the error and raises its own, which says only "see the
    above traceback", or advises ``nbgrader db upgrade`` for any database error), else the
    bottom of ``exc``'s chain."""
    for message in logged:
        if message.startswith("Traceback"):
            lines = [line for line in message.splitlines() if line.strip()]
            errors = [x for x in lines if not x[0].isspace() and not x.startswith(NOT_THE_ERROR)]
            if errors:
                return errors[-1].strip()
    seen = []
    while exc is not None and exc not in seen:
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__
    root = seen[-1]
    first = next((line.strip() for line in str(root).splitlines() if line.strip()), "")
    return f"{type(root).__name__}: {first}" if first else type(root).__name__


class _Kept(logging.Handler):
    """Keeps the messages nbgrader logs while it writes one page (its errors say why)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


class Feedback:
    """nbgrader's feedback HTML for one notebook at a time, in this process (one nbgrader
    process per lab would cost seconds each): the notebook as graded, with the scores and
    comments in the gradebook, manual ones included."""

    def __init__(self, course: Path):
        from nbgrader.converters import GenerateFeedback
        from nbgrader.coursedir import CourseDirectory
        from traitlets.config import Config

        # absolute: nbgrader works in the course folder (os.chdir) while it converts
        self.course = Path(course).resolve()
        self.staging = f"{STAGING}/{os.getpid()}"
        config = Config()
        config.CourseDirectory.root = str(self.course)
        config.CourseDirectory.db_url = courses.db_url(self.course)
        config.CourseDirectory.feedback_directory = self.staging  # see the module
        self.coursedir = CourseDirectory(config=config)
        self.converter = GenerateFeedback(coursedir=self.coursedir, config=config)
        self.converter.force = True

    def write(self, student: str, lab: str) -> None:
        """Write the page, or raise RuntimeError saying why (the old page is kept; the
        log, ``logs/feedback--STUDENT--LAB.log``, holds the traceback)."""
        self.coursedir.assignment_id, self.coursedir.student_id = lab, student
        staged = self.course / self.staging / student / lab
        kept = _Kept()
        self.converter.log.addHandler(kept)
        try:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    self.converter.start()
                if not (staged / f"{lab}.html").is_file():
                    raise RuntimeError(f"nbgrader wrote no page from autograded/{student}/{lab}")
            except Exception as err:
                text = "\n".join([*kept.messages, traceback.format_exc()])
                write_whole(log_path(self.course, student, lab), text)
                raise RuntimeError(reason(err, kept.messages)) from None
            final = self.course / "feedback" / student / lab
            final.mkdir(parents=True, exist_ok=True)
            for path in sorted(staged.rglob("*")):
                if path.is_file():
                    target = final / path.relative_to(staged)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    os.replace(path, target)  # the old file until this instant, then the new
            log_path(self.course, student, lab).unlink(missing_ok=True)
        finally:
            self.converter.log.removeHandler(kept)
            shutil.rmtree(self.course / self.staging, ignore_errors=True)


def generate_feedback(course: Path, labs: list[str], *, missing_only: bool = False) -> int:
    """Feedback for every graded notebook of these labs (again after manual grading), or
    only where it is missing or older than the result (``missing_only``: after a run that
    was stopped, or one whose feedback went to workers). Returns how many were written;
    raises :class:`FeedbackFailed` (after writing the others) if any page could not be."""
    written, failed = 0, []
    shown, course = course, Path(course).resolve()  # the writers may work elsewhere
    for lab in labs:
        for result in sorted((course / "results").glob(f"*/{lab}.json")):
            student = result.parent.name
            html = course / "feedback" / student / lab / f"{lab}.html"
            if missing_only and html.exists() and html.stat().st_mtime >= result.stat().st_mtime:
                continue
            if read_row(result).graded:
                why = write_limited(course, student, lab)
                if why:
                    failed.append((student, lab, why))
                else:
                    written += 1
    shutil.rmtree(course / STAGING, ignore_errors=True)  # what a killed child left
    if failed:
        raise FeedbackFailed(failure_message(shown, failed), written, failed)
    return written


def failure_message(course: Path, failed: list[tuple[str, str, str]]) -> str:
    """One line: which pages could not be written, the first one's reason, where the logs
    are and the command that writes them again."""
    names = ", ".join(f"{s}/{lab}" for s, lab, _ in failed[:5])
    names += f" and {len(failed) - 5} more" if len(failed) > 5 else ""
    again = ["python3", "tasks.py", "feedback", *course_args(course)]
    again += ["--labs", *sorted({lab for _, lab, _ in failed})]
    return (
        f"{len(failed)} feedback pages could not be written ({names}; their earlier pages, if "
        f"any, are kept): {failed[0][2]} (the traceback is in "
        f"{log_path(course, failed[0][0], failed[0][1])}); fix that and run "
        f"`{shlex.join(again)}`"
    )


def write_one(course: str, student: str, lab: str) -> None:
    """One notebook's feedback page, in this process (what :func:`write_limited` runs)."""
    Feedback(Path(course)).write(student, lab)


def write_limited(course: Path, student: str, lab: str, limits=None) -> str | None:
    """One notebook's feedback page, written in a child under limits
    (:func:`labtools.grader.judge.call`: ``grader_memory``, ``feedback_seconds``). Returns None
    once it is written, else one line saying why not (the old page is kept, and the
    course folder's log says why in full)."""
    from labtools.grader import judge
    from labtools.grader.limits import Limits

    limits = limits or Limits()
    why = judge.call(
        "labtools.out.feedback:write_one",
        [str(course), student, lab],
        seconds=limits.feedback_seconds,
        memory=limits.grader_memory,
    )
    if not why:
        return None
    lines = [line.strip() for line in why.strip().splitlines() if line.strip()]
    last = lines[-1] if lines else why
    if not last.startswith("RuntimeError: "):  # killed, out of memory: the child wrote no log
        write_whole(log_path(course, student, lab), why + "\n")
    return last.removeprefix("RuntimeError: ")


def feedback_task(course: str, student: str, lab: str) -> None:
    """Write one notebook's feedback (runs in a worker of the local pool, which shares the
    course folder), in a child under limits (:func:`write_limited`); a page that could not
    be written is written again at the end of the run (``missing_only``)."""
    write_limited(Path(course), student, lab)
