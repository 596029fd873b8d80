"""A gradebook several graders share (``--db URL``): a real PostgreSQL server, made and
removed here, takes a class's automatic scores from a grading run while two formgrader
servers (two graders) enter manual scores; the export then holds every score exactly once.
The server's URL carries a password, which no output and no file but gradebook.url shows.
"""

import concurrent.futures
import glob
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest
from _helpers import free_port, need_chromium, need_sandbox, sandbox_lock
from labtools import grade
from labtools.__main__ import main
from labtools.course import folder as courses
from labtools.course import formgrader
from labtools.door import layout
from labtools.out import export
from test_formgrader import stop, wait_for_grades
from test_grading import LAB, LIMITS, hand_in, rows_of, solved

pytestmark = [pytest.mark.slow, pytest.mark.sandbox]

USER, DATABASE = "grader", "gradebook"
SLEEP = 4  # seconds one notebook of the second run sleeps, so that the run outlasts the scores
# the manual scores each grader enters: (student, grade id, score)
GRADER_A = [("ada", "ex2-answer", 1.5), ("ada", "ex4-answer", 2.0)]
GRADER_B = [("ben", "ex2-answer", 2.0), ("ben", "ex4-answer", 0.5)]
# then both on Ada's ex2-answer: A changes her 1.5 to 1.0, B (whose page still shows 1.5)
# enters 0.5, which is refused; A's 1.0 stays
A_AGAIN, B_STALE = ("ada", "ex2-answer", 1.0), ("ada", "ex2-answer", 0.5)
KEPT = [A_AGAIN, GRADER_A[1], *GRADER_B]


def postgres_bin() -> Path:
    """PostgreSQL's server programs (Debian's postgresql package); skipped without them
    outside CI, failed in CI (which installs them: .ci/run)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL is missing: .ci/run installs it (apt-get install postgresql)")
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql); CI runs this")
    return Path(found[-1]).parent


def as_owner(user: str | None, argv: list) -> list:
    """``argv`` run as ``user`` (PostgreSQL's server refuses to run as root)."""
    return ["runuser", "-u", user, "--", *map(str, argv)] if user else list(map(str, argv))


@pytest.fixture(scope="module")
def server():
    """A PostgreSQL server on a Unix socket in a fresh folder (no TCP port), with a user
    whose password is random and a database for the gradebook; stopped and removed at the
    end. Returns (URL, password, socket folder)."""
    bin_dir = postgres_bin()
    folder = Path(tempfile.mkdtemp(prefix="pg-"))  # short: a socket's path has 107 bytes
    user = None
    if os.geteuid() == 0:
        names = {p.pw_name for p in pwd.getpwall()}
        user = "postgres" if "postgres" in names else "nobody"
        shutil.chown(folder, user)
    password = secrets.token_hex(12)
    (folder / "pw").write_text(password + "\n")
    if user:
        shutil.chown(folder / "pw", user)
    data, log = folder / "data", folder / "server.log"
    options = f"-c listen_addresses='' -c unix_socket_directories={folder} -c fsync=off"
    try:
        subprocess.run(
            as_owner(user, [bin_dir / "initdb", "-D", data, "-U", USER, "-A", "scram-sha-256",
                            f"--pwfile={folder / 'pw'}", "--no-sync", "-E", "UTF8"]),
            check=True, capture_output=True, timeout=60,
        )  # fmt: skip
        subprocess.run(
            as_owner(user, [bin_dir / "pg_ctl", "-D", data, "-l", log, "-w", "-t", "30",
                            "-o", options, "start"]),
            check=True, capture_output=True, timeout=60,
        )  # fmt: skip
        env = dict(os.environ, PGPASSWORD=password)
        subprocess.run(
            [bin_dir / "createdb", "-h", folder, "-U", USER, DATABASE],
            check=True, capture_output=True, timeout=30, env=env,
        )  # fmt: skip
        yield f"postgresql://{USER}:{password}@/{DATABASE}?host={folder}", password, folder
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run(
                as_owner(user, [bin_dir / "pg_ctl", "-D", data, "-m", "immediate", "-w",
                                "-t", "20", "stop"]),
                capture_output=True, timeout=40,
            )  # fmt: skip
        shutil.rmtree(folder, ignore_errors=True)


def enter(page, grade_id: str, score: float) -> float:
    """Type a manual score into formgrader's box for ``grade_id``; returns the time when
    the server had saved it."""
    box = page.locator(f"#{grade_id}")
    with page.expect_response(lambda r: "/api/grade/" in r.url and r.request.method == "PUT"):
        box.fill(str(score))
        box.press("Tab")
    return time.monotonic()


def test_a_class_graded_while_two_graders_score_by_hand_loses_and_doubles_nothing(
    server, tmp_path, capfd
):
    need_sandbox()
    need_chromium()
    import browser
    from nbgrader.api import Comment, Grade, Gradebook, Student, SubmittedAssignment

    url, password, _ = server
    course, first, second = tmp_path / "grading", tmp_path / "first", tmp_path / "second"
    for student in ("ada", "ben"):
        hand_in(first, student, solved())
        hand_in(second, student, solved())
    # Cy's notebook sleeps a few seconds in an answer (well within the cell's limit): the
    # second run is still writing when the graders have entered their scores
    slow = f"import time\ntime.sleep({SLEEP})\neta_choice = 0.112"
    hand_in(second, "cy", solved({"ex5-code": slow}))
    # the first run grades Ada and Ben; the graders start their formgrader servers (two
    # graders, two servers) as soon as it has made the gradebook's tables
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        with sandbox_lock():
            first_run = pool.submit(
                grade.grade, first, course, jobs=2, limits=LIMITS, progress=False,
                feedback=False, db=url,
            )  # fmt: skip
            deadline = time.monotonic() + 120
            while not (course / courses.URL).exists() or LAB not in courses.server_labs(url):
                assert not first_run.done(), first_run.exception()
                assert time.monotonic() < deadline, "the first run made no gradebook in 120 s"
                time.sleep(0.5)
            starts = [pool.submit(formgrader.start, course, free_port()) for _ in range(2)]
            first_run.result(timeout=300)
        servers = [start.result(timeout=300) for start in starts]
    try:
        assert (course / courses.URL).stat().st_mode & 0o777 == 0o600
        with Gradebook(courses.db_url(course)) as gb:
            ids = {s: gb.find_submission_notebook(LAB, LAB, s).id for s in ("ada", "ben")}
        with browser.playwright_chromium() as chromium:
            pages = []
            for (_, address), student in zip(servers, ("ada", "ben"), strict=True):
                base = address.split("/formgrader?token=")[0]
                page = chromium.new_page()
                page.goto(address)  # logs in with the printed address
                page.goto(f"{base}/formgrader/submissions/{ids[student]}/")
                wait_for_grades(page)
                pages.append(page)
            done = threading.Event()

            def run():
                try:
                    with sandbox_lock():
                        grade.grade(second, course, jobs=2, limits=LIMITS, progress=False,
                                    regrade=True)  # fmt: skip
                finally:
                    done.set()

            with concurrent.futures.ThreadPoolExecutor(1) as pool:
                running = pool.submit(run)
                time.sleep(0.5)  # the run has begun writing the course folder
                saved = []
                for a, b in zip(GRADER_A, GRADER_B, strict=True):  # the two graders by turns
                    saved.append(enter(pages[0], a[1], a[2]))
                    saved.append(enter(pages[1], b[1], b[2]))
                during = not done.is_set()
                running.result(timeout=300)
            the_later_save_of_one_cell_is_refused_and_said(pages, servers, ids["ada"])
    finally:
        for process, _ in servers:
            stop(process)
    assert during, "the grading run ended before the graders had entered their scores"

    export.export(course)
    rows = {r["student"]: r for r in rows_of(course) if r["lab"] == LAB}
    got = {s: (r["automatic"], r["manual"], r["total"]) for s, r in rows.items()}
    assert got == {
        "ada": ("7.0", "3.0", "10.0"),
        "ben": ("7.0", "2.5", "9.5"),
        "cy": ("7.0", "0.0", "7.0"),
    }
    assert rows["cy"]["status"] == "graded; 4 points wait for manual grading"
    assert rows["ada"]["status"] == rows["ben"]["status"] == "graded"
    with Gradebook(courses.db_url(course)) as gb:
        db = gb.db
        assert db.query(Student).count() == 3
        assert db.query(SubmittedAssignment).count() == 3
        lab = gb.find_assignment(LAB)
        per_notebook = len(lab.notebooks[0].grade_cells)
        assert per_notebook == 8
        grades = db.query(Grade).all()
        assert len(grades) == 3 * per_notebook
        assert len({(g.student.id, g.name) for g in grades}) == len(grades)  # none twice
        manual = {
            (g.student.id, g.name, g.manual_score) for g in grades if g.manual_score is not None
        }
        assert manual == set(KEPT)
        automatic = {g.student.id: 0.0 for g in grades}
        for g in grades:
            automatic[g.student.id] += g.auto_score or 0.0
        assert automatic == {"ada": 7.0, "ben": 7.0, "cy": 7.0}
        comments = db.query(Comment).all()
        assert len({(c.student.id, c.name) for c in comments}) == len(comments)
    for student in ("ada", "ben", "cy"):
        assert (course / "feedback" / student / LAB / f"{LAB}.html").exists()
    assert not list((course / "logs").glob("feedback--*"))

    # the password: in gradebook.url only (mode 600), in no output, log or other file
    out, err = capfd.readouterr()
    assert password not in out + err
    holding = [
        p.relative_to(course)
        for p in course.rglob("*")
        if p.is_file() and password.encode() in p.read_bytes()
    ]
    assert holding == [Path(courses.URL)]


def the_later_save_of_one_cell_is_refused_and_said(pages, servers, ada):
    """Instructor's trial, round 5: when both graders scored the same cell, the later save
    won silently. Now a save says what its page last had; the server refuses it when the
    other grader saved since, and the page shows theirs and says so."""
    base = servers[1][1].split("/formgrader?token=")[0]
    pages[1].goto(f"{base}/formgrader/submissions/{ada}/")
    wait_for_grades(pages[1])
    box = pages[1].locator(f"#{B_STALE[1]}")
    assert box.input_value() == "1.5"  # A's, as B opens the page
    enter(pages[0], A_AGAIN[1], A_AGAIN[2])  # A changes her mind; B's page still shows 1.5
    with pages[1].expect_response(
        lambda r: "/api/grade/" in r.url and r.request.method == "PUT"
    ) as answer:
        box.fill(str(B_STALE[2]))
        box.press("Tab")
    assert answer.value.status == 409
    said = pages[1].locator("#labtools-conflict")
    said.wait_for()
    assert said.inner_text().startswith(
        f"The score of {B_STALE[1]}: another grader saved 1 there since this page loaded it, "
        "so your 0.5 was not saved. The page shows theirs now"
    )
    assert box.input_value() == "1"


def bare_course(tmp_path) -> Path:
    """A course folder as far as the jobs that read one ask (its mark), with no grades."""
    import json

    course = tmp_path / "bare"
    course.mkdir(parents=True)
    (course / layout.MARK).write_text(json.dumps({"course": layout.COURSE, "sources": {}}))
    return course


def test_a_server_that_cannot_be_used_is_one_line_with_the_password_masked(
    server, tmp_path, capsys
):
    url, password, folder = server
    nowhere = tmp_path / "nowhere"
    nowhere.mkdir()
    cases = {
        "does not exist": url.replace(f"/{DATABASE}?", "/missing?"),
        "refused the login": url.replace(password, "wrong"),
        "no PostgreSQL server answers": url.replace(str(folder), str(nowhere)),
    }
    for k, (expected, bad) in enumerate(cases.items()):
        course = bare_course(tmp_path / str(k))
        assert main(["export", "--course", str(course), "--db", bad]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1, err
        assert expected in err and "grader:***@" in err, err
        assert password not in err and ":wrong@" not in err
    # a URL that is not PostgreSQL's, and a course folder that graded into another gradebook
    assert (
        main(["export", "--course", str(bare_course(tmp_path / "s")), "--db", "sqlite:///x"]) == 2
    )
    assert "SQLite is the default" in capsys.readouterr().err
    graded = bare_course(tmp_path / "g")
    (graded / "results" / "ada").mkdir(parents=True)
    (graded / "results" / "ada" / f"{LAB}.json").write_text("{}")
    assert main(["export", "--course", str(graded), "--db", url]) == 2
    err = capsys.readouterr().err
    assert "would start another, empty gradebook" in err and password not in err
    assert not (graded / courses.URL).exists()
