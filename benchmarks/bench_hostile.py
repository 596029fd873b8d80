"""What a hostile submission costs the grader: seconds and peak memory per notebook.

    PYTHONPATH=labs:tests .venv/bin/python benchmarks/bench_hostile.py [--dask] [--only NAME]

Every planted submission of Lab 1 (tests/plants/lab1_perceptron) and the attacks of
tests/grader/test_grader_limits.py (Lab 6's wide taps, a 4 MB written answer, a 229 kB code cell
with 60 added cells, a grader's test that runs LAPACK on the student's value), each graded
on its own by ``labtools.grader.worker.grade_task``, as a worker of a grading run does: in the
local process, or with ``--dask`` on a local dask cluster of two worker processes.

Prints, per notebook: the wall-clock seconds, the limit it must stay within
(``notebook_seconds`` + ``grader_seconds``), the peak resident memory of the grader's side
(the judge's child; ``grader_memory`` is its address-space limit) and the worker's own
peak. The limits are those of the tests (cell_seconds 10, notebook_seconds 30).
"""

from __future__ import annotations

import argparse
import json
import resource
import socket
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "labs"), str(ROOT / "tests")]

from labtools import wire  # noqa: E402
from labtools.grader import judge  # noqa: E402
from labtools.grader.limits import Limits  # noqa: E402
from labtools.grader.worker import assemble  # noqa: E402

LIMITS = Limits(cell_seconds=10, notebook_seconds=30, output=8 * 2**20)


def lab1_plants(tmp: Path) -> dict[str, tuple[str, str]]:
    """{name: (lab, notebook text)} for every plant that hands in one notebook."""
    import test_grading as T

    submitted, others, course = tmp / "s", tmp / "o", tmp / "c"
    others.mkdir(parents=True)
    (others / "secret.txt").write_text("x")
    listener = socket.create_server(("127.0.0.1", 0))
    T.plant(submitted, others, course, listener.getsockname()[1])
    found = {}
    for path in sorted(submitted.glob(f"*/{T.LAB}/{T.LAB}.ipynb")):
        if path.is_file() and not path.is_symlink():
            found[path.parts[-3]] = (T.LAB, path.read_text(errors="replace"))
    return found


def attacks() -> dict[str, tuple[str, str, dict | None]]:
    import test_grader_limits as G
    from _helpers import answered

    taps = (
        "def taps(u, m):\n    u = np.asarray(u, dtype=float)\n    if len(u) == 4000:\n"
        "        return np.ones((190, 10000), np.int8)\n    X = np.zeros((len(u), m))\n"
        "    for j in range(m):\n        X[j:, j] = u[: len(u) - j]\n    return X\n"
    )
    table = "".join(f"| {i} | *x* | **y** | <b>z</b> |\n" for i in range(120_000))
    big = answered("lab1_perceptron")
    for source in ["".join(f"v{i} = {i}\n" for i in range(20_000))] + ["x = 1\n#" * 9_000] * 60:
        big["cells"].append(
            {
                "cell_type": "code",
                "metadata": {},
                "source": source,
                "outputs": [],
                "execution_count": None,
            }
        )
    slow_test = G.tiny_lab(
        "assert k >= 0\nif k > 10:\n"
        "    np.linalg.eigvalsh(np.random.default_rng(0).normal(size=(k, k)))\n"
    )
    return {
        "lab6 wide taps": (
            "lab6_lms_filter",
            answered("lab6_lms_filter", {"ex1-code": taps}),
            None,
        ),
        "4 MB written answer": (
            "lab1_perceptron",
            answered("lab1_perceptron", {"ex2-answer": "| a | b | c | d |\n|-|-|-|-|\n" + table}),
            None,
        ),
        "huge and many added cells": ("lab1_perceptron", big, None),
        "LAPACK in a grader's test": ("tiny", G.student(**{"ex1-code": "k = 6000\n"}), slow_test),
    }


def grade_one(lab: str, text: str, source: dict | None) -> dict:
    """Grade one notebook as a worker does; what it cost."""
    from labtools.grader import render

    source = source or json.loads((ROOT / "labs/source" / lab / f"{lab}.ipynb").read_text())
    task = wire.Task("s", lab, source, text, asdict(LIMITS))
    started = time.monotonic()
    plan, unreadable, reports = judge.judge(task)
    if plan is not None and unreadable is None and not reports["failed"]:
        render.autograded_notebook(source, assemble(plan, reports))
    seconds = time.monotonic() - started
    score = sum(e.get("score", 0) for e in reports["cells"].values() if e["role"] == "test")
    return {
        "seconds": seconds,
        "grader_peak": reports["peak"],
        "worker_peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "score": score,
        "stopped": (reports["stopped"] or "")[:60],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dask", action="store_true", help="on a local dask cluster")
    parser.add_argument("--only", help="only the plants whose name contains this")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        jobs = {name: (lab, text, None) for name, (lab, text) in lab1_plants(Path(tmp)).items()}
        jobs |= {n: (lab, json.dumps(nb), src) for n, (lab, nb, src) in attacks().items()}
        if args.only:
            jobs = {n: j for n, j in jobs.items() if args.only in n}
        if args.dask:
            from distributed import Client, LocalCluster

            with LocalCluster(
                n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0"
            ) as cluster:
                with Client(cluster) as client:
                    futures = {n: client.submit(grade_one, *j, pure=False) for n, j in jobs.items()}
                    results = {n: f.result() for n, f in futures.items()}
        else:
            results = {name: grade_one(*job) for name, job in jobs.items()}
    limit = LIMITS.notebook_seconds + LIMITS.grader_seconds
    print(f"{'notebook':30} {'seconds':>8} {'limit':>6} {'grader MiB':>10} {'worker MiB':>10}")
    for name, r in sorted(results.items(), key=lambda kv: -kv[1]["seconds"]):
        peak = f"{r['grader_peak'] / 2**20:10.0f}" if r["grader_peak"] else f"{'?':>10}"
        print(
            f"{name[:30]:30} {r['seconds']:8.1f} {limit:6.0f} {peak} "
            f"{r['worker_peak'] / 2**20:10.0f}  {r['stopped']}"
        )
    worst = max(r["seconds"] for r in results.values())
    print(f"\n{len(results)} notebooks; the longest took {worst:.1f} s (limit {limit:g} s)")
    print(f"grader_memory limit: {LIMITS.grader_memory / 2**30:g} GiB")


if __name__ == "__main__":
    main()
