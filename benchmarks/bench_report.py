"""Class report speed: seconds to write report.html for a made-up class.

    PYTHONPATH=labs .venv/bin/python benchmarks/bench_report.py [--students 300]

A course folder written the way ``grade`` leaves it (tests/_helpers.py ``class_folder``):
every lab, ``--students`` students, each code answer cell a random answer
(``random_answer``), a tenth of the students failing one test with one of a few messages,
and every tenth student a renamed copy of the one before. Prints the seconds to make the
folder (not measured), to read it and find the similar pairs, and to write the whole page
(wall clock, and this process's CPU time: the one to read on a busy machine), and how many
pairs the report found against how many were planted. Goal (issue 30): a few seconds for 300
students and 7 labs.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from labtools.door import layout
from labtools.grader import notebook as nbcells
from labtools.out import report

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from _helpers import ROOT, class_folder, random_answer, renamed  # noqa: E402


def made_up(students: int) -> dict:
    rng = np.random.default_rng(30)
    results: dict = {f"s{k:04d}": {} for k in range(students)}
    for lab in layout.lab_names():
        source = json.loads((ROOT / "labs" / "source" / lab / f"{lab}.ipynb").read_text())
        code = [
            nbcells.grade_id(c)
            for c in source["cells"]
            if nbcells.is_answer(c) and c["cell_type"] == "code"
        ]
        tests = [nbcells.grade_id(c) for c in source["cells"] if nbcells.is_test(c)]
        previous = None
        for k, student in enumerate(results):
            answers = {gid: random_answer(rng) for gid in code}
            if k % 10 == 1:  # a copy of the student before, renamed
                answers = {gid: renamed(text, {"v0": "mine"}) for gid, text in previous.items()}
            failing = {}
            if k % 10 == 3:
                message = f"AssertionError: wrong value number {int(rng.integers(0, 3))}"
                failing = {str(rng.choice(tests)): (0, message)}
            seconds = float(rng.uniform(1, 20))
            results[student][lab] = {"answers": answers, "tests": failing, "seconds": seconds}
            previous = answers
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        course = class_folder(Path(tmp) / "grading", made_up(args.students))
        print(f"course folder made in {time.perf_counter() - start:.1f} s (not measured)")
        start, cpu = time.perf_counter(), time.process_time()
        pairs = 0
        for name in layout.lab_names(course):
            lab = report.read_lab(
                course, name, sorted(p.name for p in (course / "results").iterdir())
            )
            pairs += len(report.lab_pairs(course, lab)[0])
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        print(f"read and compared: {seconds:.2f} s ({cpu:.2f} s of CPU); {pairs} similar pairs")
        start, cpu = time.perf_counter(), time.process_time()
        path = report.write_report(course)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        size = path.stat().st_size / 2**20
        print(f"report.html written in {seconds:.2f} s ({cpu:.2f} s of CPU; {size:.1f} MiB)")
        planted = 7 * len([k for k in range(args.students) if k % 10 == 1])
        print(f"planted copies: {planted}")


if __name__ == "__main__":
    main()
