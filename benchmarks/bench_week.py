"""The instructor's week, timed step by step on one class: each command of the page *For
instructors* ("A week of a lab, step by step") as typed, in the order it gives.

    PYTHONPATH=labs .venv/bin/python benchmarks/bench_week.py [--students 30] [--jobs 2]

A Canvas download of Lab 1 for ``--students`` students (named as Canvas names them: three
in four solved, the others handed in as released; every seventh marked ``_LATE``, one in
lower case), a late policy with a due date and an extension, and Canvas's gradebook export.
Each step runs ``python -m labtools`` in a process of its own, on a new course folder, with
the sandbox (as an instructor runs it). The written answers are given their scores through
the gradebook, as formgrader saves them: a person's time, not the tools', so that step is
not timed. Prints each step's seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from _helpers import answered  # noqa: E402  (a solved notebook, as the tests make it)

LAB = "lab1_perceptron"
NB = f"{LAB}.ipynb"
POLICY = f"""\
[penalty]
percent_per_day = 10
unknown_late_days = 1

[due]
{LAB} = 2026-02-06T23:59:00+01:00

[[extension]]
student = "5003"
lab = "{LAB}"
days = 3
"""


def download(path: Path, students: int) -> str:
    """The Canvas zip of ``students`` submissions; return the gradebook export's text."""
    solved = json.dumps(answered(LAB))
    released = (ROOT / "labs" / "release" / LAB / NB).read_text()
    export = [
        "Student,ID,SIS User ID,SIS Login ID,Section,Lab 1: Perceptron (5001)",
        "    Points Possible,,,,,11.00",
    ]
    with zipfile.ZipFile(path, "w") as zf:
        for k in range(students):
            user = 5000 + k
            late = "_late" if k == 10 else "_LATE" if k % 7 == 3 else ""
            text = released if k % 4 == 1 else solved
            zf.writestr(f"student{k:03d}{late}_{user}_{8000 + k}_{NB}", text)
            export.append(f'"Student {k:03d}, S.",{user},s{k},login{k},S1,')
    return "\n".join(export) + "\n"


def give_by_hand(course: Path) -> int:
    """Every written answer of every graded notebook scored, as formgrader saves it."""
    sys.path.insert(0, str(ROOT / "labs"))
    from labtools.course import folder as courses
    from nbgrader.api import Gradebook

    given = 0
    with Gradebook(courses.db_url(course)) as gb, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for submission in gb.assignment_submissions(LAB):
            for grade in submission.notebooks[0].grades:
                if grade.auto_score is None and grade.max_score:
                    grade.manual_score = grade.max_score / 2
                    given += 1
        gb.db.commit()
    return given


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "labs")}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        zipped, course, gradebook = tmp / "submissions.zip", tmp / "grading", tmp / "export.csv"
        gradebook.write_text(download(zipped, args.students))
        steps = [
            ("grade (the download, new course folder)", ["grade", zipped, "--jobs", args.jobs]),
            ("grade again (a second download, nothing new)", ["grade", zipped]),
            ("grade by hand (formgrader: a person's time)", None),
            ("feedback --labs lab1_perceptron", ["feedback", "--labs", LAB]),
            (
                "export --canvas ... --final",
                ["export", "--canvas", gradebook, "--column", f"{LAB}=5001", "--final"],
            ),
            ("report", ["report"]),
            ("review (list held answers)", ["review"]),
        ]
        print(f"{args.students} students, Lab 1, {args.jobs} jobs")
        for name, argv in steps:
            start = time.perf_counter()
            if argv is None:
                note = f"{give_by_hand(course)} answers scored through the gradebook, not timed"
                print(f"  {name:48s}      -  ({note})")
                continue
            argv = [sys.executable, "-m", "labtools", *map(str, argv), "--course", str(course)]
            done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True)
            seconds = time.perf_counter() - start
            if done.returncode != 0:
                sys.exit(f"{name} failed ({done.returncode}): {done.stderr[-2000:]}")
            print(f"  {name:48s} {seconds:6.1f} s")
            if name.startswith("grade ("):
                (course / "late-policy.toml").write_text(POLICY)  # step 3 of the page


if __name__ == "__main__":
    main()
