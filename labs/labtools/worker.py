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


def grade_task(task: Task) -> Outcome:
    """Grade one notebook: GRADED with the verdicts and the autograded notebook,
    UNREADABLE if nbformat cannot read it, FAILED (with the traceback) if grading itself
    failed."""
    import nbformat

    from labtools import render, verdicts
    from labtools.sandbox import Limits

    try:
        with warnings.catch_warnings():  # duplicate or missing cell ids: nbformat fixes them
            warnings.simplefilter("ignore")
            submitted = nbformat.reads(task.notebook, as_version=4)
            nbformat.validate(submitted)
    except Exception as err:  # noqa: BLE001 - truncated JSON, not a notebook at all, ...
        return Outcome(Status.UNREADABLE, f" ({type(err).__name__})")
    try:
        result = verdicts.evaluate(
            task.source,
            json.loads(nbformat.writes(submitted)),
            Limits(**task.limits),
            unsafe=task.unsafe,
            mpl_cache=worker_mpl_cache(task.mpl_cache),
        )
        autograded = render.autograded_notebook(task.source, result)
        return Outcome(Status.GRADED, evaluation=result, autograded=autograded)
    except Exception:  # noqa: BLE001 - the grader's own failure, reported on that row
        return Outcome(Status.FAILED, traceback.format_exc())


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
