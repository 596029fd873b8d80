"""The warm start: grading against cold grading, plain nbclient and nbgrader's autograde.

    PYTHONPATH=labs .venv/bin/python benchmarks/bench_warm.py [--students 20]

Correct submissions of every lab (the instructor's answers in the student version) for
``--students`` students (default 20: 140 notebooks), the same class for every path, measured
in one run, one after the other, on this machine's cores:

1. warm: ``labtools.grade.grade(..., jobs=2)``, each notebook a child of a worker's warm
   parent (:mod:`labtools.inside.zygote`; where that cannot run, the output says so and why);
   then the same without feedback files (``grade --no-feedback``), what nbgrader's
   autograde also leaves out (its feedback is a separate step);
2. cold: the same with ``cold=True``, a fresh bubblewrap sandbox per notebook;
3. plain nbclient: each notebook executed in a fresh kernel, two at a time (two processes),
   no grading at all;
4. nbgrader's own ``autograde`` in a course folder of its own (``generate_assignment`` of
   every lab beforehand, untimed), every lab in one nbgrader process; nbgrader runs
   notebooks one at a time, so it uses one of the cores;
5. warm on a local dask cluster of two workers (one thread each), through
   :func:`labtools.grader.cluster.executor` as ``grade --scheduler`` uses it.

The course folders are made beforehand (as after a first run) and the cluster started
beforehand: only grading (or execution) is timed. Grading includes what ``tasks.py grade``
does besides (feedback files, the exported tables; nbgrader's autograde writes neither),
and each worker's start-up (its warm parent), which weighs on a class of a few students.
Every kernel runs with the grader's environment (matplotlib's Agg, one BLAS thread).
Checked: every path handled every notebook (graded rows only; no error in any executed
cell; nbgrader's full automatic points), and warm and cold gave the same scores, test by
test, for every notebook.

Prints seconds per notebook, the ratios, and the machine's load average before and after
(it is shared: a busy machine makes every number larger). Goals (issue 31), on 2 cores:
warm / autograde at most 0.2, warm / nbclient at most 0.3, warm and cold scores identical.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import logging
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from labtools import grade
from labtools.course import folder as courses
from labtools.course.record import read_row
from labtools.door import layout
from labtools.grader import bwrap, cluster
from nbclient import NotebookClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from bench_grading import plant as plant_paths  # noqa: E402  (this folder)

JOBS = 2  # notebooks at once, for every path that can run more than one
FELL_BACK = "the warm start did not answer"  # a row's note (labtools.grader.sandbox.Sandbox)
# the environment the grader gives a notebook (labtools.grader.sandbox), for every kernel here
KERNEL_ENV = {
    "MPLBACKEND": "Agg",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}

# Run by `autograde` in nbgrader's course folder: `nbgrader autograde LAB` for each lab in
# argv (every student), through nbgrader's API in one process; prints the seconds that
# the autograde calls took, or exits with nbgrader's log.
AUTOGRADE = """
import sys, time
from traitlets.config.loader import PyFileConfigLoader
from nbgrader.apps import NbGraderAPI

api = NbGraderAPI(config=PyFileConfigLoader("nbgrader_config.py", path=".").load_config())
seconds = 0.0
for lab in sys.argv[1:]:
    start = time.perf_counter()
    result = api.autograde(lab, "*")
    seconds += time.perf_counter() - start
    if not result["success"]:
        sys.exit(f"autograde {lab} failed:\\n{result.get('log', '')}{result.get('error', '')}")
print(seconds)
"""


def say(what: str) -> None:
    """Progress on stderr (the results go to stdout at the end)."""
    print(f"[{time.strftime('%H:%M:%S')}] {what}", file=sys.stderr, flush=True)


def plant(root: Path, students: int) -> list[tuple[str, str, Path]]:
    """(student, lab, path) of each correct submission, written under ``root``
    (``root/<student>/<lab>/<lab>.ipynb``, by bench_grading's planting)."""
    return [(path.parts[-3], path.parts[-2], path) for path in plant_paths(root, students)]


def graded(submissions: Path, course: Path, **options) -> float:
    """Seconds that ``grade.grade`` took to grade the class into the new ``course``."""
    courses.open_course(course)
    start = time.perf_counter()
    summary = grade.grade(submissions, course, progress=False, **options)
    seconds = time.perf_counter() - start
    bad = [f"{r.student}/{r.lab}: {r.text}" for r in summary["graded"] if not r.graded]
    assert not bad, bad
    return seconds


def rows(course: Path, planted) -> dict:
    """{(student, lab): its row} as the course keeps them, each one graded."""
    found = {}
    for student, lab, _ in planted:
        row = read_row(courses.result_path(course, student, lab))
        assert row.graded, (student, lab, row.text)
        found[(student, lab)] = row
    return found


def scores(row) -> dict:
    """{grade id: (score, points)} of a graded row."""
    return {gid: (t["score"], t["points"]) for gid, t in (row.tests or {}).items()}


def differing(a: dict, b: dict) -> list[str]:
    """The notebooks whose scores differ, test by test, between two courses' rows."""
    return sorted(f"{s}/{lab}" for s, lab in a if scores(a[(s, lab)]) != scores(b[(s, lab)]))


def execute(path: Path) -> int:
    """Execute one notebook in a fresh kernel; the number of cells that raised."""
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True).execute()
    outputs = (o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    return sum(1 for o in outputs if o.get("output_type") == "error")


def plain(planted) -> float:
    """Seconds to execute every notebook with nbclient, JOBS at a time (processes, started
    within the time)."""
    paths = [path for _, _, path in planted]
    start = time.perf_counter()
    with concurrent.futures.ProcessPoolExecutor(
        JOBS, mp_context=multiprocessing.get_context("spawn")
    ) as pool:
        errors = list(pool.map(execute, paths))
    seconds = time.perf_counter() - start
    bad = [str(p) for p, n in zip(paths, errors, strict=True) if n]
    assert not bad, f"cells raised in {bad}"
    return seconds


def autograded(root: Path, planted) -> float:
    """Seconds that nbgrader's autograde took for the class, in its own course folder at
    ``root``: the labs generated there first (untimed), then every submission copied to
    ``submitted/<student>/<lab>/``. Checks that nbgrader gave every notebook its full
    automatic points."""
    from nbgrader.api import Gradebook

    labs = layout.lab_names()
    root.mkdir(parents=True)
    shutil.copy(layout.LABS / "nbgrader_config.py", root / "nbgrader_config.py")
    for lab in labs:
        shutil.copytree(layout.LABS / "source" / lab, root / "source" / lab)
    courses.generate(root, labs)  # nbgrader generate_assignment, as the repository runs it
    for student, lab, path in planted:
        target = root / "submitted" / student / lab / f"{lab}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)
    proc = subprocess.run(
        [sys.executable, "-c", AUTOGRADE, *labs],
        cwd=root,
        env=courses.nbgrader_env(),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    seconds = float(proc.stdout.strip().splitlines()[-1])
    short = []
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        for student, lab, _ in planted:
            assert (root / "autograded" / student / lab / f"{lab}.ipynb").exists(), (student, lab)
            nb = gb.find_submission_notebook(lab, lab, student)
            for g in nb.grades:
                if g.auto_score is not None and g.auto_score < g.max_score:
                    short.append(f"{student}/{lab}/{g.name}: {g.auto_score} of {g.max_score}")
    assert not short, short
    return seconds


def on_dask(submissions: Path, course: Path) -> float:
    """Seconds that the warm path took on a local dask cluster of JOBS workers (one thread
    each), started beforehand and checked as ``grade --scheduler`` checks one."""
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=JOBS,
        threads_per_worker=1,
        processes=True,
        dashboard_address="127.0.0.1:0",  # any free port, never a busy 8787
        silence_logs=logging.ERROR,
    ) as dask_cluster:
        with cluster.executor(dask_cluster.scheduler_address) as executor:
            return graded(submissions, course, executor=executor)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=20)
    args = parser.parse_args()
    for name, value in KERNEL_ENV.items():
        os.environ.setdefault(name, value)
    cores = os.cpu_count() or 1
    warm_missing = bwrap.warm_available()
    load_before = os.getloadavg()[0]  # the machine is shared: say how busy it was
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        planted = plant(tmp / "class", args.students)
        n = len(planted)
        execute(planted[0][2])  # untimed: no path pays for a cold disk or font cache
        say(f"{n} notebooks: warm")
        t_warm = graded(tmp / "class", tmp / "warm", jobs=JOBS)
        say("warm, scores only")
        t_scores = graded(tmp / "class", tmp / "scores", jobs=JOBS, feedback=False)
        say("cold")
        t_cold = graded(tmp / "class", tmp / "cold", jobs=JOBS, cold=True)
        say("plain nbclient")
        t_plain = plain(planted)
        say("nbgrader autograde")
        t_nbgrader = autograded(tmp / "nbgrader", planted)
        say("warm on a dask cluster")
        t_dask = on_dask(tmp / "class", tmp / "dask")
        say("done")
        warm, cold, dask, only = (
            rows(tmp / c, planted) for c in ("warm", "cold", "dask", "scores")
        )
    differ, differ_dask = differing(warm, cold), differing(warm, dask)
    differ += differing(warm, only)
    fell_back = sum(FELL_BACK in row.text for row in [*warm.values(), *dask.values()])

    load_after = os.getloadavg()[0]
    per = {
        f"warm: grade, jobs={JOBS}": t_warm,
        f"warm, no feedback files (--no-feedback), jobs={JOBS}": t_scores,
        f"cold: grade with cold=True, jobs={JOBS}": t_cold,
        f"plain nbclient, {JOBS} processes": t_plain,
        "nbgrader autograde, one at a time": t_nbgrader,
        f"warm on a dask cluster of {JOBS} workers": t_dask,
    }
    print(
        f"{n} notebooks ({args.students} students x {n // args.students} labs), {cores} cores; "
        f"load average {load_before:.2f} before, {load_after:.2f} after"
    )
    if warm_missing:
        print(f"  NOTE: no warm start here ({warm_missing}): 'warm' ran cold too")
    print("  seconds per notebook:")
    for label, seconds in per.items():
        print(f"    {label:<42} {seconds / n:6.2f}")
    print("  (nbgrader's autograde runs one notebook at a time: it used 1 of the cores)")
    print("  median seconds of one notebook in its worker (the workers' start-up left out):")
    for label, course in (("warm", warm), ("cold", cold), ("warm on dask", dask)):
        print(f"    {label:<42} {statistics.median(r.seconds for r in course.values()):6.2f}")
    if fell_back:
        print(f"  NOTE: {fell_back} warm notebooks ran in a fresh sandbox: {FELL_BACK}")
    print(f"  ratio warm / autograde: {t_warm / t_nbgrader:.2f}  (goal <= 0.2)")
    print(f"  ratio warm / nbclient:  {t_warm / t_plain:.2f}  (goal <= 0.3)")
    print(
        "  like for like (autograde writes no feedback; nbclient grades nothing): "
        f"warm --no-feedback / autograde {t_scores / t_nbgrader:.2f}, "
        f"/ nbclient {t_scores / t_plain:.2f}"
    )
    print(f"  ratio warm / cold:      {t_warm / t_cold:.2f}")
    print(f"  ratio dask warm / warm: {t_dask / t_warm:.2f}")
    same = "identical" if not differ else f"DIFFERENT for {len(differ)}"
    print(f"  scores, warm, warm --no-feedback and cold: {same} (of {n} notebooks, test by test)")
    same = "identical" if not differ_dask else f"DIFFERENT for {len(differ_dask)}"
    print(f"  scores, warm on dask and warm: {same}")
    assert not differ, f"warm and cold scores differ: {differ}"
    assert not differ_dask, f"dask and local warm scores differ: {differ_dask}"


if __name__ == "__main__":
    main()
