"""Grades back into a learning platform, in the platform's own import format.

    python -m labtools export --canvas GRADEBOOK_EXPORT.csv [--column LAB=TITLE ...]
    python -m labtools export --moodle WORKSHEET.csv --lab LAB

Both start from a file the instructor downloaded from the platform, so that what goes back
names the platform's own students and assignments, and both read the totals of
``grades.csv`` (automatic + manual), written again first (:func:`labtools.export.export`).

**Canvas** (:func:`canvas`): the gradebook export (Grades > Export). Canvas's importer
(``lib/gradebook_importer.rb``) takes a file whose identity columns are ``Student, ID,
Section``, ``Student, ID, SIS Login ID, Section`` or ``Student, ID, SIS User ID, SIS Login
ID, [Integration ID], [Root Account], Section``; each assignment column is ``Title (id)``;
an optional first row starts ``Points Possible``; students are matched by ``ID``. The
written ``canvas-import.csv`` has the export's identity columns and rows verbatim, then a
column per graded lab under the export's own header for it: the one named by ``--column
LAB=TITLE`` (the whole header or its title), else the one whose title names the lab: holds
its id (``lab1_perceptron``), its title (the lab's first heading, "Lab 1: Perceptron
training by hand and in code") or its label ("Lab 1", not followed by a digit), case and
spacing aside. A row's student is the course folder's student of that ``ID`` (a Canvas
download's student id is that user id), else the one named by its ``SIS User ID`` or ``SIS
Login ID`` (a course graded from folders named by login). A cell is the lab's total; empty
where the student has no graded notebook for it (Canvas then leaves the grade as it is).
The ``Points Possible`` row gets each lab's maximum. Refused (one line): a header that is
not Canvas's, a lab that names no column or several, a graded student not in the export.

**Moodle** (:func:`moodle`): the assignment's offline grading worksheet (View all
submissions > Download grading worksheet). ``moodle-<lab>-worksheet.csv`` is that file with
``Grade`` (the total, scaled to the worksheet's ``Maximum Grade`` when it differs from the
lab's maximum, two decimals as Moodle writes them) and ``Feedback comments`` (the points
and the status, plain text) filled for each graded student, matched by the participant id
their submission's download carried (:data:`labtools.intake.PARTICIPANTS_FILE`); every
other cell, row and column as it was, in the same encoding (a UTF-8 byte order mark kept),
line ends and quoting (all fields quoted, or only where needed). ``moodle-<lab>-feedback.zip``
holds each graded student's feedback page as Moodle's "Upload multiple feedback files in a
zip" takes it: ``<Full Name>_<participant id>_assignsubmission_file_/<lab>.html``.
Refused (one line): a worksheet without the columns the import reads, a lab with no graded
notebook, a graded student without a participant id or not in the worksheet, a graded
student without a feedback page.
"""

from __future__ import annotations

import csv
import functools
import json
import re
import shlex
import zipfile
from pathlib import Path

from labtools import layout
from labtools.layout import UsageError
from labtools.options import course_args

CANVAS_FILE = "canvas-import.csv"
# Canvas's assignment column: "Title (assignment id)"
ASSIGNMENT = re.compile(r"(?P<title>.*\S)\s+\((?P<id>\d+)\)")
CANVAS_LAYOUTS = (
    ["Student", "ID", "Section"],
    ["Student", "ID", "SIS Login ID", "Section"],
    ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"],
    ["Student", "ID", "SIS User ID", "SIS Login ID", "Integration ID", "Section"],
    ["Student", "ID", "SIS User ID", "SIS Login ID", "Root Account", "Section"],
    ["Student", "ID", "SIS User ID", "SIS Login ID", "Integration ID", "Root Account", "Section"],
)
MOODLE_COLUMNS = ("Identifier", "Grade", "Maximum Grade", "Last modified (grade)")
FEEDBACK = "Feedback comments"
PARTICIPANT = re.compile(r"Participant (\d+)")
SUBMITTED = "Last modified (submission)"
# how Moodle's worksheet writes a time in English (its strftimedatetime): no time zone
MOODLE_TIME = "%A, %d %B %Y, %I:%M %p"  # Monday, 3 November 2026, 9:15 AM


def moodle_times(course: Path, lab: str, rows: list[list[str]], header: list[str]) -> str:
    """Keep the worksheet's submission times of ``lab``'s graded students (its column
    ``Last modified (submission)``), so that the late policy applies to them
    (:mod:`labtools.late`); the worksheet's times carry no zone: the policy's ``timezone``
    gives it. Returns a line for the instructor ("" when there is nothing to say)."""
    import datetime as dt
    import zoneinfo

    from labtools import course as courses
    from labtools import late
    from labtools.intake import read_participants

    policy = late.load(course)
    if policy is None or lab not in policy.due or SUBMITTED not in header:
        return ""
    if policy.timezone is None:
        return (
            f"Moodle's submission times were not used: {late.POLICY} has no timezone "
            '(e.g. timezone = "Europe/Berlin", the zone of the worksheet\'s times)'
        )
    zone = zoneinfo.ZoneInfo(policy.timezone)
    column, ids = header.index(SUBMITTED), header.index("Identifier")
    participants = read_participants(course).get(lab, {})
    by_participant = {who["participant"]: student for student, who in participants.items()}
    times, unread = {}, []
    for row in rows[1:]:
        match = PARTICIPANT.fullmatch(row[ids].strip()) if len(row) > max(ids, column) else None
        student = by_participant.get(match[1]) if match else None
        result = courses.result_path(course, student, lab) if student else None
        if result is None or not result.exists():
            continue
        text = row[column].strip()
        try:
            when = late.checked(dt.datetime.strptime(text, MOODLE_TIME).replace(tzinfo=zone), "")
        except ValueError:
            if text not in ("", "-"):
                unread.append(f"{student} ({text!r})")
            continue
        times[(student, lab)] = late.Submitted(when, source="Moodle worksheet")
    late.record_times(course, times)
    if unread:
        return f"Moodle submission times not read (not {MOODLE_TIME}): {', '.join(unread)}"
    return ""


# ---------------------------------------------------------------------------------------
# What both read


def graded_totals(course: Path) -> tuple[dict[str, dict[str, dict]], dict[str, float]]:
    """``grades.csv`` written again: {lab: {student: its row}} of the graded notebooks,
    and each lab's maximum."""
    from labtools.export import export
    from labtools.wire import Status

    path = export(course)["grades"]
    graded: dict[str, dict[str, dict]] = {}
    maxima: dict[str, float] = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            maxima[row["lab"]] = float(row["max_score"])
            if Status.of(row["status"]) is Status.GRADED:
                graded.setdefault(row["lab"], {})[row["student"]] = row
    return graded, maxima


def number(value: float) -> str:
    """A score as the platforms show one: "8.5", "7", "2.25"."""
    return f"{round(value, 2):g}"


# the characters that make a writer quote a field: csv's minimal quoting (Ruby's CSV, as
# Canvas writes), and PHP's fputcsv (Moodle's csv_export_writer), which quotes spaces too
NEEDS_QUOTES = {"minimal": ',"\r\n', "fputcsv": ',"\r\n\t \\'}


class Table:
    """A CSV file as the platform wrote it: its rows, and how to write it back alike
    (encoding, byte order mark, line ends, quoting: every field, or only the fields that
    hold a character of :data:`NEEDS_QUOTES`, read from how its header is written)."""

    def __init__(self, path: Path, what: str):
        from labtools import door

        path = Path(path)
        try:
            with open(path, "rb"):
                pass
        except OSError as err:
            raise UsageError(f"{path} cannot be read ({err.strerror}): {what}") from None
        # read by the door, in a child under limits (its names are the students')
        (let,) = door.read([functools.partial(door.table, str(path))], [str(path)])
        if let.refused is not None:
            raise UsageError(f"{let.refused}: {what}")
        found = let.value
        self.rows = found["rows"]
        self.bom, self.encoding = found["bom"], found["encoding"]
        self.newline, self.quoting = found["newline"], found["quoting"]
        self.path = path

    def field(self, text: str) -> str:
        if self.quoting == "all" or set(text) & set(NEEDS_QUOTES[self.quoting]):
            return '"' + text.replace('"', '""') + '"'
        return text

    def write(self, path: Path, rows: list[list[str]]) -> None:
        text = "".join(",".join(map(self.field, row)) + self.newline for row in rows)
        data = (b"\xef\xbb\xbf" if self.bom else b"") + text.encode(self.encoding, "replace")
        layout.write_whole(path, data)


# ---------------------------------------------------------------------------------------
# Canvas


def canvas_identity(header: list[str]) -> int | None:
    """How many identity columns a Canvas gradebook header has (through ``Section``), or
    None if it is none of the layouts Canvas imports."""
    names = [h.strip() for h in header]
    for columns in CANVAS_LAYOUTS:
        if names[: len(columns)] == columns:
            return len(columns)
    return None


def lab_titles(course: Path, lab: str) -> tuple[str, str]:
    """The lab's title (its source's first markdown heading, "Lab 1: Perceptron ...") and
    its label (the title's part before ":", "Lab 1")."""
    nb = json.loads((Path(course) / "source" / lab / f"{lab}.ipynb").read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            match = re.search(r"^#+\s+(.+)$", text, re.M)
            if match:
                title = match[1].strip()
                return title, title.split(":")[0].strip()
    return lab, lab


def _folded(text: str) -> str:
    return " ".join(text.casefold().split())


def names_lab(title: str, lab: str, heading: str, label: str) -> bool:
    """Whether a Canvas assignment's title is the lab's name, exactly (case and spacing
    aside): its id, its title or its label; a title that only holds one of them ("Lab 6
    pre-lab quiz") is another assignment's, chosen only by ``--column``."""
    return _folded(title) in {_folded(lab), _folded(heading), _folded(label)}


def parse_columns(items: list[str] | None, labs: list[str]) -> dict[str, str]:
    """``--column LAB=TITLE`` items as {lab: title}."""
    chosen = {}
    for item in items or []:
        lab, sep, title = item.partition("=")
        lab, title = lab.strip(), title.strip()
        if not sep or not title:
            raise UsageError(f"--column takes LAB=TITLE, e.g. lab1_perceptron='Lab 1 (1234)'; "
                             f"got {item!r}")  # fmt: skip
        if lab not in labs:
            raise UsageError(f"--column {item!r}: no lab {lab!r}; the labs are {', '.join(labs)}")
        chosen[lab] = title
    return chosen


def title_of(header: str) -> str:
    """An assignment column's title: "Lab 1 (1234)" -> "Lab 1"."""
    return ASSIGNMENT.fullmatch(header)["title"]


def id_of(header: str) -> str:
    """An assignment column's assignment id: "Lab 1 (1234)" -> "1234"."""
    return ASSIGNMENT.fullmatch(header)["id"]


def choose_column(course: Path, lab: str, header: list[str], first: int, given: str | None):
    """The index of the export's column for ``lab`` (see the module); UsageError if none
    or several."""
    assignments = {k: h for k, h in enumerate(header) if k >= first and ASSIGNMENT.fullmatch(h)}
    if given is not None:
        found = [k for k, h in assignments.items() if given in (h, title_of(h), id_of(h))]
        how = f"--column {lab}={given!r} matches"
    else:
        heading, label = lab_titles(course, lab)
        found = [k for k, h in assignments.items() if names_lab(title_of(h), lab, heading, label)]
        how = f"{lab} ({heading!r}) is named by"
    if len(found) == 1:
        return found[0]
    shown = ", ".join(repr(header[k]) for k in (found or assignments))
    if not found:
        raise UsageError(
            f"{how} no assignment column of the export; its assignments: {shown or 'none'}; "
            f"name one with --column {lab}='TITLE (ID)' (or its id alone)"
        )
    raise UsageError(f"{how} {len(found)} columns ({shown}); name one with --column {lab}=...")


def canvas_keys(course: Path, students: set[str]) -> dict[str, set[str]]:
    """The graded students that each identity column of Canvas's export may name, by where
    each one's id came from (:data:`labtools.intake.SOURCES_FILE`): a Canvas download's
    user ids by ``ID``, a folder's names by ``SIS User ID`` or ``SIS Login ID``; an id of a
    course folder made before sources were kept, by any of the three (a row that two of
    them match is refused). A Moodle download's ids are Moodle's: refused (one line)."""
    from labtools import intake

    sources = intake.read_sources(course)
    moodle = sorted(s for s in students if sources.get(s) == "moodle")
    if moodle:
        raise UsageError(
            f"{len(moodle)} graded students came from a Moodle download (their ids are made "
            f"from Moodle names, which Canvas does not know): {', '.join(moodle[:10])}"
            f"{', ...' if len(moodle) > 10 else ''}; export them with --moodle"
        )
    by_id = {s for s in students if sources.get(s) in ("canvas", None)}
    by_sis = {s for s in students if sources.get(s) in ("folders", None)}
    return {"ID": by_id, "SIS User ID": by_sis, "SIS Login ID": by_sis}  # (in this order)


def canvas(course, gradebook, columns: list[str] | None = None) -> Path:
    """Write ``canvas-import.csv`` into ``course`` from the Canvas gradebook export
    ``gradebook`` (see the module); return its path."""
    course = Path(course)
    what = "download it from Canvas (Grades > Export > Export Entire Gradebook)"
    table = Table(gradebook, what)
    header = table.rows[0] if table.rows else []
    first = canvas_identity(header)
    if first is None:
        raise UsageError(
            f"{gradebook} is not a Canvas gradebook export (its columns must start Student, "
            f"ID, [SIS User ID, SIS Login ID, ...,] Section; they start {header[:4]}): {what}"
        )
    graded, maxima = graded_totals(course)
    labs = layout.lab_names(course)
    chosen = parse_columns(columns, labs)
    if not graded:
        raise UsageError(f"{course} has no graded notebook: nothing to export")
    wanted = [lab for lab in labs if lab in graded]
    index = {lab: choose_column(course, lab, header, first, chosen.get(lab)) for lab in wanted}
    twice = {k for k in index.values() if list(index.values()).count(k) > 1}
    if twice:
        shared = [lab for lab, k in index.items() if k in twice]
        raise UsageError(
            f"labs {', '.join(shared)} all go to the column {header[min(twice)]!r}: "
            "name each one's column with --column LAB=TITLE"
        )
    names = [h.strip() for h in header[:first]]
    students = {s for lab in wanted for s in graded[lab]}
    keys = canvas_keys(course, students)
    rows, matched = [header[:first] + [header[index[lab]] for lab in wanted]], {}
    for k, row in enumerate(table.rows[1:], start=2):
        row = row + [""] * (first - len(row))
        if not any(cell.strip() for cell in row):
            continue
        if row[0].strip() == "Points Possible":
            rows.append(row[:first] + [number(maxima[lab]) for lab in wanted])
            continue
        ids = dict(zip(names, (cell.strip() for cell in row[:first]), strict=True))
        # each student by the keys of the source their id came from, never another's
        found = {ids[c] for c in keys if c in ids and ids[c] and ids[c] in keys[c]}
        if len(found) > 1:
            raise UsageError(
                f"row {k} of {gradebook} names {len(found)} graded students "
                f"({', '.join(sorted(found))}) in its ID and SIS columns: check who is who, "
                "then grade the folders named by one kind of id"
            )
        student = found.pop() if found else None
        if student is not None:
            matched.setdefault(student, []).append(k)
        cells = [graded.get(lab, {}).get(student) for lab in wanted]
        rows.append(row[:first] + [number(float(r["adjusted_total"])) if r else "" for r in cells])
    twice = {s: lines for s, lines in matched.items() if len(lines) > 1}
    if twice:
        listed = "; ".join(
            f"{s} on rows {', '.join(map(str, n))}" for s, n in sorted(twice.items())
        )
        raise UsageError(
            f"graded students match more than one row of {gradebook} (by the ID of one row "
            f"and an SIS id of another): {listed}; nothing written: check who is who"
        )
    missing = sorted(students - set(matched))
    if missing:
        columns = [c for c, held in keys.items() if held & set(missing)]
        how = " or ".join(filter(None, [", ".join(columns[:-1]), columns[-1]]))
        raise UsageError(
            f"{len(missing)} graded students are not in {gradebook} (by {how}): "
            f"{', '.join(missing)}; download the gradebook export again after they are enrolled"
        )
    out = course / CANVAS_FILE
    table.write(out, rows)
    return out


# ---------------------------------------------------------------------------------------
# Moodle


def comment(row: dict) -> str:
    """The feedback comment of one graded notebook: its points and its status (capped,
    :func:`labtools.wire.capped`)."""
    from labtools.wire import capped

    late = float(row["deduction"] or 0)
    return capped(
        f"{number(float(row['adjusted_total']))} of {number(float(row['max_score']))} points: "
        f"{number(float(row['automatic']))} automatic, {number(float(row['manual']))} "
        "graded by hand"
        + (f", {number(late)} deducted for late work" if late else "")
        + f". Status: {row['status']}."
    )


# what Moodle's clean_filename (PARAM_FILE) takes out of a file name
MOODLE_CLEAN = re.compile(r"[\x00-\x1f\x7f&<>\"`|':\\/]")


def feedback_entry(name: str, participant: str, lab: str) -> str:
    """The zip entry of a student's feedback page as Moodle's feedback upload takes it:
    ``<Full Name>_<participant id>_assignsubmission_file_/<lab>.html``, the name cleaned
    as Moodle cleans a file name (no ``\\``, ``/``, ``:`` and the like), without "_" (Moodle
    splits the folder's name there) and cut to :data:`labtools.wire.NAME` characters; the
    participant id alone tells Moodle who it is. Checked as an incoming entry is
    (:func:`labtools.intake._unsafe`)."""
    from labtools.intake import _unsafe
    from labtools.wire import NAME, capped

    clean = capped(MOODLE_CLEAN.sub("", name.replace("_", " ")), NAME, escapes=False)
    clean = clean.strip() or "student"
    entry = f"{clean}_{participant}_assignsubmission_file_/{lab}.html"
    if not participant.isdigit() or _unsafe(entry):
        raise UsageError(f"no safe feedback file name for participant {participant!r}")
    return entry


def moodle(course, worksheet, lab: str) -> dict[str, Path]:
    """Write ``moodle-<lab>-worksheet.csv`` and ``moodle-<lab>-feedback.zip`` into
    ``course`` from Moodle's grading worksheet ``worksheet`` (see the module); return
    their paths (``worksheet``, ``feedback``)."""
    from labtools.intake import read_participants

    course = Path(course)
    labs = layout.lab_names(course)
    if lab not in labs:
        raise UsageError(f"--lab {lab!r}: no such lab; the labs are {', '.join(labs)}")
    what = (
        "download it from the assignment (View all submissions > Download grading worksheet, "
        "with Offline grading worksheet and Feedback comments on in its feedback types)"
    )
    table = Table(worksheet, what)
    header = table.rows[0] if table.rows else []
    lacking = [c for c in (*MOODLE_COLUMNS, FEEDBACK) if c not in header]
    if lacking:
        raise UsageError(
            f"{worksheet} is not Moodle's grading worksheet (no column {', '.join(lacking)}): "
            + what
        )
    at = {c: header.index(c) for c in (*MOODLE_COLUMNS, FEEDBACK)}
    said = moodle_times(course, lab, table.rows, header)  # before the totals: lateness
    graded, maxima = graded_totals(course)
    if lab not in graded:
        raise UsageError(f"{course} has no graded notebook of {lab}: grade it first")
    mine = graded[lab]
    known = read_participants(course).get(lab, {})
    unknown = sorted(set(mine) - set(known))
    if unknown:
        raise UsageError(
            f"{len(unknown)} graded students of {lab} have no Moodle participant id (not "
            f"graded from a Moodle download of it): {', '.join(unknown)}"
        )
    rows = [list(r) for r in table.rows]
    by_id = {}
    for k, row in enumerate(rows[1:], start=1):
        match = PARTICIPANT.fullmatch(row[at["Identifier"]].strip()) if len(row) > 1 else None
        if match:
            by_id[match[1]] = k
    absent = sorted(s for s in mine if known[s]["participant"] not in by_id)
    if absent:
        listed = ", ".join(f"{known[s]['name']} (Participant {known[s]['participant']})"
                           for s in absent)  # fmt: skip
        raise UsageError(
            f"{len(absent)} graded students of {lab} are not in {worksheet}: {listed}; is "
            "it the worksheet of the assignment whose submissions were graded?"
        )
    pages = {s: course / "feedback" / s / lab / f"{lab}.html" for s in mine}
    without = sorted(s for s, page in pages.items() if not page.is_file())
    if without:
        command = shlex.join(["tasks.py", "feedback", *course_args(course), "--labs", lab])
        raise UsageError(
            f"{len(without)} graded students of {lab} have no feedback page: "
            f"{', '.join(without)}; write them with `{command}`"
        )
    for student, row in sorted(mine.items()):
        cells = rows[by_id[known[student]["participant"]]]
        cells += [""] * (len(header) - len(cells))
        total, top = float(row["adjusted_total"]), maxima[lab]
        try:
            scale = float(cells[at["Maximum Grade"]].replace(",", "."))
        except ValueError:
            scale = top
        grade = total * scale / top if top and scale != top else total
        cells[at["Grade"]] = f"{grade:.2f}"
        cells[at[FEEDBACK]] = comment(row)
    out = course / f"moodle-{lab}-worksheet.csv"
    table.write(out, rows)
    archive = course / f"moodle-{lab}-feedback.zip"
    with layout.whole(archive) as f, zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as zf:
        for student in sorted(mine):
            who = known[student]
            zf.write(pages[student], feedback_entry(who["name"], who["participant"], lab))
    return {"worksheet": out, "feedback": archive} | ({"note": said} if said else {})
