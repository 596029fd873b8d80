"""The instructor's week without surprises (issue 40; the instructor's trial of round 5),
through the commands an instructor runs (``python -m labtools grade``, ``export``,
``feedback``, ``report``), each test written to fail on the code the trial read (36be076):

- Canvas late marks in either case; a policy with due dates and nothing to apply them to
  says so (item 2);
- an extension covers a late mark without a time; an extension for an id the course
  does not have is named (item 3);
- the feedback pages go back to Canvas in a zip for *Re-upload submissions* (item 4);
- a week that says what is pending; only final grades with ``--final``; the feedback page
  shows the score after the late deduction (item 5);
- a student who dropped is left out, not a refusal; a refused export leaves no stale
  import file (item 6);
- a browser's ``(1)`` is placed, a renamed notebook gets a hint that works (item 7);
- names beside ids in the tables, the summary, the report and formgrader's list (item 8);
- labs not set yet are not "missing"; ``export`` during a run writes what is graded so far
  (item 11).

No notebook runs: the local pool is ``tests/_helpers.py``'s ``FakeWorkers`` (every test
worth its points, written answers waiting for grading by hand), and every course folder
is a copy of one made once (``course_made``).
"""

import csv
import fcntl
import io
import json
import os
import re
import shutil
import warnings
import zipfile
from pathlib import Path

import pytest
from _helpers import answered, course_made, fake_workers, labtools, one_error_line, table
from labtools.course import folder as courses
from labtools.course import late
from labtools.door import intake, layout
from test_platform_exports import canvas_import

LAB = "lab1_perceptron"
NB = f"{LAB}.ipynb"
DUE = "2026-02-06T23:59:00+01:00"
POLICY = f"""\
[penalty]
percent_per_day = 10
unknown_late_days = 1

[due]
{LAB} = {DUE}

[[extension]]
student = "4444"
lab = "{LAB}"
days = 3

[[extension]]
student = "9999"
days = 2
"""
# a Canvas download of Lab 1 as the trial met it: each file "<name>[_LATE]_<user id>_<file
# id>_<file>"; the user id is the student id, the file id what the feedback goes back to
DOWNLOAD = {
    f"annnormal_4242_7001_{NB}": "correct",
    f"bobbrown_late_4343_7002_{NB}": "late, marked in lower case",
    f"muellerjan_LATE_4444_7003_{NB}": "late, with an extension of 3 days",
    f"taylormia_4545_7004_{LAB} (1).ipynb": "a browser's name for a second download",
    "wangyi_4646_7005_Lab1_Perceptron_WangYi.ipynb": "renamed by its student",
    f"dropped_4747_7006_{NB}": "graded, then dropped the course",
}
# Canvas's gradebook export (Grades > Export) a week later: 4747 has dropped the course
GRADEBOOK = (
    "Student,ID,SIS User ID,SIS Login ID,Section,Lab 1: Perceptron (5001),Quiz 1 (5002)\n"
    "    Points Possible,,,,,11.00,5.00\n"
    '"Normal, Ann",4242,s1,ann,S1,,4\n'
    '"Brown, Bob",4343,s2,bob,S1,,3\n'
    '"Müller, Jan",4444,s3,jan,S1,,5\n'
    '"Taylor, Mia",4545,s4,mia,S1,,2\n'
    '"Wang, Yi",4646,s5,yi,S1,,1\n'
)


GRADED_NAMES = [("4242", "Normal, Ann"), ("4343", "Brown, Bob"), ("4444", "Müller, Jan"),
                ("4545", "Taylor, Mia"), ("4646", "Wang, Yi"), ("4747", "dropped")]  # fmt: skip


def give_by_hand(course: Path, student: str, points: dict) -> None:
    """As formgrader saves scores: the gradebook's manual score of each cell."""
    from nbgrader.api import Gradebook

    with Gradebook(courses.db_url(course)) as gb, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for cell, given in points.items():
            gb.find_grade(cell, LAB, LAB, student).manual_score = given
        gb.db.commit()


def written_answers(course: Path) -> dict[str, float]:
    """Lab 1's cells graded by hand only (their points)."""
    from labtools.grader import notebook

    source = json.loads((course / "source" / LAB / NB).read_text())
    return {
        notebook.grade_id(c): float(notebook.nbgrader(c).get("points", 0))
        for c in source["cells"]
        if notebook.grade_id(c) and notebook.nbgrader(c).get("grade")
        and notebook.nbgrader(c).get("solution") and c["cell_type"] == "markdown"
    }  # fmt: skip


@pytest.fixture(scope="module")
def week(tmp_path_factory):
    """The Canvas download graded into a new course folder with the late policy; the fixes
    folder made as the summary's hint says, and graded too; the gradebook export written.
    Returns the paths and each command's output."""
    tmp = tmp_path_factory.mktemp("week")
    download, course = tmp / "canvas.zip", tmp / "course"
    with zipfile.ZipFile(download, "w") as zf:
        for name in DOWNLOAD:
            zf.writestr(name, json.dumps(answered(LAB)))
    with pytest.MonkeyPatch.context() as patch:
        fake_workers(patch)
        course_made(course)
        (course / late.POLICY).write_text(POLICY)
        first = labtools("grade", download, "--course", course, "--unsafe", "--jobs", "1")
        assert first[0] == 0, first[2][-3000:]
        before = labtools("export", "--course", course)
        # the renamed notebook, placed as the summary says: copied under the download's
        # naming into a folder of its own, graded into the course folder
        fixes = tmp / "fixes"
        fixes.mkdir()
        hint = re.search(r"copy it as FOLDER/(\S+) into a new folder FOLDER", first[1])
        placed = None  # (no hint: test_files_a_browser_or_a_student_renamed_are_placed fails)
        if hint:
            shutil.copy(_member(download, 4646), fixes / hint[1])
            placed = labtools("grade", fixes, "--course", course, "--unsafe", "--jobs", "1")
            assert placed[0] == 0, placed[2][-3000:]
    gradebook = tmp / "gradebook-export.csv"
    gradebook.write_text(GRADEBOOK)
    return {"course": course, "tmp": tmp, "download": download, "gradebook": gradebook,
            "grade": first, "export before": before, "placed": placed}  # fmt: skip


def _member(download: Path, user: int) -> Path:
    """The file of Canvas user ``user`` in the download, unpacked beside it."""
    with zipfile.ZipFile(download) as zf:
        (name,) = [n for n in zf.namelist() if f"_{user}_" in n]
        target = download.with_name(f"member-{user}.ipynb")
        target.write_bytes(zf.read(name))
    return target


def test_canvas_late_marks_in_either_case_and_an_extension_that_covers_one(week):
    """Items 2 and 3: ``_late_`` is a late mark as ``_LATE`` is; Müller's 3-day extension
    covers his mark (counted as 1 day), and his status says so; the extension for 9999,
    whom the course does not have, is named in one line."""
    code, out, err = week["grade"]
    assert f"marked late by the platform: 4343/{LAB}, 4444/{LAB}" in out
    rows = table(week["course"] / "grades.csv")
    assert (rows["4343", LAB]["deduction"], rows["4343", LAB]["adjusted_total"]) == ("0.7", "6.3")
    assert rows["4343", LAB]["submitted"] == "late, time unknown"
    assert (rows["4444", LAB]["deduction"], rows["4444", LAB]["adjusted_total"]) == ("0.0", "7.0")
    assert rows["4444", LAB]["status"].endswith(
        "marked late by Canvas, time unknown (counted as 1 day after the due date, within the "
        "extension (3 days)): nothing deducted"
    )
    assert (
        f"note: {week['course'] / late.POLICY}, line 14: [[extension]] 2 is for student 9999, "
        f"who has no submission in course: check the id"
    ) in out


def test_a_policy_with_due_dates_and_nothing_to_apply_them_to_says_so(tmp_path, monkeypatch):
    """Item 2: a folder of submissions without timestamp.txt under a policy with a due
    date: nothing can be deducted, and the run says why, with where times come from."""
    fake_workers(monkeypatch)
    course = course_made(tmp_path / "course")
    (course / late.POLICY).write_text(f"[penalty]\npercent_per_day = 10\n[due]\n{LAB} = {DUE}\n")
    folder = tmp_path / "in" / "ann" / LAB
    folder.mkdir(parents=True)
    (folder / NB).write_text(json.dumps(answered(LAB)))
    code, out, err = labtools("grade", tmp_path / "in", "--course", course, "--unsafe")
    assert code == 0, err[-3000:]
    assert (
        f"gives {LAB} a due date, but none of its 1 graded notebooks has a submission time or "
        "a late mark: nothing is deducted for lateness"
    ) in out


def test_files_a_browser_or_a_student_renamed_are_placed(week):
    """Item 7: ``lab1_perceptron (1).ipynb`` is Lab 1; the renamed notebook is listed with
    how to place it (its name under the download's naming, a folder, the command), and
    following that grades it as its own Canvas user; ``export`` names it until then."""
    course = week["course"]
    code, out, err = week["grade"]
    assert "'wangyi_4646_7005_Lab1_Perceptron_WangYi.ipynb': 'Lab1_Perceptron_WangYi.ipynb' " in out
    assert (
        f"to grade it, copy it as FOLDER/wangyi_4646_7005_{NB} into a new folder FOLDER and "
        f"run `python3 tasks.py grade FOLDER --course {course}`"
    ) in out
    pending = week["export before"][1]
    assert (
        "  - not placed: 'wangyi_4646_7005_Lab1_Perceptron_WangYi.ipynb' of canvas.zip" in pending
    )
    rows = table(course / "grades.csv")
    assert rows["4545", LAB]["status"].startswith("graded")  # the "(1)" file
    assert rows["4646", LAB]["status"].startswith("graded")  # placed by the hint
    assert json.loads((course / intake.SOURCES_FILE).read_text())["4646"] == "canvas"
    assert "not placed" not in labtools("export", "--course", course)[1]


def test_names_beside_ids_where_the_instructor_reads(week, tmp_path):
    """Item 8: the download's names in grades.csv, grades-wide.csv and the run's summary;
    the gradebook export's names, once given, win; formgrader's list (the gradebook's
    names) and the report have them too."""
    from nbgrader.api import Gradebook

    course = Path(shutil.copytree(week["course"], tmp_path / "course"))
    rows = table(course / "grades.csv")
    assert rows["4242", LAB]["name"] == "annnormal"
    assert "4242 (annnormal)" in week["grade"][1]  # what waits for grading by hand, by name
    code, out, err = labtools("export", "--course", course, "--canvas", week["gradebook"],
                              "--column", f"{LAB}=5001")  # fmt: skip
    assert code == 0, err[-3000:]
    rows = table(course / "grades.csv")
    assert rows["4242", LAB]["name"] == "Normal, Ann"
    assert rows["4747", LAB]["name"] == "dropped"  # not in the gradebook export
    with open(course / "grades-wide.csv", newline="") as f:
        wide = {r["student"]: r for r in csv.DictReader(f)}
    assert wide["4444"]["name"] == "Müller, Jan"
    with Gradebook(courses.db_url(course)) as gb:
        ann = gb.find_student("4242")
        assert (ann.last_name, ann.first_name) == ("Normal, Ann", "4242")
    code, out, err = labtools("report", "--course", course)
    assert code == 0, err[-3000:]
    report = (course / "report.html").read_text()
    shown = re.findall(r"\b(4[2-7]4[2-7]) \(([^)]*)\)", report)  # the slowest notebook's
    assert shown and all(dict(GRADED_NAMES)[s] == name for s, name in shown), shown


def test_canvas_gets_its_grades_and_feedback_and_a_dropped_student_is_left_out(week, tmp_path):
    """Items 4 and 6: one student who dropped is listed and left out, the others' grades go
    back; each feedback page is in a zip for Re-upload submissions under a name whose
    numbers are the user id and the id of the file that user handed in (Canvas's rule,
    re-implemented below), so each lands on its own submission."""
    course = Path(shutil.copytree(week["course"], tmp_path / "course"))
    code, out, err = labtools("export", "--course", course, "--canvas", week["gradebook"],
                              "--column", f"{LAB}=5001")  # fmt: skip
    assert code == 0, err[-3000:]
    assert (
        "canvas note: 1 graded students are not in gradebook-export.csv (by ID), left out of "
        "canvas-import.csv: 4747 (dropped)"
    ) in out
    imported = canvas_import((course / "canvas-import.csv").read_text(), GRADEBOOK)
    assert imported["grades"] == {
        "5001": {"4242": 7.0, "4343": 6.3, "4444": 7.0, "4545": 7.0, "4646": 7.0}
    }
    archive = course / f"canvas-{LAB}-feedback.zip"
    assert f"canvas feedback {LAB}: {archive}" in out
    # Canvas's re-upload (Assignment#infer_comment_context_from_filename): the first two
    # parts of a file's base name, split at "_", that are numbers are the user id and the
    # id of a file of that user's submission; anything else is ignored
    handed = dict([p for p in name.split("_") if p.isdigit()] for name in DOWNLOAD)
    landed = {}
    with zipfile.ZipFile(archive) as zf:
        for name in zf.namelist():
            user, attachment = [p for p in Path(name).name.split("_") if p.isdigit()][:2]
            assert handed.get(user) == attachment, name
            assert not Path(name).name.split("_")[-1].startswith("link")
            landed[user] = zf.read(name).decode()
    assert sorted(landed) == ["4242", "4343", "4444", "4545", "4646", "4747"]
    assert landed["4242"] == f"<html><body>feedback of 4242 for {LAB}</body></html>"
    # Bob's page was written again by the run once his late deduction was known
    assert f"{LAB} (Score: 6.3 / 11.0)" in landed["4343"]


def test_a_gradebook_export_with_semicolons_is_read_and_answered_alike(week, tmp_path):
    """Item 6: Canvas's "semicolons" setting (its decimals with a comma) is a Canvas export
    too; canvas-import.csv keeps the separator, as Canvas's importer tells them apart."""
    from test_platform_exports import canvas_separator

    course = Path(shutil.copytree(week["course"], tmp_path / "course"))
    rows = list(csv.reader(io.StringIO(GRADEBOOK)))
    rows[1] = [cell.replace(".", ",") for cell in rows[1]]
    out = io.StringIO()
    csv.writer(out, delimiter=";", lineterminator="\n").writerows(rows)
    gradebook = tmp_path / "semicolons.csv"
    gradebook.write_text(out.getvalue())
    code, out, err = labtools("export", "--course", course, "--canvas", gradebook,
                              "--column", f"{LAB}=5001")  # fmt: skip
    assert code == 0, err[-3000:]
    written = (course / "canvas-import.csv").read_text()
    assert canvas_separator(written) == ";"
    assert written.splitlines()[1] == "    Points Possible;;;;;11"
    imported = canvas_import(written, gradebook.read_text())
    assert imported["grades"]["5001"]["4343"] == 6.3


def test_a_refused_export_leaves_no_earlier_import_file_in_place(week, tmp_path):
    """Item 6: after a refusal, the canvas-import.csv of an earlier export is gone, and
    the line says so."""
    course = Path(shutil.copytree(week["course"], tmp_path / "course"))
    assert labtools("export", "--course", course, "--canvas", week["gradebook"],
                    "--column", f"{LAB}=5001")[0] == 0  # fmt: skip
    assert (course / "canvas-import.csv").exists()
    code, out, err = labtools("export", "--course", course, "--canvas", week["gradebook"])
    assert code == 2
    one_error_line(err, "is named by no assignment column",
                   "(nothing written; the earlier canvas-import.csv, "
                   f"canvas-{LAB}-feedback.zip removed)")  # fmt: skip
    assert not (course / "canvas-import.csv").exists()


def test_the_week_says_what_is_not_final_and_final_sends_only_final_grades(week, tmp_path):
    """Item 5: ``export`` names what waits for grading by hand (with the command), and
    ``--final`` sends only the grades that are final: Ann's, once graded by hand."""
    course = Path(shutil.copytree(week["course"], tmp_path / "course"))
    code, out, err = labtools("export", "--course", course)
    assert code == 0, err[-3000:]
    assert "not final yet:" in out
    assert re.search(
        rf"  - {LAB}: 6 notebooks have \d+ points of answers that wait for grading by hand "
        rf"\(4242 \(annnormal\), .*\): grade them in formgrader \(`python3 tasks.py formgrader "
        rf"--course {re.escape(str(course))}`\), then run `python3 tasks.py export --course "
        rf"{re.escape(str(course))}` again",
        out,
    ), out
    give_by_hand(course, "4242", dict.fromkeys(written_answers(course), 1.0))
    code, out, err = labtools("export", "--course", course, "--canvas", week["gradebook"],
                              "--column", f"{LAB}=5001", "--final")  # fmt: skip
    assert code == 0, err[-3000:]
    imported = canvas_import((course / "canvas-import.csv").read_text(), GRADEBOOK)
    assert list(imported["grades"]["5001"]) == ["4242"]
    assert "5 notebooks have" in out  # Ann's is final now
    with zipfile.ZipFile(course / f"canvas-{LAB}-feedback.zip") as zf:
        assert [n.split("_")[1] for n in zf.namelist()] == ["4242"]


def test_the_feedback_page_shows_the_score_after_the_late_deduction(week, tmp_path):
    """Item 5: Bob's page (nbgrader's, written by ``feedback``) shows 6.3 of 11 and the
    deduction on a line of its own; Ann's, on time, none."""
    course = Path(shutil.copytree(week["course"], tmp_path / "course"))
    code, out, err = labtools("feedback", "--course", course, "--labs", LAB)
    assert code == 0, err[-3000:]
    page = (course / "feedback" / "4343" / LAB / f"{LAB}.html").read_text()
    assert f"{LAB} (Score: 6.3 / 11.0)" in page
    assert "Late submission penalty (Score: -0.7)" in page
    ann = (course / "feedback" / "4242" / LAB / f"{LAB}.html").read_text()
    assert f"{LAB} (Score: 7.0 / 11.0)" in ann and "Late submission penalty" not in ann


def test_labs_not_set_are_not_missing(week, tmp_path):
    """Item 11: in week 1 only Lab 1 is set: no rows of the other labs, a maximum of 11
    (not 77), the report has Lab 1's section and names the others in one line."""
    course = Path(shutil.copytree(week["course"], tmp_path / "course"))
    rows = table(course / "grades.csv")
    assert {lab for _, lab in rows} == {LAB}
    with open(course / "grades-wide.csv", newline="") as f:
        wide = list(csv.DictReader(f))
    assert {r["max_score"] for r in wide} == {"11.0"}
    assert list(wide[0]) == ["student", "name", LAB, "total", "max_score"]
    assert (
        "labs not set yet (no submission, no due date in late-policy.toml)"
        in (week["export before"][1])
    )
    assert labtools("report", "--course", course)[0] == 0
    report = (course / "report.html").read_text()
    assert 'id="lab-lab1_perceptron"' in report and 'id="lab-lab2_convergence"' not in report
    assert "Labs not set yet (no submission, no due date), left out: lab2_convergence" in report


def test_export_while_a_run_grades_writes_what_is_graded_so_far(week, tmp_path):
    """Item 11: with the course folder's lock held by a grading run, ``export`` writes
    grades-so-far.csv and touches nothing else; the platforms' files wait for the run."""
    course = Path(shutil.copytree(week["course"], tmp_path / "course"))
    kept = {p: p.stat().st_mtime_ns for p in course.rglob("*") if p.is_file()}
    with open(course / layout.LOCK, "a+") as lock:  # as a grading run of this process holds it
        fcntl.flock(lock, fcntl.LOCK_EX)
        lock.truncate(0)
        lock.write(f"{os.getpid()} grading\n")
        lock.flush()
        code, out, err = labtools("export", "--course", course)
        assert code == 0, err[-3000:]
        assert f"grading is running in {course} (pid {os.getpid()}): these tables hold" in out
        refused = labtools("export", "--course", course, "--canvas", week["gradebook"])
    assert refused[0] == 2
    one_error_line(refused[2], "the files for Canvas and Moodle go back once it ends")
    so_far = table(course / "grades-so-far.csv")
    assert so_far == table(course / "grades.csv")
    now = {p: p.stat().st_mtime_ns for p in course.rglob("*") if p.is_file() and p in kept}
    assert {p for p in now if now[p] != kept[p]} <= {course / layout.LOCK}
    assert labtools("export", "--course", course)[0] == 0  # the run is over: gone
    assert not (course / "grades-so-far.csv").exists()


def test_held_answers_are_listed_and_accepted_through_the_review_command(tmp_path, monkeypatch):
    """Issue 38: an answer held for review keeps its tests' verdicts, not their points, until
    ``review --accept`` gives what they earned; ``review`` lists each with why, one plain
    line each (red team, round 6: a reason with terminal escapes rewrote the listing)."""
    fake_workers(monkeypatch)
    course = course_made(tmp_path / "course")
    submissions = tmp_path / "in"
    held = answered(LAB)
    reason = "uses numpy.linalg.lstsq\x1b[1A\x1b[2Knothing held here"
    held["metadata"]["fake_review"] = [
        {"cell": "ex3-code", "line": 4, "what": reason, "held": True, "exercise": "ex3"}
    ]
    for student, nb in (("ann", answered(LAB)), ("hal", held)):
        path = submissions / student / LAB / NB
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(nb))
    code, out, err = labtools("grade", submissions, "--course", course, "--unsafe")
    assert code == 0, err[-2000:]
    rows = table(course / "grades.csv")
    assert rows["ann", LAB]["automatic"] == "7.0" and rows["hal", LAB]["automatic"] == "4.0"
    assert "ex3-code, line 4: uses numpy.linalg.lstsq" in rows["hal", LAB]["review"]
    code, out, err = labtools("review", "--course", course)
    assert code == 0 and "\x1b" not in out
    assert out.splitlines()[:2] == [
        f"hal/{LAB}: 3 of 3 automatic points held (ex3-hidden, ex3-visible)",
        "  ex3-code, line 4: uses numpy.linalg.lstsq [1A [2Knothing held here",
    ]
    code, out, err = labtools("review", "--accept", f"hal/{LAB}", "--course", course)
    assert (code, out.strip()) == (0, f"hal/{LAB}: 3 points given"), err
    assert labtools("export", "--course", course)[0] == 0
    row = table(course / "grades.csv")["hal", LAB]
    assert (row["automatic"], row["manual"], row["total"]) == ("4.0", "3.0", "7.0")
    code, out, err = labtools("review", "--accept", f"ann/{LAB}", "--course", course)
    assert code == 2 and err.strip() == f"error: ann/{LAB} has no answer held for review"
