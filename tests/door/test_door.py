"""Student data checked at the door (issue 39; the red team's round 5, findings 6, 7, 9-18),
through the commands an instructor runs (``python -m labtools grade``, ``export``), each
test written to fail on the code the red team read (36be076):

- one file stops nobody: a notebook nested 100 000 deep, one that is not JSON, a
  ``timestamp.txt`` of the year 9999 (findings 6, 7);
- a policy's extension of 4 000 000 days is the policy check's refusal (16);
- no text of a table, comment or zip entry name is unbounded or leaves its folder (17, 18);
- a person is where their id came from: Moodle namesakes are two people, a Canvas user id
  and a folder's name are never one student, a Canvas export matches each student by the
  key of their own source and chooses a column only exactly (9-12);
- a score given by hand belongs to the answer it was given for (13);
- every table is written whole (14); a stopped run stops nbgrader before the lock goes (15).

No notebook runs: the local pool is replaced by ``tests/_helpers.py``'s ``FakeWorkers``
(every test worth its points, 0 for a blank lab), so that what is checked is what happens
around the grading. Every course folder is a copy of one made once (``course_made``).
"""

import contextlib
import fcntl
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from _helpers import ROOT, answered, course_made, fake_workers, labtools, one_error_line, table
from labtools import __main__ as cli
from labtools.course import late, record
from labtools.door import intake, layout, timestamps
from labtools.wire import TEXT
from test_platform_exports import canvas_import, fputcsv, moodle_import, moodle_zip_import

LAB = "lab1_perceptron"
NB = f"{LAB}.ipynb"
SAVE = "hand in the notebook as JupyterLab saves it (File > Save Notebook), then grade again"


def grade(submissions, course, *more) -> tuple[int, str, str]:
    return labtools("grade", submissions, "--course", course, "--unsafe", "--jobs", "1", *more)


def hand_in(folder: Path, student: str, nb, lab: str = LAB) -> Path:
    path = folder / student / lab / f"{lab}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(nb if isinstance(nb, str) else json.dumps(nb))
    return path


def blank() -> dict:
    """The student version as released: every answer still its stub."""
    return json.loads((ROOT / "labs/release" / LAB / NB).read_text())


@pytest.fixture
def course(tmp_path, monkeypatch):
    fake_workers(monkeypatch)
    return course_made(tmp_path / "course")


# ---------------------------------------------------------------------------------------
# Findings 6, 7, 16: one file stops nobody


def test_one_malformed_notebook_stops_nobody(course, tmp_path):
    submissions = tmp_path / "in"
    hand_in(submissions, "ann", answered(LAB))
    deep = "[" * 100_000 + "]" * 100_000  # 200 kB
    hand_in(submissions, "deep", f'{{"cells": {deep}, "metadata": {{}}, "nbformat": 4}}')
    hand_in(submissions, "cut", json.dumps(answered(LAB))[:5000])  # the file cut short
    hand_in(submissions, "bare", "[1, 2, 3]")
    # issue 40, item 7: what an instructor meets, said in words, not as NotJSONError
    hand_in(submissions, "empty", "")
    hand_in(submissions, "page", "<!DOCTYPE html>\n<html><body>lab1_perceptron</body></html>")
    hand_in(submissions, "old", dict(answered(LAB), nbformat=3))
    hand_in(submissions, "typo", '{"cells": [], "metadata": {}, "nbformat": 4,, }')
    code, out, err = grade(submissions, course)
    assert code == 0, err[-3000:]
    rows = table(course / "grades.csv")
    assert rows["ann", LAB]["automatic"] == "7.0"
    assert rows["deep", LAB]["status"] == (
        f"refused: {NB} is nested more than 64 levels deep: {SAVE}"
    )
    again = "ask the student to hand it in again, then grade again"
    assert rows["cut", LAB]["status"] == (
        f"unreadable notebook: {NB} is cut off after 5000 bytes (its JSON stops before the "
        f"notebook ends): the upload was interrupted; {again}"
    )
    assert rows["bare", LAB]["status"] == (
        f"unreadable notebook: {NB} is not a notebook (no list of cells): {SAVE}"
    )
    assert rows["empty", LAB]["status"] == (
        f"unreadable notebook: {NB} is empty (0 bytes): the upload failed; {again}"
    )
    assert rows["page", LAB]["status"] == (
        f"unreadable notebook: {NB} is a web page (HTML), not a notebook: the browser saved "
        "the page that shows the notebook; ask the student to download the notebook itself "
        "from JupyterLab (File > Download) and hand it in again, then grade again"
    )
    assert rows["old", LAB]["status"] == (
        f"unreadable notebook: {NB} is a notebook of format 3 (the grader reads format 4, "
        "which JupyterLab writes): ask the student to open it in JupyterLab, save it (File > "
        "Save Notebook) and hand it in again, then grade again"
    )
    assert rows["typo", LAB]["status"].startswith(f"unreadable notebook: {NB} is not JSON (")
    assert rows["typo", LAB]["status"].endswith(SAVE)
    assert "1 notebooks graded now, 0 already graded before" in out  # of 8 handed in
    assert "; 7 not graded:" in out
    assert f"  deep / {LAB}: refused: {NB} is nested more than 64 levels deep" in out
    # what the grading and the course folder keep is the door's text, not the student's
    kept = (course / "submitted" / "ann" / LAB / NB).read_text()
    assert json.loads(kept) == answered(LAB) and kept == json.dumps(
        answered(LAB), ensure_ascii=False
    )


def test_a_notebook_whose_recording_fails_stops_nobody(course, tmp_path):
    """Red team, round 6, finding 5: a lone surrogate in a review's words made the
    gradebook's write fail, and the run ended with nobody recorded, on every run. The
    review's words are plain now (tests/test_handin.py); any notebook whose recording
    fails is that notebook's failure, with why in its log, and the class is recorded."""
    submissions = tmp_path / "in"
    hand_in(submissions, "ann", answered(LAB))
    odd = answered(LAB)
    odd["metadata"]["fake_review"] = [
        {"cell": "ex1-code", "line": 1, "what": "x\ud800", "held": True, "exercise": "ex1"}
    ]
    hand_in(submissions, "odd", json.dumps(odd))  # (json.dumps escapes the surrogate)
    hand_in(submissions, "zed", answered(LAB))
    code, out, err = grade(submissions, course)
    assert code == 0, err[-3000:]
    rows = table(course / "grades.csv")
    assert rows["ann", LAB]["automatic"] == rows["zed", LAB]["automatic"] == "7.0"
    assert rows["odd", LAB]["status"] == "grading failed: see logs"
    log = (course / "logs" / f"odd--{LAB}.log").read_text(errors="replace")
    assert log.startswith("recording failed") and "UnicodeEncodeError" in log


def test_a_file_name_that_is_not_utf8_stops_nobody(course, tmp_path):
    """Red team, round 6, finding 6: a file whose name is not UTF-8 in a student's folder
    stopped the run before anyone was graded (the map of files not placed could not be
    written)."""
    submissions = tmp_path / "in"
    hand_in(submissions, "ann", answered(LAB))
    hand_in(submissions, "bob", answered(LAB))
    odd = os.fsencode(submissions / "bob" / LAB) + b"/lab1 copy\xff.ipynb"
    with open(odd, "w") as f:
        f.write(json.dumps(answered(LAB)))
    strict = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")  # a terminal
    with contextlib.redirect_stdout(strict):
        code = cli.main(["grade", str(submissions), "--course", str(course), "--unsafe"])
        strict.flush()
        out = strict.buffer.getvalue().decode()
    assert code == 0
    rows = table(course / "grades.csv")
    assert rows["ann", LAB]["automatic"] == rows["bob", LAB]["automatic"] == "7.0"
    assert "lab1 copy\\udcff.ipynb" in out  # named, escaped, among what was not placed


POLICY = "[penalty]\npercent_per_day = 10\n[due]\nlab1_perceptron = 2026-02-06T23:59:00+01:00\n"


def test_an_odd_timestamp_stops_nobody(course, tmp_path):
    """Finding 7: a time nbgrader's format allows but no submission has (the year 9999,
    offset -23:59) is that student's problem alone, said in their status; the class's
    deductions and every export go on, and so does a course folder that kept such a time
    before (an earlier version)."""
    (course / late.POLICY).write_text(POLICY)
    submissions = tmp_path / "in"
    for student, stamp in (
        ("ann", "9999-12-31 23:59:59.000000 -2359"),
        ("bob", "2026-02-08 10:00:00.000000 UTC"),  # a day and a half late: two started days
        ("cy", "2026-02-06 20:00:00.000000 UTC"),
    ):
        hand_in(submissions, student, answered(LAB))
        (submissions / student / LAB / timestamps.TIMESTAMP).write_text(stamp)
    code, out, err = grade(submissions, course)
    assert code == 0, err[-3000:]
    rows = table(course / "grades.csv")
    assert rows["ann", LAB]["status"] == (
        "graded; 4 points wait for manual grading; timestamp.txt is not a time: "
        "9999-12-31T23:59:59-23:59 is outside the years 1970-2100: lateness unknown, "
        "nothing deducted"
    )
    assert (rows["ann", LAB]["deduction"], rows["ann", LAB]["adjusted_total"]) == ("0.0", "7.0")
    assert (rows["bob", LAB]["deduction"], rows["bob", LAB]["adjusted_total"]) == ("1.4", "5.6")
    assert rows["cy", LAB]["adjusted_total"] == "7.0"
    assert labtools("export", "--course", course)[0] == 0
    # a time kept by an earlier version, which took any: export goes on, bob's says why
    times = json.loads((course / late.TIMES).read_text())
    times[f"bob/{LAB}"]["time"] = "9999-12-31T23:59:59-23:59"
    (course / late.TIMES).write_text(json.dumps(times))
    code, out, err = labtools("export", "--course", course)
    assert code == 0, err[-3000:]
    rows = table(course / "grades.csv")
    assert "outside the years 1970-2100" in rows["bob", LAB]["status"]
    assert (rows["bob", LAB]["adjusted_total"], rows["cy", LAB]["adjusted_total"]) == ("7.0",) * 2


def test_a_huge_extension_is_the_policy_checks_refusal(course, tmp_path):
    """Finding 16: 4 000 000 days (or inf) is refused in one line naming the file and the
    line, by grade and by export alike, never an OverflowError of the export."""
    submissions = tmp_path / "in"
    hand_in(submissions, "ref", answered(LAB))
    assert grade(submissions, course)[0] == 0
    for days in ("4000000", "inf"):
        (course / late.POLICY).write_text(
            POLICY + f'\n[[extension]]\nstudent = "ref"\nlab = "{LAB}"\ndays = {days}\n'
        )
        for job in (("export", "--course", course), ("grade", submissions, "--course", course)):
            code, out, err = labtools(*job)
            assert code == 2
            one_error_line(
                err, f"{course / late.POLICY}, line 9: [[extension]] 1: days must be from 0 to 3650"
            )


# ---------------------------------------------------------------------------------------
# Findings 12, 17, 18: a Moodle class with namesakes, a name that climbs out of a folder,
# a grade id of 200 000 characters; participant ids and a display name that coincide

BIG_ID = "x" * 200_000
ESCAPE = "..\\..\\..\\..\\..\\tmp\\rt5 escape"


WORKSHEET = ["Identifier", "Full name", "Email address", "Status", "Grade", "Maximum Grade",
             "Grade can be changed", "Last modified (grade)", "Feedback comments"]  # fmt: skip


def moodle_round(tmp, people: dict) -> dict:
    """A Moodle download of ``people`` ({"<Full Name>_<participant id>": notebook}) graded
    into a new course folder, and its worksheet exported; the course and grade's output."""
    download, course = tmp / "download", tmp / "course"
    for name, nb in people.items():
        folder = download / f"{name}_assignsubmission_file"
        folder.mkdir(parents=True)
        (folder / NB).write_text(json.dumps(nb))
    with pytest.MonkeyPatch.context() as patch:
        fake_workers(patch)
        code, out, err = grade(download, course_made(course))
    assert code == 0, err[-3000:]
    worksheet = tmp / "worksheet.csv"
    rows = []
    for person in people:
        name, _, participant = person.rpartition("_")
        rows.append([f"Participant {participant}", name, "x@example.org", "Submitted", "",
                     "100.00", "Yes", "-", ""])  # fmt: skip
    worksheet.write_text(fputcsv([WORKSHEET, *rows]))
    exported = labtools("export", "--course", course, "--moodle", worksheet, "--lab", LAB)
    assert exported[0] == 0, exported[2][-3000:]
    return {"course": course, "out": out}


@pytest.fixture(scope="module")
def moodle_class(tmp_path_factory):
    return moodle_round(
        tmp_path_factory.mktemp("moodle"),
        {
            "Ann Normal_5553": answered(LAB),  # Ann
            "Ann Normal_5554": blank(),  # a classmate who took her display name, a blank lab
            f"{ESCAPE}_5551": answered(LAB),
            "5553_5552": answered(LAB),  # a display name that is Ann's participant id
        },
    )


def test_a_moodle_namesake_is_graded_as_their_own_person(moodle_class):
    """Finding 12: within a download a person is a participant id; the classmate who took
    Ann's name is graded under an id of their own, Ann's notebook is graded, the clash is
    listed, and each participant's grade goes back to that participant."""
    course = moodle_class["course"]
    rows = table(course / "grades.csv")
    ids = json.loads((course / intake.PARTICIPANTS_FILE).read_text())[LAB]
    by_participant = {entry["participant"]: student for student, entry in ids.items()}
    ann, namesake = by_participant["5553"], by_participant["5554"]
    assert (
        ann == "ann.normal"
        and namesake.startswith("ann.normal-")
        and by_participant["5552"] == "5553"
    )
    assert rows[ann, LAB]["automatic"] == "7.0" and rows[namesake, LAB]["automatic"] == "0.0"
    assert rows["5553", LAB]["automatic"] == "7.0"
    assert (
        f"2 Moodle participants of {LAB} are named 'Ann Normal', each graded under an id of "
        f"their own (participant 5553 -> ann.normal, participant 5554 -> {namesake})"
    ) in moodle_class["out"]
    written = (course / f"moodle-{LAB}-worksheet.csv").read_text(encoding="utf-8")
    grades = {p: g for p, (g, _) in moodle_import(written).items()}
    assert grades == {"5553": "63.64", "5554": "0.00", "5551": "63.64", "5552": "63.64"}
    assert json.loads((course / intake.SOURCES_FILE).read_text())[ann] == "moodle"


def test_no_text_of_a_table_or_a_comment_is_unbounded(tmp_path):
    """Finding 17: a grade id of 200 000 characters is cut where it is shown (one cap,
    labtools.wire.capped), in grades.csv and in the comment Moodle shows the student; the
    log keeps it whole."""
    bignote = answered(LAB)
    bignote["cells"].append(
        {"cell_type": "markdown", "metadata": {"nbgrader": {"grade_id": BIG_ID, "grade": False,
         "solution": False, "locked": False}}, "source": "note"}
    )  # fmt: skip
    course = moodle_round(tmp_path, {"Big Note_5560": bignote, "Ann Normal_5561": answered(LAB)})[
        "course"
    ]
    for row in table(course / "grades.csv").values():
        assert len(row["status"]) <= TEXT, row["student"]
    status = table(course / "grades.csv")["big.note", LAB]["status"]
    assert status.startswith("graded; ") and "claims the unknown id 'xxxxxxxxxx" in status
    assert len(status) < 300  # one note, the id cut (labtools.grader.notebook.plan)
    written = (course / f"moodle-{LAB}-worksheet.csv").read_text(encoding="utf-8")
    comments = {p: c for p, (_, c) in moodle_import(written).items()}
    assert all(len(c) <= TEXT for c in comments.values())
    assert "xxxx" not in comments["5560"]  # the status is no longer the student's to read
    assert BIG_ID in (course / "logs" / f"big.note--{LAB}.log").read_text()


def test_the_feedback_zip_has_no_entry_that_leaves_its_folder(moodle_class):
    """Finding 18: a name with backslashes (ordinary characters in a Linux file name, a
    folder separator to Windows tools) is cleaned as Moodle cleans a file name; every
    entry passes the check that an incoming zip's entries pass."""
    data = (moodle_class["course"] / f"moodle-{LAB}-feedback.zip").read_bytes()
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        names = zf.namelist()
    assert len(names) == 4
    assert all(intake._unsafe(name) is None and "\\" not in name for name in names), names
    assert f"..........tmprt5 escape_5551_assignsubmission_file_/{LAB}.html" in names
    taken = moodle_zip_import(data, {"5551", "5552", "5553", "5554"})
    assert taken == {p: [f"{LAB}.html"] for p in ("5551", "5552", "5553", "5554")}


# ---------------------------------------------------------------------------------------
# Findings 9, 10, 11: a Canvas class, and a folder named by another person's number


@pytest.fixture(scope="module")
def canvas_class(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("canvas")
    download, course = tmp / "canvas.zip", tmp / "course"
    with zipfile.ZipFile(download, "w") as zf:
        zf.writestr(f"annnormal_4242_1001_{NB}", json.dumps(answered(LAB)))
        zf.writestr(f"carlorossi_4343_1002_{NB}", json.dumps(answered(LAB)))
    folders = tmp / "folders"  # a student number that equals Ann's Canvas user id
    lab2 = "lab2_convergence"
    hand_in(folders, "4242", answered(lab2), lab2)
    with pytest.MonkeyPatch.context() as patch:
        fake_workers(patch)
        first = grade(download, course_made(course))
        canvas_only = Path(shutil.copytree(course, tmp / "canvas-only"))
        second = grade(folders, course)
    assert first[0] == 0 and second[0] == 0, (first[2][-2000:], second[2][-2000:])
    return {"course": course, "canvas only": canvas_only, "second": second[1], "tmp": tmp}


def test_a_canvas_user_id_and_a_folder_name_are_never_one_student(canvas_class):
    """Finding 11: the folder ``4242`` (another person's student number) is not graded into
    Canvas user 4242's row; the run says why and what to do."""
    course = canvas_class["course"]
    assert sorted(p.name for p in (course / "results" / "4242").iterdir()) == [f"{LAB}.json"]
    assert (
        "'4242/lab2_convergence/lab2_convergence.ipynb': not graded: the student id 4242 came "
        "to course from a Canvas download (a Canvas user id), and here from a folder of "
        "submissions (a folder's name)"
    ) in canvas_class["second"]
    assert json.loads((course / intake.SOURCES_FILE).read_text()) == {
        "4242": "canvas",
        "4343": "canvas",
    }


ROSTER = (  # Bob's SIS User ID is Ann's Canvas user id; Dana's SIS Login ID is Carlo's
    "Student,ID,SIS User ID,SIS Login ID,Section,Lab 1 pre-lab quiz (6001),"
    "Perceptron homework (7001)\n"
    "Ann Normal,4242,s1,ann,S1,5,\n"
    "Carlo Rossi,4343,s2,carlo,S1,4,\n"
    "Bob Brown,9999,4242,bob,S1,3,\n"
    "Dana White,5555,s4,4343,S1,2,\n"
)


def test_canvas_export_matches_each_student_by_their_own_key(canvas_class):
    """Finding 9: a Canvas download's students are matched by ``ID`` alone; Bob, who
    handed nothing in and whose SIS User ID is Ann's user id, gets nothing, as Dana. The
    file passes Canvas's importer rules (tests/out/test_platform_exports.py)."""
    course, export = canvas_class["canvas only"], canvas_class["tmp"] / "roster.csv"
    export.write_text(ROSTER)
    code, out, err = labtools(
        "export", "--course", course, "--canvas", export, "--column", f"{LAB}=Perceptron homework"
    )
    assert code == 0, err[-3000:]
    imported = canvas_import((course / "canvas-import.csv").read_text(), ROSTER)
    assert imported["grades"] == {"7001": {"4242": 7.0, "4343": 7.0}}


def test_canvas_export_never_chooses_a_column_by_a_prefix(canvas_class):
    """Finding 10: "Lab 1 pre-lab quiz" holds the lab's label; without --column nothing is
    chosen and nothing written."""
    course, export = canvas_class["canvas only"], canvas_class["tmp"] / "roster-columns.csv"
    export.write_text(ROSTER)
    (course / "canvas-import.csv").unlink(missing_ok=True)
    code, out, err = labtools("export", "--course", course, "--canvas", export)
    assert code == 2
    one_error_line(err, f"{LAB} ('Lab 1: Perceptron training by hand and in code') is named by "
                   "no assignment column", f"--column {LAB}=")  # fmt: skip
    assert not (course / "canvas-import.csv").exists()


def test_a_course_folder_without_sources_reports_the_collision(canvas_class, tmp_path):
    """A course folder made before ids had sources: ID and SIS ids are all tried, and a
    student that two rows match is refused by name, never given to one of them."""
    course = Path(shutil.copytree(canvas_class["canvas only"], tmp_path / "old"))
    (course / intake.SOURCES_FILE).unlink()
    export = tmp_path / "roster.csv"
    export.write_text(ROSTER)
    code, out, err = labtools(
        "export", "--course", course, "--canvas", export, "--column", f"{LAB}=7001"
    )
    assert code == 2
    one_error_line(err, "4242 on rows 2, 4", "4343 on rows 3, 5", "check who is who")


# ---------------------------------------------------------------------------------------
# Finding 13: a score given by hand belongs to the answer it was given for


def give_by_hand(course: Path, student: str, cell: str, points: float) -> None:
    """As formgrader saves a score: the gradebook's manual score of that cell."""
    import warnings

    from labtools.course import folder as courses
    from nbgrader.api import Gradebook

    with Gradebook(courses.db_url(course)) as gb, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gb.find_grade(cell, LAB, LAB, student).manual_score = points
        gb.db.commit()


def test_a_regrade_does_not_keep_a_score_given_for_an_answer_that_is_gone(course, tmp_path):
    submissions = tmp_path / "in"
    for student in ("ann", "bob"):
        hand_in(submissions, student, answered(LAB))
    assert grade(submissions, course)[0] == 0
    for student in ("ann", "bob"):
        give_by_hand(course, student, "ex2-answer", 2.0)
    assert labtools("export", "--course", course)[0] == 0
    assert table(course / "grades.csv")["ann", LAB]["manual"] == "2.0"
    # ann deletes her written answer; bob changes a code cell, not his written answer
    stub = next(c for c in blank()["cells"] if c["metadata"].get("nbgrader", {}).get(
        "grade_id") == "ex2-answer")["source"]  # fmt: skip
    hand_in(submissions, "ann", answered(LAB, {"ex2-answer": "".join(stub)}))
    bob = answered(LAB)
    (ex1,) = [
        c for c in bob["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == "ex1-code"
    ]
    ex1["source"] = "".join(ex1["source"]) + "\n# checked again\n"
    hand_in(submissions, "bob", bob)
    code, out, err = grade(submissions, course, "--regrade", "--labs", LAB)
    assert code == 0, err[-3000:]
    rows = table(course / "grades.csv")
    assert rows["ann", LAB]["manual"] == "0.0"
    assert rows["ann", LAB]["status"].startswith(
        f"graded; {record.STALE}: ex2-answer (2 points); grade them again in formgrader"
    )
    assert rows["ann", LAB]["status"].endswith("; 4 points wait for manual grading")
    assert rows["bob", LAB]["manual"] == "2.0" and record.STALE not in rows["bob", LAB]["status"]
    assert "1 notebooks had scores given by hand for answers that changed since" in out
    assert f"  ann / {LAB}: {record.STALE}: ex2-answer (2 points)" in out
    # graded again by hand, then regraded unchanged: kept
    give_by_hand(course, "ann", "ex2-answer", 1.0)
    assert grade(submissions, course, "--regrade", "--labs", LAB)[0] == 0
    assert table(course / "grades.csv")["ann", LAB]["manual"] == "1.0"


# ---------------------------------------------------------------------------------------
# Finding 14: every table written whole


EXPORT_UNDER_A_FULL_DISK = """
import resource, sys
limit = int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))  # a disk that fills up
from labtools.__main__ import main
sys.exit(main(["export", "--course", sys.argv[1]]))
"""


def test_export_on_a_full_disk_keeps_the_last_grades_csv(course, tmp_path):
    submissions = tmp_path / "in"
    for k in range(12):
        hand_in(submissions, f"s{k:02d}", answered(LAB))
    # every lab set (a due date each), so that grades.csv has a row per student and lab
    dates = "".join(f"{lab} = 2026-02-06T23:59:00+01:00\n" for lab in layout.lab_names())
    (course / late.POLICY).write_text(f"[penalty]\npercent_per_day = 10\n[due]\n{dates}")
    assert grade(submissions, course)[0] == 0
    before = (course / "grades.csv").read_bytes()
    assert len(before) > 4096
    run = subprocess.run(
        [sys.executable, "-c", EXPORT_UNDER_A_FULL_DISK, str(course), str(len(before) // 2)],
        env=dict(os.environ, PYTHONPATH=str(ROOT / "labs")),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 2, run.stderr[-3000:]
    one_error_line(run.stderr, f"{course / 'grades.csv'} could not be written (File too large)",
                   "the previous copy is kept")  # fmt: skip
    assert (course / "grades.csv").read_bytes() == before
    assert not list(course.glob(".*.part"))


# ---------------------------------------------------------------------------------------
# Finding 15: stopping a run stops nbgrader before the course folder's lock is released


def live(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def generating(pid: int) -> int | None:
    """The pid of nbgrader's generate_assignment below ``pid`` (labtools.course.folder.GENERATE)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid and b"NbGraderAPI" in cmdline:
            return int(entry.name)
    return None


def test_sigterm_during_the_course_set_up_stops_nbgrader_before_the_lock_is_released(tmp_path):
    submissions, course = tmp_path / "in", tmp_path / "course"
    hand_in(submissions, "ann", answered(LAB))
    argv = [sys.executable, "-m", "labtools", "grade", str(submissions), "--course", str(course)]
    run = subprocess.Popen(
        [*argv, "--unsafe"],
        env=dict(os.environ, PYTHONPATH=str(ROOT / "labs")),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    child = None
    try:
        deadline = time.monotonic() + 120
        while child is None and time.monotonic() < deadline and run.poll() is None:
            child = generating(run.pid)
            time.sleep(0.05)
        assert child is not None, "nbgrader's generate_assignment never started"
        run.send_signal(signal.SIGTERM)
        # the moment the lock is free, nbgrader must be gone already
        with open(course / layout.LOCK, "a") as lock:
            deadline = time.monotonic() + 60
            while True:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    assert time.monotonic() < deadline, "the lock was never released"
                    time.sleep(0.01)
            assert not live(child), "nbgrader still writes the course folder, lock released"
        out, err = run.communicate(timeout=60)
        assert run.returncode == 130, err[-3000:]
        assert "stopped; what was graded is kept" in err
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(run.pid, signal.SIGKILL)
        if child is not None and live(child):
            os.kill(child, signal.SIGKILL)
        run.communicate(timeout=60)
