"""The instructor commands' options, declared once: ``python -m labtools`` and
``python3 tasks.py`` build their parsers from :func:`add_options`.

Standard library only: ``tasks.py`` reads them with the system's Python, before the
project's environment exists, to check a command line (and answer ``--help``) before it
installs anything; it then hands the same arguments to ``python -m labtools``.
"""

from __future__ import annotations

import argparse
import os
import urllib.parse

#: the jobs of ``python -m labtools`` and their one-line help
JOBS = {
    "release": "regenerate labs/release from labs/source",
    "grade": "grade a folder or zip of submissions",
    "export": "write grades.csv and grades-wide.csv (after manual grading); --canvas, "
    "--moodle: grades for the platform's import",
    "feedback": "regenerate feedback (after manual grading)",
    "formgrader": "grade answers by hand in nbgrader's formgrader",
    "report": "write report.html: scores, failure messages, time and similar answers per lab",
    "review": "list the answers held for review (with why), or give their points (--accept)",
}


COURSE = "grading"  # the course folder when --course is not given


def add_course_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--course", default=COURSE, help=f"course folder (default: {COURSE})")


def course_args(course) -> list[str]:
    """``["--course", COURSE]`` for a command an instructor is told to run next, or ``[]``
    when ``course`` is the default folder (the commands run in the repository's root)."""
    same = os.path.abspath(course) == os.path.abspath(COURSE)
    return [] if str(course) == COURSE or same else ["--course", str(course)]


#: the jobs that read or write the gradebook, so take ``--db``
DB_JOBS = ("grade", "export", "feedback", "formgrader", "report", "review")


def add_db_option(parser: argparse.ArgumentParser) -> None:
    """``--db URL``: the gradebook on a PostgreSQL server that several graders share
    (labtools.course.folder.use_gradebook); without it, the one the course folder remembers, else
    SQLite in the course folder."""
    parser.add_argument(
        "--db",
        metavar="URL",
        help="keep the gradebook on this PostgreSQL server, to share it between graders: "
        "postgresql://USER@HOST:PORT/DATABASE (password in ~/.pgpass, not here); the course "
        "folder remembers it (default: the one it remembers, else gradebook.db in it)",
    )


def masked(url: str) -> str:
    """``url`` with its password (``user:PASSWORD@`` or ``password=`` in the query) shown as
    ``***``: the form of a database URL that may be printed or logged."""
    try:
        parts = urllib.parse.urlsplit(url)
        netloc = parts.netloc
        if parts.password is not None:
            user, _, host = netloc.rpartition("@")
            netloc = f"{user.partition(':')[0]}:***@{host}"
        query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        hidden = [(k, "***" if k.lower() == "password" else v) for k, v in query]
        if netloc == parts.netloc and hidden == query:
            return url
        text = f"{parts.scheme}://{netloc}{parts.path}"
        return text + (f"?{urllib.parse.urlencode(hidden, safe='/:*')}" if hidden else "")
    except ValueError:
        return "(a database URL that could not be read)"


def shown(argv: list[str]) -> list[str]:
    """A command line as it may be printed: the value of ``--db`` masked (:func:`masked`)."""
    out = []
    for k, arg in enumerate(argv):
        if arg.startswith("--db="):
            arg = "--db=" + masked(arg[5:])
        elif k and argv[k - 1] == "--db":
            arg = masked(arg)
        out.append(arg)
    return out


def add_grade_options(grade: argparse.ArgumentParser) -> None:
    """The options of ``grade`` (the grading limits: :class:`labtools.grader.limits.Limits`)."""
    grade.add_argument(
        "submissions",
        help="[submitted/]<student>/<lab>/<lab>.ipynb, a zip, or a Canvas or Moodle download",
    )
    add_course_option(grade)
    grade.add_argument("--labs", nargs="+", help="only these labs")
    grade.add_argument("--students", nargs="+", help="only these students")
    grade.add_argument(
        "--jobs", type=int, default=os.cpu_count(), help="notebooks graded at once (default: cores)"
    )
    grade.add_argument("--regrade", action="store_true", help="grade graded notebooks again")
    grade.add_argument("--unsafe", action="store_true", help="grade without the sandbox")
    grade.add_argument(
        "--cold",
        action="store_true",
        help="start each notebook in a fresh sandbox, not from the warm parent (slower)",
    )
    grade.add_argument(
        "--no-feedback",
        dest="feedback",
        action="store_false",
        help="write no feedback files now (later: the feedback job, e.g. after manual grading)",
    )
    grade.add_argument(
        "--cell-timeout", type=float, default=60.0, help="seconds per cell (default: 60)"
    )
    grade.add_argument(
        "--memory-gb", type=float, default=2.0, help="memory per process in GB (default: 2)"
    )
    grade.add_argument(
        "--limit",
        action="append",
        metavar="NAME=VALUE",
        help="set one grading limit, e.g. notebook_seconds=900 (repeatable; the names and "
        "defaults: labtools.grader.limits.Limits and the instructor guide)",
    )
    grade.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="grade on the workers of this dask scheduler (tcp://HOST:8786) instead of --jobs",
    )


def add_export_options(export: argparse.ArgumentParser) -> None:
    """The options of ``export``: grades back into Canvas or Moodle
    (:mod:`labtools.out.platforms`)."""
    export.add_argument(
        "--canvas",
        metavar="GRADEBOOK_EXPORT.csv",
        help="also write canvas-import.csv from this gradebook export downloaded from Canvas, "
        "and canvas-LAB-feedback.zip of the feedback pages for each lab graded from a Canvas "
        "download (for the assignment's Re-upload submissions)",
    )
    export.add_argument(
        "--column",
        action="append",
        metavar="LAB=TITLE",
        help="with --canvas: the export's column of LAB, e.g. lab1_perceptron='Lab 1 (1234)' "
        "(repeatable; default: the one column whose title names the lab)",
    )
    export.add_argument(
        "--moodle",
        metavar="WORKSHEET.csv",
        help="also fill this Moodle grading worksheet of --lab into moodle-LAB-worksheet.csv "
        "and write moodle-LAB-feedback.zip",
    )
    export.add_argument("--lab", help="with --moodle: the lab the worksheet is for")
    export.add_argument(
        "--final",
        action="store_true",
        help="with --canvas or --moodle: only final grades go back (none of a notebook whose "
        "answers wait for grading by hand or review); the platform keeps the others as it has them",
    )


def add_options(job: str, parser: argparse.ArgumentParser) -> None:
    """Declare the options of ``job`` (one of :data:`JOBS`) on ``parser``."""
    if job == "grade":
        add_grade_options(parser)
    elif job in ("export", "feedback", "formgrader", "report", "review"):
        add_course_option(parser)
        if job == "review":
            parser.add_argument(
                "--accept",
                nargs="+",
                default=[],
                metavar="STUDENT/LAB",
                help="give these notebooks' held tests the points they earned",
            )
        if job == "export":
            add_export_options(parser)
        if job == "feedback":
            parser.add_argument("--labs", nargs="+", help="only these labs")
        if job == "formgrader":
            parser.add_argument("--port", type=int, default=8888)
    elif job != "release":
        raise ValueError(f"no such job: {job}")
    if job in DB_JOBS:
        add_db_option(parser)
