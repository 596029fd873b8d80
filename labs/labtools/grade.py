"""Grading a class into a course folder that nbgrader's gradebook and formgrader use.

    python -m labtools grade SUBMISSIONS [--course grading] [--jobs N] [--regrade] ...

:func:`grade` is one run, and each step has its module:

1. the course folder, made or brought up to date (:mod:`labtools.course.folder`);
2. the submissions, read from a folder, a zip or a Canvas or Moodle download
   (:mod:`labtools.door.intake`, :mod:`labtools.door.layout`); a notebook graded before is
   skipped unless ``regrade``;
3. the rest graded on workers (:mod:`labtools.schedule`: the local pool or a dask cluster's
   executor, :mod:`labtools.grader.cluster`), each notebook by
   :func:`labtools.grader.worker.grade_task`; each outcome recorded as it comes
   (:mod:`labtools.course.record`), feedback written (:mod:`labtools.out.feedback`);
4. the grade tables exported (:mod:`labtools.out.export`).

The messages between these steps are the dataclasses of :mod:`labtools.wire`.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import difflib
import functools
import hashlib
import json
import tempfile
from pathlib import Path

from labtools import schedule
from labtools.course import folder as courses
from labtools.course import late
from labtools.course.record import STALE, read_row
from labtools.door import intake, layout, parse
from labtools.door.layout import UsageError
from labtools.grader import notebook
from labtools.grader.limits import Limits
from labtools.out.export import export
from labtools.wire import TEXT, Status, capped

#: rows that a run lost (a worker killed, a cluster gone): the next run grades them again
LOST = (Status.FAILED, Status.NOT_RUN)
CHANGED = "the submission changed since"


def grade(
    submissions,
    course="grading",
    *,
    labs: list[str] | None = None,
    students: list[str] | None = None,
    jobs: int | None = None,
    regrade: bool = False,
    unsafe: bool = False,
    cold: bool = False,
    limits: Limits | None = None,
    executor: concurrent.futures.Executor | None = None,
    progress: bool = True,
    feedback: bool = True,
    db: str | None = None,
) -> dict:
    """Grade every submission into ``course``; returns a summary: "graded" and "already
    graded" (each a list of :class:`labtools.wire.Row`), "exported" (the tables' paths) and
    what the intake reports.

    submissions : a folder or zip: ``[submitted/]<student>/<lab>/<lab>.ipynb``, or a Canvas
        or Moodle download (see :mod:`labtools.door.intake`; the summary lists what it could
        not place under "not placed")
    course : the course folder, made on the first run and reused after
        (:mod:`labtools.course.folder`)
    labs : only these labs (default: all)
    students : only these students (default: all)
    jobs : notebooks graded at once (default: the number of cores); ignored with executor
    regrade : grade again notebooks that already have a result (manual scores stay)
    unsafe : run student code without the sandbox (refused otherwise when it is missing)
    cold : start each notebook in a fresh sandbox (default: a child of each worker's warm
        parent, :mod:`labtools.inside.zygote`, where the grader runs as root)
    executor : any concurrent.futures.Executor (e.g. a dask ``Client.get_executor()``); its
        workers need the sandbox, this machine does not (a worker without it fails each
        notebook; :mod:`labtools.grader.cluster` checks a dask cluster's workers first)
    feedback : write each graded notebook's feedback file (else later, with
        :func:`labtools.out.feedback.generate_feedback`: ``python -m labtools feedback``)
    db : the URL of a PostgreSQL database to keep the gradebook in, remembered by the
        course folder (:func:`labtools.course.folder.use_gradebook`; default: the one it
        remembers, else SQLite in it)
    """
    from labtools.grader import bwrap

    layout.check_arguments(str(submissions), str(course), labs, jobs)
    if db is not None:
        courses.check_db_url(db)
    course, submissions = Path(course).resolve(), Path(submissions).resolve()
    missing = bwrap.available() if executor is None else None  # else: where it runs
    if missing and not unsafe:
        raise UsageError(
            f"the sandbox cannot run here: {missing}. Grading without it runs every "
            "student's code with your rights; to do that anyway, pass --unsafe."
        )
    limits = limits or Limits()
    known = layout.lab_names()
    labs = labs or known
    with tempfile.TemporaryDirectory(prefix="submissions-") as tmp:
        # every lab's notebooks are read, so that --labs leaves the others out (counted),
        # and all is checked before the course folder is made or touched
        taken = intake.collect(submissions, known, Path(tmp), course=course)
        found = chosen(taken, submissions, labs, students)
        late.load(course)  # a malformed late policy is refused before anything is graded
        with courses.locked(course):
            courses.open_course(course, db=db)
            courses.back_up_gradebook(course)
            apart = intake.apart(course, taken)  # ids that came from another source: listed
            found = [sub for sub in found if (sub.student, sub.lab) not in apart]
            taken.keep_names(course)  # names, participants and each id's source
            intake.keep_not_placed(course, str(submissions), taken.unplaced)
            todo, skipped, again, changed = [], [], [], []
            times = {}  # when each notebook graded (now or before) came in, if the intake knows
            files = {}  # the Canvas download's file of each notebook, with its digest
            for sub in found:
                data = None
                if not sub.refused:
                    try:
                        data = layout.read_notebook(sub.path)
                    except (OSError, ValueError) as err:
                        sub.refused = f"refused: {err}"
                digest = hashlib.sha256(data or b"").hexdigest()
                done = courses.result_path(course, sub.student, sub.lab)
                previous = read_row(done) if done.exists() and not regrade else None
                when = taken.times.get((sub.student, sub.lab))
                if when and (
                    previous is None or previous.digest == digest or previous.status in LOST
                ):
                    times[(sub.student, sub.lab)] = dataclasses.replace(when, digest=digest)
                if (sub.student, sub.lab) in taken.canvas_files:
                    files[(sub.student, sub.lab)] = {
                        **taken.canvas_files[(sub.student, sub.lab)],
                        "digest": digest,
                    }
                if previous is not None and previous.status in LOST:
                    again.append(previous)  # the last run lost it: graded now
                elif previous is not None:
                    if previous.digest != digest:
                        changed.append(previous)
                        if CHANGED not in previous.detail:  # (room kept for it under the cap)
                            said = f"; {CHANGED}: grade it with --regrade"
                            room = TEXT - len(previous.status.value) - len(said)
                            previous.detail = capped(previous.detail, room) + said
                            layout.write_whole(done, json.dumps(previous.to_json(), indent=1))
                    skipped.append(previous)
                    continue
                todo.append((sub, digest, data))
            todo = admit(course, todo)  # the door: each notebook read once, in a child
            if times:
                late.record_times(course, times)
            intake.keep_canvas_files(course, files)
            rows = schedule.run(
                course,
                todo,
                limits=limits,
                unsafe=unsafe,
                cold=cold,
                jobs=jobs,
                executor=executor,
                progress=progress,
                feedback=feedback,
            )
            exported = export(course)
            if feedback:  # a page written before its late deduction was known: again
                rewrite_pages(course, getattr(exported, "penalties", []))
            names = intake.student_names(course)
    left_out = sum(1 for sub in taken.submissions if sub.lab not in labs)
    return {
        "graded": rows,
        "already graded": skipped,
        "graded again": again,  # rows a run before left "grading failed" or "not graded"
        "changed": changed,  # rows whose submission changed since it was graded
        # rows whose scores given by hand were for answers that changed since (not kept)
        "manual not kept": [row for row in rows if row.graded and STALE in row.detail],
        "left out by --labs": left_out,
        "exported": exported,
        **taken.report(),
        "student names": names,  # every name the course folder knows, by student id
    }


def rewrite_pages(course: Path, changed: list[tuple[str, str]]) -> None:
    """Write again the feedback pages of these (student, lab) whose late deduction in the
    gradebook changed after they were written; a page that cannot be is kept as it was
    and said (``python -m labtools feedback`` writes it again)."""
    import sys

    from labtools.out.feedback import write_limited

    for student, lab in changed:
        if not (course / "feedback" / student / lab / f"{lab}.html").exists():
            continue  # none written (--no-feedback, or it failed): `feedback` writes it
        why = write_limited(course, student, lab)
        if why:
            print(f"warning: the feedback page of {student}/{lab} was not written again "
                  f"({why}): run `tasks.py feedback --labs {lab}`", file=sys.stderr)  # fmt: skip


def chosen(taken, submissions: Path, labs: list[str], students: list[str] | None) -> list:
    """The submissions of ``labs`` and ``students`` in what the intake found; a UsageError
    (before the course folder is made) when there is none."""
    if not taken.submissions:
        unplaced = "".join(f"\n  {u.file!r}: {u.why}" for u in taken.unplaced[:20])
        raise UsageError(
            f"no submissions found in {submissions}; expected {layout.EXPECTED}"
            + (f"; files not placed:{unplaced}" if unplaced else "")
        )
    found = [sub for sub in taken.submissions if sub.lab in labs]
    if not found:
        raise UsageError(
            f"none of the {len(taken.submissions)} submissions found in {submissions} is of "
            f"--labs {' '.join(labs)}"
        )
    if not students:
        return found
    mine = [sub for sub in found if sub.student in students]
    if not mine:
        names = sorted({sub.student for sub in found})
        near = {n for typo in students for n in difflib.get_close_matches(typo, names, n=3)}
        raise UsageError(
            f"none of the {len(found)} submissions found matched --students "
            f"{' '.join(students)}"
            + (f"; the nearest names: {', '.join(sorted(near))}" if near else "")
        )
    return mine


def admit(course: Path, todo: list) -> list:
    """The door for the notebooks a run grades (:func:`labtools.door.parse.notebook`, in a
    child under limits): each one's data becomes the door's canonical text, or its row a
    refusal that names the file and what to do (another lab's notebook too:
    :func:`other_lab`). ``todo``: [(submission, digest, bytes)], returned as that."""
    locked = {}
    for lab in layout.lab_names(course):
        try:
            locked[lab] = _locked_cells(course, lab)
        except (OSError, ValueError):
            continue
    chosen = [k for k, (sub, _, data) in enumerate(todo) if not sub.refused and data is not None]
    jobs = [
        functools.partial(
            parse.notebook,
            todo[k][2],
            f"{todo[k][0].lab}.ipynb",
            functools.partial(other_lab, lab=todo[k][0].lab, locked=locked),
        )
        for k in chosen
    ]
    names = [f"{todo[k][0].lab}.ipynb" for k in chosen]
    admitted = list(todo)
    for k, let in zip(chosen, parse.read(jobs, names, parse.SAVE), strict=True):
        sub, digest, _ = todo[k]
        if let.refused is not None:
            sub.refused = let.refused.status
            admitted[k] = (sub, digest, None)
        else:
            admitted[k] = (sub, digest, let.value["text"].encode("utf-8"))
    return admitted


def _locked_cells(course: Path, lab: str) -> set[tuple[str, str]]:
    """(grade id, text) of each locked cell of the lab's student version in the course."""
    path = course / "release" / lab / f"{lab}.ipynb"
    if path not in _LOCKED:
        nb = json.loads(path.read_text())
        _LOCKED[path] = {
            (notebook.grade_id(c), notebook.text(c).strip())
            for c in nb["cells"]
            if notebook.grade_id(c) and not notebook.is_answer(c)
        }
    return _LOCKED[path]


_LOCKED: dict[Path, set[tuple[str, str]]] = {}  # read once a process (a course keeps its labs)


def other_lab(nb: dict, lab: str, locked: dict[str, set[tuple[str, str]]]) -> str | None:
    """A refusal when the notebook ``nb`` handed in as ``lab`` is another lab's: more of
    its locked cells (grade id and text; ``locked``: each lab's) are that lab's than this
    one's, and at least half of that lab's; else None (anything else is for the grading
    to judge). Runs in the door's child (:func:`admit`)."""
    try:
        cells = nb.get("cells")
        if not isinstance(cells, list):
            return None
        mine = {
            (notebook.grade_id(c), notebook.text(c).strip())
            for c in cells
            if isinstance(c, dict) and notebook.grade_id(c)
        }
    except (ValueError, TypeError, AttributeError):
        return None  # not a notebook: the worker says so
    counts = {other: (len(mine & theirs), len(theirs)) for other, theirs in locked.items()}
    own = counts.get(lab, (0, 0))[0]
    best = max(counts, key=lambda other: counts[other][0], default=lab)
    matched, total = counts.get(best, (0, 0))
    if best != lab and matched > own and 2 * matched >= total:
        return (
            f"this is {best}'s notebook (its cells are that lab's), handed in as "
            f"{lab}; hand in {lab}.ipynb"
        )
    return None
