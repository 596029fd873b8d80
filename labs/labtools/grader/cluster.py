"""Grading on a running dask cluster: ``python -m labtools grade SUBMISSIONS --scheduler ADDRESS``.

:func:`executor` connects to the scheduler, checks its workers and gives the grading loop
(:func:`labtools.grade.grade`) their ``concurrent.futures.Executor``. A worker receives
plain data (the lab's source notebook, the submitted notebook's text, the limits) and
returns plain data; it needs the instructor environment, this package importable and
bubblewrap, and nothing from the course folder or the grading machine's files. The
process that runs ``grade`` alone writes the course folder (feedback included).

Checked before anything is graded, each refused with a :class:`UsageError` that names the
scheduler or the worker:

- the scheduler answers within :data:`CONNECT_SECONDS` and has at least one worker;
- every worker runs one thread: each sandbox takes its user id from the process that starts
  it (:func:`labtools.grader.bwrap.sandbox_uid`), so two sandboxes of one process would share a
  user id and its process limit (start ``dask worker --nthreads 1 --nworkers N``);
- every worker can start the sandbox (unless ``--unsafe``) and grades with the same code
  (labtools and perceptrons) as this machine, so that scores do not depend on the worker.

Workers that join later are not checked.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator
from pathlib import Path

from labtools.door.layout import UsageError

CONNECT_SECONDS = 10.0  # for the scheduler to answer, and for a first worker to be there

START = (
    "start one with `dask scheduler` and workers with `dask worker ADDRESS --nthreads 1` "
    "(see the instructor guide)"
)


def code_digest() -> str:
    """A digest of the code that computes scores: labtools and perceptrons (*.py)."""
    import labtools
    import perceptrons

    h = hashlib.sha256()
    for package in (labtools, perceptrons):
        folder = Path(package.__file__).resolve().parent
        for path in sorted(folder.rglob("*.py")):
            h.update(str(path.relative_to(folder.parent)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def worker_report() -> dict:
    """Runs on each worker: what it lacks to grade, and which code it grades with."""
    from labtools.grader import bwrap

    return {"sandbox": bwrap.available(), "code": code_digest()}


def check_workers(client, address: str, *, unsafe: bool = False) -> None:
    """Refuse workers that could not grade, or would grade differently (see the module)."""
    try:
        client.wait_for_workers(1, timeout=CONNECT_SECONDS)
    except TimeoutError:
        raise UsageError(f"the dask scheduler at {address} has no workers; {START}") from None
    for worker, threads in sorted(client.nthreads().items()):
        if threads != 1:
            raise UsageError(
                f"dask worker {worker} runs {threads} threads: start workers with "
                "`--nthreads 1` (and `--nworkers N` for N notebooks at once per machine), "
                "as each notebook's sandbox takes its user id from the worker's process"
            )
    try:
        reports = client.run(worker_report)
    except Exception as err:  # noqa: BLE001 - e.g. labtools not importable there
        raise UsageError(
            f"the dask workers of {address} cannot run labtools ({type(err).__name__}: {err}); "
            "start them in the instructor environment with labs/ on PYTHONPATH"
        ) from None
    ours = code_digest()
    for worker, report in sorted(reports.items()):
        if report["sandbox"] and not unsafe:
            raise UsageError(f"dask worker {worker} cannot run the sandbox: {report['sandbox']}")
        if report["code"] != ours:
            raise UsageError(
                f"dask worker {worker} has another version of labtools or perceptrons than "
                "this machine; install the same version on every worker"
            )


@contextlib.contextmanager
def executor(address: str, *, unsafe: bool = False) -> Iterator:
    """The executor of the dask cluster whose scheduler is at ``address``
    (``tcp://host:8786``), its workers checked; the connection is closed at the end."""
    try:
        from distributed import Client
    except ImportError:
        raise UsageError(
            "--scheduler needs dask's `distributed` (requirements-instructor.txt)"
        ) from None
    try:
        client = Client(address, timeout=CONNECT_SECONDS, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as err:
        raise UsageError(f"no dask scheduler answers at {address} ({err}); {START}") from None
    try:
        check_workers(client, address, unsafe=unsafe)
        yield client.get_executor(pure=False)
    finally:
        client.close()
