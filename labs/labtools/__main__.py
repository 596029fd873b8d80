"""``python -m labtools JOB``: the instructor's commands (see ``--help`` of each)."""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import sys
from pathlib import Path

from labtools import options
from labtools.door.layout import UsageError


def limits_from(args):
    """The grading limits of the command line: the defaults of
    :class:`labtools.grader.limits.Limits`, then --cell-timeout and --memory-gb, then each
    ``--limit NAME=VALUE``."""
    import dataclasses

    from labtools.grader.limits import Limits

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
    from labtools.course.record import STALE
    from labtools.wire import NAME, TEXT, capped

    limits = limits_from(args)
    with contextlib.ExitStack() as stack:
        executor = None
        if args.scheduler:  # a dask cluster's workers (labtools.grader.cluster), checked first
            from labtools.door import layout
            from labtools.grader import cluster

            layout.check_arguments(args.submissions, args.course, args.labs, args.jobs)
            executor = stack.enter_context(cluster.executor(args.scheduler, unsafe=args.unsafe))
        summary = grade.grade(
            args.submissions,
            args.course,
            labs=args.labs,
            students=args.students,
            jobs=args.jobs,
            regrade=args.regrade,
            unsafe=args.unsafe,
            cold=args.cold,
            limits=limits,
            executor=executor,
            feedback=args.feedback,
            db=args.db,
        )
    from labtools.door.intake import shown

    names = summary.get("student names") or summary.get("names") or {}

    def who(row) -> str:
        return f"{shown(row.student, names)} / {row.lab}"

    rows = summary["graded"]
    failed = [r for r in rows if not r.graded]
    print(
        f"\n{len(rows) - len(failed)} notebooks graded now, {len(summary['already graded'])} "
        f"already graded before (use --regrade to grade them again); {len(failed)} not graded"
        + (":" if failed else "")
    )
    for row in failed:
        print(f"  {who(row)}: {row.text}")
    stale = summary.get("manual not kept", [])
    if stale:
        print(
            f"{len(stale)} notebooks had scores given by hand for answers that changed since: "
            "not kept, those cells wait for grading by hand again (formgrader):"
        )
        for row in stale:
            said = next(n for n in row.detail.split("; ") if STALE in n)
            print(f"  {who(row)}: {said}")
    again = summary.get("graded again", [])
    if again:
        print(
            f"{len(again)} of them graded again because an earlier run did not grade them "
            "(grading failed or not graded): " + ", ".join(who(r) for r in again)
        )
    changed = summary.get("changed", [])
    if changed:
        print(f"{len(changed)} submissions changed since they were graded; to grade them again:")
        course = options.course_args(args.course)
        for row in changed:
            command = ["python3", "tasks.py", "grade", args.submissions, *course, "--regrade"]
            command += ["--students", row.student, "--labs", row.lab]
            print(f"  {who(row)}: {shlex.join(command)}")
        if len(changed) > 1:  # one command for them all
            command = ["python3", "tasks.py", "grade", args.submissions, *course, "--regrade"]
            command += ["--students", *sorted({r.student for r in changed})]
            command += ["--labs", *sorted({r.lab for r in changed})]
            print(f"  all of them at once: {shlex.join(command)}")
    if summary.get("left out by --labs"):
        print(f"{summary['left out by --labs']} notebooks of other labs left out by --labs")
    unplaced = summary.get("not placed", [])
    if unplaced:
        print(f"{len(unplaced)} files of the {summary['layout']} download could not be placed:")
        for entry in unplaced:
            print(f"  {capped(repr(entry['file']), 2 * NAME)}: {capped(entry['why'])}")
    if summary.get("late"):
        print(f"marked late by the platform: {', '.join(summary['late'])}")
    elif summary.get("layout") == "canvas" and summary.get("graded"):
        print("marked late by the platform: none (no file name has _LATE or _late)")
    if summary.get("kept apart"):
        print(capped(summary["kept apart"], 10 * TEXT))
    for line in summary.get("shared names", []):
        print(capped(line))
    for name, path in summary["exported"].items():
        print(f"{name}: {path}")
    week(summary["exported"])


def week(found) -> None:
    """Print what an export found that the instructor should know (notes) and what is not
    final yet (:attr:`labtools.out.export.Exported.pending`), each with what finishes it."""
    from labtools.wire import capped

    for line in getattr(found, "notes", []):
        print(f"note: {capped(line, 4 * 1000)}")
    pending = getattr(found, "pending", [])
    if pending:
        print("not final yet:")
        for line in pending:
            print(f"  - {capped(line, 4 * 1000)}")
    elif hasattr(found, "pending"):
        print("every grade is final: nothing waits for grading by hand or review")


def _export(args) -> None:
    from labtools.course import folder as courses
    from labtools.door import layout
    from labtools.out.export import export

    if args.column and not args.canvas:
        raise UsageError("--column goes with --canvas GRADEBOOK_EXPORT.csv")
    if bool(args.moodle) != bool(args.lab):
        raise UsageError("--moodle WORKSHEET.csv and --lab LAB go together")
    if args.final and not (args.canvas or args.moodle):
        raise UsageError("--final goes with --canvas or --moodle (the files that go back)")
    course = Path(args.course)
    layout.existing_course(course)
    running = courses.holder(course)
    if running is not None and running[1] == "grading" and not (args.canvas or args.moodle):
        if args.db is not None:
            raise UsageError(f"grading is running in {course} (pid {running[0]}): leave out --db")
        found = export(course, so_far=True)  # reads the course folder; writes its own files
        print(
            f"grading is running in {course} (pid {running[0]}): these tables hold what is "
            "graded so far; grades.csv is written when the run ends"
        )
        for name, path in found.items():
            print(f"{name}: {path}")
        week(found)
        return
    if running is not None and running[1] == "grading":
        raise UsageError(
            f"grading is running in {course} (pid {running[0]}): the files for Canvas and "
            "Moodle go back once it ends; run this command again then (`export` alone shows "
            "what is graded so far)"
        )
    with courses.locked(course, "export"):  # not while a run writes the gradebook
        courses.use_gradebook(course, args.db)
        if args.canvas or args.moodle:  # (each writes the tables first, as the export below)
            from labtools.out import platforms

            if args.canvas:
                written = platforms.canvas(course, args.canvas, args.column, final=args.final)
                for name, said in written.items():
                    if name == "notes":
                        for line in said:
                            print(f"canvas note: {line}")
                    else:
                        print(f"canvas {name}: {said}")
            if args.moodle:
                written = platforms.moodle(course, args.moodle, args.lab, final=args.final)
                for name, said in written.items():
                    print(f"moodle {name}: {said}")
        found = export(course)  # last: with the names the gradebook export gave
        for name, path in found.items():
            print(f"{name}: {path}")
        week(found)


def _feedback(args) -> None:
    from labtools.course import folder as courses
    from labtools.door import layout
    from labtools.out.feedback import generate_feedback

    course = Path(args.course)
    layout.existing_course(course)
    with courses.locked(course, "feedback"):  # not while a run writes the gradebook
        courses.use_gradebook(course, args.db)
        courses.check_gradebook(course)
        from labtools.out import export

        # each page shows the score after the late deduction, as the policy has it now
        export.into_gradebook(course, export.collect(course))
        # a page that could not be written keeps its old one: FeedbackFailed, a UsageError
        written = generate_feedback(course, args.labs or layout.lab_names(course))
    print(f"{written} feedback pages written in {course / 'feedback'}")


def _report(args) -> None:
    from labtools.course import folder as courses
    from labtools.door import layout
    from labtools.out.report import write_report

    course = Path(args.course)
    layout.existing_course(course)
    courses.use_gradebook(course, args.db)  # the report reads results, not the gradebook
    print(f"class report: {write_report(course)}")


def _review(args) -> None:
    from labtools.course import folder as courses
    from labtools.course import review
    from labtools.door import layout

    course = Path(args.course)
    layout.existing_course(course)
    with courses.locked(course, "review"):  # not while a run writes the gradebook
        courses.use_gradebook(course, args.db)
        review.main(course, args.accept)


def _release(args) -> None:
    from labtools.course import release

    print("student versions written to", release.generate())


def _formgrader(args) -> None:
    from labtools.course import folder, formgrader
    from labtools.door import layout

    layout.existing_course(Path(args.course))
    folder.use_gradebook(Path(args.course), args.db)
    folder.check_gradebook(Path(args.course))
    formgrader.serve(Path(args.course), port=args.port)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m labtools", description=__doc__)
    jobs = top.add_subparsers(dest="job", required=True)
    run = {
        "release": _release,
        "grade": _grade,
        "export": _export,
        "feedback": _feedback,
        "formgrader": _formgrader,
        "report": _report,
        "review": _review,
    }
    for name, text in options.JOBS.items():
        job = jobs.add_parser(name, help=text)
        options.add_options(name, job)
        job.set_defaults(run=run[name])
    return top


def with_bin_on_path() -> None:
    """This environment's bin folder first on PATH: nbgrader runs its helpers (alembic)
    by name, from this process too."""
    bin_dir = str(Path(sys.executable).parent)
    path = os.environ.get("PATH", "")
    if path.split(os.pathsep)[0] != bin_dir:
        os.environ["PATH"] = os.pathsep.join(filter(None, [bin_dir, path]))


def gradebook_error(err: Exception) -> bool:
    """Whether ``err`` is SQLite's (or SQLAlchemy's over it): a gradebook problem."""
    import sqlite3

    if isinstance(err, sqlite3.Error):
        return True
    exc = sys.modules.get("sqlalchemy.exc")
    return exc is not None and isinstance(err, exc.SQLAlchemyError)


def main(argv: list[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):  # a file name that is not UTF-8 is printed
        if hasattr(stream, "reconfigure"):  # escaped, never the end of the command
            stream.reconfigure(errors="backslashreplace")
    args = parser().parse_args(argv)
    with_bin_on_path()
    from labtools import children

    try:
        with children.stop_on_sigterm():  # `kill PID` unwinds as Control-C: children, then lock
            args.run(args)
    except UsageError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("stopped; what was graded is kept (run the same command to go on)", file=sys.stderr)
        return 130
    except Exception as err:
        if not (gradebook_error(err) and getattr(args, "course", None)):
            raise
        from labtools.course.folder import gradebook_problem

        print(f"error: {gradebook_problem(Path(args.course), err)}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
