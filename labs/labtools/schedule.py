"""Scheduling a run's notebooks on workers: the local pool (one process per core) or any
``concurrent.futures.Executor`` (a dask cluster's, :mod:`labtools.grader.cluster`).

:func:`run` hands each notebook to a worker as a :class:`~labtools.wire.Task`
(:func:`labtools.grader.worker.grade_task`), records each :class:`~labtools.wire.Outcome` as it
comes (:class:`labtools.course.record.Recorder`), and has the feedback written
(:mod:`labtools.out.feedback`). :class:`Queue` orders the notebooks, longest lab first.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import multiprocessing
import os
import sys
import traceback
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict
from pathlib import Path

from labtools.children import die_with_parent
from labtools.course import folder as courses
from labtools.course.record import Recorder
from labtools.door import layout
from labtools.door.layout import Submission
from labtools.grader.worker import grade_task, mpl_cache
from labtools.out.feedback import FeedbackFailed, feedback_task, generate_feedback
from labtools.wire import Outcome, Row, Status, Task


class Queue:
    """The notebooks still to grade, longest first: a lab's expected time is the mean of
    its notebooks graded so far (in this run or an earlier one); a lab not yet seen goes
    first, once, to be measured. Longest first keeps the cores busy to the end: a long
    notebook started last would leave the other cores idle while it runs."""

    def __init__(self, todo: list, seconds: dict[str, list[float]]):
        self.pending: dict[str, list] = {}
        for item in todo:
            self.pending.setdefault(item[0].lab, []).append(item)
        for items in self.pending.values():
            items.reverse()  # popped from the end: each lab's notebooks in the order given
        self.seconds = {lab: list(values) for lab, values in seconds.items()}
        self.started: set[str] = set()

    def __len__(self) -> int:
        return sum(len(items) for items in self.pending.values())

    def expected(self, lab: str) -> float:
        if self.seconds.get(lab):
            return sum(self.seconds[lab]) / len(self.seconds[lab])
        return float("inf") if lab not in self.started else 0.0

    def pop(self):
        lab = max((lab for lab, items in self.pending.items() if items), key=self.expected)
        self.started.add(lab)
        return self.pending[lab].pop()

    def measured(self, lab: str, seconds: float | None) -> None:
        if seconds is not None:
            self.seconds.setdefault(lab, []).append(seconds)


def seconds_so_far(course: Path) -> dict[str, list[float]]:
    """Each lab's grading times recorded in the course folder by earlier runs."""
    seconds: dict[str, list[float]] = {}
    for path in (course / "results").glob("*/*.json"):
        try:
            row = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(row.get("seconds"), (int, float)):
            seconds.setdefault(path.stem, []).append(row["seconds"])
    return seconds


def not_run(sub: Submission, digest: str, why: str = "the cluster stopped") -> Row:
    """The row of a notebook whose task was cancelled: not saved, so the next run grades it."""
    detail = f": {why} before grading it; run the same command again"
    return Row(sub.student, sub.lab, digest, Status.NOT_RUN, detail)


def _worker_start(parent: int) -> None:
    """Worker start: dies with the run (:func:`die_with_parent`); numpy's BLAS on one
    thread, as the grading runs one notebook per core (idle BLAS threads of several
    workers would spin on the same cores)."""
    die_with_parent(parent)
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = "1"


def default_executor(jobs: int) -> concurrent.futures.Executor:
    """The local pool: ``jobs`` fresh interpreters, BLAS on one thread each, each ended by
    the kernel when this process ends. (The multiprocessing resource tracker ends by
    itself once the run and its workers are gone: they hold the only write ends of its
    pipe.)"""
    context = multiprocessing.get_context("spawn")  # a clean interpreter per worker
    return concurrent.futures.ProcessPoolExecutor(
        max_workers=jobs, mp_context=context, initializer=_worker_start, initargs=(os.getpid(),)
    )


# This process's own pools, by number of workers: a run leaves its pool for the next run of
# the same process (the tests, a script grading lab by lab), whose workers then keep their
# servers and warm parents, which hold nothing of any student (labtools.grader.judge). A pool that
# lost a worker or was interrupted is ended, and the next run makes a new one.
_KEPT: dict[int, concurrent.futures.ProcessPoolExecutor] = {}


def kept_executor(jobs: int) -> concurrent.futures.ProcessPoolExecutor:
    """This process's pool of ``jobs`` workers (:func:`default_executor`), made on first
    use and kept for the runs after."""
    pool = _KEPT.get(jobs)
    if pool is None or getattr(pool, "_broken", False):  # a worker died while it waited
        pool = _KEPT[jobs] = default_executor(jobs)
    return pool


def end_kept(jobs: int | None = None) -> None:
    """End the kept pool of ``jobs`` workers (every kept pool: None) and its workers'
    servers; the next run starts new ones (e.g. after this process joined another session
    keyring, which workers started before do not have)."""
    for size in [jobs] if jobs is not None else list(_KEPT):
        pool = _KEPT.pop(size, None)
        if pool is not None:
            _kill_workers(pool)
            pool.shutdown(wait=True, cancel_futures=True)


def _kill_workers(executor: concurrent.futures.ProcessPoolExecutor) -> None:
    """Kill the pool's workers now (a run interrupted: the notebooks they grade are not
    recorded, so the next run grades them)."""
    for process in list((getattr(executor, "_processes", None) or {}).values()):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            process.kill()


def run(
    course, todo, *, limits, unsafe, jobs, executor, progress, feedback=True, cold=False
) -> list[Row]:
    """Grade ``todo`` ([(submission, digest, bytes)]) on the executor, record each result
    as it comes, and (unless ``feedback`` is false) have the feedback written: by the
    workers of our own pool (they share the course folder), else here at the end.

    Our own pool gets one notebook more than it has workers, chosen by :class:`Queue` as
    each result comes in (so the feedback runs between notebooks, not all at the end);
    another executor gets every notebook at once, in the queue's order.
    """
    from tqdm import tqdm

    cache = mpl_cache()
    sources = {lab: courses.source_notebook(course, lab) for lab in {sub.lab for sub, _, _ in todo}}
    rows = []
    own = executor is None
    workers = jobs or os.cpu_count() or 1
    executor = executor or kept_executor(workers)
    bar = tqdm(total=len(todo), unit="notebook", disable=not progress, desc="grading")
    failures, writing, running, broken = 0, [], {}, []
    queue = Queue([item for item in todo if not item[0].refused], seconds_so_far(course))
    in_flight = workers + 1 if own else len(todo)

    def submit() -> None:
        while queue and len(running) < in_flight:
            if broken:  # the pool lost a worker: the rest wait for the next run
                while queue:
                    sub, digest, _ = queue.pop()
                    rows.append(not_run(sub, digest, "the run lost a worker"))
                    bar.update()
                return
            sub, digest, data = queue.pop()
            task = Task(
                student=sub.student,
                lab=sub.lab,
                source=sources[sub.lab],
                notebook=data.decode("utf-8", errors="replace"),
                limits=asdict(limits),
                unsafe=unsafe,
                mpl_cache=cache,
                cold=cold,
            )
            try:
                running[executor.submit(grade_task, task)] = (sub, digest, data)
            except BrokenProcessPool as err:
                broken.append(err)
                rows.append(not_run(sub, digest, "the run lost a worker"))
                bar.update()

    try:
        with Recorder(course) as recorder:
            for sub, digest, _ in todo:
                if sub.refused:
                    rows.append(recorder.record(sub, digest=digest, data=None, outcome=None))
                    bar.update()
            submit()
            while running:
                done, _ = concurrent.futures.wait(
                    running, return_when=concurrent.futures.FIRST_COMPLETED
                )
                for future in done:
                    sub, digest, data = running.pop(future)
                    if future.cancelled():  # the executor went away (a dask scheduler lost):
                        rows.append(not_run(sub, digest))  # nothing recorded, run again
                        failures += 1
                        bar.update()
                        continue
                    try:
                        outcome = future.result()
                    except Exception as err:  # noqa: BLE001 - a worker that died: that row
                        outcome = Outcome(Status.FAILED, traceback.format_exc())
                        if isinstance(err, BrokenProcessPool):
                            broken.append(err)  # recorded as failed: the next run grades it
                    queue.measured(sub.lab, outcome.seconds)
                    row = recorder.record(sub, digest=digest, data=data, outcome=outcome)
                    rows.append(row)
                    if feedback and own and row.graded and not broken:
                        writing.append(
                            executor.submit(feedback_task, str(course), sub.student, sub.lab)
                        )
                    failures += not row.graded
                    bar.set_postfix(not_graded=failures)
                    bar.update()
                submit()
        concurrent.futures.wait(writing)
    except BaseException:  # interrupted (Control-C, SIGINT from tasks.py) or failed
        if own:
            end_kept(workers)
        raise
    finally:
        bar.close()
        if own and broken:  # a worker was lost: the pool cannot take more work
            end_kept(workers)
    if feedback:  # what no worker wrote (another executor, a failure, a run stopped before)
        try:
            generate_feedback(course, layout.lab_names(course), missing_only=True)
        except FeedbackFailed as err:  # the grades stand; the pages are for later
            print(f"warning: {err}", file=sys.stderr)
    return rows
