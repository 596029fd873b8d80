"""Intake: the downloads instructors really have (Canvas, Moodle, this project's folders, as
folders or zips), each student apart. The unit tests read names and zips only (fast); one
slow test grades a Canvas and a Moodle zip through the sandbox with exact scores.
"""

import json
import zipfile
from pathlib import Path

import pytest
from _helpers import answered, course_made, need_sandbox
from labtools import grade, wire
from labtools.door import intake, layout
from labtools.grader.limits import Limits

LAB = "lab1_perceptron"
NB = f"{LAB}.ipynb"
LABS = [LAB]
KNOWN = layout.lab_names()


def make_zip(path: Path, members: dict) -> Path:
    """A zip of ``{name: text}``; a ZipInfo key keeps its attributes (links, sizes)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in members.items():
            archive.writestr(name, text)
    return path


def collect(tmp_path, members, labs=LABS):
    work = tmp_path / "work"
    work.mkdir()
    return intake.collect(make_zip(tmp_path / "download.zip", members), labs, work)


def rows(taken):
    return {(s.student, s.lab): s.refused for s in taken.submissions}


def unplaced(taken):
    return {u.file: u.why for u in taken.unplaced}


# ---------------------------------------------------------------------------------------
# Student ids


def test_student_ids_are_matched_in_full():
    assert layout.valid_student("alice") and layout.valid_student("j.doe@uni-x.edu")
    for bad in ("alice\n", "alice\r\n", "\nalice", "al ice", ".alice", "", "a" * 65, "al/ice"):
        assert not layout.valid_student(bad), repr(bad)
    assert not layout.STUDENT_ID.fullmatch("alice\n")


def test_a_folder_named_alice_newline_is_not_placed_and_alice_is_graded(tmp_path):
    taken = collect(tmp_path, {f"alice/{LAB}/{NB}": "{}", f"alice\n/{LAB}/{NB}": "{}"})
    assert rows(taken) == {("alice", LAB): None}
    assert "'alice\\n' is not a valid student id" in unplaced(taken)[f"alice\n/{LAB}/{NB}"]


# ---------------------------------------------------------------------------------------
# This project's folders, as before


def test_the_folders_layout_is_read_as_before(tmp_path):
    root = tmp_path / "in" / "submitted"
    for student in ("ann", "bob"):
        (root / student / LAB).mkdir(parents=True)
        (root / student / LAB / NB).write_text("{}")
    (root / "cy" / LAB).mkdir(parents=True)  # a lab folder without its notebook
    (root / "bob" / LAB / "scratch.txt").write_text("x")
    (root / "bob" / LAB / "Lab1 final.ipynb").write_text("{}")  # renamed (issue 40, item 7)
    (root / "dee").mkdir()
    (root / "dee" / "mywork.ipynb").write_text("{}")  # no lab folder
    taken = intake.collect(tmp_path / "in", LABS, tmp_path)
    assert taken.layout == "folders"
    assert taken.submissions == intake.find_submissions(tmp_path / "in", LABS)
    assert rows(taken)[("cy", LAB)] == f"refused: no {NB} in the lab folder"
    assert unplaced(taken) == {
        f"submitted/bob/{LAB}/scratch.txt": "not <student>/<lab>/<lab>.ipynb",
        f"submitted/bob/{LAB}/Lab1 final.ipynb": "not <student>/<lab>/<lab>.ipynb: rename it "
        f"submitted/bob/{LAB}/{NB} and grade again",
        "submitted/dee/mywork.ipynb": "not <student>/<lab>/<lab>.ipynb: move it to "
        f"submitted/dee/LAB/LAB.ipynb (LAB: its lab, one of {', '.join(KNOWN)}; dee: the "
        "student's id) and grade again",
    }
    (renamed,) = [u for u in taken.unplaced if u.file.endswith("final.ipynb")]
    assert (renamed.student, renamed.lab) == ("bob", LAB)  # placed once bob has a row


def test_two_folders_that_name_one_student_are_both_refused(tmp_path):
    taken = collect(tmp_path, {f"bob/{LAB}/{NB}": "{}", f"Bob/{LAB}/{NB}": "{}"})
    both = f"('Bob/{LAB}', 'bob/{LAB}')"
    assert rows(taken) == {
        ("Bob", LAB): f"refused: 2 folders name this student for this lab {both}; "
        "keep one and grade again",
        ("bob", LAB): f"refused: 2 folders name this student for this lab {both}; "
        "keep one and grade again",
    }


# ---------------------------------------------------------------------------------------
# A zip, member by member


def test_a_file_where_a_folder_should_be_is_refused_for_that_student_only(tmp_path):
    taken = collect(
        tmp_path,
        {f"alice/{LAB}": "x", f"alice/{LAB}/{NB}": "{}", f"bob/{LAB}/{NB}": "{}"},
    )
    assert rows(taken) == {
        ("alice", LAB): f"refused: the zip puts both a file and a folder at 'alice/{LAB}'",
        ("bob", LAB): None,
    }
    bob = next(s for s in taken.submissions if s.student == "bob")
    assert bob.path.read_text() == "{}"


def test_a_name_held_twice_in_the_zip_is_refused(tmp_path):
    import warnings

    download = make_zip(
        tmp_path / "download.zip", {f"bob/{LAB}/{NB}": "{}", f"carl/{LAB}/{NB}": "{}"}
    )
    with warnings.catch_warnings(), zipfile.ZipFile(download, "a") as archive:
        warnings.simplefilter("ignore")  # zipfile warns of the duplicate it writes
        archive.writestr(f"carl/{LAB}/{NB}", '{"another": 1}')
    taken = intake.collect(download, LABS, tmp_path)
    assert rows(taken) == {
        ("bob", LAB): None,
        ("carl", LAB): f"refused: the zip holds 'carl/{LAB}/{NB}' 2 times",
    }


@pytest.mark.parametrize(
    "name, student",
    [
        (f"../x/{LAB}/{NB}", "x"),
        (f"/abs/{LAB}/{NB}", "abs"),
        (f"dan/{LAB}/../../../{NB}", None),  # not dan's notebook: not placed
        (f"../../{NB}", None),  # names no student: not placed
    ],
)
def test_an_entry_outside_the_target_is_never_written(tmp_path, name, student):
    taken = collect(tmp_path, {name: "{}", f"bob/{LAB}/{NB}": "{}"})
    why = f"the zip entry {name!r} would land outside the folder it is unpacked into"
    if student:
        assert rows(taken) == {("bob", LAB): None, (student, LAB): f"refused: {why}"}
    else:
        assert rows(taken) == {("bob", LAB): None} and unplaced(taken) == {name: why}
    written = {p.relative_to(tmp_path / "work").as_posix() for p in (tmp_path / "work").rglob("*")}
    assert written == {"bob", f"bob/{LAB}", f"bob/{LAB}/{NB}"}
    assert {p.name for p in tmp_path.iterdir()} == {"work", "download.zip"}


def test_links_and_zip_bombs_are_refused_for_their_student(tmp_path):
    link = zipfile.ZipInfo(f"gail/{LAB}/{NB}")
    link.external_attr = 0o120777 << 16
    taken = collect(
        tmp_path,
        {
            link: "/etc/passwd",
            f"fred/{LAB}/{NB}": " " * (layout.MAX_NOTEBOOK + 1),  # 20 MB that zip to 20 KB
            f"bob/{LAB}/{NB}": "{}",
        },
    )
    assert (tmp_path / "download.zip").stat().st_size < 200_000
    assert rows(taken) == {
        ("bob", LAB): None,
        ("fred", LAB): f"refused: the zip entry 'fred/{LAB}/{NB}' is larger than 20 MB "
        f"unpacked ({layout.MAX_NOTEBOOK + 1} bytes)",
        ("gail", LAB): f"refused: the zip entry 'gail/{LAB}/{NB}' is a symbolic link",
    }
    assert not (tmp_path / "work" / "fred" / LAB / NB).exists()
    assert not (tmp_path / "work" / "gail" / LAB / NB).is_symlink()


def test_a_problem_with_another_file_of_the_lab_folder_is_reported_not_refused(tmp_path):
    link = zipfile.ZipInfo(f"bob/{LAB}/data.csv")
    link.external_attr = 0o120777 << 16
    taken = collect(tmp_path, {f"bob/{LAB}/{NB}": "{}", link: "/etc/passwd"})
    assert rows(taken) == {("bob", LAB): None}
    assert unplaced(taken) == {
        f"bob/{LAB}/data.csv": f"the zip entry 'bob/{LAB}/data.csv' is a symbolic link"
    }


def test_the_notebooks_of_a_zip_stop_at_the_total_cap(tmp_path, monkeypatch):
    monkeypatch.setattr(intake, "MAX_EXTRACTED", 25)
    taken = collect(tmp_path, {f"{s}/{LAB}/{NB}": "{" + " " * 10 + "}" for s in "abc"})
    assert rows(taken)[("a", LAB)] is None and rows(taken)[("b", LAB)] is None
    assert "add up to more than 0 MB; 'c/" in rows(taken)[("c", LAB)]


def test_a_file_that_is_not_a_zip_or_holds_too_many_entries_is_refused_whole(tmp_path, monkeypatch):
    (tmp_path / "fake.zip").write_text("not a zip")
    with pytest.raises(layout.UsageError, match="not a readable zip"):
        intake.collect(tmp_path / "fake.zip", LABS, tmp_path)
    monkeypatch.setattr(intake, "MAX_MEMBERS", 3)
    with pytest.raises(layout.UsageError, match="holds 4 entries, more than 3"):
        collect(tmp_path, {f"s{k}/{LAB}/{NB}": "{}" for k in range(4)})


# ---------------------------------------------------------------------------------------
# Canvas: flat files <name>[_LATE]_<userid>_<submissionid>_<file>


def test_canvas_files_are_placed_by_user_id_and_original_file_name(tmp_path):
    taken = collect(
        tmp_path,
        {
            f"doejane_12345_678901_{NB}": "{}",
            f"roebob_LATE_222_333_{LAB}-1.ipynb": "{}",  # late and resubmitted
            f"lowcase_late_888_1_{NB}": "{}",  # marked late in lower case (issue 40, item 2)
            f"taylormia_999_2_{LAB} (1).ipynb": "{}",  # a browser's second download (item 7)
            f"kimsu_444_555_{NB}": "{}",  # two files for one lab
            f"kimsu_444_556_{LAB}-2.ipynb": "{}",
            "kimsu_444_556_notes.txt": "x",
            "leeal_555_1_Lab1_Perceptron.IPYNB": "{}",  # the case of a platform's rename
            "leeal_555_1_lab9_unknown.ipynb": "{}",
            f"alice\n_9_9_{NB}": "{}",
            f"../evil_777_1_{NB}": "{}",
            "doejane_12345_678901_text.html": "<p>hi</p>",
        },
    )
    assert taken.layout == "canvas"
    assert rows(taken) == {
        ("12345", LAB): None,
        ("222", LAB): None,
        ("444", LAB): f"refused: 2 files name this student for this lab ('kimsu_444_555_{NB}', "
        f"'kimsu_444_556_{LAB}-2.ipynb'); keep one and grade again",
        ("555", LAB): None,
        ("777", LAB): f"refused: the zip entry '../evil_777_1_{NB}' would land outside the "
        "folder it is unpacked into",
        ("888", LAB): None,
        ("999", LAB): None,
    }
    assert taken.names["12345"] == "doejane" and taken.names["222"] == "roebob"
    assert taken.names["888"] == "lowcase"
    assert taken.late == [f"222/{LAB}", f"888/{LAB}"]
    assert taken.canvas_files[("999", LAB)] == {
        "file": f"taylormia_999_2_{LAB} (1).ipynb", "attachment": "2", "name": "taylormia"
    }  # fmt: skip
    assert unplaced(taken) == {
        "kimsu_444_556_notes.txt": "not a notebook ('notes.txt')",
        "leeal_555_1_lab9_unknown.ipynb": "'lab9_unknown.ipynb' names no lab (expected one of "
        + ", ".join(f"{lab}.ipynb" for lab in KNOWN)
        + f"): to grade it, copy it as FOLDER/leeal_555_1_{NB} into a new folder FOLDER and "
        "run `python3 tasks.py grade FOLDER`",
        f"alice\n_9_9_{NB}": "not a Canvas file name "
        "(<name>[_LATE]_<userid>_<submissionid>_<file>)",
        "doejane_12345_678901_text.html": "not a notebook ('text.html')",
    }
    (graded,) = [s for s in taken.submissions if s.student == "12345"]
    assert graded.path.read_text() == "{}"


def test_canvas_files_of_another_lab_are_left_to_that_lab(tmp_path):
    taken = collect(tmp_path, {"doejane_1_2_lab2_convergence.ipynb": "{}", f"x_3_4_{NB}": "{}"})
    assert rows(taken) == {("3", LAB): None} and taken.unplaced == []


def test_an_unpacked_canvas_download_is_read_as_a_folder_and_links_are_refused(tmp_path):
    folder = tmp_path / "submissions"
    folder.mkdir()
    (folder / f"doejane_12345_678901_{NB}").write_text("{}")
    (folder / f"roebob_222_333_{NB}").symlink_to(folder / f"doejane_12345_678901_{NB}")
    taken = intake.collect(folder, LABS, tmp_path)
    assert taken.layout == "canvas"
    assert rows(taken) == {
        ("12345", LAB): None,
        ("222", LAB): f"refused: 'roebob_222_333_{NB}' is a symbolic link",
    }


# ---------------------------------------------------------------------------------------
# Moodle: a folder per participant, <Full Name>_<participant id>_assignsubmission_file[_]/


def test_moodle_folders_are_placed_by_name_and_original_file_name(tmp_path):
    taken = collect(
        tmp_path,
        {
            f"Jane Doe_101_assignsubmission_file/{NB}": "{}",  # Moodle 4.1 and later
            "Jane Doe_101_assignsubmission_onlinetext/onlinetext.html": "x",
            f"José Núñez_102_assignsubmission_file_/{LAB}-1.ipynb": "{}",  # before 4.1
            f"Łukasz Nowak_103_assignsubmission_file/sub/{NB}": "{}",
            f"王小明_104_assignsubmission_file/{NB}": "{}",
            f"Sam Lee_105_assignsubmission_file/{NB}": "{}",  # two participants, one name
            f"Sam Lee_106_assignsubmission_file/{NB}": "{}",
            f"alice\n_107_assignsubmission_file/{NB}": "{}",
            "Bob Stone_108_assignsubmission_file": "x",  # a file where his folder is
            f"Bob Stone_108_assignsubmission_file/{NB}": "{}",
            "Ann Ray_109_assignsubmission_file/lab9.ipynb": "{}",
            f"Flat Name_110_assignsubmission_file_{NB}": "{}",  # "download as folders" off
        },
    )
    assert taken.layout == "moodle"
    assert rows(taken) == {
        ("jane.doe", LAB): None,
        ("jose.nunez", LAB): None,
        ("ukasz.nowak-8234888b", LAB): None,
        ("moodle-acf979cc", LAB): None,
        ("sam.lee", LAB): None,  # two participants, one name: two people (round 5, 12)
        ("sam.lee-66b900", LAB): None,
        ("bob.stone", LAB): "refused: the zip puts both a file and a folder at "
        "'Bob Stone_108_assignsubmission_file'",
        ("flat.name", LAB): None,
    }
    assert taken.shared_names == [
        f"2 Moodle participants of {LAB} are named 'Sam Lee', each graded under an id of "
        "their own (participant 105 -> sam.lee, participant 106 -> sam.lee-66b900): check "
        "who is who; the Moodle export goes by participant id"
    ]
    assert taken.names["ukasz.nowak-8234888b"] == "Łukasz Nowak"
    assert taken.names["moodle-acf979cc"] == "王小明"
    assert set(unplaced(taken)) == {
        "Jane Doe_101_assignsubmission_onlinetext/onlinetext.html",
        f"alice\n_107_assignsubmission_file/{NB}",
        "Bob Stone_108_assignsubmission_file",
        "Ann Ray_109_assignsubmission_file/lab9.ipynb",
    }
    assert (
        "onlinetext submission"
        in unplaced(taken)["Jane Doe_101_assignsubmission_onlinetext/onlinetext.html"]
    )


def test_moodle_ids_are_stable_across_labs_and_keep_distinct_names_apart():
    # the participant id changes from one assignment to the next; the name does not
    assert intake.moodle_student("Jane  Doe") == intake.moodle_student("Jane Doe") == "jane.doe"
    assert intake.moodle_student("José Núñez") == "jose.nunez"
    assert intake.moodle_student("王小明") != intake.moodle_student("王小红")
    for name in ("Jane Doe", "José Núñez", "王小明", "Łukasz Nowak", "O'Brien-Smith Ann"):
        assert layout.valid_student(intake.moodle_student(name)), name


# The names of the red team's review (round 4, finding 11): each pair folded to one id
FOLD_ALIKE = {
    "José Smith": "jose.smith-ba177b",
    "Jose Smith": "jose.smith-214edb",
    "JOSÉ SMITH": "jose.smith",  # first of the three in the order of their text
    "Zoë Ng": "zoe.ng-3c6416",
    "Zoe Ng": "zoe.ng",
    "Mehmet Öz": "mehmet.oz-fc8cb9",
    "Mehmet Oz": "mehmet.oz",
    "Ana-María Pérez": "ana.maria.perez-da6d76",
    "Ana María Perez": "ana.maria.perez",
    "Alice Smith": "alice.smith",
    "Alice Smith\u202e": "alice.smith-d205a7",  # a bidi override after the name
    "\u202eAlice\u200b Smith": "alice.smith-d31107",  # and before it, a zero-width space
}


def moodle_zip(names, first=1, lab=LAB):
    """A Moodle download of ``names`` for ``lab``, participant ids from ``first`` on (Moodle
    makes them per assignment: another assignment's download has others)."""
    return {
        f"{name}_{k}_assignsubmission_file/{lab}.ipynb": "{}" for k, name in enumerate(names, first)
    }


def test_moodle_names_that_fold_alike_in_one_download_are_each_graded(tmp_path):
    taken = collect(tmp_path, moodle_zip(FOLD_ALIKE))
    assert rows(taken) == {(student, LAB): None for student in FOLD_ALIKE.values()}
    assert taken.names == {student: name for name, student in FOLD_ALIKE.items()}
    assert taken.kept_apart == (
        "Moodle names that fold alike were kept apart: "
        "'Alice Smith' -> alice.smith, 'Alice Smith\\u202e' -> alice.smith-d205a7, "
        "'\\u202eAlice\\u200b Smith' -> alice.smith-d31107; "
        "'Ana María Perez' -> ana.maria.perez, 'Ana-María Pérez' -> ana.maria.perez-da6d76; "
        "'JOSÉ SMITH' -> jose.smith, 'Jose Smith' -> jose.smith-214edb, "
        "'José Smith' -> jose.smith-ba177b; "
        "'Mehmet Oz' -> mehmet.oz, 'Mehmet Öz' -> mehmet.oz-fc8cb9; "
        "'Zoe Ng' -> zoe.ng, 'Zoë Ng' -> zoe.ng-3c6416"
    )
    assert "\u202e" not in taken.kept_apart and "\u200b" not in taken.kept_apart
    assert taken.report()["kept apart"] == taken.kept_apart
    # the order of the files changes nothing
    (tmp_path / "again").mkdir(), (tmp_path / "alone").mkdir()
    again = collect(tmp_path / "again", moodle_zip(reversed(list(FOLD_ALIKE))))
    assert rows(again) == rows(taken) and again.kept_apart == taken.kept_apart
    # a name without a name that folds alike is reported as before, and nothing is kept apart
    alone = collect(tmp_path / "alone", moodle_zip(["José Smith", "Zoë Ng"]))
    assert rows(alone) == {("jose.smith", LAB): None, ("zoe.ng", LAB): None}
    assert alone.kept_apart == ""


def test_moodle_names_keep_their_ids_from_one_download_to_the_next(tmp_path):
    course = tmp_path / "grading"
    course.mkdir()

    first = intake.collect(
        make_zip(tmp_path / "lab1.zip", moodle_zip(["José Smith", "Zoë Ng"])),
        LABS, tmp_path / "w1", course=course,
    )  # fmt: skip
    assert rows(first) == {("jose.smith", LAB): None, ("zoe.ng", LAB): None}
    assert first.kept_apart == ""
    assert not (course / intake.NAMES_FILE).exists()  # the run keeps them, under its lock
    first.keep_names(course)
    # the next assignment: other people whose names fold alike, and José again
    lab2, lab3 = KNOWN[1], KNOWN[2]
    second = intake.collect(
        make_zip(tmp_path / "lab2.zip",
                 moodle_zip(["Jose Smith", "Zoe Ng", "José Smith"], 11, lab2)),
        [lab2], tmp_path / "w2", course=course,
    )  # fmt: skip
    assert rows(second) == {
        ("jose.smith", lab2): None,  # José keeps the id he had
        ("jose.smith-214edb", lab2): None,
        ("zoe.ng-ff3469", lab2): None,
    }
    assert second.names == {
        "jose.smith": "José Smith", "jose.smith-214edb": "Jose Smith", "zoe.ng-ff3469": "Zoe Ng"
    }  # fmt: skip
    assert second.kept_apart == (
        "Moodle names that fold alike were kept apart: "
        "'José Smith' -> jose.smith, 'Jose Smith' -> jose.smith-214edb; "
        "'Zoë Ng' -> zoe.ng, 'Zoe Ng' -> zoe.ng-ff3469"
    )
    second.keep_names(course)
    assert json.loads((course / intake.NAMES_FILE).read_text()) == {
        "Jose Smith": "jose.smith-214edb",
        "José Smith": "jose.smith",
        "Zoe Ng": "zoe.ng-ff3469",
        "Zoë Ng": "zoe.ng",
    }
    # a name written decomposed (NFD, as some zip tools on macOS do) is the same name
    third = intake.collect(
        make_zip(tmp_path / "lab3.zip", moodle_zip(["Jose\u0301 Smith"], 21, lab3)),
        [lab3], tmp_path / "w3", course=course,
    )  # fmt: skip
    assert rows(third) == {("jose.smith", lab3): None}
    # the same assignment again, with a participant who took José's name (round 5, 12): a
    # namesake, graded under an id of its own, and José's id stays José's
    again = intake.collect(
        make_zip(tmp_path / "lab1.zip", moodle_zip(["José Smith"], 9)),
        LABS, tmp_path / "w4", course=course,
    )  # fmt: skip
    assert rows(again) == {("jose.smith-86a911", LAB): None}
    assert again.shared_names == []  # one file of that name in this download


def test_names_that_the_instructor_joined_in_the_map_are_one_student(tmp_path):
    course = tmp_path / "grading"
    course.mkdir()
    joined = {"José Smith": "jose.smith", "JOSÉ SMITH": "jose.smith"}  # one person, renamed
    (course / intake.NAMES_FILE).write_text(json.dumps(joined))
    download = make_zip(tmp_path / "lab.zip", moodle_zip(["JOSÉ SMITH", "Jose Smith"]))
    taken = intake.collect(download, LABS, tmp_path / "w", course=course)
    assert rows(taken) == {("jose.smith", LAB): None, ("jose.smith-214edb", LAB): None}
    assert taken.kept_apart == (
        "Moodle names that fold alike were kept apart: 'JOSÉ SMITH' -> jose.smith, "
        "'José Smith' -> jose.smith, 'Jose Smith' -> jose.smith-214edb"
    )
    assert intake.kept_apart(["JOSÉ SMITH"], joined) == ""


def test_a_damaged_moodle_name_map_is_refused_not_replaced(tmp_path):
    course = tmp_path / "grading"
    course.mkdir()
    download = make_zip(tmp_path / "lab.zip", moodle_zip(["Jose Smith"]))
    for k, text in enumerate(("{", '["José Smith"]', '{"José Smith": "jose smith"}')):
        (course / intake.NAMES_FILE).write_text(text)
        with pytest.raises(layout.UsageError, match="is not a map of Moodle names"):
            intake.collect(download, LABS, tmp_path / f"w{k}", course=course)
        assert (course / intake.NAMES_FILE).read_text() == text


def test_the_layout_is_the_one_that_places_the_most_files():
    folders = [f"s{k}/{LAB}/{NB}" for k in range(3)] + [f"s0/{LAB}/old_1_2_{NB}"]
    assert intake.detect(folders, KNOWN) == "folders"  # a stray Canvas-like name
    assert intake.detect([f"a_1_2_{NB}", f"b_3_4_{NB}", f"c/{LAB}/{NB}"], KNOWN) == "canvas"
    assert intake.detect([f"A B_1_assignsubmission_file/{NB}"], KNOWN) == "moodle"
    assert intake.lab_of(f"{LAB}-12.ipynb", KNOWN) == LAB
    assert intake.lab_of(f"{LAB}-v2.ipynb", KNOWN) is None
    assert intake.lab_of(f"{LAB}.py", KNOWN) is None


# ---------------------------------------------------------------------------------------
# End to end: a Canvas zip and a Moodle zip graded through the sandbox


@pytest.mark.slow
def test_a_canvas_zip_and_a_moodle_zip_are_graded_each_student_apart(tmp_path):
    import csv

    need_sandbox()
    correct = json.dumps(answered(LAB))
    wrong = json.dumps(answered(LAB, {"ex1-code": "def pt_step(w, x, c, eta):\n    return w\n"}))
    canvas = make_zip(
        tmp_path / "canvas.zip",
        {
            f"doejane_12345_678901_{NB}": correct,
            f"roebob_LATE_222_333_{NB}": correct,  # late
            f"kimsu_444_556_{LAB}-1.ipynb": wrong,  # resubmitted
            f"leeal_555_1_{NB}": correct,  # a duplicate
            f"leeal_555_2_{LAB}-1.ipynb": correct,
            "doejane_12345_678901_notes.txt": "cannot be placed",
            f"alice\n_9_9_{NB}": correct,
            f"../evil_777_1_{NB}": correct,  # a bad entry
        },
    )
    moodle = make_zip(
        tmp_path / "moodle.zip",
        {
            f"Jane Doe_31_assignsubmission_file/{NB}": correct,
            f"José Núñez_32_assignsubmission_file_/{LAB}-1.ipynb": wrong,
            f"Sam Lee_33_assignsubmission_file/{NB}": correct,  # two participants, one name
            f"Sam Lee_34_assignsubmission_file/{NB}": correct,
            "Bob Stone_35_assignsubmission_file": "x",  # a file where his folder is
            f"Bob Stone_35_assignsubmission_file/{NB}": correct,
            f"alice\n_36_assignsubmission_file/{NB}": correct,
            "Ann Ray_37_assignsubmission_file/report.pdf": "cannot be placed",
        },
    )
    course = tmp_path / "grading"
    limits = Limits(cell_seconds=10.0)
    first = grade.grade(canvas, course_made(course), jobs=2, limits=limits, progress=False)
    second = grade.grade(moodle, course, jobs=2, limits=limits, progress=False)
    with open(course / "grades.csv") as f:
        table = {r["student"]: r for r in csv.DictReader(f) if r["lab"] == LAB}
    scores = {s: float(r["automatic"]) for s, r in table.items()}
    assert scores == {
        "12345": 7, "222": 7, "444": 4, "555": 0, "777": 0,
        "jane.doe": 7, "jose.nunez": 4, "sam.lee": 7, "sam.lee-bbc6d9": 7, "bob.stone": 0,
    }  # fmt: skip
    status = {s: r["status"] for s, r in table.items()}
    assert status["12345"] == "graded; 4 points wait for manual grading"
    assert status["222"] == (  # Canvas marked it late; with no late policy, said and kept
        "graded; 4 points wait for manual grading; "
        "marked late by Canvas (no late-policy.toml: nothing deducted)"
    )
    assert status["555"].startswith("refused: 2 files name this student for this lab")
    assert status["777"].startswith("refused: the zip entry '../evil_777_1_")
    # two participants with one name are two people, each graded (round 5, finding 12)
    assert status["sam.lee"] == status["sam.lee-bbc6d9"] == status["12345"]
    assert second["shared names"] == [
        f"2 Moodle participants of {LAB} are named 'Sam Lee', each graded under an id of their "
        "own (participant 33 -> sam.lee, participant 34 -> sam.lee-bbc6d9): check who is who; "
        "the Moodle export goes by participant id"
    ]
    assert status["bob.stone"] == (
        "refused: the zip puts both a file and a folder at 'Bob Stone_35_assignsubmission_file'"
    )
    assert first["layout"] == "canvas" and second["layout"] == "moodle"
    assert first["late"] == [f"222/{LAB}"]
    assert {u["file"] for u in first["not placed"]} == {
        "doejane_12345_678901_notes.txt",
        f"alice\n_9_9_{NB}",
    }
    assert {u["file"] for u in second["not placed"]} == {
        "Bob Stone_35_assignsubmission_file",
        f"alice\n_36_assignsubmission_file/{NB}",
        "Ann Ray_37_assignsubmission_file/report.pdf",
    }
    assert not any("alice" in s for s in scores)


@pytest.mark.slow
def test_moodle_names_that_fold_alike_are_graded_as_two_people(tmp_path):
    """Lab 1 from José Smith and from Zoë Ng and Zoe Ng, then from Jose Smith: four
    people, four rows in grades-wide.csv with their own scores."""
    import csv

    need_sandbox()
    course = tmp_path / "grading"
    correct = json.dumps(answered(LAB))
    wrong = json.dumps(answered(LAB, {"ex1-code": "def pt_step(w, x, c, eta):\n    return w\n"}))
    one = make_zip(
        tmp_path / "one.zip",
        {
            f"José Smith_1_assignsubmission_file/{NB}": correct,
            f"Zoë Ng_2_assignsubmission_file/{NB}": correct,
            f"Zoe Ng_3_assignsubmission_file/{NB}": wrong,
        },
    )
    two = make_zip(tmp_path / "two.zip", {f"Jose Smith_7_assignsubmission_file/{NB}": wrong})
    limits = Limits(cell_seconds=10.0)
    first = grade.grade(one, course_made(course), jobs=2, limits=limits, progress=False)
    second = grade.grade(two, course, jobs=2, limits=limits, progress=False)
    assert first["kept apart"] == (
        "Moodle names that fold alike were kept apart: 'Zoe Ng' -> zoe.ng, "
        "'Zoë Ng' -> zoe.ng-3c6416"
    )
    assert second["kept apart"] == (
        "Moodle names that fold alike were kept apart: 'José Smith' -> jose.smith, "
        "'Jose Smith' -> jose.smith-214edb"
    )
    assert [r.student for r in second["graded"]] == ["jose.smith-214edb"]
    with open(course / "grades-wide.csv") as f:
        wide = {r["student"]: r[LAB] for r in csv.DictReader(f)}
    assert wide == {
        "jose.smith": "7.0", "jose.smith-214edb": "4.0", "zoe.ng": "4.0", "zoe.ng-3c6416": "7.0"
    }  # fmt: skip


def test_the_grade_command_prints_the_files_it_could_not_place(monkeypatch, capsys):
    from labtools import __main__ as cli

    def fake_grade(submissions, course, **kwargs):
        return {
            "graded": [wire.Row.of("555", LAB, "", "refused: 2 files name ...")],
            "already graded": [],
            "exported": {},
            "layout": "canvas",
            "not placed": [{"file": "a_1_2_notes.txt", "why": "not a notebook ('notes.txt')"}],
            "names": {"555": "leeal"},
            "late": [f"222/{LAB}"],
        }

    monkeypatch.setattr(grade, "grade", fake_grade)
    assert cli.main(["grade", "download.zip"]) == 0
    out = capsys.readouterr().out
    assert "1 files of the canvas download could not be placed:" in out
    assert "  'a_1_2_notes.txt': not a notebook ('notes.txt')" in out
    assert f"marked late by the platform: 222/{LAB}" in out
    assert f"  555 (leeal) / {LAB}: refused: 2 files name ..." in out  # name beside the id
    assert "0 notebooks graded now, 0 already graded before" in out  # refused: not graded
