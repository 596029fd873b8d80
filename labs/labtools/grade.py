"""Grading a class into a course folder that nbgrader's gradebook and formgrader use.

    python -m labtools grade SUBMISSIONS [--course grading] [--jobs N] [--regrade] ...

:func:`grade` is one run, and each step has its module:

1. the course folder, made or brought up to date (:mod:`labtools.course`);
2. the submissions, read from a folder, a zip or a Canvas or Moodle download
   (:mod:`labtools.intake`, :mod:`labtools.layout`); a notebook graded before is skipped
   unless ``regrade``;
3. the rest graded on workers (:mod:`labtools.schedule`: the local pool or a dask cluster's
   executor, :mod:`labtools.cluster`), each notebook by :func:`labtools.worker.grade_task`;
   each outcome recorded as it comes (:mod:`labtools.record`), feedback written
   (:mod:`labtools.feedback`);
4. the grade tables exported (:mod:`labtools.export`).

The messages between these steps are the dataclasses of :mod:`labtools.wire`.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import tempfile
from pathlib import Path

from labtools import course as courses
from labtools import intake, layout, schedule
from labtools.export import export
from labtools.layout import UsageError
from labtools.record import read_row
from labtools.sandbox import Limits


def grade(
    submissions,
    course="grading",
    *,
    labs: list[str] | None = None,
    students: list[str] | None = None,
    jobs: int | None = None,
    regrade: bool = False,
    unsafe: bool = False,
    limits: Limits | None = None,
    executor: concurrent.futures.Executor | None = None,
    progress: bool = True,
    feedback: bool = True,
) -> dict:
    """Grade every submission into ``course``; returns a summary: "graded" and "already
    graded" (each a list of :class:`labtools.wire.Row`), "exported" (the tables' paths) and
    what the intake reports.

    submissions : a folder or zip: ``[submitted/]<student>/<lab>/<lab>.ipynb``, or a Canvas
        or Moodle download (see :mod:`labtools.intake`; the summary lists what it could
        not place under "not placed")
    course : the course folder, made on the first run and reused after
        (:mod:`labtools.course`)
    labs : only these labs (default: all)
    students : only these students (default: all)
    jobs : notebooks graded at once (default: the number of cores); ignored with executor
    regrade : grade again notebooks that already have a result (manual scores stay)
    unsafe : run student code without the sandbox (refused otherwise when it is missing)
    executor : any concurrent.futures.Executor (e.g. a dask ``Client.get_executor()``); its
        workers need the sandbox, this machine does not (a worker without it fails each
        notebook; :mod:`labtools.cluster` checks a dask cluster's workers first)
    feedback : write each graded notebook's feedback file (else later, with
        :func:`labtools.feedback.generate_feedback`: ``python -m labtools feedback``)
    """
    from labtools import sandbox

    layout.check_arguments(str(submissions), str(course), labs)
    course, submissions = Path(course).resolve(), Path(submissions).resolve()
    missing = sandbox.available() if executor is None else None  # else: where it runs
    if missing and not unsafe:
        raise UsageError(
            f"the sandbox cannot run here: {missing}. Grading without it runs every "
            "student's code with your rights; to do that anyway, pass --unsafe."
        )
    limits = limits or Limits()
    all_labs = courses.open_course(course)
    labs = labs or all_labs
    with tempfile.TemporaryDirectory(prefix="submissions-") as tmp:
        taken = intake.collect(submissions, labs, Path(tmp))
        found = taken.submissions
        if students:
            found = [sub for sub in found if sub.student in students]
        if not found:
            unplaced = "".join(f"\n  {u.file!r}: {u.why}" for u in taken.unplaced[:20])
            raise UsageError(
                f"no submissions found in {submissions}; expected {layout.EXPECTED}"
                + (f"; files not placed:{unplaced}" if unplaced else "")
            )
        todo, skipped = [], []
        for sub in found:
            data = None
            if not sub.refused:
                try:
                    data = layout.read_notebook(sub.path)
                except (OSError, ValueError) as err:
                    sub.refused = f"refused: {err}"
            digest = hashlib.sha256(data or b"").hexdigest()
            done = courses.result_path(course, sub.student, sub.lab)
            if done.exists() and not regrade:
                previous = read_row(done)
                if previous.digest != digest:
                    previous.detail += "; the submission changed since: grade it with --regrade"
                    layout.write_whole(done, json.dumps(previous.to_json(), indent=1))
                skipped.append(previous)
                continue
            todo.append((sub, digest, data))
        rows = schedule.run(
            course,
            todo,
            limits=limits,
            unsafe=unsafe,
            jobs=jobs,
            executor=executor,
            progress=progress,
            feedback=feedback,
        )
    exported = export(course)
    return {"graded": rows, "already graded": skipped, "exported": exported, **taken.report()}
