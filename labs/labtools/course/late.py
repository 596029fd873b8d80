"""Late work: the course's policy file, the submission times, and the deduction.

The policy is ``late-policy.toml`` in the course folder (:data:`POLICY`; read with the
standard library's ``tomllib``; no file, no policy)::

    timezone = "Europe/Berlin"  # of a platform's times that carry none (Moodle's worksheet);
                                # optional, and above the first table
    [penalty]
    percent_per_day = 10      # of the score earned
    count = "started"         # each day begun counts whole; or "fractional"
    cap_percent = 50          # never more than this (default 100)
    grace_minutes = 15        # this late is on time (default 0)
    unknown_late_days = 1     # a platform's late mark that has no time (default 1)

    [due]                     # a lab without a due date has no penalty
    lab1_perceptron = 2026-02-06T23:59:00+01:00

    [[extension]]             # per student, one lab or (no `lab`) every lab
    student = "12345"
    lab = "lab1_perceptron"
    days = 2                  # or: due = 2026-02-10T23:59:00+01:00

    [[override]]              # a penalty set by hand, which wins
    student = "222"
    lab = "lab1_perceptron"
    percent = 0               # or: points = 1.5
    reason = "doctor's note"

A submission's time comes from what its layout tells (:mod:`labtools.door.intake`, a
:class:`~labtools.door.timestamps.Submitted` each): the ``timestamp.txt`` that nbgrader writes
beside a submission (:func:`labtools.door.timestamps.read_timestamp`), or Canvas's late mark
(``_LATE`` or ``_late``), which has no time: it counts as ``unknown_late_days`` after the
due date, less the days of the student's extension (an extension of at least that many
days covers it). ``grade`` keeps them in the course folder's :data:`TIMES` with the digest
of the notebook graded, and any other source (a Moodle worksheet's "Last modified") adds
its own through :func:`record_times`. ``export`` applies the policy to every row
(:func:`adjust`), so a changed policy counts from the next export on; :func:`total_after`
is the score after it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import re
import tomllib
import zoneinfo
from dataclasses import dataclass, field
from pathlib import Path

from labtools.course import folder as courses
from labtools.door import layout
from labtools.door.layout import UsageError
from labtools.door.timestamps import YEARS, Submitted, checked
from labtools.wire import Status

POLICY = "late-policy.toml"
TIMES = "submission-times.json"  # "<student>/<lab>" -> a Submitted, as JSON
COUNTS = ("started", "fractional")
MAX_DAYS = 3650  # an extension, or the days a late mark without a time counts, at most
MAX_GRACE = 7 * 24 * 60  # minutes of grace, at most (a week)
# the columns grades.csv has from adjust(), after its others
COLUMNS = ["submitted", "late_days", "penalty_percent", "deduction", "adjusted_total", "status"]
PENALTY_KEYS = {
    "percent_per_day",
    "count",
    "cap_percent",
    "grace_minutes",
    "unknown_late_days",
}


@dataclass
class Policy:
    """A course's late policy (see the module)."""

    percent_per_day: float
    count: str = "started"
    cap_percent: float = 100.0
    grace_minutes: float = 0.0
    unknown_late_days: float = 1.0
    due: dict[str, dt.datetime] = field(default_factory=dict)
    # (student, lab or None for every lab) -> ("days", n) or ("due", datetime)
    extensions: dict[tuple[str, str | None], tuple[str, object]] = field(default_factory=dict)
    # (student, lab) -> ("percent" or "points", value, reason)
    overrides: dict[tuple[str, str], tuple[str, float, str]] = field(default_factory=dict)
    name: str = POLICY
    timezone: str | None = None  # of a platform's times that carry none (Moodle's worksheet)
    # each [[extension]] and [[override]]: (kind, its number from 1, student, its line)
    entries: list[tuple[str, int, str, int | None]] = field(default_factory=list)

    def rule(self) -> str:
        """The rule in words: "10 % a day, started days; cap 50 %"."""
        return f"{self.percent_per_day:g} % a day, {self.count} days; cap {self.cap_percent:g} %"

    def due_for(self, student: str, lab: str) -> tuple[dt.datetime | None, bool]:
        """The due date of ``lab`` for ``student`` (None: the lab has none), and whether an
        extension moved it (one for the lab wins over one for every lab)."""
        due = self.due.get(lab)
        extension = self.extensions.get((student, lab)) or self.extensions.get((student, None))
        if due is None or extension is None:
            return due, False
        kind, value = extension
        return (value if kind == "due" else due + dt.timedelta(days=value)), True

    def extension_days(self, student: str, lab: str) -> float:
        """How many days the student's extension adds to the lab's due date (0: none, or a
        lab without a due date; an extension to an earlier date adds none)."""
        due, extended = self.due_for(student, lab)
        if not extended:
            return 0.0
        return max(0.0, (due - self.due[lab]).total_seconds() / 86400)

    def unknown_students(self, students: set[str], course: str) -> list[str]:
        """A line for each extension or override whose student the course folder has no
        row of (``students``): an id mistyped, or a student who handed nothing in yet."""
        import difflib

        lines = []
        for kind, number, student, line in self.entries:
            if student in students:
                continue
            near = difflib.get_close_matches(student, sorted(students), n=3, cutoff=0.6)
            at = f", line {line}" if line else ""
            lines.append(
                f"{self.name}{at}: [[{kind}]] {number} is for student {student}, who has no "
                f"submission in {course}: check the id (a Canvas user id is the number after "
                "the name in the download's file names)"
                + (f"; the nearest ids: {', '.join(near)}" if near else "")
            )
        return lines


# ---------------------------------------------------------------------------------------
# The policy file


class _Refusal(Exception):
    def __init__(self, entry: str, why: str, line: int | None = None):
        super().__init__(entry, why, line)
        self.entry, self.why, self.line = entry, why, line


def _header_lines(text: str) -> list[tuple[int, str]]:
    """(line number, table name) of each ``[table]`` or ``[[table]]`` header."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        match = re.match(r"\s*\[\[?\s*([A-Za-z0-9_.\"' -]+?)\s*\]\]?", line)
        if match:
            found.append((number, match[1].strip("\"' ")))
    return found


def _line_of(text: str, table: str, index: int | None, key: str | None) -> int | None:
    """The line of ``key`` in ``table`` (its ``index``-th one for ``[[table]]``), or of the
    table's header without ``key``; None when the file is written otherwise (dotted keys,
    inline tables)."""
    lines = text.splitlines()
    headers = _header_lines(text)
    starts = [n for n, name in headers if name == table]
    if not starts:  # a top-level key, before the first table
        first = headers[0][0] if headers else len(lines) + 1
        keys = (re.match(r"\s*([A-Za-z0-9_-]+)\s*=", line) for line in lines[: first - 1])
        return next((n for n, m in enumerate(keys, 1) if m and m[1] == table), None)
    start = starts[index or 0] if len(starts) > (index or 0) else None
    if start is None:
        return None
    if key is None:
        return start
    end = next((n for n, _ in headers if n > start), len(lines) + 1)
    for number in range(start + 1, end):
        match = re.match(r"\s*[\"']?([^\"'=\s]+)[\"']?\s*=", lines[number - 1])
        if match and match[1] == key:
            return number
    return start


def _number(value, entry: str, *, low: float = 0.0, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise _Refusal(entry, f"is not a number (got {value!r})")
    if not low <= value <= high:  # inf too
        raise _Refusal(entry, f"must be from {low:g} to {high:g} (got {value!r})")
    return float(value)


def _time(value, entry: str) -> dt.datetime:
    """A TOML date-time with an offset, or an ISO 8601 string with one."""
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value)
        except ValueError:
            raise _Refusal(entry, f"is not an ISO 8601 date and time (got {value!r})") from None
    if not isinstance(value, dt.datetime):
        raise _Refusal(entry, f"is not a date and time (got {value!r})")
    if value.tzinfo is None or value.utcoffset() is None:
        raise _Refusal(entry, f"has no time zone ({value.isoformat()}): add one, e.g. +01:00")
    try:
        checked(value, "")
    except ValueError:
        raise _Refusal(entry, f"is outside the years {YEARS[0]}-{YEARS[1]} (got {value})") from None
    return value


def _student(value, entry: str) -> str:
    if not isinstance(value, str) or not layout.valid_student(value):
        raise _Refusal(entry, f"is not a student id (got {value!r})")
    return value


def _lab(value, entry: str, labs: list[str]) -> str:
    if value not in labs:
        raise _Refusal(entry, f"names no lab (got {value!r}; the labs are {', '.join(labs)})")
    return value


def _unknown(table: dict, allowed: set[str], where: str, line) -> None:
    for key in table:
        if key not in allowed:
            raise _Refusal(
                f"{where}{key}",
                f"is not a setting (known: {', '.join(sorted(allowed))})",
                line(key),
            )


def parse(text: str, labs: list[str], name: str = POLICY) -> Policy:
    """The policy in ``text``; a UsageError of one line naming ``name``, the line and the
    entry that is wrong."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise UsageError(
            f"{name}: not TOML: {err}: fix it there and run the command again"
        ) from None
    try:
        return _parse(data, text, labs, name)
    except _Refusal as err:
        at = f", line {err.line}" if err.line else ""
        raise UsageError(f"{name}{at}: {err.entry} {err.why}") from None


def _parse(data: dict, text: str, labs: list[str], name: str) -> Policy:
    top = lambda key: _line_of(text, key, None, None)  # noqa: E731
    _unknown(data, {"penalty", "due", "extension", "override", "timezone"}, "", top)
    penalty = data.get("penalty")
    if not isinstance(penalty, dict):
        raise _Refusal("[penalty]", "is missing: it holds percent_per_day (and cap_percent, ...)")
    at = lambda key: _line_of(text, "penalty", None, key)  # noqa: E731
    _unknown(penalty, PENALTY_KEYS, "penalty.", at)
    settings = {}
    for key, low, high in (
        ("percent_per_day", 0, 100),
        ("cap_percent", 0, 100),
        ("grace_minutes", 0, MAX_GRACE),
        ("unknown_late_days", 0, MAX_DAYS),
    ):
        if key in penalty:
            try:
                settings[key] = _number(penalty[key], f"penalty.{key}", low=low, high=high)
            except _Refusal as err:
                err.line = at(key)
                raise
    if "percent_per_day" not in settings:
        raise _Refusal("[penalty]", "has no percent_per_day", top("penalty"))
    count = penalty.get("count", "started")
    if count not in COUNTS:
        raise _Refusal("penalty.count", f"is {' or '.join(map(repr, COUNTS))}", at("count"))
    policy = Policy(count=count, name=name, **settings)
    if "timezone" in data:
        zone = data["timezone"]
        try:
            zoneinfo.ZoneInfo(zone if isinstance(zone, str) else "")
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise _Refusal(
                "timezone",
                f'is a time zone name such as "Europe/Berlin"; got {zone!r}',
                top("timezone"),
            ) from None
        policy.timezone = zone
    due = data.get("due", {})
    if not isinstance(due, dict):
        raise _Refusal("due", "is a table: [due] with lab = date", top("due"))
    for lab, when in due.items():
        try:
            policy.due[_lab(lab, f"due.{lab}", labs)] = _time(when, f"due.{lab}")
        except _Refusal as err:
            err.line = _line_of(text, "due", None, lab)
            raise
    for kind, keys in (
        ("extension", {"student", "lab", "days", "due"}),
        ("override", {"student", "lab", "percent", "points", "reason"}),
    ):
        entries = data.get(kind, [])
        if not isinstance(entries, list):
            raise _Refusal(kind, f"is a list: write each as [[{kind}]]", top(kind))
        for index, entry in enumerate(entries):
            line = lambda key, i=index, k=kind: _line_of(text, k, i, key)  # noqa: E731
            where = f"[[{kind}]] {index + 1}: "
            if not isinstance(entry, dict):
                raise _Refusal(where.rstrip(": "), "is not a table", line(None))
            _unknown(entry, keys, where, line)
            _entry(policy, kind, entry, where, labs, line)
    return policy


def _entry(policy: Policy, kind: str, entry: dict, where: str, labs, line) -> None:
    def fail(key, why):
        return _Refusal(f"{where}{key}", why, line(key))

    if "student" not in entry:
        raise _Refusal(where + "student", "is missing", line(None))
    number = int(where.split()[1].rstrip(":"))  # "[[extension]] 2: " -> 2
    policy.entries.append((kind, number, str(entry["student"]), line("student")))
    try:
        student = _student(entry["student"], f"{where}student")
        lab = entry.get("lab")
        if lab is not None or kind == "override":
            if lab is None:
                raise fail("lab", "is missing (an override is for one lab)")
            lab = _lab(lab, f"{where}lab", labs)
    except _Refusal as err:
        err.line = line(err.entry.removeprefix(where))
        raise
    if kind == "extension":
        given = [key for key in ("days", "due") if key in entry]
        if len(given) != 1:
            raise fail("days", "or due: give exactly one (a number of days or a new due date)")
        key = given[0]
        try:
            value = _number(entry[key], where + key, high=MAX_DAYS) if key == "days" else None
            value = value if key == "days" else _time(entry[key], where + key)
        except _Refusal as err:
            err.line = line(key)
            raise
        if (student, lab) in policy.extensions:
            raise fail("student", f"{student} has two extensions for {lab or 'every lab'}")
        policy.extensions[(student, lab)] = (key, value)
    else:
        given = [key for key in ("percent", "points") if key in entry]
        if len(given) != 1:
            raise fail("percent", "or points: give exactly one (the deduction set by hand)")
        key = given[0]
        try:
            high = 100 if key == "percent" else 1e9
            value = _number(entry[key], where + key, high=high)
        except _Refusal as err:
            err.line = line(key)
            raise
        reason = entry.get("reason", "")
        if not isinstance(reason, str):
            raise fail("reason", f"is not text (got {reason!r})")
        if (student, lab) in policy.overrides:
            raise fail("student", f"{student} has two overrides for {lab}")
        policy.overrides[(student, lab)] = (key, value, reason)


def load(course: Path) -> Policy | None:
    """The course folder's policy (None: it has no :data:`POLICY`); a UsageError of one
    line for a file that is not a policy."""
    path = Path(course) / POLICY
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"{path} cannot be read ({err})") from None
    labs = layout.lab_names(course) if (Path(course) / "source").is_dir() else layout.lab_names()
    return parse(text, labs, name=str(path))


# ---------------------------------------------------------------------------------------
# Submission times


class Times(dict):
    """The course folder's submission times: (student, lab) -> :class:`Submitted`."""

    def of(self, student: str, lab: str, digest: str) -> Submitted | None:
        """The time of the notebook with this digest (None: none known, or a time kept
        for another notebook than the one graded)."""
        found = self.get((student, lab))
        if found is None or (found.digest and digest and found.digest != digest):
            return None
        return found


def read_times(course: Path) -> Times:
    """The submission times kept in the course folder ({} before any)."""
    path = Path(course) / TIMES
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        times = Times()
        for key, entry in data.items():
            student, _, lab = key.partition("/")
            times[(student, lab)] = Submitted.from_json(entry)
    except FileNotFoundError:
        return Times()
    except (OSError, ValueError, TypeError, AttributeError) as err:
        raise UsageError(
            f"{path} is not a map of submission times ({err}): move it away and grade again "
            "(without --regrade) to write it anew"
        ) from None
    return times


def record_times(course: Path, times: dict[tuple[str, str], Submitted]) -> None:
    """Keep these submission times in the course folder, for the notebooks graded now:
    each one's digest is the row's in ``results/`` unless it carries one. Any source can
    call it (``grade`` does with what the intake found; a Moodle worksheet's "Last
    modified (submission)" too). A time without a time zone is a ValueError."""
    from labtools.course.record import read_row

    kept = read_times(course)
    for (student, lab), when in times.items():
        if when.time is not None:  # a ValueError for a time without a zone or out of range
            when = dataclasses.replace(when, time=checked(when.time, f"{student}/{lab}: the time"))
        if not when.digest:
            result = courses.result_path(course, student, lab)
            digest = read_row(result).digest if result.exists() else ""
            when = dataclasses.replace(when, digest=digest)
        kept[(student, lab)] = when
    data = {f"{s}/{lab}": kept[(s, lab)].to_json() for s, lab in sorted(kept)}
    layout.write_whole(Path(course) / TIMES, json.dumps(data, indent=1) + "\n")


# ---------------------------------------------------------------------------------------
# The deduction


@dataclass
class Late:
    """What the policy makes of one graded row."""

    days: float | None = None  # how late (None: on time or not known)
    percent: float = 0.0
    deduction: float = 0.0  # points
    note: str = ""  # for the status: what was deducted and why ("" when nothing to say)
    words: str = ""  # for the student (a Moodle comment): the same in their terms, or ""


def _duration(seconds: float) -> str:
    if seconds < 3600:
        minutes = math.ceil(seconds / 60)
        return f"{minutes} minute{'s' * (minutes != 1)}"
    if seconds < 86400:
        return f"{seconds / 3600:.1f} hours"
    return f"{seconds / 86400:.1f} days"


def assess(
    student: str, lab: str, total: float, policy: Policy | None, submitted: Submitted | None
) -> Late:
    """The deduction from ``total`` for this submission under ``policy``."""
    source = submitted.source if submitted else ""
    if policy is None:
        if submitted and submitted.late:
            return Late(note=f"marked late by {source} (no {POLICY}: nothing deducted)")
        return Late()
    due, extended = policy.due_for(student, lab)
    late, days, counted, words = "", None, None, ""
    if submitted is None or due is None:
        if submitted and submitted.late:
            late = f"marked late by {source}, time unknown"
            if due is None:
                late += f"; {lab} has no due date in {POLICY}: nothing deducted"
    elif submitted.time is not None:
        seconds = (submitted.time - due).total_seconds()
        after = f"after the {'extended ' if extended else ''}due date"
        before = (submitted.time - policy.due[lab]).total_seconds() if extended else 0
        if 0 < seconds <= policy.grace_minutes * 60:
            late = (
                f"submitted {_duration(seconds)} {after}, within the "
                f"{policy.grace_minutes:g}-minute grace period: nothing deducted"
            )
            words = late
        elif seconds > 0:
            days = seconds / 86400
            counted = math.ceil(days) if policy.count == "started" else days
            late = f"late {_duration(seconds)}" + (f" {after}" if extended else "")
            words = f"handed in {_duration(seconds)} {after}"
        elif before > 0:  # after the lab's due date, before the student's own
            late = (
                f"submitted {_duration(before)} after the due date, within the extension "
                f"({_extension(policy, student, lab)}): nothing deducted"
            )
            words = f"handed in within your extension ({_extension(policy, student, lab)})"
    elif submitted.late:
        marked = policy.unknown_late_days
        extra = policy.extension_days(student, lab)
        days = max(0.0, marked - extra)
        counted = math.ceil(days) if policy.count == "started" else days
        late = (
            f"marked late by {source}, time unknown (counted as "
            f"{marked:g} day{'s' * (marked != 1)} after the due date"
        )
        if extra and not counted:
            late += f", within the extension ({_extension(policy, student, lab)})"
            late += "): nothing deducted"
            words = f"handed in within your extension ({_extension(policy, student, lab)})"
            days, counted = None, None
        elif extra:
            late += f", {extra:g} of them covered by the extension)"
            words = f"marked late by {source}: counted as {counted:g} day(s) late"
        else:
            late += ")"
            words = f"marked late by {source}: counted as {counted:g} day(s) late"
    elif submitted.problem:
        late = f"{submitted.problem}: lateness unknown, nothing deducted"
    override = policy.overrides.get((student, lab))
    if override is not None:
        kind, value, reason = override
        if kind == "percent":
            percent, deduction = value, total * value / 100
        else:
            deduction = min(value, total)
            percent = 100 * deduction / total if total else 0.0
        shown = f"-{value:g} %" if kind == "percent" else f"-{value:g} points"
        note = f"penalty set by hand: {shown}" + (f" ({reason})" if reason else "")
        told = f"penalty set by your instructor, {shown}"
        return Late(
            days, round(percent, 2), round(deduction, 4), f"{late}: {note}" if late else note,
            f"{words}; {told}" if words else told,
        )  # fmt: skip
    if counted is None:
        return Late(days, note=late, words=words)
    percent = round(min(policy.cap_percent, policy.percent_per_day * counted), 2)
    note = f"{late}: -{percent:g} % ({policy.rule()})"
    words = f"{words}, -{percent:g} % ({policy.rule()})"
    return Late(days, percent, round(total * percent / 100, 4), note, words)


def _extension(policy: Policy, student: str, lab: str) -> str:
    """The student's extension for the lab in words: "3 days", "to 2026-02-10 12:00 UTC"."""
    extension = policy.extensions.get((student, lab)) or policy.extensions.get((student, None))
    kind, value = extension
    if kind == "days":
        return f"{value:g} day{'s' * (value != 1)}"
    return f"to {value.astimezone(dt.UTC):%Y-%m-%d %H:%M} UTC"


def unused(policy: Policy | None, rows: list[dict], times: Times) -> list[str]:
    """A line for each lab the policy gives a due date that has graded notebooks of which
    none has a submission time or a late mark: nothing can be deducted, which the
    instructor should know (a download's late marks not recognised, times not kept)."""
    if policy is None:
        return []
    lines = []
    for lab in sorted(policy.due):
        graded = [r for r in rows if r["lab"] == lab and Status.of(r["status"]) is Status.GRADED]
        known = [
            r
            for r in graded
            if (when := times.of(r["student"], lab, r.get("digest", "")))
            and (when.time is not None or when.late)
        ]
        if graded and not known:
            lines.append(
                f"{policy.name} gives {lab} a due date, but none of its {len(graded)} graded "
                "notebooks has a submission time or a late mark: nothing is deducted for "
                "lateness (a Canvas download marks late files _LATE, a folder of submissions "
                "has timestamp.txt beside each notebook, Moodle's times come with "
                f"`tasks.py export --moodle WORKSHEET.csv --lab {lab}`)"
            )
    return lines


def adjust(row: dict, policy: Policy | None, submitted: Submitted | None) -> dict:
    """The late columns of a ``grades.csv`` row (``student``, ``lab``, ``total``,
    ``status``): ``submitted``, ``late_days``, ``penalty_percent``, ``deduction`` and
    ``adjusted_total``, and its ``status`` with what was deducted and why. Only a graded
    row is assessed (the others keep their total, nothing deducted)."""
    out = {"submitted": "", "late_days": "", "penalty_percent": 0.0, "deduction": 0.0}
    out["adjusted_total"], out["status"] = row["total"], row["status"]
    out["late_words"] = ""
    if Status.of(row["status"]) is not Status.GRADED:
        return out
    if submitted is not None:
        when = submitted.time.astimezone(dt.UTC).isoformat() if submitted.time else ""
        out["submitted"] = when or ("late, time unknown" if submitted.late else "")
    try:
        late = assess(row["student"], row["lab"], row["total"], policy, submitted)
    except (ArithmeticError, ValueError) as err:  # this row's lateness, never the table's
        late = Late(note=f"lateness not assessed ({err}): nothing deducted")
    if late.days is not None:
        out["late_days"] = round(late.days, 4)
    out["penalty_percent"], out["deduction"] = late.percent, late.deduction
    out["adjusted_total"] = max(0.0, round(row["total"] - late.deduction, 4))
    if late.note:
        out["status"] += f"; {late.note}"
    out["late_words"] = late.words
    return out


def total_after(row: dict, policy: Policy | None, submitted: Submitted | None) -> float:
    """A row's total after the late penalty (the Canvas and Moodle exports' grade)."""
    return adjust(row, policy, submitted)["adjusted_total"]
