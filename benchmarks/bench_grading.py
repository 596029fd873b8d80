"""Grading speed: seconds per notebook, against executing the same notebooks with nbclient.

    PYTHONPATH=labs .venv/bin/python benchmarks/bench_grading.py [--students 4]

Correct submissions of every lab (the instructor's answers in the student version) for
``--students`` students. Measured in one run, one after the other:

- plain: each notebook executed by nbclient in a fresh kernel, one at a time (what running
  it takes, with no grading at all);
- grading on 1 core and on all cores: ``labtools.grade.grade`` into a new course folder
  (the folder made beforehand, as after the first run), feedback and exports included.

Prints seconds per notebook, the ratio of grading on 1 core to plain execution, and the
speed-up from 1 core to all. Goals (issue 13): ratio at most 1.5, speed-up at least 1.8 on
2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from labtools import grade
from labtools.course import folder as courses
from labtools.door import layout
from nbclient import NotebookClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from _helpers import answered  # noqa: E402  (a solved notebook, as the tests make it)


def plant(root: Path, students: int) -> list[Path]:
    paths = []
    for lab in layout.lab_names():
        nb = answered(lab)
        for k in range(students):
            path = root / f"student{k}" / lab / f"{lab}.ipynb"
            path.parent.mkdir(parents=True)
            path.write_text(json.dumps(nb))
            paths.append(path)
    return paths


def plain(paths: list[Path]) -> float:
    start = time.perf_counter()
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True).execute()
    return time.perf_counter() - start


def graded(submissions: Path, jobs: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        course = Path(tmp) / "grading"
        courses.open_course(course)
        start = time.perf_counter()
        summary = grade.grade(submissions, course, jobs=jobs, progress=False)
        seconds = time.perf_counter() - start
    bad = [r.text for r in summary["graded"] if not r.graded]
    assert not bad, bad
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=4)
    args = parser.parse_args()
    os.environ.setdefault("MPLBACKEND", "Agg")
    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as tmp:
        paths = plant(Path(tmp) / "submitted", args.students)
        n = len(paths)
        t_plain = plain(paths)
        t_one = graded(Path(tmp), jobs=1)
        t_all = graded(Path(tmp), jobs=cores)
    print(f"{n} notebooks ({args.students} students x {n // args.students} labs), {cores} cores")
    print(f"  plain nbclient, one at a time: {t_plain / n:6.2f} s per notebook")
    print(f"  grading on 1 core:             {t_one / n:6.2f} s per notebook")
    print(f"  grading on {cores} cores:            {t_all / n:6.2f} s per notebook")
    print(f"  ratio grading (1 core) / plain: {t_one / t_plain:.2f}  (goal <= 1.5)")
    print(f"  speed-up 1 -> {cores} cores: {t_one / t_all:.2f}  (goal >= 1.8 on 2 cores)")


if __name__ == "__main__":
    main()
