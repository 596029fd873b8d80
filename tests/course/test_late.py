"""Late work (labtools.course.late): the policy file, the submission times each layout tells, and
the deduction in every table. Pure Python: the course folder's rows, gradebook and policy
are written directly, in the shapes the real code writes; nothing runs in the sandbox."""

import csv
import datetime as dt
import json
import os
import shutil
import sys
import warnings
import zipfile
from pathlib import Path

import pytest
from labtools.__main__ import main
from labtools.course import late
from labtools.door import intake, layout, timestamps
from labtools.out import export
from labtools.wire import Row, Status

LABS = ["lab1", "lab2"]
POLICY = """\
[penalty]
percent_per_day = 10
count = "started"
cap_percent = 50
grace_minutes = 15
unknown_late_days = 1

[due]
lab1 = 2026-02-06T23:59:00+01:00
lab2 = "2026-02-13T23:59:00+01:00"

[[extension]]
student = "bea"
lab = "lab1"
days = 2

[[extension]]
student = "cy"
due = 2026-02-20T12:00:00Z

[[extension]]
student = "cy"
lab = "lab2"
days = 1

[[override]]
student = "dan"
lab = "lab1"
percent = 0
reason = "doctor's note"

[[override]]
student = "eve"
lab = "lab1"
points = 1.5
"""
DUE = dt.datetime(2026, 2, 6, 23, 59, tzinfo=dt.timezone(dt.timedelta(hours=1)))
RULE = "(10 % a day, started days; cap 50 %)"
MINUTE, HOUR, DAY = (dt.timedelta(minutes=1), dt.timedelta(hours=1), dt.timedelta(days=1))


@pytest.fixture(autouse=True)
def _bin_on_path(monkeypatch):
    """This environment's bin folder on PATH: nbgrader's gradebook runs alembic by name."""
    path = os.environ.get("PATH", "")
    monkeypatch.setenv("PATH", os.pathsep.join([os.path.dirname(sys.executable), path]))


def policy(text=POLICY):
    return late.parse(text, LABS)


def at(when, source="timestamp.txt"):
    return timestamps.Submitted(when, source=source)


def assess(student, when, total=8.0, lab="lab1", text=POLICY):
    got = late.assess(student, lab, total, policy(text), when)
    return got.percent, got.deduction, got.note


# --- the deduction ---------------------------------------------------------------------


def test_on_time_and_within_the_grace_period_nothing_is_deducted():
    assert assess("ada", at(DUE)) == (0.0, 0.0, "")
    assert assess("ada", at(DUE - DAY)) == (0.0, 0.0, "")
    assert assess("ada", at(DUE + 10 * MINUTE)) == (
        0.0,
        0.0,
        "submitted 10 minutes after the due date, within the 15-minute grace period: "
        "nothing deducted",
    )
    assert assess("ada", None) == (0.0, 0.0, "")  # no time known: taken as on time


def test_a_minute_late_is_a_started_day():
    assert assess("ada", at(DUE + 16 * MINUTE)) == (10.0, 0.8, f"late 16 minutes: -10 % {RULE}")
    no_grace = POLICY.replace("grace_minutes = 15", "grace_minutes = 0")
    assert assess("ada", at(DUE + MINUTE), text=no_grace) == (
        10.0,
        0.8,
        f"late 1 minute: -10 % {RULE}",
    )
    assert late.assess("ada", "lab1", 8.0, policy(no_grace), at(DUE + MINUTE)).days == 1 / 1440


def test_a_day_and_a_half_late_counts_two_started_days_or_one_and_a_half():
    assert assess("ada", at(DUE + 36 * HOUR)) == (20.0, 1.6, f"late 1.5 days: -20 % {RULE}")
    fractional = POLICY.replace('count = "started"', 'count = "fractional"')
    assert assess("ada", at(DUE + 36 * HOUR), text=fractional) == (
        15.0,
        1.2,
        "late 1.5 days: -15 % (10 % a day, fractional days; cap 50 %)",
    )
    assert assess("ada", at(DUE + 5 * HOUR)) == (10.0, 0.8, f"late 5.0 hours: -10 % {RULE}")


def test_the_cap_holds_past_it():
    assert assess("ada", at(DUE + 9 * DAY)) == (50.0, 4.0, f"late 9.0 days: -50 % {RULE}")
    assert assess("ada", at(DUE + 300 * DAY), total=0.0) == (
        50.0,
        0.0,
        f"late 300.0 days: -50 % {RULE}",
    )


def test_an_extension_by_days_moves_the_due_date():
    assert assess("bea", at(DUE + 36 * HOUR)) == (
        0.0,
        0.0,
        "submitted 1.5 days after the due date, within the extension (2 days): nothing deducted",
    )
    assert assess("bea", at(DUE - HOUR)) == (0.0, 0.0, "")
    assert assess("bea", at(DUE + 60 * HOUR)) == (
        10.0,
        0.8,
        f"late 12.0 hours after the extended due date: -10 % {RULE}",
    )
    assert assess("bea", at(DUE + 60 * HOUR), lab="lab2") == (0.0, 0.0, "")  # lab1's only


def test_an_extension_by_date_for_every_lab_and_one_for_a_lab_that_wins():
    new_due = dt.datetime(2026, 2, 20, 12, tzinfo=dt.UTC)
    assert assess("cy", at(new_due - HOUR))[:2] == (0.0, 0.0)
    assert assess("cy", at(new_due - HOUR))[2].endswith(
        "within the extension (to 2026-02-20 12:00 UTC): nothing deducted"
    )
    assert assess("cy", at(new_due + DAY))[:2] == (10.0, 0.8)
    # cy's lab2 extension (one day after lab2's own due date) wins over the one for every lab
    lab2_due = dt.datetime(2026, 2, 14, 23, 59, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert assess("cy", at(lab2_due - MINUTE), lab="lab2")[:2] == (0.0, 0.0)
    assert assess("cy", at(lab2_due + HOUR), lab="lab2")[:2] == (10.0, 0.8)
    assert policy().due_for("cy", "lab2") == (lab2_due, True)


def test_an_override_wins_and_says_so():
    assert assess("dan", at(DUE + 3 * DAY)) == (
        0.0,
        0.0,
        "late 3.0 days: penalty set by hand: -0 % (doctor's note)",
    )
    assert assess("dan", None) == (0.0, 0.0, "penalty set by hand: -0 % (doctor's note)")
    assert assess("eve", at(DUE)) == (18.75, 1.5, "penalty set by hand: -1.5 points")
    assert assess("eve", at(DUE), total=1.0)[:2] == (100.0, 1.0)  # never below zero


def test_a_canvas_late_mark_without_a_time_counts_as_unknown_late_days():
    mark = timestamps.Submitted(late=True, source="Canvas")
    assert assess("ada", mark) == (
        10.0,
        0.8,
        f"marked late by Canvas, time unknown (counted as 1 day after the due date): -10 % {RULE}",
    )
    two = POLICY.replace("unknown_late_days = 1", "unknown_late_days = 2")
    assert assess("ada", mark, text=two)[:2] == (20.0, 1.6)
    no_due = POLICY.replace('lab2 = "2026-02-13T23:59:00+01:00"\n', "")
    assert assess("ada", mark, lab="lab2", text=no_due) == (
        0.0,
        0.0,
        "marked late by Canvas, time unknown; lab2 has no due date in late-policy.toml: "
        "nothing deducted",
    )
    assert late.assess("ada", "lab1", 8.0, None, mark).note == (
        "marked late by Canvas (no late-policy.toml: nothing deducted)"
    )


def test_an_extension_covers_a_late_mark_without_a_time():
    """Issue 40, item 3: a mark counts unknown_late_days after the due date, less the days
    of the student's extension: bea's 2 days cover the 1 day, and the status says so;
    with 3 days of marks, 1 is left; cy's extension to a date covers lab1 too."""
    mark = timestamps.Submitted(late=True, source="Canvas")
    assert assess("bea", mark) == (
        0.0,
        0.0,
        "marked late by Canvas, time unknown (counted as 1 day after the due date, within "
        "the extension (2 days)): nothing deducted",
    )
    got = late.assess("bea", "lab1", 8.0, policy(), mark)
    assert got.days is None and got.words == "handed in within your extension (2 days)"
    three = POLICY.replace("unknown_late_days = 1", "unknown_late_days = 3")
    assert assess("bea", mark, text=three) == (
        10.0,
        0.8,
        "marked late by Canvas, time unknown (counted as 3 days after the due date, 2 of them "
        f"covered by the extension): -10 % {RULE}",
    )
    assert assess("cy", mark)[:2] == (0.0, 0.0)  # 13 days to 2026-02-20
    assert assess("ada", mark)[:2] == (10.0, 0.8)  # no extension: as before


def test_an_extension_or_override_for_a_student_with_no_submission_is_named():
    lines = policy().unknown_students({"ada", "bea", "dan", "eve", "cyy"}, "grading")
    assert lines == [
        "late-policy.toml, line 18: [[extension]] 2 is for student cy, who has no submission "
        "in grading: check the id (a Canvas user id is the number after the name in the "
        "download's file names); the nearest ids: cyy",
        "late-policy.toml, line 22: [[extension]] 3 is for student cy, who has no submission "
        "in grading: check the id (a Canvas user id is the number after the name in the "
        "download's file names); the nearest ids: cyy",
    ]


def test_the_row_gets_its_columns_and_only_a_graded_row_is_assessed():
    row = {"student": "ada", "lab": "lab1", "total": 8.0, "status": "graded"}
    out = late.adjust(row, policy(), at(DUE + 36 * HOUR))
    assert out == {
        "submitted": "2026-02-08T10:59:00+00:00",
        "late_days": 1.5,
        "penalty_percent": 20.0,
        "deduction": 1.6,
        "adjusted_total": 6.4,
        "status": f"graded; late 1.5 days: -20 % {RULE}",
        "late_words": f"handed in 1.5 days after the due date, -20 % {RULE}",
    }
    assert late.total_after(row, policy(), at(DUE + 36 * HOUR)) == 6.4
    missing = dict(row, total=0.0, status=Status.MISSING.value)
    assert late.adjust(missing, policy(), at(DUE + 9 * DAY))["status"] == "missing"
    assert late.total_after(row, None, at(DUE + 9 * DAY)) == 8.0  # no policy, no deduction


# --- nbgrader's timestamp.txt, read by the intake --------------------------------------


def nbgrader_stamp(when):
    """The text nbgrader's exchange writes: datetime.now(gettz(timezone)).strftime(format),
    with its defaults (timezone "UTC", timestamp_format "%Y-%m-%d %H:%M:%S.%f %Z")."""
    from nbgrader.exchange.abc.exchange import Exchange

    timestamp_format = Exchange.class_traits()["timestamp_format"].default_value
    assert timestamp_format == timestamps.NBGRADER_FORMAT
    # nbgrader's gettz("UTC") (dateutil) names its zone "UTC", as the standard library's does
    return when.astimezone(dt.UTC).strftime(timestamp_format)


def folders(tmp_path, stamps):
    """A folders-layout download: <student>/lab1/lab1.ipynb, with timestamp.txt beside."""
    root = tmp_path / "submitted"
    for student, text in stamps.items():
        (root / student / "lab1").mkdir(parents=True)
        (root / student / "lab1" / "lab1.ipynb").write_text("{}")
        if text is not None:
            (root / student / "lab1" / "timestamp.txt").write_text(text)
    return tmp_path


def test_the_intake_reads_nbgraders_timestamp_exactly(tmp_path):
    from nbgrader.utils import parse_utc

    when = dt.datetime(2026, 2, 7, 9, 30, 15, 123456, tzinfo=dt.UTC)
    text = nbgrader_stamp(when)
    assert text == "2026-02-07 09:30:15.123456 UTC"
    taken = intake.collect(folders(tmp_path, {"ada": text, "bea": None}), ["lab1"], tmp_path, LABS)
    assert taken.unplaced == []  # timestamp.txt is not "a file no row holds"
    got = taken.times[("ada", "lab1")]
    assert (got.time, got.source, got.problem) == (when, "timestamp.txt", "")
    assert got.time.replace(tzinfo=None) == parse_utc(text)  # as nbgrader reads it (UTC)
    assert ("bea", "lab1") not in taken.times
    for other in (
        "2026-02-07 10:30:15.123456+01:00",
        "2026-02-07 04:30:15.123456 America/New_York",
    ):
        assert timestamps.parse_timestamp(other) == when, other
        assert when.replace(tzinfo=None) == parse_utc(other), other
    # an offset as strftime's %z writes it: one hour (nbgrader's parse_utc takes +0100 as
    # 100 seconds, dateutil's reading of an int)
    assert timestamps.parse_timestamp("2026-02-07 10:30:15.123456 +0100") == when


def test_the_intake_reads_the_timestamp_from_a_zip_too(tmp_path):
    text = nbgrader_stamp(DUE + DAY)
    archive = tmp_path / "download.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("submitted/ada/lab1/lab1.ipynb", "{}")
        z.writestr("submitted/ada/lab1/timestamp.txt", text)
    work = tmp_path / "work"
    work.mkdir()
    taken = intake.collect(archive, ["lab1"], work, LABS)
    assert taken.times[("ada", "lab1")].time == DUE + DAY and taken.unplaced == []


@pytest.mark.parametrize(
    "text, why",
    [
        ("06/02/2026 23:59", "'06/02/2026 23:59' is not nbgrader's %Y-%m-%d %H:%M:%S.%f %Z"),
        ("2026-07-07 09:30:15.000000 CEST", "no time zone is named 'CEST'"),
        ("", "is not nbgrader's"),
    ],
)
def test_a_timestamp_in_another_format_is_a_note_and_nothing_deducted(tmp_path, text, why):
    taken = intake.collect(folders(tmp_path, {"ada": text}), ["lab1"], tmp_path, LABS)
    got = taken.times[("ada", "lab1")]
    assert got.time is None and why in got.problem
    assert [s.refused for s in taken.submissions] == [None]  # graded all the same
    row = {"student": "ada", "lab": "lab1", "total": 8.0, "status": "graded"}
    out = late.adjust(row, policy(), got)
    assert out["deduction"] == 0.0 and out["adjusted_total"] == 8.0
    assert out["status"].startswith("graded; timestamp.txt is not a time: ")
    assert out["status"].endswith(": lateness unknown, nothing deducted")


def test_a_canvas_late_mark_is_kept_as_late_without_a_time(tmp_path):
    archive = tmp_path / "canvas.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("doejane_LATE_12345_678_lab1.ipynb", "{}")
        z.writestr("roeann_222_679_lab1.ipynb", "{}")
    work = tmp_path / "work"
    work.mkdir()
    taken = intake.collect(archive, ["lab1"], work, LABS)
    assert taken.layout == "canvas" and taken.late == ["12345/lab1"]
    assert taken.times == {("12345", "lab1"): timestamps.Submitted(late=True, source="Canvas")}


# --- the policy file, refused entry by entry ---------------------------------------------


def replaced(old, new):
    assert old in POLICY
    return POLICY.replace(old, new)


BAD = [
    (replaced("= 10\n", '= "ten"\n'), 2, "penalty.percent_per_day is not a number (got 'ten')"),
    (replaced('"started"', '"whole"'), 3, "penalty.count is 'started' or 'fractional'"),
    (replaced("cap_percent = 50", "cap_percent = 150"), 4, "penalty.cap_percent must be from 0"),
    (replaced("grace_minutes = 15", "grace_minutes = -1"), 5, "penalty.grace_minutes must be"),
    (replaced("grace_minutes", "grace_minute"), 5, "penalty.grace_minute is not a setting"),
    (POLICY.replace("[penalty]", "[penalties]"), 1, "penalties is not a setting"),
    (replaced("lab1 = 2026", "lab9 = 2026"), 9, "due.lab9 names no lab (got 'lab9'; the labs"),
    (
        replaced("23:59:00+01:00\n", "23:59:00\n"),
        9,
        "due.lab1 has no time zone (2026-02-06T23:59:00)",
    ),
    (replaced('"2026-02-13T23:59:00+01:00"', '"next friday"'), 10, "due.lab2 is not an ISO 8601"),
    (replaced('student = "bea"\n', ""), 12, "[[extension]] 1: student is missing"),
    (
        replaced('student = "bea"', 'student = "b e a"'),
        13,
        "[[extension]] 1: student is not a student id",
    ),
    (
        replaced('lab = "lab1"\ndays = 2', 'lab = "lab7"\ndays = 2'),
        14,
        "[[extension]] 1: lab names no lab",
    ),
    (
        replaced("days = 2", "days = -2"),
        15,
        "[[extension]] 1: days must be from 0 to 3650 (got -2)",
    ),
    # round 5, finding 16: a huge or endless extension is the parser's refusal, not export's
    (
        replaced("days = 2", "days = 4000000"),
        15,
        "[[extension]] 1: days must be from 0 to 3650 (got 4000000)",
    ),
    (replaced("days = 2", "days = inf"), 15, "[[extension]] 1: days must be from 0 to 3650"),
    (replaced("grace_minutes = 15", "grace_minutes = inf"), 5, "penalty.grace_minutes must be"),
    (
        replaced("unknown_late_days = 1", "unknown_late_days = 1e300"),
        6,
        "penalty.unknown_late_days must be from 0 to 3650",
    ),
    (replaced("points = 1.5", "points = nan"), 35, "[[override]] 2: points is not a number"),
    (
        replaced("lab1 = 2026-02-06T23:59:00+01:00", "lab1 = 9999-12-31T23:59:59-23:59"),
        9,
        "due.lab1 is outside the years 1970-2100",
    ),
    (
        replaced("due = 2026-02-20T12:00:00Z", "due = 0001-01-01T00:00:00+00:01"),
        19,
        "[[extension]] 2: due is outside the years 1970-2100",
    ),
    (
        replaced("days = 2", "days = 2\ndue = 2026-02-09T00:00:00Z"),
        15,
        "[[extension]] 1: days or due: give exactly one",
    ),
    (
        replaced("due = 2026-02-20T12:00:00Z", "due = 2026-02-20"),
        19,
        "[[extension]] 2: due is not a date and time",
    ),
    (
        replaced('lab = "lab2"\ndays = 1', "days = 1"),
        22,
        "[[extension]] 3: student cy has two extensions for every lab",
    ),
    (
        replaced('lab = "lab1"\npercent = 0', "percent = 0"),
        26,
        "[[override]] 1: lab is missing (an override is for one lab)",
    ),
    (
        replaced("percent = 0", "percent = 120"),
        29,
        "[[override]] 1: percent must be from 0 to 100 (got 120)",
    ),
    (
        replaced("points = 1.5", "points = 1.5\npercent = 5"),
        36,
        "[[override]] 2: percent or points: give exactly one",
    ),
    (
        replaced('student = "eve"', 'student = "dan"'),
        33,
        "[[override]] 2: student dan has two overrides for lab1",
    ),
    (
        replaced('reason = "doctor\'s note"', "reason = 3"),
        30,
        "[[override]] 1: reason is not text (got 3)",
    ),
    (replaced("reason =", "why ="), 30, "[[override]] 1: why is not a setting"),
    ("[due]\nlab1 = 2026-02-06T23:59:00Z\n", None, "[penalty] is missing"),
    ("[penalty]\ncap_percent = 50\n", 1, "[penalty] has no percent_per_day"),
    ("extension = 3\n[penalty]\npercent_per_day = 1\n", 1, "extension is a list"),
    ('timezone = "CEST"\n[penalty]\npercent_per_day = 1\n', 1, "timezone is a time zone name"),
    ("timezone = 1\n[penalty]\npercent_per_day = 1\n", 1, "timezone is a time zone name"),
]


@pytest.mark.parametrize("text, line, why", BAD, ids=[b[2][:40] for b in BAD])
def test_each_malformed_entry_is_refused_with_its_line(text, line, why):
    with pytest.raises(layout.UsageError) as refused:
        late.parse(text, LABS)
    message = str(refused.value)
    at = f", line {line}" if line else ""
    assert message.startswith(f"late-policy.toml{at}: "), message
    assert why in message and "\n" not in message


def test_a_file_that_is_not_toml_is_refused_with_tomllibs_line():
    with pytest.raises(layout.UsageError) as refused:
        late.parse(POLICY.replace("cap_percent = 50", "cap_percent = "), LABS)
    assert str(refused.value).startswith("late-policy.toml: not TOML: ")
    assert "line 4" in str(refused.value) and "\n" not in str(refused.value)


# --- the tables ----------------------------------------------------------------------


TOTALS = {("ada", "lab1"): 8, ("ada", "lab2"): 6, ("dan", "lab1"): 8}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """A course folder as ``grade`` leaves it (made once: nbgrader's gradebook takes
    seconds to make): two labs, the gradebook with one 10-point cell a lab, a results row
    per (student, lab) of :data:`TOTALS`, with digest ``<student>-<lab>``."""
    path = os.environ.get("PATH", "")
    os.environ["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), path])
    try:
        return make_course(tmp_path_factory.mktemp("late"), TOTALS)
    finally:
        os.environ["PATH"] = path


@pytest.fixture
def course(graded, tmp_path):
    return Path(shutil.copytree(graded, tmp_path / "grading"))


def make_course(tmp_path, totals, maximum=10.0):
    from nbgrader.api import Gradebook

    course = tmp_path / "grading"
    for lab in LABS:
        (course / "source" / lab).mkdir(parents=True)
        (course / "source" / lab / f"{lab}.ipynb").write_text("{}")
    (course / layout.MARK).write_text(json.dumps({"course": layout.COURSE, "sources": {}}))
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb, warnings.catch_warnings():
        # nbgrader's add_submission makes SQLAlchemy warn about its own session (harmless)
        warnings.simplefilter("ignore", category=Warning)
        for lab in LABS:
            gb.add_assignment(lab)
            gb.add_notebook(lab, lab)
            gb.add_grade_cell("ex1", lab, lab, max_score=maximum, cell_type="code")
        for (student, lab), total in totals.items():
            gb.update_or_create_student(student)
            gb.add_submission(lab, student)
            gb.find_grade("ex1", lab, lab, student).auto_score = total
            gb.db.commit()
            row = Row(student, lab, f"{student}-{lab}", Status.GRADED)
            path = course / "results" / student / f"{lab}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(row.to_json(), indent=1))
    return course


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_grades_csv_and_grades_wide_csv_carry_the_deduction(course):
    (course / late.POLICY).write_text(POLICY)
    late.record_times(
        course,
        {
            ("ada", "lab1"): at(DUE + 36 * HOUR),  # digest from ada's row
            ("ada", "lab2"): timestamps.Submitted(late=True, source="Canvas"),
            ("dan", "lab1"): at(DUE + 3 * DAY),
        },
    )
    paths = export.export(course)
    rows = {(r["student"], r["lab"]): r for r in read(paths["grades"])}
    assert list(rows["ada", "lab1"]) == [
        "student", "name", "lab", "automatic", "manual", "waiting", "total", "max_score",
        "submitted", "late_days", "penalty_percent", "deduction", "adjusted_total", "status",
        "review",
    ]  # fmt: skip
    got = {
        k: [r[c] for c in ("total", "late_days", "deduction", "adjusted_total")]
        for k, r in rows.items()
    }
    assert got == {
        ("ada", "lab1"): ["8.0", "1.5", "1.6", "6.4"],
        ("ada", "lab2"): ["6.0", "1.0", "0.6", "5.4"],
        ("dan", "lab1"): ["8.0", "3.0", "0.0", "8.0"],
        ("dan", "lab2"): ["0.0", "", "0.0", "0.0"],
    }  # fmt: skip
    assert rows["ada", "lab1"]["status"] == f"graded; late 1.5 days: -20 % {RULE}"
    assert rows["ada", "lab2"]["submitted"] == "late, time unknown"
    assert rows["dan", "lab1"]["status"].endswith("penalty set by hand: -0 % (doctor's note)")
    assert rows["dan", "lab2"]["status"] == "missing"
    wide = {r["student"]: r for r in read(paths["wide"])}
    assert wide["ada"] == {
        "student": "ada",
        "name": "",
        "lab1": "6.4",
        "lab2": "5.4",
        "total": "11.8",
        "max_score": "20.0",
    }
    assert wide["dan"]["lab1"] == "8.0"
    # the policy changes after grading: the next export counts with the new one
    (course / late.POLICY).write_text(POLICY.replace("percent_per_day = 10", "percent_per_day = 5"))
    rows = {(r["student"], r["lab"]): r for r in read(export.export(course)["grades"])}
    assert rows["ada", "lab1"]["adjusted_total"] == "7.2"
    # without a policy file, nothing is deducted and the wide table has the totals
    (course / late.POLICY).unlink()
    wide = {r["student"]: r for r in read(export.export(course)["wide"])}
    assert (wide["ada"]["lab1"], wide["ada"]["total"]) == ("8.0", "14.0")


def test_a_time_kept_for_another_notebook_is_not_used(course):
    (course / late.POLICY).write_text(POLICY)
    late.record_times(course, {("ada", "lab1"): timestamps.Submitted(DUE + 9 * DAY, digest="old")})
    row = read(export.export(course)["grades"])[0]
    assert (row["deduction"], row["adjusted_total"], row["status"]) == ("0.0", "8.0", "graded")
    assert late.read_times(course).of("ada", "lab1", "ada-lab1") is None
    late.record_times(course, {("ada", "lab1"): at(DUE + 9 * DAY)})  # the row's digest
    assert late.read_times(course).of("ada", "lab1", "ada-lab1").digest == "ada-lab1"
    with pytest.raises(ValueError, match="has no time zone"):
        late.record_times(course, {("ada", "lab1"): at(dt.datetime(2026, 2, 7))})


def test_export_refuses_a_malformed_policy_in_one_line(course, capsys):
    (course / late.POLICY).write_text(replaced("days = 2", "days = -2"))
    assert main(["export", "--course", str(course)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"error: {course / late.POLICY}, line 15: [[extension]] 1: days must be from 0 to 3650 "
        "(got -2)\n"
    )
    assert not (course / "grades.csv").exists()


def test_grade_keeps_the_time_of_the_notebook_it_grades_or_kept(tmp_path, monkeypatch):
    """``grade`` itself (the workers, the gradebook and the tables left out): the time is
    kept with the notebook's digest, read again for an unchanged notebook, and not taken
    from a changed one that is not graded again."""
    import hashlib

    from labtools import grade

    lab = layout.lab_names()[0]
    monkeypatch.setattr(grade.schedule, "run", lambda *args, **kwargs: [])
    monkeypatch.setattr(grade.courses, "open_course", lambda course, **_: None)
    monkeypatch.setattr(grade, "export", lambda course: {})
    course = tmp_path / "grading"
    (course / "source" / lab).mkdir(parents=True)
    (course / "source" / lab / f"{lab}.ipynb").write_text("{}")
    (course / layout.MARK).write_text(json.dumps({"course": layout.COURSE, "sources": {}}))
    folder = tmp_path / "download" / "ada" / lab
    folder.mkdir(parents=True)

    def hand_in(notebook, when):
        (folder / f"{lab}.ipynb").write_text(notebook)
        (folder / "timestamp.txt").write_text(nbgrader_stamp(when))
        grade.grade(tmp_path / "download", course, unsafe=True, progress=False)
        return late.read_times(course)[("ada", lab)]

    kept = hand_in("{}", DUE + DAY)
    assert (kept.time, kept.digest) == (DUE + DAY, hashlib.sha256(b"{}").hexdigest())
    row = Row("ada", lab, kept.digest, Status.GRADED)  # as if graded
    (course / "results" / "ada").mkdir(parents=True)
    (course / "results" / "ada" / f"{lab}.json").write_text(json.dumps(row.to_json()))
    assert hand_in("{}", DUE + 2 * DAY).time == DUE + 2 * DAY  # fixed: read again
    assert hand_in('{"cells": []}', DUE + 5 * DAY).time == DUE + 2 * DAY  # changed: not graded
