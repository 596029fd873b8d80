"""``python -m labtools JOB``: the instructor's commands (see ``--help`` of each)."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path

from labtools.layout import UsageError


def limits_from(args):
    """The grading limits of the command line: the defaults of
    :class:`labtools.sandbox.Limits`, then --cell-timeout and --memory-gb, then each
    ``--limit NAME=VALUE``."""
    import dataclasses

    from labtools.sandbox import Limits

    fields = {f.name: f for f in dataclasses.fields(Limits)}
    chosen = {"cell_seconds": args.cell_timeout, "memory": int(args.memory_gb * 2**30)}
    for item in args.limit or []:
        name, sep, text = item.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or name not in fields:
            raise UsageError(
                f"--limit takes NAME=VALUE with NAME one of {', '.join(fields)}; got {item!r}"
            )
        kind = type(fields[name].default)
        try:
            chosen[name] = kind(float(text)) if kind is int else kind(text)
        except ValueError:
            raise UsageError(f"--limit {name}: {text!r} is not a number") from None
    try:
        return Limits(**chosen)
    except ValueError as err:
        raise UsageError(str(err)) from None


def _grade(args) -> None:
    from labtools import grade

    limits = limits_from(args)
    with contextlib.ExitStack() as stack:
        executor = None
        if args.scheduler:  # a dask cluster's workers (labtools.cluster), checked first
            from labtools import cluster, layout

            layout.check_arguments(args.submissions, args.course, args.labs)
            executor = stack.enter_context(cluster.executor(args.scheduler, unsafe=args.unsafe))
        summary = grade.grade(
            args.submissions,
            args.course,
            labs=args.labs,
            students=args.students,
            jobs=args.jobs,
            regrade=args.regrade,
            unsafe=args.unsafe,
            limits=limits,
            executor=executor,
        )
    rows = summary["graded"]
    failed = [r for r in rows if not r["status"].startswith("graded")]
    print(
        f"\n{len(rows)} notebooks graded now, {len(summary['already graded'])} already graded "
        f"before (use --regrade to grade them again); {len(failed)} not graded:"
    )
    for row in failed:
        print(f"  {row['student']} / {row['lab']}: {row['status']}")
    unplaced = summary.get("not placed", [])
    if unplaced:
        print(f"{len(unplaced)} files of the {summary['layout']} download could not be placed:")
        for entry in unplaced:
            print(f"  {entry['file']!r}: {entry['why']}")
    if summary.get("late"):
        print(f"marked late by the platform: {', '.join(summary['late'])}")
    for name, path in summary["exported"].items():
        print(f"{name}: {path}")


def _export(args) -> None:
    from labtools import grade

    for name, path in grade.export(Path(args.course)).items():
        print(f"{name}: {path}")


def _feedback(args) -> None:
    from labtools import grade, layout

    course = Path(args.course)
    layout.check_course(course)
    grade.generate_feedback(course, args.labs or layout.lab_names(course))
    print(f"feedback regenerated in {course / 'feedback'}")


def _release(args) -> None:
    from labtools import release

    print("student versions written to", release.generate())


def _formgrader(args) -> None:
    from labtools import formgrader

    formgrader.serve(Path(args.course), port=args.port)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m labtools", description=__doc__)
    jobs = top.add_subparsers(dest="job", required=True)

    release = jobs.add_parser("release", help="regenerate labs/release from labs/source")
    release.set_defaults(run=_release)

    grade = jobs.add_parser("grade", help="grade a folder or zip of submissions")
    grade.add_argument(
        "submissions",
        help="[submitted/]<student>/<lab>/<lab>.ipynb, a zip, or a Canvas or Moodle download",
    )
    grade.add_argument("--course", default="grading", help="course folder (default: grading)")
    grade.add_argument("--labs", nargs="+", help="only these labs")
    grade.add_argument("--students", nargs="+", help="only these students")
    grade.add_argument("--jobs", type=int, default=os.cpu_count(), help="notebooks at once")
    grade.add_argument("--regrade", action="store_true", help="grade graded notebooks again")
    grade.add_argument("--unsafe", action="store_true", help="grade without the sandbox")
    grade.add_argument("--cell-timeout", type=float, default=60.0, help="seconds per cell")
    grade.add_argument("--memory-gb", type=float, default=2.0, help="per process")
    grade.add_argument(
        "--limit",
        action="append",
        metavar="NAME=VALUE",
        help="set one grading limit, e.g. notebook_seconds=900 (repeatable; the names and "
        "defaults: labtools.sandbox.Limits and the instructor guide)",
    )
    grade.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="grade on the workers of this dask scheduler (tcp://HOST:8786) instead of --jobs",
    )
    grade.set_defaults(run=_grade)

    for name, run, text in (
        ("export", _export, "write grades.csv and grades-wide.csv (after manual grading)"),
        ("feedback", _feedback, "regenerate feedback (after manual grading)"),
        ("formgrader", _formgrader, "grade answers by hand in nbgrader's formgrader"),
    ):
        job = jobs.add_parser(name, help=text)
        job.add_argument("--course", default="grading", help="course folder (default: grading)")
        if name == "feedback":
            job.add_argument("--labs", nargs="+", help="only these labs")
        if name == "formgrader":
            job.add_argument("--port", type=int, default=8888)
        job.set_defaults(run=run)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        args.run(args)
    except UsageError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
