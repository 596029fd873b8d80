"""Grading on a dask cluster from the command line (``grade SUBMISSIONS --scheduler ADDRESS``).

The slow test starts a real scheduler and two workers as separate processes, each in a
folder of its own; as root, the workers also run in a mount namespace where the grading
machine's folder (course, submissions, its matplotlib cache) is an empty tmpfs, as on
another machine. The instructor's command grades a class through them with the same scores,
test by test, as the local pool gives.
"""

import concurrent.futures
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _helpers import free_port, need_sandbox
from labtools import grade, schedule
from labtools.__main__ import main
from labtools.course import folder as courses
from labtools.door import layout
from labtools.door.layout import UsageError
from labtools.grader import bwrap, cluster, worker
from labtools.grader.limits import Limits
from test_grading import LAB, LABS, hand_in, nb_of, plant_cells, rows_of, solved

DASK = Path(sys.executable).with_name("dask")
CLASS = {"correct": 7.0, "wrong": 4.0, "blank": 0.0}  # Lab 1's automatic points


def write_class(folder):
    notebooks = {
        "correct": solved(),
        "wrong": solved(plant_cells("wrong")),
        "blank": nb_of("release"),
    }
    for student, nb in notebooks.items():
        hand_in(folder, student, nb)


def log(files, path):
    files.append(open(path, "w"))  # noqa: SIM115 - closed by the test
    return files[-1]


def groups():
    """(process group, state) of every process on this machine."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        found.append((int(fields[2]), fields[0]))
    return found


def stop(processes):
    """End each process group we started: SIGTERM, at most 10 s, then SIGKILL; True when
    no process of any of these groups is left."""
    for proc in processes:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 10
    for proc in processes:
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)
    left = {proc.pid for proc in processes}
    while left and time.monotonic() < deadline + 10:  # members not reaped yet
        left &= {pgid for pgid, state in groups() if state != "Z"}
        time.sleep(0.05)
    return not left


@pytest.mark.slow
def test_a_class_graded_on_a_dask_cluster_gets_the_scores_of_the_local_pool(tmp_path):
    need_sandbox()
    from distributed import Client

    grader = tmp_path / "grader"  # what only the grading machine has
    submissions, course = grader / "in", grader / "course"
    write_class(submissions)
    env = dict(os.environ, PYTHONPATH=str(LABS))
    # the workers' view: no grader folder at all (as root, a mount namespace hides it)
    hide = ["bwrap", "--dev-bind", "/", "/", "--cap-add", "ALL", "--tmpfs", str(grader), "--"]
    hide = hide if os.geteuid() == 0 else []
    scheduler_file = tmp_path / "scheduler" / "scheduler.json"
    processes, logs = [], []
    try:
        (tmp_path / "scheduler").mkdir()
        processes.append(
            subprocess.Popen(
                [DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard"]
                + ["--scheduler-file", scheduler_file],
                cwd=tmp_path / "scheduler",
                env=env,
                start_new_session=True,
                stdout=subprocess.DEVNULL,
                stderr=log(logs, tmp_path / "scheduler" / "log"),
            )
        )
        for k in range(2):
            home = tmp_path / f"worker{k}"
            home.mkdir()
            processes.append(
                subprocess.Popen(
                    hide
                    + [DASK, "worker", "--scheduler-file", scheduler_file, "--nthreads", "1"]
                    + ["--no-dashboard", "--local-directory", home],
                    cwd=home,
                    env=dict(env, MPLCONFIGDIR=str(home / "mpl")),
                    start_new_session=True,
                    stdout=subprocess.DEVNULL,
                    stderr=log(logs, home / "log"),
                )
            )
        deadline = time.monotonic() + 30
        while not scheduler_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        address = json.loads(scheduler_file.read_text())["address"]
        with Client(address, timeout=10, set_as_default=False) as client:
            client.wait_for_workers(2, timeout=30)
            if hide:  # the workers really do not see the grading machine's folder
                seen = client.run(os.path.exists, str(submissions))
                assert list(seen.values()) == [False, False]

        graded = subprocess.run(
            [sys.executable, "-m", "labtools", "grade", submissions, "--course", course]
            + ["--cell-timeout", "10", "--scheduler", address],
            env=dict(env, MPLCONFIGDIR=str(grader / "mpl")),  # not there for the workers
            cwd=grader,
            capture_output=True,
            text=True,
            timeout=400,  # a new course generates every lab first (nbgrader, slow)
        )
        assert graded.returncode == 0, graded.stderr[-3000:]
        assert "3 notebooks graded now, 0 already graded" in graded.stdout
        assert "0 not graded" in graded.stdout

        with Client(address, timeout=10, set_as_default=False) as client:
            executed = client.run(lambda dask_worker: dask_worker.state.executed_count)
        assert sorted(executed.values()) == [1, 2]  # each worker graded, 3 in all

    finally:
        stopped = stop(processes)
        for f in logs:
            f.close()
    assert stopped, "a scheduler or worker process was left running"

    # the same class on the local pool, in a copy of the course (its labs generated once)
    local = tmp_path / "local"
    shutil.copytree(course, local, ignore=shutil.ignore_patterns("results", "feedback"))
    grade.grade(submissions, local, limits=Limits(cell_seconds=10), progress=False)
    scores = {r["student"]: float(r["automatic"]) for r in rows_of(course) if r["lab"] == LAB}
    assert scores == CLASS
    for student in CLASS:  # test by test, the same verdicts as the local pool's
        there = json.loads((course / "results" / student / f"{LAB}.json").read_text())
        here = json.loads((local / "results" / student / f"{LAB}.json").read_text())
        assert there["status"] == here["status"] == "graded"
        assert {k: v["score"] for k, v in there["tests"].items()} == {
            k: v["score"] for k, v in here["tests"].items()
        }
    # the recording process wrote the feedback, as the workers cannot reach the course
    assert len(list(course.glob(f"feedback/*/{LAB}/{LAB}.html"))) == 3


def test_an_unreachable_scheduler_is_a_clear_error_and_touches_nothing(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(cluster, "CONNECT_SECONDS", 1.0)
    write_class(tmp_path / "in")
    course = tmp_path / "course"
    address = f"tcp://127.0.0.1:{free_port()}"
    started = time.monotonic()
    argv = ["grade", str(tmp_path / "in"), "--course", str(course), "--scheduler", address]
    assert main(argv) == 2
    assert time.monotonic() - started < 15
    err = capsys.readouterr().err
    assert f"error: no dask scheduler answers at {address}" in err
    assert "Traceback" not in err
    assert not course.exists()
    assert main(argv[:-1] + ["nonsense://x"]) == 2
    assert "no dask scheduler answers at nonsense://x" in capsys.readouterr().err


class Workers:
    """What check_workers asks a dask Client, answered as a cluster's workers would."""

    def __init__(self, threads=1, report=None, joined=True):
        self.threads, self.joined = threads, joined
        self.report = report or cluster.worker_report()

    def wait_for_workers(self, n, timeout):
        if not self.joined:
            raise TimeoutError

    def nthreads(self):
        return {"tcp://10.0.0.7:4000": self.threads}

    def run(self, function):
        assert function is cluster.worker_report
        return {"tcp://10.0.0.7:4000": self.report}


def test_workers_that_could_not_grade_alike_are_refused_before_grading():
    cluster.check_workers(Workers(), "tcp://s:8786")  # the same code, a sandbox, one thread
    refused = {
        "has no workers": Workers(joined=False),
        "tcp://10.0.0.7:4000 runs 2 threads: start workers with `--nthreads 1`": Workers(2),
        "tcp://10.0.0.7:4000 has another version of labtools or perceptrons": Workers(
            report={"sandbox": None, "code": "old"}
        ),
        "tcp://10.0.0.7:4000 cannot run the sandbox: no bwrap": Workers(
            report={"sandbox": "no bwrap", "code": cluster.code_digest()}
        ),
    }
    for message, workers in refused.items():
        with pytest.raises(UsageError, match=re.escape(message)):
            cluster.check_workers(workers, "tcp://s:8786")
    no_sandbox = Workers(report={"sandbox": "no bwrap", "code": cluster.code_digest()})
    cluster.check_workers(no_sandbox, "tcp://s:8786", unsafe=True)


def test_a_worker_on_another_machine_lends_its_own_font_cache(tmp_path):
    assert worker.worker_mpl_cache(str(tmp_path)) == tmp_path
    own = worker.worker_mpl_cache(str(tmp_path / "only on the grading machine"))
    assert own == Path(worker.mpl_cache()) and own.is_dir()
    argv = bwrap.zygote_command(tmp_path / "package", tmp_path / "missing")
    assert str(tmp_path / "missing") not in argv  # a folder that is not there is not bound
    assert str(tmp_path) in bwrap.zygote_command(tmp_path / "package", tmp_path)  # one that is


class Cancelling(concurrent.futures.Executor):
    """An executor whose cluster went away: every task comes back cancelled, as dask's
    do when the client loses its scheduler."""

    def submit(self, fn, /, *args, **kwargs):
        future = concurrent.futures.Future()
        future.cancel()
        future.set_running_or_notify_cancel()
        return future


def test_notebooks_a_lost_cluster_did_not_grade_are_graded_by_the_next_run(tmp_path):
    course = tmp_path / "course"
    (course / "source" / LAB).mkdir(parents=True)
    (course / "source" / LAB / f"{LAB}.ipynb").write_text(json.dumps(nb_of("source")))
    todo = [(layout.Submission(student=s, lab=LAB, path=Path("x")), "d", b"{}") for s in CLASS]
    rows = schedule.run(
        course,
        todo,
        limits=Limits(),
        unsafe=False,
        jobs=None,
        executor=Cancelling(),
        progress=False,
    )
    assert sorted(r.student for r in rows) == sorted(CLASS)
    for row in rows:
        assert row.text.startswith("not graded: the cluster stopped before grading it")
    assert not (course / "results").exists()  # nothing recorded: the next run grades them


def test_the_sandbox_is_needed_where_the_notebooks_run_not_where_they_are_recorded(
    tmp_path, monkeypatch
):
    class Opened(Exception):
        pass

    def opened(course, **_):
        raise Opened

    write_class(tmp_path / "in")
    monkeypatch.setattr(bwrap, "available", lambda: "bubblewrap is not installed")
    monkeypatch.setattr(courses, "open_course", opened)
    with pytest.raises(UsageError, match="--unsafe"):  # the local pool: refused here
        grade.grade(tmp_path / "in", tmp_path / "course")
    with pytest.raises(Opened):  # a cluster's workers: checked there (labtools.grader.cluster)
        grade.grade(tmp_path / "in", tmp_path / "course", executor=Cancelling())
