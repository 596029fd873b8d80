"""Grading one notebook in a worker: a :class:`~labtools.wire.Task` in, an
:class:`~labtools.wire.Outcome` out, both plain data.

:func:`grade_task` runs in a process of the local pool or on a dask worker
(:mod:`labtools.schedule`, :mod:`labtools.cluster`): it reads the submitted notebook,
grades it with :func:`labtools.verdicts.evaluate` (the student's code in the sandbox, every
verdict outside it) and builds the notebook as graded (:mod:`labtools.render`), so that
the process that records stays light. It needs nothing from the course folder.
"""

from __future__ import annotations

import json
import traceback
import warnings
from pathlib import Path

from labtools.wire import Outcome, Status, Task


def read_submission(text: str) -> tuple[dict | None, str]:
    """The submitted notebook as a dict (nbformat 4, validated), or None and why not."""
    import nbformat

    try:
        with warnings.catch_warnings():  # duplicate or missing cell ids: nbformat fixes them
            warnings.simplefilter("ignore")
            submitted = nbformat.reads(text, as_version=4)
            nbformat.validate(submitted)
    except Exception as err:  # noqa: BLE001 - truncated JSON, not a notebook at all, ...
        return None, f" ({type(err).__name__})"
    return json.loads(nbformat.writes(submitted)), ""


def grade_task(task: Task) -> Outcome:
    """Grade one notebook: GRADED with the verdicts and the autograded notebook,
    UNREADABLE if nbformat cannot read it, FAILED (with the traceback) if grading itself
    failed. The grading runs in a child process under limits (:mod:`labtools.judge`);
    what it reached before a limit stopped it is kept."""
    from labtools import judge, render

    try:
        plan, unreadable, reports = judge.judge(task)
        if unreadable is not None:
            return Outcome(Status.UNREADABLE, unreadable)
        if reports["failed"]:
            return Outcome(Status.FAILED, reports["failed"])
        if plan is None:
            why = reports["stopped"] or "the grader's side stopped before reading it"
            return Outcome(Status.UNREADABLE, f" (not read within the grader's limits: {why})")
        result = assemble(plan, reports)
        autograded = render.autograded_notebook(task.source, result)
        return Outcome(Status.GRADED, evaluation=result, autograded=autograded)
    except Exception:  # noqa: BLE001 - the grader's own failure, reported on that row
        return Outcome(Status.FAILED, traceback.format_exc())


def assemble(plan: dict, reports: dict) -> dict:
    """What :func:`labtools.verdicts.evaluate` returns, from a child's reports: each cell
    as graded, or, for the cells a stopped child did not reach, as planned, with no points
    (tests) and the reason."""
    stopped = reports["stopped"]
    cells, reached = [], reports["cells"]
    for index, planned in enumerate(plan["plan"]):
        entry = reached.get(index)
        if entry is None:
            entry = dict(planned)
            if entry["role"] == "test":
                entry.update(passed=False, score=0.0, message=f"not graded: {stopped}")
        cells.append(entry)
    done = reports["done"] or {
        "notes": list(plan["notes"]),
        "stopped": stopped,
        "output": "",
    }
    notes = list(done["notes"])
    if stopped:
        notes.append(f"{stopped}; the tests it did not reach score 0")
    return {
        "cells": cells,
        "notes": notes,
        "stopped": done["stopped"] or stopped,
        "output": done["output"],
        "seconds": reports["seconds"],
    }


def mpl_cache() -> str:
    """This machine's matplotlib cache folder (its font list built if it was not)."""
    import matplotlib
    import matplotlib.font_manager  # noqa: F401 - builds the font list if it is not there

    return matplotlib.get_cachedir()


def worker_mpl_cache(given: str | None) -> Path | None:
    """The font cache a worker lends its sandboxes: the grading machine's (``given``) if
    that folder is here, else this worker's own (a worker on another machine), else none."""
    if given and Path(given).is_dir():
        return Path(given)
    try:
        return Path(mpl_cache())
    except Exception:  # noqa: BLE001 - no cache: matplotlib builds its font list each time
        return None
