"""Manual grading in nbgrader's formgrader (labtools/course/formgrader.py): a score and a comment
entered in Chromium reach the export and the feedback; the page shows math with no network
and fetches no image an answer names; nbgrader's own workflow is hidden and refused; the
server keeps answering however much it logs (its output goes to logs/formgrader.log,
never to a pipe that fills); a start that fails says why, from that log; `kill` of
`tasks.py formgrader` leaves nothing running.
"""

import contextlib
import json
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import vendor_assets
from _helpers import course_made, free_port, need_chromium, need_sandbox, sandbox_lock
from labtools import grade
from labtools.course import folder as courses
from labtools.course import formgrader
from labtools.door import layout
from labtools.out import export, feedback
from test_grading import LAB, LIMITS, hand_in, rows_of, solved

PIPE = 2**16  # bytes a Linux pipe holds: the old server blocked once its log filled one
# two images in Ada's written answer: formgrader's page must fetch neither (a relative one
# is a GET to formgrader itself with the grader's session; the other, a tracking pixel)
IMAGES = '\n\n<img src="x" alt="here"> ![pixel](https://tracker.example.org/pixel.png)'


def ada():
    """Ada's Lab 1: the instructor's answers, her last written answer (math) with IMAGES."""
    nb = solved()
    answer = next(
        c for c in nb["cells"] if c["metadata"]["nbgrader"].get("grade_id") == "ex4-answer"
    )
    return solved({"ex4-answer": answer["source"] + IMAGES})


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    """A course folder where Ada's Lab 1 was graded, once for the module (each test takes
    a copy, see copy_of); her submission's notebook id."""
    from nbgrader.api import Gradebook

    need_sandbox()
    vendor_assets.vendor_assets()  # MathJax for formgrader's pages, as tasks.py formgrader has it
    tmp_path = tmp_path_factory.mktemp("formgrader")
    submissions, course = tmp_path / "in", tmp_path / "grading"
    hand_in(submissions, "ada", ada())
    with sandbox_lock():  # made before the test's own hold of the lock (tests/conftest.py)
        grade.grade(submissions, course_made(course), limits=LIMITS, progress=False)
    with Gradebook(courses.db_url(course)) as gb:
        return course, gb.find_submission_notebook(LAB, LAB, "ada").id


def copy_of(graded_class, tmp_path):
    """The graded course folder, copied for one test (the gradebook holds no paths)."""
    course, notebook_id = graded_class
    copy = tmp_path / "grading"
    shutil.copytree(course, copy, symlinks=True)
    return copy, notebook_id


def stop(process):
    """Stop the server, bounded: a server blocked on its log does not heed SIGTERM."""
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=20)


def wait_for_grades(page):
    # formgrader binds each input to the gradebook when it has fetched the grades and
    # comments, after the page's load event; a score typed before that is never saved (CI
    # failed once on it).
    page.wait_for_function(
        "() => window.formgrader && formgrader.grades && formgrader.grades.loaded"
        " && formgrader.comments && formgrader.comments.loaded",
        timeout=30_000,
    )


@pytest.mark.slow
def test_manual_grading_in_formgrader_reaches_the_export_and_the_feedback(graded_class, tmp_path):
    """As an instructor would: grade, open a submission in formgrader (Chromium), enter a
    score and a comment for the written answer, then export and regenerate feedback."""
    need_chromium()
    import browser
    from nbgrader.api import Gradebook

    course, notebook_id = copy_of(graded_class, tmp_path)
    before = next(r for r in rows_of(course) if r["lab"] == LAB)
    assert (before["automatic"], before["manual"], before["total"]) == ("7.0", "0.0", "7.0")
    # red team, round 6: a name from the learning platform, which a student may write,
    # was markup in the submission page (nbgrader's template does not escape it)
    hostile = '<img src=x onerror="window.HOSTILE = 1">'
    with Gradebook(courses.db_url(course)) as gb:
        gb.update_or_create_student("ada", last_name=hostile, first_name="Ada")
    port = free_port()
    process, url = formgrader.start(course, port)
    try:
        token = url.split("token=")[1]
        base = f"http://127.0.0.1:{port}"
        with browser.playwright_chromium() as chromium:  # offline: no host but 127.0.0.1
            page = chromium.new_page()
            asked, failed = [], {}
            page.on("request", lambda r: asked.append(r.url))
            page.on("requestfailed", lambda r: failed.setdefault(r.url, r.failure))
            page.goto(f"{base}/formgrader?token={token}")  # logs in with the printed address
            nbgraders_own_workflow_is_hidden_and_refused(page, base)
            page.goto(f"{base}/formgrader/submissions/{notebook_id}/")
            score, comment = page.locator("#ex4-answer"), page.locator("#ex4-answer-comment")
            wait_for_grades(page)
            assert page.evaluate("window.HOSTILE") is None
            assert page.locator("a.name-shown").first.text_content().strip() == f"{hostile}, Ada"
            # instructor's trial, round 5: math showed as raw LaTeX without a network (MathJax
            # from a CDN), and the grader's browser fetched the images an answer names
            page.evaluate("() => MathJax.startup.promise")
            answer = page.locator(".nbgrader_cell", has=score)
            assert answer.locator("mjx-container").count() >= 5
            assert "\\mathbf" not in answer.inner_text()
            assert answer.locator("img").count() == 2  # there, and blocked by the page's
            named = [u for u in asked if u.endswith("/x") or "example.org" in u]  # policy:
            assert {u: failed.get(u) for u in named} == {
                f"{base}/formgrader/submissions/{notebook_id}/x": "csp",
                "https://tracker.example.org/pixel.png": "csp",
            }
            with page.expect_response(lambda r: "/api/grade/" in r.url and r.ok):
                score.fill("1.5")
                score.press("Tab")
            with page.expect_response(lambda r: "/api/comment/" in r.url and r.ok):
                comment.fill("Right idea: the scale of w does not move the hyperplane.")
                comment.press("Tab")
    finally:
        stop(process)
    assert (
        f"GET /formgrader/submissions/{notebook_id}/x" not in (course / formgrader.LOG).read_text()
    )
    export.export(course)
    after = next(r for r in rows_of(course) if r["lab"] == LAB)
    assert (after["automatic"], after["manual"], after["total"]) == ("7.0", "1.5", "8.5")
    assert after["status"] == "graded; 2 points wait for manual grading"  # ex2's trace table
    feedback.generate_feedback(course, [LAB])
    html = (course / "feedback" / "ada" / LAB / f"{LAB}.html").read_text()
    assert "Right idea: the scale of w does not move the hyperplane." in html
    assert "8.5 / 11" in html


@pytest.mark.slow
def test_feedback_in_a_relative_course_folder_rewrites_pages_and_never_loses_one(
    graded_class, tmp_path, monkeypatch, capsys
):
    """Instructor's trial, round 5, finding 1: `tasks.py feedback` on the default course
    folder, `grading` (relative), with SQLite deleted every page, wrote none (nbgrader
    works in the course folder, where the gradebook's relative path led nowhere), said
    "feedback regenerated" and exited 0. Now, through the command as tasks.py runs it (in
    the folder that holds the course folder): every page written again; a page that cannot
    be written keeps the old one, and the command fails with one line that says why and
    what to run (with --course when it is not the default)."""
    from labtools.__main__ import main

    course, _ = copy_of(graded_class, tmp_path)
    monkeypatch.chdir(tmp_path)
    page = course / "feedback" / "ada" / LAB / f"{LAB}.html"
    page.write_text("the page as grade wrote it")
    assert main(["feedback"]) == 0
    assert "Score: 7.0 / 11.0" in page.read_text()
    assert capsys.readouterr().out == "1 feedback pages written in grading/feedback\n"

    week = course.rename(tmp_path / "week1")
    page = week / "feedback" / "ada" / LAB / f"{LAB}.html"
    page.write_text("the page as grade wrote it")
    (week / "autograded" / "ada" / LAB / f"{LAB}.ipynb").write_text("{cut off")
    assert main(["feedback", "--course", "week1"]) == 2
    said = capsys.readouterr()
    assert said.out == ""
    assert said.err.count("\n") == 1
    assert said.err.startswith(
        f"error: 1 feedback pages could not be written (ada/{LAB}; their earlier pages, if "
        "any, are kept): nbformat.reader.NotJSONError: Notebook does not appear to be JSON"
    )
    assert said.err.endswith(
        f"(the traceback is in week1/logs/feedback--ada--{LAB}.log); fix that and run "
        f"`python3 tasks.py feedback --course week1 --labs {LAB}`\n"
    )
    assert page.read_text() == "the page as grade wrote it"
    assert "NotJSONError" in (week / "logs" / f"feedback--ada--{LAB}.log").read_text()
    assert sorted(p.name for p in week.iterdir() if p.name.startswith(".feedback")) == []


REFUSED = """async ([address]) => {
    const xsrf = document.cookie.match(/_xsrf=([^;]*)/)[1];
    const r = await fetch(address, {method: "POST", headers: {"X-XSRFToken": xsrf}});
    return [r.status, (await r.json()).error];
}"""


POSTED = """async ([address, body]) => {
    const xsrf = document.cookie.match(/_xsrf=([^;]*)/)[1];
    const headers = {"X-XSRFToken": xsrf, "Content-Type": "application/json"};
    const r = await fetch(address, {method: "POST", body: body, headers: headers});
    return [r.status, await r.text()];
}"""


def nbgraders_own_workflow_is_hidden_and_refused(page, base):
    """Instructor's trial, round 5: *Manage Assignments* showed nbgrader's buttons for a
    workflow the course does not use (Release, Collect, ...) and a warning about its
    exchange. Hidden now, and refused by the server: autograde would run a student's code
    outside the sandbox."""
    page.wait_for_selector("#labtools-note")
    assert page.locator("#warning-exchange, #warning-course-id").count() == 0
    page.wait_for_function("() => document.querySelectorAll('tbody#main-table td').length > 8")
    headers = [h.inner_text() for h in page.locator("thead th").all() if h.is_visible()]
    assert headers == ["Name", "Due Date", "Status", "Edit", "Preview", "# Submissions"]
    for action in ("release", "collect", "assign", "generate_feedback", "ada/autograde"):
        address = f"{base}/formgrader/api/assignment/{LAB}/{action}"
        if action == "ada/autograde":
            address = f"{base}/formgrader/api/submission/{LAB}/ada/autograde"
        status, said = page.evaluate(REFUSED, [address])
        assert (status, said.split(":")[0]) == (403, "not with this course folder"), action
    # nothing of the course folder runs in this server: no kernel (a submission opened in
    # JupyterLab), no Validate (nbgrader's extension for students executes the notebook)
    submission = f"submitted/ada/{LAB}/{LAB}.ipynb"
    session = {"path": submission, "type": "notebook", "kernel": {"name": "python3"}}
    for address, body in ((f"{base}/api/sessions", session),
                          (f"{base}/api/kernels", {"name": "python3"})):  # fmt: skip
        status, said = page.evaluate(POSTED, [address, json.dumps(body)])
        # (the sessions API wraps the kernel's refusal in its own 500, message and all)
        assert status in (403, 500) and formgrader.NO_KERNEL in json.loads(said)["message"]
    assert page.evaluate("async () => (await fetch('/api/kernels')).json()") == []
    validate = f"{base}/assignments/validate"
    status, _ = page.evaluate(POSTED, [validate, json.dumps({"path": submission})])
    assert status == 404


# Each request a submission's address without its "/" (as a link or a typed address has it):
# the server answers with a redirect and logs it, 170 bytes, so 500 log 85 KB. From the page,
# so that the browser's session goes through the real server (never its cache of the
# permanent redirect); each one bounded.
FLOOD = """async ([address, count]) => {
    const answered = [];
    for (let k = 0; k < count; k++) {
        try {
            const r = await fetch(address, {
                redirect: "manual", cache: "no-store", signal: AbortSignal.timeout(5000)
            });
            answered.push(r.type);
        } catch (err) {
            answered.push(String(err));
            break;
        }
    }
    return answered;
}"""


@pytest.mark.slow
def test_formgrader_keeps_answering_after_its_log_outgrows_a_pipe(graded_class, tmp_path):
    """Red team, round 4, finding 5: the server's log went to a pipe that nobody read, and
    after about 64 KiB (about 320 submission pages) every request hung."""
    need_chromium()
    import browser

    course, notebook_id = copy_of(graded_class, tmp_path)
    log = course / "logs" / "formgrader.log"
    port = free_port()
    process, url = formgrader.start(course, port)
    try:
        started = log.stat().st_size
        token = url.split("token=")[1]
        base = f"http://127.0.0.1:{port}"
        with browser.playwright_chromium() as chromium:
            page = chromium.new_page()
            page.goto(f"{base}/formgrader?token={token}")  # logs in with the printed address
            address = f"{base}/formgrader/submissions/{notebook_id}"
            answered = page.evaluate(FLOOD, [address, 500])
            assert answered == ["opaqueredirect"] * 500
            page.goto(f"{address}/")  # the page itself, with the grades to enter
            wait_for_grades(page)
            assert page.locator("#ex4-answer").is_editable()
    finally:
        stop(process)
    text = log.read_text()
    assert text.count(f"301 GET /formgrader/submissions/{notebook_id} (") == 500
    assert log.stat().st_size - started > PIPE


def bare_course(tmp_path):
    """A course folder as far as formgrader.start asks (its mark), without a lab: enough
    for a server to start, without grading anything."""
    course = tmp_path / "grading"
    course.mkdir()
    (course / layout.MARK).write_text(json.dumps({"course": layout.COURSE, "sources": {}}))
    return course


@pytest.mark.slow
def test_two_thousand_logged_requests_are_all_answered(tmp_path):
    course = bare_course(tmp_path)
    port = free_port()
    process, url = formgrader.start(course, port)
    try:
        token = url.split("token=")[1]
        limits = Path(f"/proc/{process.pid}/limits").read_text().splitlines()
        line = next(x for x in limits if x.startswith("Max address space"))
        assert line.split()[3:5] == [str(formgrader.MEMORY)] * 2  # soft and hard
        log = course / "logs" / "formgrader.log"
        started = log.stat().st_size
        deadline = time.monotonic() + 90
        codes = []
        for k in range(2000):  # each a 404, logged by the server as a line of about 140 B
            try:
                urllib.request.urlopen(f"{url.split('/formgrader')[0]}/missing-{k}?token={token}",
                                       timeout=5)  # fmt: skip
            except urllib.error.HTTPError as err:
                codes.append(err.code)
            assert time.monotonic() < deadline, f"{k} requests answered in 90 s"
        assert codes == [404] * 2000
    finally:
        stop(process)
    text = log.read_text()
    assert sum(f"404 GET /missing-{k}?token=[secret]" in text for k in range(2000)) == 2000
    assert log.stat().st_size - started > 2 * PIPE


@pytest.mark.slow
def test_a_start_that_fails_says_why_from_the_log(tmp_path):
    course = bare_course(tmp_path)
    (course / "logs").mkdir()
    (course / "logs" / "formgrader.log").write_text("an earlier session\n")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(RuntimeError) as failed:
            formgrader.start(course, port)
    message = str(failed.value)
    assert message.startswith(f"JupyterLab did not start ({course / 'logs' / 'formgrader.log'}):")
    assert f"port {port} is already in use" in message
    assert "an earlier session" not in message  # this start's lines only
    assert (course / "logs" / "formgrader.log").read_text().startswith("an earlier session\n")


@pytest.mark.slow
def test_kill_of_tasks_py_formgrader_leaves_nothing_running(tmp_path):
    """Instructor's trial, round 5: `kill PID` of `tasks.py formgrader` left `jupyter-lab`
    running on its port. SIGTERM now goes on to labtools (tasks.py), which stops the server
    before it ends; were labtools killed outright, the system would send the server
    SIGTERM (PR_SET_PDEATHSIG)."""
    import os
    import signal
    import sys

    from _helpers import ROOT
    from test_instructor_runs import alive, descendants, wait_for

    course, port = bare_course(tmp_path), free_port()
    # tasks.py as the instructor runs it, without the set-up (the environment is ready)
    wrapper = (
        "import sys; sys.path.insert(0, sys.argv.pop(1)); import tasks; "
        "tasks.setup = lambda *a, **k: None; tasks.vendor_assets = lambda: None; "
        "tasks.main(sys.argv[1:])"
    )
    argv = [sys.executable, "-c", wrapper, str(ROOT), "formgrader", "--course", str(course)]
    said = tmp_path / "said.txt"
    with open(said, "w") as out:
        run = subprocess.Popen(
            [*argv, "--port", str(port)], cwd=ROOT, start_new_session=True, stdout=out,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    known = {}

    def listening():
        with socket.socket() as probe:
            return probe.connect_ex(("127.0.0.1", port)) == 0

    try:
        wait_for(lambda: "/formgrader?token=" in said.read_text(), 120, "the address")
        known = descendants(run.pid)
        assert any("jupyter-lab" in cmd for cmd in known.values()), known
        run.send_signal(signal.SIGTERM)
        assert run.wait(timeout=60) == 0
        wait_for(lambda: not alive(known), 10, f"these to end: {alive(known)}")
        assert not listening()
        assert said.read_text().endswith("formgrader stopped\n"), said.read_text()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(run.pid, signal.SIGKILL)
        for pid in alive(known):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
