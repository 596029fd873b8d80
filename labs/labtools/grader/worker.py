"""Grading one notebook in a worker: a :class:`~labtools.wire.Task` in, an
:class:`~labtools.wire.Outcome` out, both plain data.

:func:`grade_task` runs in a process of the local pool or on a dask worker
(:mod:`labtools.schedule`, :mod:`labtools.grader.cluster`): it has the notebook graded in a child
process under limits (:mod:`labtools.grader.judge`, which reads the submission and runs
:func:`labtools.grader.verdicts.evaluate`: the student's code in the sandbox, every verdict
outside it), and builds the notebook as graded from what the child reported
(:mod:`labtools.grader.render`), so that the process that records stays light. It needs nothing
from the course folder.
"""

from __future__ import annotations

import traceback

from labtools.grader.judge import mpl_cache, worker_mpl_cache  # noqa: F401 - where they were
from labtools.wire import Outcome, Status, Task


def grade_task(task: Task) -> Outcome:
    """Grade one notebook: GRADED with the verdicts and the autograded notebook,
    UNREADABLE if nbformat cannot read it, FAILED (with the traceback) if grading itself
    failed. The grading runs in a child process under limits (:mod:`labtools.grader.judge`);
    what it reached before a limit stopped it is kept."""
    from labtools.grader import judge, render

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
    """What :func:`labtools.grader.verdicts.evaluate` returns, from a child's reports: each cell
    as graded, or, for the cells a stopped child did not reach, as planned, with no points
    (tests) and the reason."""
    stopped = reports["stopped"]
    cells, reached = [], reports["cells"]
    if reports["done"] and sorted(reached) != list(range(len(plan["plan"]))):
        raise RuntimeError(  # the grader's own bug: a row FAILED, graded again next run
            f"the grader's child finished having reported {len(reached)} of "
            f"{len(plan['plan'])} cells"
        )
    for index, planned in enumerate(plan["plan"]):
        entry = reached.get(index)
        if entry is None:
            entry = dict(planned)
            if entry["role"] == "test":
                entry.update(passed=False, score=0.0, message=f"not graded: {stopped}")
        cells.append(entry)
    done = reports["done"] or {"notes": list(plan["notes"]), "stopped": stopped, "output": ""}
    notes = list(done["notes"])
    if stopped:
        notes.append(f"{stopped}; the tests it did not reach score 0")
    return {
        "cells": cells,
        "notes": notes,
        "stopped": done["stopped"] or stopped,
        "output": done["output"],
        "review": done.get("review") or [],
        "seconds": reports["seconds"],
    }
