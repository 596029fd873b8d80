"""The instructor's runs of `grade`, `export` and `feedback`: lost grades graded again, a run
stopped with nothing left running, one run at a time on a course folder, a gradebook that
is locked, damaged or emptied, resubmissions, and bad arguments, each with one clear line.

One course folder is graded once (Lab 1, two students, and another lab's notebook handed in
as Lab 1); the tests that grade again work on copies of it.
"""

import contextlib
import csv
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from _helpers import ROOT, answered, labtools, need_sandbox, one_error_line, sandbox_lock
from labtools.course import folder as courses

LABS = ROOT / "labs"
LAB = "lab1_perceptron"
ENV = dict(os.environ, PYTHONPATH=str(LABS))


def hand_in(folder: Path, student: str, nb: dict, lab: str = LAB) -> Path:
    path = folder / student / lab / f"{lab}.ipynb"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(nb))
    return path


def grade_args(submissions, course, *more) -> list[str]:
    return ["grade", str(submissions), "--course", str(course), "--labs", LAB, "--jobs", "2"] + [
        "--cell-timeout",
        "10",
        *more,
    ]


def statuses(course: Path) -> dict[str, dict]:
    with open(course / "grades.csv") as f:
        return {r["student"]: r for r in csv.DictReader(f) if r["lab"] == LAB}


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """Lab 1 of ann and bob graded, cy's Lab 2 handed in as Lab 1, ann's Lab 4 left out."""
    need_sandbox()
    tmp = tmp_path_factory.mktemp("runs")
    submissions, course = tmp / "in", tmp / "course"
    hand_in(submissions, "ann", answered(LAB))
    hand_in(submissions, "bob", answered(LAB))
    hand_in(submissions, "cy", answered("lab2_convergence"))  # as Lab 1
    hand_in(submissions, "ann", answered("lab4_learning_rate"), "lab4_learning_rate")
    with sandbox_lock():
        code, out, err = labtools(*grade_args(submissions, course))
    assert code == 0, err[-3000:]
    return {"submissions": submissions, "course": course, "out": out}


@pytest.fixture
def copy(base, tmp_path):
    """A copy of the graded course folder and of its submissions."""
    shutil.copytree(base["course"], tmp_path / "course", symlinks=True)
    shutil.copytree(base["submissions"], tmp_path / "in")
    return tmp_path / "in", tmp_path / "course"


# ---------------------------------------------------------------------------------------
# Processes: looked up in /proc


def processes() -> dict[int, tuple[int, str, str]]:
    """{pid: (parent pid, state, command line)} of every process now."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            state, ppid = stat.rsplit(")", 1)[1].split()[:2]
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError):
            continue
        found[int(entry.name)] = (int(ppid), state, cmdline)
    return found


def descendants(pid: int) -> dict[int, str]:
    """{pid: command line} of the live processes below ``pid``."""
    table = processes()
    found, todo = {}, [pid]
    while todo:
        parent = todo.pop()
        for child, (ppid, state, cmdline) in table.items():
            if ppid == parent and child not in found and state != "Z":
                found[child] = cmdline
                todo.append(child)
    return found


def alive(known: dict[int, str]) -> dict[int, str]:
    """Those of ``known`` still running (the same command line, not a zombie)."""
    table = processes()
    return {
        pid: cmd
        for pid, cmd in known.items()
        if pid in table and table[pid][2] == cmd and table[pid][1] != "Z"
    }


def wait_for(check, seconds: float, what: str):
    """Poll ``check`` until it returns something true, at most ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    pytest.fail(f"waited {seconds} s for {what}")


def grading_now(pid: int) -> dict[int, str]:
    """The processes below ``pid`` once one of its pool workers (multiprocessing's
    ``spawn_main``) runs a sandbox below it, else {}. (A sandbox below ``pid`` alone is not
    enough: the run's own check that bubblewrap works starts one, before any worker; a
    clean-clone run caught it so and found no worker to kill.)"""
    below = descendants(pid)
    for worker in (p for p, cmd in below.items() if "spawn_main" in cmd):
        if any(cmd.startswith("bwrap") for cmd in descendants(worker).values()):
            return below
    return {}


def start(argv: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        argv,
        env=ENV,
        cwd=ROOT,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def stop_all(run: subprocess.Popen, known: dict[int, str]) -> None:
    """Whatever a failed test left: the run's group and the processes seen below it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(run.pid, signal.SIGKILL)
    for pid in alive(known):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    run.communicate(timeout=30)


def labtools_command(submissions, course, *more) -> list[str]:
    return [sys.executable, "-m", "labtools", *grade_args(submissions, course, *more)]


# ---------------------------------------------------------------------------------------
# 1. Lost grades


def test_failed_and_not_graded_rows_are_graded_again_by_a_plain_run(copy):
    submissions, course = copy
    for student, text in (("ann", "grading failed: see logs"), ("bob", "not graded: lost")):
        path = courses.result_path(course, student, LAB)
        row = json.loads(path.read_text())
        row.update(status=text, tests={})
        path.write_text(json.dumps(row))
    with sandbox_lock():
        code, out, err = labtools(*grade_args(submissions, course))
    assert code == 0, err[-3000:]
    assert "2 notebooks graded now, 1 already graded before" in out
    assert "2 of them graded again because an earlier run did not grade them" in out
    rows = statuses(course)
    assert (rows["ann"]["automatic"], rows["bob"]["automatic"]) == ("7.0", "7.0")


def test_a_pool_worker_killed_mid_run_loses_no_grade(copy):
    """kill -9 of a pool worker, as the OOM killer would: its notebooks are recorded as
    failed (or left for later), and the next plain run grades them."""
    submissions, course = copy
    for student in ("dan", "eve"):
        nb = answered(LAB)  # a cell that waits, so the worker is still grading when killed
        nb["cells"].append(
            {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
             "source": "import time\ntime.sleep(5)"}
        )  # fmt: skip
        hand_in(submissions, student, nb)
    with sandbox_lock():
        run = start(labtools_command(submissions, course, "--jobs", "1"))
        known = {}
        try:
            known = wait_for(lambda: grading_now(run.pid), 120, "a worker to start grading")
            (worker,) = [p for p, cmd in known.items() if "spawn_main" in cmd]
            os.kill(worker, signal.SIGKILL)
            out, err = run.communicate(timeout=120)
            assert run.returncode == 0, err[-3000:]
            assert "not graded:" in out
        finally:
            if run.returncode is None:
                stop_all(run, known)
        code, out, err = labtools(*grade_args(submissions, course))
    assert code == 0, err[-3000:]
    rows = statuses(course)
    assert {s: rows[s]["automatic"] for s in ("ann", "bob", "dan", "eve")} == dict.fromkeys(
        ("ann", "bob", "dan", "eve"), "7.0"
    )


# ---------------------------------------------------------------------------------------
# 2. and 3. Stopping a run; one run at a time


def test_sigterm_to_tasks_py_stops_the_grading_and_leaves_nothing_running(copy):
    submissions, course = copy
    hand_in(submissions, "dan", answered(LAB))
    csv_before = (course / "grades.csv").stat().st_mtime_ns
    # tasks.py as the instructor runs it, without the set-up (the environment is ready)
    wrapper = (
        "import sys; sys.path.insert(0, sys.argv.pop(1)); import tasks; "
        "tasks.setup = lambda *a, **k: None; tasks.main(sys.argv[1:])"
    )
    argv = [sys.executable, "-c", wrapper, str(ROOT), *grade_args(submissions, course)]
    with sandbox_lock():
        run = start(argv)
        known = {}
        try:
            known = wait_for(lambda: grading_now(run.pid), 120, "the grading to start")
            run.send_signal(signal.SIGTERM)
            run.communicate(timeout=30)
            assert run.returncode != 0
            wait_for(lambda: not alive(known), 10, f"these to end: {alive(known)}")
        finally:
            stop_all(run, known)
    assert (course / "grades.csv").stat().st_mtime_ns == csv_before
    assert not courses.result_path(course, "dan", LAB).exists()


def test_a_second_run_is_refused_and_kill_9_of_the_first_leaves_nothing_running(copy):
    submissions, course = copy
    hand_in(submissions, "dan", answered(LAB))
    with sandbox_lock():
        run = start(labtools_command(submissions, course))
        known = {}
        try:
            known = wait_for(lambda: grading_now(run.pid), 120, "the grading to start")
            code, out, err = labtools(*grade_args(submissions, course))
            assert code == 2
            one_error_line(err, f"grading already running in {course} (pid {run.pid})")
            os.kill(run.pid, signal.SIGKILL)  # the run alone, not its group
            run.communicate(timeout=30)
            wait_for(lambda: not alive(known), 10, f"these to end: {alive(known)}")
        finally:
            stop_all(run, known)
        # the lock went with the killed run: the next one grades dan, once
        code, out, err = labtools(*grade_args(submissions, course))
    assert code == 0, err[-3000:]
    assert "1 notebooks graded now, 3 already graded before" in out
    assert statuses(course)["dan"]["automatic"] == "7.0"


def test_export_and_feedback_take_the_course_lock_and_name_the_run_that_holds_it(copy):
    """Export and feedback read and write the gradebook: not while a run writes it, and a
    run does not start while they do (issue 30, left open in session 10)."""
    submissions, course = copy

    def files() -> dict:
        return {
            p: p.stat().st_mtime_ns
            for p in course.rglob("*")
            if p.is_file() and p.name != ".labtools-lock"  # (this test's own lock writes it)
        }

    before = files()
    with courses.locked(course):  # as a grading run holds it
        code, out, err = labtools("feedback", "--course", course)
        assert code == 2
        one_error_line(err, f"grading already running in {course} (pid {os.getpid()})")
        # export reads what is graded so far and writes its own two tables (issue 40, 11)
        code, out, err = labtools("export", "--course", course)
        assert code == 0 and "these tables hold what is graded so far" in out, err[-2000:]
    so_far = {course / "grades-so-far.csv", course / "grades-wide-so-far.csv"}
    assert {p: t for p, t in files().items() if p not in so_far} == before  # nothing else
    with courses.locked(course, "export"):  # an export holds it: the grading is refused
        code, out, err = labtools(*grade_args(submissions, course))
        assert code == 2
        one_error_line(err, f"export already running in {course} (pid {os.getpid()})")
    code, out, err = labtools("export", "--course", course)
    assert code == 0, err[-3000:]


# ---------------------------------------------------------------------------------------
# 4. The gradebook


def test_a_backup_of_the_gradebook_is_made_before_each_run(base):
    backup = base["course"] / "gradebook.db.bak"
    with contextlib.closing(sqlite3.connect(backup)) as db:
        assert db.execute("SELECT count(*) FROM assignment").fetchone() == (7,)
        assert db.execute("SELECT count(*) FROM submitted_assignment").fetchone() == (0,)
    with contextlib.closing(sqlite3.connect(base["course"] / "gradebook.db")) as db:
        assert db.execute("SELECT count(*) FROM submitted_assignment").fetchone() == (2,)


def test_a_locked_gradebook_is_named_in_one_line(copy):
    submissions, course = copy
    holder = sqlite3.connect(course / "gradebook.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        for args in (["export", "--course", course], grade_args(submissions, course)):
            code, out, err = labtools(*args)
            assert code == 2
            one_error_line(err, "gradebook.db is locked by another program", "run again")
    finally:
        holder.close()


@pytest.mark.parametrize("damage", ["garbage", "emptied"])
def test_a_damaged_or_emptied_gradebook_is_named_in_one_line(copy, damage):
    submissions, course = copy
    db = course / "gradebook.db"
    if damage == "garbage":
        with open(db, "r+b") as f:
            f.write(b"this is not a database" * 10)
    else:
        db.write_bytes(b"")
    words = ["gradebook.db is damaged" if damage == "garbage" else "gradebook.db is empty"]
    for args in (["export", "--course", course], grade_args(submissions, course)):
        code, out, err = labtools(*args)
        assert code == 2
        one_error_line(err, *words, "restore it from gradebook.db.bak")


# A writer killed in the middle of a transaction, after SQLite wrote some of its pages to
# the file (a small page cache spills): the file is changed, the journal beside it holds
# what the pages were (a "hot journal")
KILLED_WRITER = """
import os, signal, sqlite3, sys
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute("PRAGMA cache_size=1")
con.execute("BEGIN")
con.execute("DELETE FROM submitted_assignment")
con.execute("UPDATE assignment SET name = name || '-changed'")
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_gradebook_left_mid_write_by_a_killed_run_is_rolled_back_not_called_damaged(copy):
    """A grading run killed while nbgrader writes the gradebook (kill -9, the OOM killer)
    leaves a hot journal; the next export and grading run roll it back, as SQLite does for
    any writer, and go on with the gradebook as it was before that write (a clean-clone run
    refused it as damaged: its check opened it read-only, which cannot roll back)."""
    submissions, course = copy
    db = course / "gradebook.db"
    killed = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(db)])
    assert killed.returncode == -signal.SIGKILL
    assert (course / "gradebook.db-journal").stat().st_size > 0
    for args in (["export", "--course", course], grade_args(submissions, course)):
        code, out, err = labtools(*args)
        assert code == 0, err[-2000:]
    assert not (course / "gradebook.db-journal").exists()
    with contextlib.closing(sqlite3.connect(db)) as con:
        assert con.execute("SELECT count(*) FROM submitted_assignment").fetchone() == (2,)
        names = {row[0] for row in con.execute("SELECT name FROM assignment")}
    assert not any(name.endswith("-changed") for name in names)


def test_every_labtools_job_has_the_environments_bin_folder_on_path(monkeypatch):
    sys.path.insert(0, str(ROOT))
    import tasks

    seen = {}
    monkeypatch.setattr(tasks, "setup", lambda *a, **k: None)
    monkeypatch.setattr(tasks, "run_forwarding", lambda cmd, env: seen.update(env) or 0)
    with pytest.raises(SystemExit):
        tasks.labtools("export")
    assert seen["PATH"].split(os.pathsep)[0] == str(tasks.BIN)


# ---------------------------------------------------------------------------------------
# 5. Resubmissions


def test_a_changed_submission_is_noted_once_and_named_with_its_command(copy):
    submissions, course = copy
    path = submissions / "bob" / LAB / f"{LAB}.ipynb"
    path.write_text(path.read_text() + "\n")
    for _ in range(3):
        code, out, err = labtools(*grade_args(submissions, course))
        assert code == 0, err[-3000:]
    assert statuses(course)["bob"]["status"].count("changed since") == 1
    assert "1 submissions changed since they were graded" in out
    command = (
        f"python3 tasks.py grade {submissions} --course {course} --regrade --students bob "
        f"--labs {LAB}"
    )
    assert command in out


def test_a_course_folder_is_kept_out_of_git_wherever_it_is_made(base, tmp_path):
    """Instructor's trial, round 5: only `grading/` was git-ignored (by the repository's
    .gitignore); `grading-moodle/`, full of students' names and work, showed up as
    untracked files, one `git add -A` away from a commit. Every course folder ignores
    itself, and one made before that gets its .gitignore from the next run."""
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", repo], check=True)
    shutil.copytree(base["course"], repo / "grading-moodle", symlinks=True)
    (repo / "README.md").write_text("a repository\n")

    def untracked():
        argv = ["git", "-C", repo, "status", "--porcelain", "--untracked-files=all"]
        return subprocess.run(argv, check=True, capture_output=True, text=True).stdout

    assert untracked() == "?? README.md\n"
    (repo / "grading-moodle" / ".gitignore").unlink()  # as a course folder of 36be076 is
    assert "?? grading-moodle/gradebook.db\n" in untracked()
    courses.open_course(repo / "grading-moodle")  # what every grading run does first
    assert untracked() == "?? README.md\n"


# ---------------------------------------------------------------------------------------
# 6. Bad arguments


def test_export_and_feedback_name_a_missing_course_and_make_nothing(tmp_path):
    for job in ("export", "feedback"):
        code, out, err = labtools(job, "--course", tmp_path / "NO_SUCH")
        assert code == 2
        one_error_line(err, f"no course folder {tmp_path / 'NO_SUCH'}")
        assert not (tmp_path / "NO_SUCH").exists()
    (tmp_path / "download").mkdir()
    (tmp_path / "download" / "notes.txt").write_text("not a course")
    code, out, err = labtools("export", "--course", tmp_path / "download")
    assert code == 2
    one_error_line(err, "was not made by `tasks.py grade`")
    assert sorted(p.name for p in (tmp_path / "download").iterdir()) == ["notes.txt"]


@pytest.mark.parametrize("jobs", ["-1", "0"])
def test_jobs_below_one_are_refused(base, tmp_path, jobs):
    course = tmp_path / "course"
    code, out, err = labtools(*grade_args(base["submissions"], course, "--jobs", jobs))
    assert code == 2
    one_error_line(err, "--jobs must be at least 1")
    assert not course.exists()


def test_labs_leaves_other_labs_out_in_one_line(base):
    assert "could not be placed" not in base["out"]
    assert "1 notebooks of other labs left out by --labs" in base["out"]


def test_a_typo_in_students_names_the_nearest_and_makes_nothing(base, tmp_path):
    course = tmp_path / "course"
    code, out, err = labtools(*grade_args(base["submissions"], course, "--students", "bbo"))
    assert code == 2
    one_error_line(err, "none of the 3 submissions found matched --students bbo", "bob")
    assert not course.exists()


def test_an_empty_download_is_refused_before_the_course_folder_is_made(tmp_path):
    empty = tmp_path / "download.zip"
    with zipfile.ZipFile(empty, "w"):
        pass
    code, out, err = labtools(*grade_args(empty, tmp_path / "course"))
    assert code == 2
    one_error_line(err, "no submissions found")
    assert not (tmp_path / "course").exists()


def test_another_labs_notebook_is_refused_by_name(base):
    status = statuses(base["course"])["cy"]["status"]
    assert status.startswith(
        "refused: this is lab2_convergence's notebook (its cells are that lab's), handed in "
        "as lab1_perceptron"
    ), status
