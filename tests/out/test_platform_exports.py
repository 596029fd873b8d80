"""Grades back into Canvas and Moodle (labtools/out/platforms.py), checked against the
platforms' own import rules re-implemented here, and feedback that reveals no test.

The checkers below are written from the platforms' importers, not from the exporter:

- Canvas's ``lib/gradebook_importer.rb``: column 1 ``Student``, column 2 ``ID``, the last
  identity column ``Section`` (``Student, ID, Section`` / ``Student, ID, SIS Login ID,
  Section`` / ``Student, ID, SIS User ID, SIS Login ID, [Integration ID], [Root Account],
  Section``; ``SIS User ID`` without ``SIS Login ID`` is invalid); an assignment column is
  ``Title (id)``; a first data row starting ``Points Possible`` describes the assignments;
  a student is matched by ``ID``, then SIS ids, then exact name.
- Moodle's offline grading worksheet import (``assignfeedback_offline``'s importer): the
  columns ``Identifier`` (``Participant N``), ``Grade`` and ``Last modified (grade)``, and
  a feedback plugin's column by its name (``Feedback comments``); Moodle's feedback-files
  zip import (``assignfeedback_file``'s ``importziplib.php``): each path part split at
  ``_`` into at most 5 pieces, the first part with at least 4 gives the participant id
  (piece 2, numeric) and the plugin (pieces 3 and 4); the rest is the file's name.

One small class (Lab 1 and Lab 2, a correct and a wrong student, from a Moodle download)
is graded once for the module; the other tests are pure Python on a course folder made
by hand.
"""

import csv
import html
import html.parser
import io
import json
import re
import shutil
import zipfile

import pytest
from _helpers import ROOT, answered, course_made, need_sandbox, sandbox_lock
from labtools import __main__ as cli
from labtools import grade
from labtools.door import intake, layout
from labtools.door.layout import UsageError
from labtools.grader.limits import Limits
from labtools.out import platforms

LAB1, LAB2 = "lab1_perceptron", "lab2_convergence"
LIMITS = Limits(cell_seconds=10)

# ---------------------------------------------------------------------------------------
# The independent checkers


def canvas_identity_columns(header: list[str]) -> int:
    """How many identity columns Canvas's importer reads, or AssertionError if it would
    refuse the header (the rules of the module's docstring, as the importer tests them)."""
    assert len(header) >= 3 and re.search("Student", header[0]), header
    assert header[1] == "ID", header
    if re.search(r"SIS\s+Login\s+ID", header[2]):
        assert re.search("Section", header[3]), header
        return 4
    if re.search(r"SIS\s+User\s+ID", header[2]):
        assert re.search(r"SIS\s+Login\s+ID", header[3]), "SIS User ID without SIS Login ID"
        k = 4
        for optional in ("Integration ID", "Root Account"):
            if re.search(optional.replace(" ", r"\s+"), header[k]):
                k += 1
        assert re.search("Section", header[k]), header
        return k + 1
    assert re.search("Section", header[2]), header
    return 3


def canvas_separator(text: str) -> str:
    """The separator Canvas's importer reads ``text`` with (``GradebookImporter#
    identify_delimiter``): its first three lines, split by ";" and by ","; a separator
    that gives each the same number of fields counts that number; ";" if it counts more."""
    counts = {}
    for separator in (";", ","):
        lines = text.removeprefix("\ufeff").splitlines()[:3]
        found = {len(next(csv.reader([line], delimiter=separator))) for line in lines}
        counts[separator] = found.pop() if len(found) == 1 else 0
    return ";" if counts[";"] > counts[","] else ","


def canvas_number(value: str) -> float:
    """A score as Canvas's importer reads it (its converter decimal_comma_to_period)."""
    return float(re.sub(r"^(-?\d+),(\d+)$", r"\1.\2", value.strip()))


def canvas_import(text: str, export_text: str) -> dict:
    """What Canvas would import from ``text`` (canvas-import.csv): {"points": {assignment
    id: points}, "grades": {assignment id: {user ID: score}}}; AssertionError where its
    importer would refuse or mismatch a row. Its identity cells must be the export's own
    (``export_text``), so that every row matches by ``ID`` as it did."""
    split = canvas_separator(text)
    rows = list(csv.reader(io.StringIO(text.removeprefix("\ufeff")), delimiter=split))
    source = list(csv.reader(io.StringIO(export_text.removeprefix("\ufeff")),
                             delimiter=canvas_separator(export_text)))  # fmt: skip
    n = canvas_identity_columns(rows[0])
    assert rows[0][:n] == source[0][:n]
    ids = {}
    for title in rows[0][n:]:
        match = re.fullmatch(r"(.*) \((\d+)\)", title)
        assert match, f"not an assignment column: {title!r}"
        assert title in source[0], f"{title!r} is not the export's own header"
        ids[title] = match[2]
    body = rows[1:]
    points = {}
    if body and re.search("Points Possible", body[0][0]):
        points = {ids[t]: canvas_number(v) for t, v in zip(rows[0][n:], body[0][n:], strict=True)}
        body = body[1:]
    exported = {r[1]: r[:n] for r in source[1:] if len(r) > 1 and r[1].strip()}
    grades = {i: {} for i in ids.values()}
    seen = set()
    for row in body:
        assert len(row) == len(rows[0]), row
        assert row[1] in exported and row[:n] == exported[row[1]], f"not the export's: {row}"
        assert row[1] not in seen, f"ID {row[1]} twice"
        seen.add(row[1])
        for title, value in zip(rows[0][n:], row[n:], strict=True):
            if value != "":  # an empty cell leaves the grade as it is
                grades[ids[title]][row[1]] = canvas_number(value)
    return {"points": points, "grades": grades}


def moodle_import(text: str) -> dict:
    """What Moodle's worksheet import reads from ``text``: {participant id: (grade,
    feedback comment)}; AssertionError where it would refuse the file."""
    rows = list(csv.reader(io.StringIO(text.removeprefix("\ufeff"))))
    header = rows[0]
    for column in ("Identifier", "Grade", "Last modified (grade)", "Feedback comments"):
        assert header.count(column) == 1, column
    at = {c: header.index(c) for c in header}
    found = {}
    for row in rows[1:]:
        ident = row[at["Identifier"]]
        assert ident.startswith("Participant "), ident
        grade_text = row[at["Grade"]]
        if grade_text.strip():
            assert float(grade_text) <= float(row[at["Maximum Grade"]]) + 1e-9
        found[ident[len("Participant ") :]] = (grade_text, row[at["Feedback comments"]])
    return found


def moodle_zip_import(data: bytes, participants: set[str]) -> dict:
    """What Moodle's feedback zip import takes from ``data``: {participant id: [file
    names]}; AssertionError for a file it would skip."""
    taken = {}
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        for name in zf.namelist():
            if name.endswith("/"):
                continue
            parts = ("/" + name).split("/")
            while parts:
                info = parts.pop(0).split("_", 4)
                if len(info) < 4 or not info[1].isdigit() or info[1] not in participants:
                    continue
                assert (info[2], info[3]) == ("assignsubmission", "file"), name
                rest = "/".join([info[4] if len(info) == 5 else "", *parts]).strip("/")
                taken.setdefault(info[1], []).append(rest)
                break
            else:
                raise AssertionError(f"Moodle would skip {name!r}")
    return taken


# ---------------------------------------------------------------------------------------
# A course folder made by hand, for the pure-Python tests


@pytest.fixture
def course(tmp_path, monkeypatch):
    """A course folder with Lab 1 and Lab 2 and these totals (grades.csv's rows): Lab 1
    for 101 (8.5), 102 (3) and 103 (0); Lab 2 for 101 only (4 of 6)."""
    folder = tmp_path / "grading"
    for lab in (LAB1, LAB2):
        (folder / "source" / lab).mkdir(parents=True)
        shutil.copy(ROOT / "labs/source" / lab / f"{lab}.ipynb", folder / "source" / lab)
    (folder / layout.MARK).write_text(json.dumps({"course": layout.COURSE, "sources": {}}))

    def row(student, lab, automatic, manual, top):
        total = automatic + manual
        status = "graded; 2 points wait for manual grading" if manual == 0 else "graded"
        return dict(student=student, lab=lab, automatic=str(automatic), manual=str(manual),
                    total=str(total), max_score=str(top), status=status, deduction="0.0",
                    adjusted_total=str(total), waiting="2.0" if manual == 0 else "0.0",
                    final=manual != 0)  # fmt: skip

    graded = {
        LAB1: {
            "101": row("101", LAB1, 7.0, 1.5, 11.0),
            "102": row("102", LAB1, 3.0, 0.0, 11.0),
            "103": row("103", LAB1, 0.0, 0.0, 11.0),
        },  # fmt: skip
        LAB2: {"101": row("101", LAB2, 4.0, 0.0, 6.0)},
    }
    monkeypatch.setattr(platforms, "graded_totals", lambda c: (graded, {LAB1: 11.0, LAB2: 6.0}))
    return folder


CANVAS_EXPORTS = {
    # the layouts Canvas exports, each with the columns it adds after the assignments
    "sis": (
        "Student,ID,SIS User ID,SIS Login ID,Section,Lab 1: Perceptron (4401),"
        '"Lab 2: Convergence, measured (part 1) (4402)",Quiz (1) (4403),Current Score,'
        "Unposted Current Score,Final Score,Unposted Final Score\n"
        "    Points Possible,,,,,11.00,6.00,5.00,(read only),(read only),(read only),"
        "(read only)\n"
        '"Lovelace, Ada",101,s101,ada,Section A,,,4.00,80.00,80.00,40.00,40.00\n'
        '"Núñez, José",102,s102,jose,"Section A, Section B",2.00,,5.00,70,70,35,35\n'
        "Hopper Grace,103,s103,grace,Section B,,,,,,0,0\n"
        '"Student, Test",999,,,Section A,,,,,,,\n'
    ),
    "login": (
        "\ufeffStudent,ID,SIS Login ID,Section,Lab 1 - Perceptron (4401),"
        "Lab 2 - Convergence (4402),Current Score\n"
        '"Lovelace, Ada",101,ada,Section A,,,\n'
        "Núñez José,102,jose,Section A,,,\n"
        "Hopper Grace,103,grace,Section B,,,\n"
    ),
    "plain": (
        "Student,ID,Section,lab1_perceptron (4401),lab2_convergence (4402),Notes\n"
        "    Points Possible,,,11,6,\n"
        "Lovelace Ada,101,S1,,,\n"
        "Núñez José,102,S1,,,\n"
        "Hopper Grace,103,S1,,,\n"
    ),
    "integration": (
        "Student,ID,SIS User ID,SIS Login ID,Integration ID,Root Account,Section,"
        '"Lab 1: Perceptron (hand, code) (4401)","Lab 2: The convergence bound, measured '
        '(4402)",Final Grade\n'
        "Lovelace Ada,101,s101,ada,i101,uni.instructure.com,S1,,,A\n"
        "Núñez José,102,s102,jose,i102,uni.instructure.com,S1,,,B\n"
        "Hopper Grace,103,s103,grace,i103,uni.instructure.com,S1,,,F\n"
    ),
}
# every export's assignment ids: Lab 1 is 4401, Lab 2 4402
WANT_GRADES = {"4401": {"101": 8.5, "102": 3.0, "103": 0.0}, "4402": {"101": 4.0}}
# a column is chosen by its exact title (the lab's id, title or label) or by --column, never
# because its title holds a lab's label (round 5, finding 10): these titles need --column
COLUMNS = ["lab1_perceptron=4401", "lab2_convergence=4402"]


@pytest.mark.parametrize("name", list(CANVAS_EXPORTS))
def test_canvas_import_file_passes_the_importers_rules_with_each_layout(course, tmp_path, name):
    text = CANVAS_EXPORTS[name]
    given = tmp_path / "export.csv"
    given.write_text(text, encoding="utf-8")
    columns = {
        "integration": [
            COLUMNS[0],
            "lab2_convergence=Lab 2: The convergence bound, measured (4402)",
        ],
        "plain": None,  # titles that are the labs' ids
    }.get(name, COLUMNS)
    out = platforms.canvas(course, given, columns)["import"]
    assert out == course / "canvas-import.csv"
    written = out.read_text(encoding="utf-8")
    assert written.startswith("\ufeff") == text.startswith("\ufeff")
    imported = canvas_import(written, text)
    assert imported["grades"] == WANT_GRADES
    points = {"sis": {"4401": 11.0, "4402": 6.0}, "plain": {"4401": 11.0, "4402": 6.0}}
    assert imported["points"] == points.get(name, {})


def test_canvas_import_file_is_exactly_the_exports_identity_then_the_labs(course, tmp_path):
    given = tmp_path / "export.csv"
    given.write_text(CANVAS_EXPORTS["sis"], encoding="utf-8")
    written = platforms.canvas(course, given, COLUMNS)["import"].read_text(encoding="utf-8")
    assert written.splitlines() == [
        'Student,ID,SIS User ID,SIS Login ID,Section,Lab 1: Perceptron (4401),"Lab 2: '
        'Convergence, measured (part 1) (4402)"',
        "    Points Possible,,,,,11,6",
        '"Lovelace, Ada",101,s101,ada,Section A,8.5,4',
        '"Núñez, José",102,s102,jose,"Section A, Section B",3,',
        "Hopper Grace,103,s103,grace,Section B,0,",
        '"Student, Test",999,,,Section A,,',
    ]


def test_canvas_joins_on_sis_ids_when_the_course_names_students_by_login(
    course, tmp_path, monkeypatch
):
    graded, maxima = platforms.graded_totals(course)
    by_login = {lab: {"ada": dict(rows["101"], student="ada")} for lab, rows in graded.items()}
    monkeypatch.setattr(platforms, "graded_totals", lambda c: (by_login, maxima))
    given = tmp_path / "export.csv"
    given.write_text(CANVAS_EXPORTS["login"], encoding="utf-8")
    out = platforms.canvas(course, given, COLUMNS)["import"]
    imported = canvas_import(out.read_text("utf-8"), given.read_text())
    assert imported["grades"] == {"4401": {"101": 8.5}, "4402": {"101": 4.0}}


def refusal(call) -> str:
    with pytest.raises(UsageError) as err:
        call()
    message = str(err.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    ("header", "why"),
    [
        ("Student,ID,SIS User ID,Section,Lab 1 (4401)", "SIS User ID without SIS Login ID"),
        ("ID,Student,Section,Lab 1 (4401)", "ID before Student"),
        ("student,id,section,Lab 1 (4401)", "lower case"),
        ("Student,ID,SIS Login ID,Lab 1 (4401)", "no Section"),
    ],
)
def test_a_header_canvas_refuses_is_refused_and_the_checker_refuses_it_too(
    course, tmp_path, header, why
):
    given = tmp_path / "export.csv"
    given.write_text(header + "\nAda,101,S1,\n")
    assert refusal(lambda: platforms.canvas(course, given)) == (
        f"{given} is not a Canvas gradebook export (its columns must start Student, ID, "
        f"[SIS User ID, SIS Login ID, ...,] Section; they start {header.split(',')[:4]}): "
        "download it from Canvas (Grades > Export > Export Entire Gradebook)"
    )
    with pytest.raises(AssertionError):
        canvas_identity_columns(header.split(","))


def test_canvas_refuses_a_lab_with_no_column_or_several(course, tmp_path):
    given = tmp_path / "export.csv"
    given.write_text("Student,ID,Section,Lab 1 (4401),Homework 2 (4402)\nAda,101,S1,,\n")
    assert refusal(lambda: platforms.canvas(course, given)) == (
        "lab2_convergence ('Lab 2: The convergence bound, measured') is named by no "
        "assignment column of the export; its assignments: 'Lab 1 (4401)', 'Homework 2 "
        "(4402)'; name one with --column lab2_convergence='TITLE (ID)' (or its id alone)"
    )
    given.write_text(
        "Student,ID,Section,Lab 1 (4401),lab1_perceptron (4403),Lab 1 retake (4405),"
        "Lab 2 (4402)\nAda,101,S1,,,,\nJosé,102,S1,,,,\nGrace,103,S1,,,,\n"
    )
    assert refusal(lambda: platforms.canvas(course, given)) == (
        "lab1_perceptron ('Lab 1: Perceptron training by hand and in code') is named by 2 "
        "columns ('Lab 1 (4401)', 'lab1_perceptron (4403)'); name one with --column "
        "lab1_perceptron=..."
    )
    chosen = ["lab1_perceptron=Lab 1 retake"]  # the title alone names the column
    imported = canvas_import(
        platforms.canvas(course, given, chosen)["import"].read_text(), given.read_text()
    )
    assert set(imported["grades"]) == {"4405", "4402"}
    chosen = ["lab1_perceptron=4403"]  # and the assignment id alone
    imported = canvas_import(
        platforms.canvas(course, given, chosen)["import"].read_text(), given.read_text()
    )
    assert set(imported["grades"]) == {"4403", "4402"}
    assert refusal(lambda: platforms.canvas(course, given, ["lab1_perceptron=Lab 9"])) == (
        "--column lab1_perceptron='Lab 9' matches no assignment column of the export; its "
        "assignments: 'Lab 1 (4401)', 'lab1_perceptron (4403)', 'Lab 1 retake (4405)', "
        "'Lab 2 (4402)'; name one with --column lab1_perceptron='TITLE (ID)' (or its id alone) "
        "(nothing written; the earlier canvas-import.csv removed)"  # (issue 40, item 6)
    )
    assert not (course / platforms.CANVAS_FILE).exists()
    assert refusal(lambda: platforms.canvas(course, given, ["lab9=Lab 1 (4401)"])).startswith(
        "--column 'lab9=Lab 1 (4401)': no lab 'lab9'; the labs are lab1_perceptron, "
    )


def test_a_column_whose_title_only_holds_the_labs_label_is_never_chosen(course, tmp_path):
    """Round 5, finding 10: "Lab 6 pre-lab quiz" holds the label "Lab 6" but is another
    assignment; the lab's own column has a title of the instructor's choosing. Nothing is
    chosen without --column, and with it the lab's totals go into the lab's column alone."""
    given = tmp_path / "export.csv"
    given.write_text(
        "Student,ID,Section,Lab 1 pre-lab quiz (6001),Perceptron homework (7001),"
        "Lab 2 (7002)\nAda,101,S1,4,,\nJosé,102,S1,5,,\nGrace,103,S1,3,,\n"
    )
    message = refusal(lambda: platforms.canvas(course, given))
    assert message.startswith("lab1_perceptron ('Lab 1: Perceptron training by hand and in code')")
    assert "is named by no assignment column" in message and "--column lab1_perceptron=" in message
    assert not (course / platforms.CANVAS_FILE).exists()
    out = platforms.canvas(course, given, ["lab1_perceptron=7001"])["import"]
    imported = canvas_import(out.read_text(), given.read_text())
    assert imported["grades"] == {"7001": WANT_GRADES["4401"], "7002": WANT_GRADES["4402"]}


def test_graded_students_missing_from_the_canvas_export_are_listed_and_left_out(course, tmp_path):
    """Issue 40, item 6: a student who dropped the course is not in the gradebook export;
    the others' grades go back, and the dropped ones are named (no refusal of the class)."""
    given = tmp_path / "export.csv"
    given.write_text("Student,ID,Section,Lab 1 (4401),Lab 2 (4402)\nAda,101,S1,,\n")
    written = platforms.canvas(course, given)
    assert written["notes"] == [
        "2 graded students are not in export.csv (by ID, SIS User ID or SIS Login ID), left "
        "out of canvas-import.csv: 102, 103; a student who dropped the course stays out; one "
        "still enrolled is in a newer export (Grades > Export)"
    ]
    imported = canvas_import(written["import"].read_text(), given.read_text())
    assert imported["grades"] == {"4401": {"101": 8.5}, "4402": {"101": 4.0}}


def test_a_canvas_export_with_semicolons_goes_back_with_semicolons(course, tmp_path):
    """Issue 40, item 6: Canvas's "semicolons" setting writes the gradebook export with ";"
    (and decimal commas); it is read, and canvas-import.csv is written the same way, which
    Canvas's importer tells from a comma file by its first three lines (the checker)."""
    rows = list(csv.reader(io.StringIO(CANVAS_EXPORTS["sis"])))
    rows[1] = [cell.replace(".", ",") for cell in rows[1]]  # "11,00": decimal commas
    out = io.StringIO()
    csv.writer(out, delimiter=";", lineterminator="\n").writerows(rows)
    text = out.getvalue()
    given = tmp_path / "export.csv"
    given.write_text(text, encoding="utf-8")
    assert canvas_separator(text) == ";"
    written = platforms.canvas(course, given, COLUMNS)["import"].read_text(encoding="utf-8")
    assert canvas_separator(written) == ";"
    assert written.splitlines()[2] == "Lovelace, Ada;101;s101;ada;Section A;8.5;4"
    assert canvas_import(written, text)["grades"] == WANT_GRADES


def test_the_command_line_refuses_in_one_line(course, tmp_path, capsys):
    missing = tmp_path / "nowhere.csv"
    assert cli.main(["export", "--course", str(course), "--moodle", "w.csv"]) == 2
    assert capsys.readouterr().err == "error: --moodle WORKSHEET.csv and --lab LAB go together\n"
    assert cli.main(["export", "--course", str(course), "--column", "a=b"]) == 2
    assert capsys.readouterr().err == "error: --column goes with --canvas GRADEBOOK_EXPORT.csv\n"
    assert refusal(lambda: platforms.canvas(course, missing)) == (
        f"{missing} cannot be read (No such file or directory): download it from Canvas "
        "(Grades > Export > Export Entire Gradebook)"
    )


# Moodle's worksheet as its download writes it (fputcsv: fields with a space or a comma
# quoted), with a byte order mark, and one as a spreadsheet saves it (every field quoted)
WORKSHEET_HEADER = [
    "Identifier", "Full name", "Email address", "Status", "Grade", "Maximum Grade",
    "Grade can be changed", "Last modified (submission)", "Last modified (grade)",
    "Feedback comments",
]  # fmt: skip
WORKSHEET_ROWS = [
    ["Participant 5550001", "Ada Lovelace", "ada@example.org", "Submitted for grading", "",
     "100.00", "Yes", "Monday, 3 November 2026, 9:15 AM", "-", ""],
    ["Participant 5550002", "José Núñez, Jr.", "jose@example.org",
     "Submitted for grading - Graded", "12.00", "100.00", "Yes",
     "Tuesday, 4 November 2026, 11:02 PM", "Wednesday, 5 November 2026, 8:00 AM", "Good"],
    ["Participant 5550003", "Grace Hopper", "grace@example.org", "No submission", "",
     "100.00", "Yes", "-", "-", ""],
]  # fmt: skip


def fputcsv(rows) -> str:
    def field(text):
        return f'"{text.replace(chr(34), 2 * chr(34))}"' if set(text) & set(',"\r\n\t \\') else text

    return "".join(",".join(map(field, row)) + "\n" for row in rows)


def quote_all(rows) -> str:
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\r\n").writerows(rows)
    return out.getvalue()


MOODLE_STUDENTS = {  # student id -> participant id and exact name (as the intake keeps them)
    "ada.lovelace": {"participant": "5550001", "name": "Ada Lovelace"},
    "jose.nunez.jr-6e0c8a2b": {"participant": "5550002", "name": "José Núñez, Jr."},
}


@pytest.fixture
def moodle_course(course, monkeypatch):
    """The hand-made course with Lab 1 graded for two Moodle students (8.5 and 3 of 11),
    their participant ids and feedback pages."""
    graded, maxima = platforms.graded_totals(course)
    rows = {new: dict(graded[LAB1][old], student=new) for old, new in
            zip(("101", "102"), MOODLE_STUDENTS, strict=True)}  # fmt: skip
    monkeypatch.setattr(platforms, "graded_totals", lambda c: ({LAB1: rows}, maxima))
    intake.write_participants(course, {LAB1: MOODLE_STUDENTS})
    for student in MOODLE_STUDENTS:
        page = course / "feedback" / student / LAB1 / f"{LAB1}.html"
        page.parent.mkdir(parents=True)
        page.write_text(f"<html>feedback of {student}</html>")
    return course


@pytest.mark.parametrize("style", ["fputcsv-bom", "quote-all"])
def test_moodle_worksheet_is_filled_and_every_other_byte_kept(moodle_course, tmp_path, style):
    rows = [WORKSHEET_HEADER, *WORKSHEET_ROWS]
    text = "\ufeff" + fputcsv(rows) if style == "fputcsv-bom" else quote_all(rows)
    given = tmp_path / "Grades-Lab 1-12345.csv"
    given.write_bytes(text.encode("utf-8"))
    out = platforms.moodle(moodle_course, given, LAB1)
    assert out == {
        "worksheet": moodle_course / f"moodle-{LAB1}-worksheet.csv",
        "feedback": moodle_course / f"moodle-{LAB1}-feedback.zip",
    }
    written = out["worksheet"].read_bytes().decode("utf-8")
    assert moodle_import(written) == {
        "5550001": ("77.27", "8.5 of 11 points."),
        "5550002": ("27.27", "3 of 11 points. 2 points of your answers are not graded yet."),
        "5550003": ("", ""),
    }
    before, after = text.splitlines(keepends=True), written.splitlines(keepends=True)
    assert len(after) == len(before)
    assert after[0] == before[0] and after[3] == before[3]  # header, BOM, an ungraded row
    for k in (1, 2):  # a graded row: only its Grade and Feedback comments changed
        old, new = next(csv.reader([before[k]])), next(csv.reader([after[k]]))
        assert [o for i, o in enumerate(old) if i not in (4, 9)] == [
            n for i, n in enumerate(new) if i not in (4, 9)
        ]
        assert after[k].endswith("\r\n" if style == "quote-all" else "\n")
    if style == "fputcsv-bom":
        assert after[1].startswith('"Participant 5550001","Ada Lovelace",ada@example.org,')
    taken = moodle_zip_import(out["feedback"].read_bytes(), {"5550001", "5550002", "5550003"})
    assert taken == {"5550001": [f"{LAB1}.html"], "5550002": [f"{LAB1}.html"]}
    with zipfile.ZipFile(out["feedback"]) as zf:
        assert sorted(zf.namelist()) == [
            f"Ada Lovelace_5550001_assignsubmission_file_/{LAB1}.html",
            f"José Núñez, Jr._5550002_assignsubmission_file_/{LAB1}.html",
        ]
        assert zf.read(f"Ada Lovelace_5550001_assignsubmission_file_/{LAB1}.html") == (
            b"<html>feedback of ada.lovelace</html>"
        )


def test_moodle_grade_is_the_total_when_the_maximum_is_the_labs(moodle_course, tmp_path):
    rows = [WORKSHEET_HEADER, *[r[:5] + ["11.00"] + r[6:] for r in WORKSHEET_ROWS]]
    given = tmp_path / "worksheet.csv"
    given.write_text(fputcsv(rows))
    written = platforms.moodle(moodle_course, given, LAB1)["worksheet"].read_text()
    grades = {k: v[0] for k, v in moodle_import(written).items()}
    assert grades == {"5550001": "8.50", "5550002": "3.00", "5550003": ""}


def test_moodle_gets_the_total_after_the_late_deduction(moodle_course, tmp_path):
    """The late policy's deduction (grades.csv's adjusted_total) is what goes back: a
    Lab 1 of 8.5 points, 20 % late, is 6.8, and the comment says what was deducted."""
    graded, _ = platforms.graded_totals(moodle_course)
    words = "handed in 1.5 days after the due date, -20 % (10 % a day, started days; cap 50 %)"
    graded[LAB1]["ada.lovelace"].update(deduction="1.7", adjusted_total="6.8", late_words=words)
    # what a student must not read: the status's internal notes (issue 40, item 5)
    graded[LAB1]["ada.lovelace"]["status"] = (
        "graded; its written answers could not be matched: check it by hand; answer cell "
        "ex1-code is missing; late 1.5 days: -20 % (10 % a day, started days; cap 50 %)"
    )
    rows = [WORKSHEET_HEADER, *[r[:5] + ["11.00"] + r[6:] for r in WORKSHEET_ROWS]]
    given = tmp_path / "worksheet.csv"
    given.write_text(fputcsv(rows))
    written = platforms.moodle(moodle_course, given, LAB1)["worksheet"].read_text()
    grade, comment = moodle_import(written)["5550001"][:2]
    assert grade == "6.80"
    assert comment == (
        "6.8 of 11 points. 8.5 points earned, less 1.7 for late work: handed in 1.5 days after "
        "the due date, -20 % (10 % a day, started days; cap 50 %)."
    )


def test_moodle_submission_times_are_kept_in_the_policys_time_zone(moodle_course, tmp_path):
    """The worksheet's "Last modified (submission)" has no zone: the late policy's
    timezone gives it, and the times are kept for the late policy (labtools.course.late) for the
    graded students of the lab; without a timezone they are not used, and the export says
    so."""
    import datetime as dt

    from labtools.course import late
    from labtools.wire import Row, Status

    for student in MOODLE_STUDENTS:
        row = Row(student, LAB1, f"digest-{student}", Status.GRADED)
        path = moodle_course / "results" / student / f"{LAB1}.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(row.to_json()))
    given = tmp_path / "worksheet.csv"
    given.write_text(fputcsv([WORKSHEET_HEADER, *WORKSHEET_ROWS]))
    policy = "[penalty]\npercent_per_day = 10\n[due]\nlab1_perceptron = 2026-11-04T12:00:00Z\n"
    (moodle_course / late.POLICY).write_text(policy)
    out = platforms.moodle(moodle_course, given, LAB1)
    assert out["note"].startswith("Moodle's submission times were not used: late-policy.toml")
    assert late.read_times(moodle_course) == {}
    (moodle_course / late.POLICY).write_text('timezone = "Europe/Berlin"\n' + policy)
    out = platforms.moodle(moodle_course, given, LAB1)
    assert "note" not in out
    berlin = dt.timezone(dt.timedelta(hours=1))  # CET in November
    times = late.read_times(moodle_course)
    assert times.of("ada.lovelace", LAB1, "digest-ada.lovelace").time == dt.datetime(
        2026, 11, 3, 9, 15, tzinfo=berlin
    )
    jose = times.of("jose.nunez.jr-6e0c8a2b", LAB1, "digest-jose.nunez.jr-6e0c8a2b")
    assert jose.time == dt.datetime(2026, 11, 4, 23, 2, tzinfo=berlin)
    assert jose.source == "Moodle worksheet"
    assert set(times) == {("ada.lovelace", LAB1), ("jose.nunez.jr-6e0c8a2b", LAB1)}


def test_canvas_gets_the_total_after_the_late_deduction(course, tmp_path):
    graded, _ = platforms.graded_totals(course)
    graded[LAB1]["101"].update(deduction="1.7", adjusted_total="6.8")
    given = tmp_path / "export.csv"
    given.write_text(CANVAS_EXPORTS["sis"], encoding="utf-8")
    written = platforms.canvas(course, given, COLUMNS)["import"].read_text(encoding="utf-8")
    assert '"Lovelace, Ada",101,s101,ada,Section A,6.8,4' in written.splitlines()


def test_moodle_refusals(moodle_course, tmp_path):
    given = tmp_path / "worksheet.csv"
    given.write_text(fputcsv([WORKSHEET_HEADER[:-1], *(r[:-1] for r in WORKSHEET_ROWS)]))
    assert refusal(lambda: platforms.moodle(moodle_course, given, LAB1)) == (
        f"{given} is not Moodle's grading worksheet (no column Feedback comments): download "
        "it from the assignment (View all submissions > Download grading worksheet, with "
        "Offline grading worksheet and Feedback comments on in its feedback types)"
    )
    given.write_text(fputcsv([WORKSHEET_HEADER, *WORKSHEET_ROWS]))
    assert refusal(lambda: platforms.moodle(moodle_course, given, LAB2)) == (
        f"{moodle_course} has no graded notebook of {LAB2}: grade its Moodle download first "
        f"(`python3 tasks.py grade DOWNLOAD.zip --course {moodle_course}`)"
    )
    assert refusal(lambda: platforms.moodle(moodle_course, given, "lab9")).startswith(
        "--lab 'lab9': no such lab; the labs are lab1_perceptron, lab2_convergence"
    )
    given.write_text(fputcsv([WORKSHEET_HEADER, WORKSHEET_ROWS[0], WORKSHEET_ROWS[2]]))
    assert refusal(lambda: platforms.moodle(moodle_course, given, LAB1)) == (
        f"1 graded students of {LAB1} are not in {given}: José Núñez, Jr. (Participant "
        "5550002); is it the worksheet of the assignment whose submissions were graded? "
        "Download that one (View all submissions > Download grading worksheet) and export "
        "with it"
    )
    given.write_text(fputcsv([WORKSHEET_HEADER, *WORKSHEET_ROWS]))
    (moodle_course / "feedback" / "ada.lovelace" / LAB1 / f"{LAB1}.html").unlink()
    assert refusal(lambda: platforms.moodle(moodle_course, given, LAB1)) == (
        f"1 graded students of {LAB1} have no feedback page: ada.lovelace; write them with "
        f"`tasks.py feedback --course {moodle_course} --labs {LAB1}`"
    )
    (moodle_course / intake.PARTICIPANTS_FILE).write_text(json.dumps({LAB1: {}}))
    assert refusal(lambda: platforms.moodle(moodle_course, given, LAB1)) == (
        f"2 graded students of {LAB1} have no Moodle participant id (not graded from a "
        "Moodle download of it): ada.lovelace, jose.nunez.jr-6e0c8a2b; grade the lab's Moodle "
        "download into this course folder (`python3 tasks.py grade DOWNLOAD.zip`, with its "
        "--course), then export again"
    )
    assert not list(moodle_course.glob(f"moodle-{LAB1}-*"))


# ---------------------------------------------------------------------------------------
# A class graded once: Moodle download in, Moodle and Canvas files out, feedback checked

WRONG = {
    LAB1: {
        "ex1-code": "def pt_step(w, x, c, eta):\n    return w + eta * x\n",
        "ex2-code": "predicted_updates = 3\npredicted_w = np.array([1.0, 0.0, 0.0])\n",
        "ex2-answer": "I did not trace it.",
        "ex4-answer": "No idea.",
        "ex5-code": "eta_choice = 1.0\n",
    },
    LAB2: {
        "ex1-code": "def bound(X, c, w_star):\n    return 1.0\n",
        "ex2-code": "def measure(margin, seeds):\n    return np.ones((len(seeds), 2))\n",
        "ex3-code": "def quartered(halved):\n    return 2 * halved\n",
        "ex3-answer": "Twice as much.",
        "ex4-answer": "Because.",
    },
}
# Moodle's participant ids are made per assignment
CLASS = {  # name in the download -> participant id for Lab 1, for Lab 2; correct or not
    "Ada Lovelace": ("7000001", "8000001", True),
    "Émile Zola, Jr.": ("7000002", "8000002", False),
}


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    """Lab 1 and Lab 2 of a correct and a wrong student, handed in as Moodle's download,
    graded once for the module."""
    need_sandbox()
    tmp = tmp_path_factory.mktemp("platforms")
    download, course = tmp / "download", tmp / "grading"
    submitted = {}
    for name, (lab1, lab2, right) in CLASS.items():
        for lab, participant in ((LAB1, lab1), (LAB2, lab2)):
            nb = answered(lab) if right else answered(lab, WRONG[lab])
            folder = download / f"{name}_{participant}_assignsubmission_file_"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{lab}.ipynb").write_text(json.dumps(nb))
            submitted[(intake.moodle_student(name), lab)] = nb
    with sandbox_lock():  # made before the test's own hold of the lock (tests/conftest.py)
        summary = grade.grade(download, course_made(course), jobs=2, limits=LIMITS, progress=False)
    assert summary["layout"] == "moodle"
    return {"course": course, "submitted": submitted, "summary": summary}


def graded_rows(course) -> dict:
    with open(course / "grades.csv", newline="") as f:
        return {(r["student"], r["lab"]): r for r in csv.DictReader(f)}


@pytest.mark.slow
@pytest.mark.sandbox
def test_a_moodle_class_goes_back_into_moodle_and_canvas(graded_class, tmp_path):
    course = graded_class["course"]
    ada, emile = "ada.lovelace", intake.moodle_student("Émile Zola, Jr.")
    assert json.loads((course / intake.PARTICIPANTS_FILE).read_text()) == {
        LAB1: {ada: {"participant": "7000001", "name": "Ada Lovelace"},
               emile: {"participant": "7000002", "name": "Émile Zola, Jr."}},
        LAB2: {ada: {"participant": "8000001", "name": "Ada Lovelace"},
               emile: {"participant": "8000002", "name": "Émile Zola, Jr."}},
    }  # fmt: skip
    rows = {k: r for k, r in graded_rows(course).items() if r["status"].startswith("graded")}
    assert {k: (r["automatic"], r["manual"], r["max_score"]) for k, r in rows.items()} == {
        (ada, LAB1): ("7.0", "0.0", "11.0"),
        (emile, LAB1): ("3.0", "0.0", "11.0"),
        (ada, LAB2): ("7.0", "0.0", "10.0"),
        (emile, LAB2): ("0.0", "0.0", "10.0"),
    }
    worksheet = tmp_path / "worksheet.csv"
    header, ws_rows = WORKSHEET_HEADER, []
    for name, (_, lab2, _) in reversed(CLASS.items()):  # not the course's order
        ws_rows.append([f"Participant {lab2}", name, "x@example.org", "Submitted", "",
                        "100.00", "Yes", "-", "-", ""])  # fmt: skip
    worksheet.write_text("\ufeff" + fputcsv([header, *ws_rows]), encoding="utf-8")
    argv = ["export", "--course", str(course), "--moodle", str(worksheet), "--lab", LAB2]
    assert cli.main(argv) == 0
    written = (course / f"moodle-{LAB2}-worksheet.csv").read_text(encoding="utf-8")
    assert moodle_import(written) == {
        "8000002": (  # the written answers wait: every test has its score
            "0.00",
            "0 of 10 points. 3 points of your answers are not graded yet.",
        ),
        "8000001": ("70.00", "7 of 10 points. 3 points of your answers are not graded yet."),
    }
    data = (course / f"moodle-{LAB2}-feedback.zip").read_bytes()
    assert moodle_zip_import(data, {"8000001", "8000002"}) == {
        "8000001": [f"{LAB2}.html"],
        "8000002": [f"{LAB2}.html"],
    }
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        page = zf.read(f"Émile Zola, Jr._8000002_assignsubmission_file_/{LAB2}.html")
    assert page == (course / "feedback" / emile / LAB2 / f"{LAB2}.html").read_bytes()
    # a course graded from Moodle is never matched into Canvas, even where a Moodle id
    # equals a SIS Login ID: the ids are Moodle's (round 5, findings 9 and 11)
    export = tmp_path / "export.csv"
    export.write_text(
        "Student,ID,SIS User ID,SIS Login ID,Section,Lab 1 (51),Lab 2 (52)\n"
        f'Lovelace Ada,31,,{ada},S1,,\n"Zola, Émile",32,,{emile},S1,,\n'
    )
    with pytest.raises(UsageError, match="came from a Moodle download"):
        platforms.canvas(course, export)
    assert not (course / "canvas-import.csv").exists()


class Text(html.parser.HTMLParser):
    """The text of an HTML page as a reader sees it (no styles, no scripts)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts, self.skip = [], 0

    def handle_starttag(self, tag, attrs):
        self.skip += tag in ("style", "script")

    def handle_endtag(self, tag):
        self.skip -= tag in ("style", "script")

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(data)


def page_text(page: str) -> str:
    reader = Text()
    reader.feed(page)
    return html.unescape("".join(reader.parts))


def marked(lab: str, begin: str, end: str) -> list[str]:
    """The stripped lines between ``### BEGIN X`` and ``### END X`` in the lab's source."""
    found = []
    nb = json.loads((ROOT / "labs/source" / lab / f"{lab}.ipynb").read_text())
    for cell in nb["cells"]:
        text = "".join(cell["source"])
        for block in re.findall(rf"{begin}\n(.*?){end}", text, re.S):
            found += [line.strip() for line in block.splitlines() if line.strip()]
    return found


def all_text(nb: dict) -> str:
    return "\n".join("".join(c["source"]) for c in nb["cells"])


def revealed(text: str, lab: str, student_nb: dict) -> dict[str, list[str]]:
    """Hidden test lines and solution lines (not the student's own, nor in the student
    version) that ``text`` shows."""
    release = all_text(json.loads((ROOT / "labs/release" / lab / f"{lab}.ipynb").read_text()))
    own = all_text(student_nb)
    hidden = marked(lab, "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")
    solutions = marked(lab, "### BEGIN SOLUTION", "### END SOLUTION")
    return {
        "hidden tests": [line for line in hidden if line not in release and line in text],
        "solutions": [
            line
            for line in solutions
            if len(line) >= 12 and line not in release and line not in own and line in text
        ],
    }


@pytest.mark.slow
@pytest.mark.sandbox
@pytest.mark.parametrize("lab", [LAB1, LAB2])
def test_no_feedback_page_reveals_a_test_a_solution_or_the_grader(graded_class, lab):
    import nbformat
    from nbconvert import HTMLExporter

    course, submitted = graded_class["course"], graded_class["submitted"]
    # the check finds what it looks for: the lab's source, rendered as a page, shows both
    source_page, _ = HTMLExporter().from_notebook_node(
        nbformat.read(ROOT / "labs/source" / lab / f"{lab}.ipynb", as_version=4)
    )
    shown = revealed(page_text(source_page), lab, {"cells": []})
    assert len(shown["hidden tests"]) >= 8 and len(shown["solutions"]) >= 4, shown
    own_code = "def pt_step(w, x, c, eta):" if lab == LAB1 else "def bound(X, c, w_star):"
    visible_test = {
        LAB1: 'assert np.ndim(predicted_updates) == 0, "predicted_updates is one whole number"',
        LAB2: "assert quartered(3.0) > 3.0, ",
    }[lab]
    for student in ("ada.lovelace", intake.moodle_student("Émile Zola, Jr.")):
        page = (course / "feedback" / student / lab / f"{lab}.html").read_text()
        text = page_text(page)
        assert own_code in text and visible_test in text  # the answers and visible tests
        assert revealed(text, lab, submitted[(student, lab)]) == {
            "hidden tests": [],
            "solutions": [],
        }
        for grader in ("labtools", "the instructor's", str(course), "site-packages"):
            assert grader not in page, (student, lab, grader)
    wrong = page_text(
        (
            course / "feedback" / intake.moodle_student("Émile Zola, Jr.") / lab / f"{lab}.html"
        ).read_text()
    )
    # failed tests say why: a visible check names its kind of failure, a hidden one says
    # what it tested without a value
    assert any(kind in wrong for kind in ("AssertionError", "WrongAnswer", "NotSame"))
    assert "not what was expected (a hidden test)" in wrong


def test_a_failing_hidden_test_keeps_its_message_and_quotes_no_hidden_line():
    """Traceback lines can quote a test's source (when the source is known to linecache,
    as in IPython); the lines of hidden tests are dropped, the message stays."""
    import linecache

    from labtools.grader import verdicts

    source = "shown = 1\n### BEGIN HIDDEN TESTS\nassert shown == 2, 'shown should be 2'\n"
    name = "<cell ex9-hidden>"
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    try:
        exec(compile(source, name, "exec"), {})
    except AssertionError as err:
        caught = err
    hidden = {"### BEGIN HIDDEN TESTS", "assert shown == 2, 'shown should be 2'"}
    try:  # the traceback reads linecache as it is formatted
        quoted = verdicts.OutputBudget(10_000, 100_000).error(caught, "cell ex9-hidden")
        kept = verdicts.OutputBudget(10_000, 100_000).error(caught, "cell ex9-hidden", hidden)
    finally:
        del linecache.cache[name]
    assert any("assert shown == 2" in line for line in quoted["traceback"])  # the risk
    assert kept["evalue"] == "shown should be 2"
    assert not any("assert shown" in line or "^^^" in line for line in kept["traceback"])
    assert any('File "<cell ex9-hidden>", line 3' in line for line in kept["traceback"])


def test_the_graded_notebook_shows_a_test_cell_without_its_hidden_part():
    from labtools.grader import render

    nb = json.loads((ROOT / "labs/source" / LAB1 / f"{LAB1}.ipynb").read_text())
    test = next(c for c in nb["cells"] if "BEGIN HIDDEN" in "".join(c["source"]))
    entry = {"role": "test", "grade_id": "ex1-hidden", "source": "".join(test["source"]),
             "metadata": test["metadata"], "outputs": []}  # fmt: skip
    (cell,) = render.autograded_notebook(nb, {"cells": [entry]})["cells"]
    assert "".join(cell["source"]) == ""  # this cell is all hidden
    entry["source"] = "x = 1\n### BEGIN HIDDEN TESTS\nassert x == 1\n### END HIDDEN TESTS\n"
    (cell,) = render.autograded_notebook(nb, {"cells": [entry]})["cells"]
    assert "".join(cell["source"]) == "x = 1\n"
