"""Grades back into a learning platform, in the platform's own import format.

    python -m labtools export --canvas GRADEBOOK_EXPORT.csv [--column LAB=TITLE ...]
    python -m labtools export --moodle WORKSHEET.csv --lab LAB

Both start from a file the instructor downloaded from the platform, so that what goes back
names the platform's own students and assignments, and both read the totals of
``grades.csv`` (automatic + manual, less the late deduction), written again first
(:func:`labtools.out.export.export`). With ``final`` (``export --final``) only final grades go
back (:func:`labtools.out.export.final`: nothing waits for grading by hand or is held for
review); the others stay as the platform has them. A refused export removes the import
file an earlier export wrote, so that no stale file is imported by mistake, and says so.

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
The ``Points Possible`` row gets each lab's maximum. A graded student whom no row names (a
student who dropped the course) is left out and listed. The file is written with the
export's separator: a comma, or a semicolon (Canvas's "semicolons" setting; its importer
tells them apart, :func:`labtools.door.parse.delimiter`). The export's ``Student`` column gives
each student's name to the course folder (:func:`labtools.door.intake.keep_student_names`).
Refused (one line): a header that is not Canvas's, a lab that names no column or several,
a student that two rows match.

**Canvas feedback** (:func:`canvas_feedback`, with ``--canvas``): for each lab graded from a
Canvas download, ``canvas-<lab>-feedback.zip`` for the assignment's *Re-upload
submissions*, which reads each file's name as Canvas writes its download's: the parts
between ``_`` that are numbers are the user id and the id of the file handed in (Canvas's
``Assignment#infer_comment_context_from_filename``), and the page is attached to that
user's submission as a comment if the file is one of it. Each page is written
``<name>_<user id>_<file id>_<lab>-feedback.html``, the ids from the download graded
(:data:`labtools.door.intake.CANVAS_FILE_NAMES`); a page graded from an earlier submission than
Canvas's last (its file is no longer the submission's) and a student without a page are
listed and left out.

**Moodle** (:func:`moodle`): the assignment's offline grading worksheet (View all
submissions > Download grading worksheet). ``moodle-<lab>-worksheet.csv`` is that file with
``Grade`` (the total, scaled to the worksheet's ``Maximum Grade`` when it differs from the
lab's maximum, two decimals as Moodle writes them) and ``Feedback comments`` (what a
student reads: the points, the late deduction in words, what still waits for grading by
hand; never the internal status, :func:`comment`) filled for each graded student, matched
by the participant id
their submission's download carried (:data:`labtools.door.intake.PARTICIPANTS_FILE`); every
other cell, row and column as it was, in the same encoding (a UTF-8 byte order mark kept),
line ends and quoting (all fields quoted, or only where needed). ``moodle-<lab>-feedback.zip``
holds each graded student's feedback page as Moodle's "Upload multiple feedback files in a
zip" takes it: ``<Full Name>_<participant id>_assignsubmission_file_/<lab>.html``.
Refused (one line): a worksheet without the columns the import reads, a lab with no graded
notebook, a graded student without a participant id or not in the worksheet, a graded
student without a feedback page.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
import shlex
import zipfile
from pathlib import Path

from labtools.door import layout
from labtools.door.layout import UsageError
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
    (:mod:`labtools.course.late`); the worksheet's times carry no zone: the policy's ``timezone``
    gives it. Returns a line for the instructor ("" when there is nothing to say)."""
    import datetime as dt
    import zoneinfo

    from labtools.course import folder as courses
    from labtools.course import late
    from labtools.door import timestamps
    from labtools.door.intake import read_participants

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
            when = timestamps.checked(
                dt.datetime.strptime(text, MOODLE_TIME).replace(tzinfo=zone), ""
            )
        except ValueError:
            if text not in ("", "-"):
                unread.append(f"{student} ({text!r})")
            continue
        times[(student, lab)] = timestamps.Submitted(when, source="Moodle worksheet")
    late.record_times(course, times)
    if unread:
        return f"Moodle submission times not read (not {MOODLE_TIME}): {', '.join(unread)}"
    return ""


# ---------------------------------------------------------------------------------------
# What both read


def graded_totals(course: Path) -> tuple[dict[str, dict[str, dict]], dict[str, float]]:
    """``grades.csv`` written again: {lab: {student: its row}} of the graded notebooks
    (each row as :func:`labtools.out.export.collect` made it: ``final``, ``late_words`` too),
    and each lab's maximum."""
    from labtools.out.export import export
    from labtools.wire import Status

    found = export(course)
    graded: dict[str, dict[str, dict]] = {}
    maxima: dict[str, float] = {}
    for row in found.rows:
        maxima[row["lab"]] = float(row["max_score"])
        if Status.of(row["status"]) is Status.GRADED:
            graded.setdefault(row["lab"], {})[row["student"]] = row
    return graded, maxima


def chosen_rows(graded: dict[str, dict[str, dict]], final: bool) -> dict[str, dict[str, dict]]:
    """``graded`` as it goes back: every graded row, or (``final``) the final ones."""
    if not final:
        return graded
    return {
        lab: {s: r for s, r in rows.items() if r.get("final", True)} for lab, rows in graded.items()
    }


@contextlib.contextmanager
def stale_removed(paths: list[Path]):
    """On a refusal (UsageError) of an export to a platform: remove the import files an
    earlier export wrote (``paths``), so that none is imported by mistake, and say so."""
    try:
        yield
    except UsageError as err:
        gone = []
        for path in paths:
            if path.exists():
                path.unlink()
                gone.append(path.name)
        if gone:
            removed = ", ".join(gone)
            raise UsageError(f"{err} (nothing written; the earlier {removed} removed)") from None
        raise


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
        from labtools.door import parse

        path = Path(path)
        try:
            with open(path, "rb"):
                pass
        except OSError as err:
            raise UsageError(f"{path} cannot be read ({err.strerror}): {what}") from None
        # read by the door, in a child under limits (its names are the students')
        (let,) = parse.read([functools.partial(parse.table, str(path))], [str(path)])
        if let.refused is not None:
            raise UsageError(f"{let.refused}: {what}")
        found = let.value
        self.rows = found["rows"]
        self.bom, self.encoding = found["bom"], found["encoding"]
        self.newline, self.quoting = found["newline"], found["quoting"]
        self.delimiter = found.get("delimiter", ",")
        self.path = path

    def field(self, text: str) -> str:
        if self.quoting == "all":
            return '"' + text.replace('"', '""') + '"'
        special = set(NEEDS_QUOTES[self.quoting].replace(",", "")) | {self.delimiter}
        if set(text) & special:
            return '"' + text.replace('"', '""') + '"'
        return text

    def write(self, path: Path, rows: list[list[str]]) -> None:
        text = "".join(self.delimiter.join(map(self.field, r)) + self.newline for r in rows)
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
    each one's id came from (:data:`labtools.door.intake.SOURCES_FILE`): a Canvas download's
    user ids by ``ID``, a folder's names by ``SIS User ID`` or ``SIS Login ID``; an id of a
    course folder made before sources were kept, by any of the three (a row that two of
    them match is refused). A Moodle download's ids are Moodle's: refused (one line)."""
    from labtools.door import intake

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


def canvas(course, gradebook, columns: list[str] | None = None, *, final: bool = False) -> dict:
    """Write ``canvas-import.csv`` into ``course`` from the Canvas gradebook export
    ``gradebook``, and a feedback zip for each lab graded from a Canvas download
    (:func:`canvas_feedback`; see the module). Returns the paths written (``import``,
    ``feedback <lab>``) and ``notes``: lines on what was left out and why."""
    course = Path(course)
    outputs = [course / CANVAS_FILE, *course.glob("canvas-*-feedback.zip")]
    with stale_removed(outputs):
        return _canvas(course, gradebook, columns, final)


def _canvas(course: Path, gradebook, columns, final: bool) -> dict:
    from labtools.door import intake

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
        command = shlex.join(["python3", "tasks.py", "grade", "DOWNLOAD.zip", *course_args(course)])
        raise UsageError(f"{course} has no graded notebook: nothing to export; grade the "
                         f"Canvas download first (`{command}`)")  # fmt: skip
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
    going = chosen_rows(graded, final)
    rows, matched, people = [header[:first] + [header[index[lab]] for lab in wanted]], {}, {}
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
            people[student] = row[0].strip()
        cells = [going.get(lab, {}).get(student) for lab in wanted]
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
    notes = []
    missing = sorted(students - set(matched))
    if missing:  # a student who dropped the course: listed, never a refusal of the class
        columns = [c for c, held in keys.items() if held & set(missing)]
        how = " or ".join(filter(None, [", ".join(columns[:-1]), columns[-1]]))
        who = intake.student_names(course)
        notes.append(
            f"{len(missing)} graded students are not in {Path(gradebook).name} (by {how}), "
            f"left out of {CANVAS_FILE}: {', '.join(intake.shown(s, who) for s in missing)}; "
            "a student who dropped the course stays out; one still enrolled is in a newer "
            "export (Grades > Export)"
        )
    if final:
        held = sorted({s for lab in wanted for s in graded[lab] if s not in going[lab]})
        if held:
            notes.append(
                f"--final: {len(held)} students' grades that are not final were left out of "
                f"{CANVAS_FILE} (Canvas keeps what it has): {', '.join(held[:20])}"
                + (" ..." if len(held) > 20 else "")
            )
    out = course / CANVAS_FILE
    table.write(out, rows)
    if people:
        intake.keep_student_names(course, people, "gradebook")
    written: dict = {"import": out}
    for lab in wanted:
        zipped, said = canvas_feedback(course, lab, going.get(lab, {}))
        if zipped is not None:
            written[f"feedback {lab}"] = zipped
        notes += said
    written["notes"] = notes
    return written


# A file of a Canvas download as Canvas's re-upload reads its name: the parts between "_"
# that are numbers (the first two: the user id, the id of the file handed in)
NUMBER_PART = re.compile(r"\d+")


def canvas_entry(name: str, user: str, attachment: str, lab: str) -> str:
    """The zip entry of a student's feedback page for Canvas's *Re-upload submissions*:
    ``<name>_<user id>_<file id>_<lab>-feedback.html``, the name in lower-case letters only
    (so that no other part is a number), checked as an incoming zip entry is."""
    from labtools.door.intake import _unsafe

    letters = re.sub(r"[^a-z]", "", name.lower()) or "student"
    entry = f"{letters}_{user}_{attachment}_{lab}-feedback.html"
    numbers = [part for part in entry.split("_") if NUMBER_PART.fullmatch(part)]
    if numbers[:2] != [user, attachment] or _unsafe(entry) or "/" in entry:
        raise UsageError(f"no feedback file name for Canvas user {user!r} that Canvas reads")
    return entry


def canvas_feedback(course: Path, lab: str, rows: dict[str, dict]) -> tuple[Path | None, list]:
    """``canvas-<lab>-feedback.zip`` of the feedback pages of ``rows`` (student -> graded
    row) that were graded from a Canvas download (see the module); the path (None: no
    page to send) and lines on the students left out."""
    from labtools.door import intake

    files = intake.canvas_files(course).get(lab, {})
    sources = intake.read_sources(course)
    entries, no_page, earlier = {}, [], []
    for student, row in sorted(rows.items()):
        where = files.get(student)
        if sources.get(student) != "canvas" or not isinstance(where, dict):
            continue  # not from a Canvas download: no submission of Canvas to attach it to
        page = course / "feedback" / student / lab / f"{lab}.html"
        if not page.is_file():
            no_page.append(student)
        elif where.get("digest") and row.get("digest") and where["digest"] != row["digest"]:
            earlier.append(student)
        else:
            entry = canvas_entry(where.get("name", ""), student, where["attachment"], lab)
            entries[entry] = page
    notes = []
    who = intake.student_names(course)
    if no_page:
        command = shlex.join(["tasks.py", "feedback", *course_args(course), "--labs", lab])
        notes.append(
            f"{len(no_page)} graded students of {lab} have no feedback page, left out of "
            f"canvas-{lab}-feedback.zip: {', '.join(intake.shown(s, who) for s in no_page)}; "
            f"write them with `{command}` and export again"
        )
    if earlier:
        notes.append(
            f"{len(earlier)} feedback pages of {lab} are for a notebook other than the one of "
            f"Canvas's last download, left out of canvas-{lab}-feedback.zip (Canvas attaches a "
            f"page to the file it names): {', '.join(intake.shown(s, who) for s in earlier)}; "
            "grade the last download (with --regrade for them) and export again"
        )
    if not entries:
        return None, notes
    archive = course / f"canvas-{lab}-feedback.zip"
    with layout.whole(archive) as f, zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as zf:
        for entry, page in sorted(entries.items()):
            zf.write(page, entry)
    return archive, notes


# ---------------------------------------------------------------------------------------
# Moodle


def comment(row: dict) -> str:
    """The feedback comment of one graded notebook, which the student reads: the points,
    the late deduction in words, what still waits for grading by hand or review; never the
    internal status (capped, :func:`labtools.wire.capped`)."""
    from labtools.wire import capped

    deduction = float(row.get("deduction") or 0)
    words = row.get("late_words") or ""
    text = f"{number(float(row['adjusted_total']))} of {number(float(row['max_score']))} points."
    if deduction:
        text += (
            f" {number(float(row['total']))} points earned, less {number(deduction)} for late "
            f"work" + (f": {words}." if words else ".")
        )
    elif words:
        text += f" Late work: {words}."
    waiting = float(row.get("waiting") or 0)
    if waiting:
        text += f" {number(waiting)} points of your answers are not graded yet."
    if row.get("review"):
        text += " Some of your answers are being reviewed: this grade may change."
    return capped(text)


# what Moodle's clean_filename (PARAM_FILE) takes out of a file name
MOODLE_CLEAN = re.compile(r"[\x00-\x1f\x7f&<>\"`|':\\/]")


def feedback_entry(name: str, participant: str, lab: str) -> str:
    """The zip entry of a student's feedback page as Moodle's feedback upload takes it:
    ``<Full Name>_<participant id>_assignsubmission_file_/<lab>.html``, the name cleaned
    as Moodle cleans a file name (no ``\\``, ``/``, ``:`` and the like), without "_" (Moodle
    splits the folder's name there) and cut to :data:`labtools.wire.NAME` characters; the
    participant id alone tells Moodle who it is. Checked as an incoming entry is
    (:func:`labtools.door.intake._unsafe`)."""
    from labtools.door.intake import _unsafe
    from labtools.wire import NAME, capped

    clean = capped(MOODLE_CLEAN.sub("", name.replace("_", " ")), NAME, escapes=False)
    clean = clean.strip() or "student"
    entry = f"{clean}_{participant}_assignsubmission_file_/{lab}.html"
    if not participant.isdigit() or _unsafe(entry):
        raise UsageError(f"no safe feedback file name for participant {participant!r}")
    return entry


def moodle(course, worksheet, lab: str, *, final: bool = False) -> dict[str, Path]:
    """Write ``moodle-<lab>-worksheet.csv`` and ``moodle-<lab>-feedback.zip`` into
    ``course`` from Moodle's grading worksheet ``worksheet`` (see the module); return
    their paths (``worksheet``, ``feedback``) and a ``note`` if there is one to say."""
    course = Path(course)
    outputs = [course / f"moodle-{lab}-worksheet.csv", course / f"moodle-{lab}-feedback.zip"]
    with stale_removed(outputs):
        return _moodle(course, worksheet, lab, final)


def _moodle(course: Path, worksheet, lab: str, final: bool) -> dict[str, Path]:
    from labtools.door.intake import read_participants

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
        command = shlex.join(["python3", "tasks.py", "grade", "DOWNLOAD.zip", *course_args(course)])
        raise UsageError(
            f"{course} has no graded notebook of {lab}: grade its Moodle download first "
            f"(`{command}`)"
        )
    everyone = graded[lab]
    mine = chosen_rows(graded, final)[lab]
    known = read_participants(course).get(lab, {})
    unknown = sorted(set(everyone) - set(known))
    if unknown:
        raise UsageError(
            f"{len(unknown)} graded students of {lab} have no Moodle participant id (not "
            f"graded from a Moodle download of it): {', '.join(unknown)}; grade the lab's "
            "Moodle download into this course folder (`python3 tasks.py grade DOWNLOAD.zip`, "
            "with its --course), then export again"
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
            "it the worksheet of the assignment whose submissions were graded? Download "
            "that one (View all submissions > Download grading worksheet) and export with it"
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
    held = sorted(set(everyone) - set(mine))
    if held:
        said = "; ".join(filter(None, [said, (
            f"--final: {len(held)} grades of {lab} that are not final were left as the "
            f"worksheet had them: {', '.join(held[:20])}" + (" ..." if len(held) > 20 else "")
        )]))  # fmt: skip
    return {"worksheet": out, "feedback": archive} | ({"note": said} if said else {})
