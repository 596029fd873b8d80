"""Intake: from what an instructor downloaded to one list of submissions, each student apart.

Three layouts are read as they come, from a folder or a zip:

- **folders**, this project's own: ``[submitted/]<student>/<lab>/<lab>.ipynb``
  (:func:`find_submissions`), with the time of each submission from the ``timestamp.txt``
  that nbgrader writes beside it (:func:`labtools.door.timestamps.read_timestamp`);
- **Canvas** "Download submissions": flat files
  ``<name>[_LATE]_<userid>_<submissionid>_<file>``, ``<name>`` the student's name in lower
  case without spaces; the student id is the numeric ``<userid>`` (stable, and what Canvas's
  gradebook import matches on); a late mark, ``_LATE`` or ``_late`` (Canvas and the tools
  around it write both), is kept as late at an unknown time. The second number is the id
  of the file handed in (Canvas's attachment id): the course folder keeps it with the
  file's name (:data:`CANVAS_FILE_NAMES`), so that the feedback pages go back to the
  submissions they are for (:func:`labtools.out.platforms.canvas_feedback`);
- **Moodle** "Download all submissions": a folder per participant,
  ``<Full Name>_<participant id>_assignsubmission_file[_]/`` holding the files as uploaded
  (or, with "download as folders" off, flat files
  ``<Full Name>_<participant id>_assignsubmission_file_<file>``). The participant id is
  made per assignment, so the student id is the name folded to ASCII (``jane.doe``), with
  a short digest of the name when folding lost letters. Names that fold alike are told
  apart: the course folder keeps the exact name of each id (:data:`NAMES_FILE`), and a
  name that arrives with an id another name holds gets the id plus a digest of its exact
  name (:func:`moodle_ids`), reported in :attr:`Intake.kept_apart`. The participant id of
  each student and lab is kept too (:data:`PARTICIPANTS_FILE`): Moodle's grading worksheet
  and its feedback upload name students by it (:mod:`labtools.out.platforms`).

The layout is the one that places the most files (the folders layout on a tie), so a
stray file cannot turn a class's download into another layout. Under Canvas and Moodle,
the lab of a file is its original file name (``lab1_perceptron.ipynb``, tolerating the
``-1``, ``-2`` that a platform adds to a resubmitted file), as nbgrader's ``zip_collect``
with its file-name collector does; a browser's name for a second download of one file,
``lab1_perceptron (1).ipynb``, is understood the same way.

Each student stays apart: a problem is a refusal on that student's row (its status says
why), never a stop for the class. Two files (or folders) that name one student for one
lab are both refused, naming each other. A file that cannot be given a student and a lab
(not a notebook, no lab in its name, a name the layout does not have, an id that is not
valid) gets no row: it is listed in :attr:`Intake.unplaced`, which ``grade`` prints; a
notebook among them says how to place it (its name as the layout wants it, where to put
it and what to grade), and the course folder keeps the notebooks that could not be placed
(:data:`NOT_PLACED`) until their student has a row of the lab, so that ``export`` names
them among what is not final.

A zip is read member by member (never ``extractall``): a member whose path leaves the
target, a link, a member larger than :data:`labtools.door.layout.MAX_NOTEBOOK`, a name held
twice or both as a file and as a folder is refused for the student it names; only
notebooks are written, each read with a bound, and all of them together stop at
:data:`MAX_EXTRACTED`. A zip of more than :data:`MAX_MEMBERS` entries is refused whole.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import stat
import unicodedata
import zipfile
import zlib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from labtools.door import layout, parse, timestamps
from labtools.door.layout import (
    MAX_NOTEBOOK,
    Submission,
    UsageError,
    _is_link,
    file_refusal,
    valid_student,
)

MAX_EXTRACTED = 2**30  # bytes of notebooks written from one zip, all members together
MAX_MEMBERS = 50_000  # entries in one zip (a platform's download of a class is far below)

# a late mark in either case: Canvas writes _LATE, and some instances and tools _late
CANVAS = re.compile(
    r"(?P<name>[\w-]+?)(?P<late>_(?i:late))?_(?P<userid>[0-9]+)_(?P<sub>[0-9]+)_(?P<file>.+)"
)
# Moodle writes a full name with its "_" made spaces; no control characters
MOODLE_NAME = r"(?P<name>[^_/\x00-\x1f\x7f]+)_(?P<id>[0-9]+)_assignsubmission_(?P<plugin>[a-z]+)"
MOODLE_FOLDER = re.compile(MOODLE_NAME + "_?")
MOODLE_FILE = re.compile(MOODLE_NAME + "_(?P<file>.+)")
# "lab1_perceptron-1.ipynb": a platform's renamed copy; "lab1_perceptron (1).ipynb": a
# browser's name for a second download of one file (either, or both, at the end of the name)
RESUBMITTED = re.compile(r"(?:-\d+|\s*\(\d+\))+$")
# in the course folder: each Moodle name seen (NFC, otherwise exact) -> its student id
NAMES_FILE = "moodle-names.json"
# in the course folder: lab -> student id -> {"participant": id, "name": exact Moodle name}
PARTICIPANTS_FILE = "moodle-participants.json"
# in the course folder: student id -> where it came from ("canvas": a Canvas user id,
# "moodle": made from a Moodle name, "folders": a folder's name); see apart()
SOURCES_FILE = "student-sources.json"
SOURCES = {
    "canvas": "a Canvas download (a Canvas user id)",
    "moodle": "a Moodle download (made from a participant's name)",
    "folders": "a folder of submissions (a folder's name)",
}
# in the course folder: student id -> {"download": the name its download gave, "gradebook":
# the name Canvas's gradebook export gave}: shown beside the id wherever the instructor reads
STUDENT_NAMES = "student-names.json"
# in the course folder: lab -> student id -> {"file": the Canvas download's file name,
# "attachment": Canvas's id of that file, "name": the name in it, "digest": the SHA-256 of the
# notebook}: where each feedback page goes back to (labtools.out.platforms.canvas_feedback)
CANVAS_FILE_NAMES = "canvas-files.json"
# in the course folder: download -> the notebooks it held that could not be placed, each
# {"file", "why", "student", "lab"} (student and lab as far as the name tells: "" if not)
NOT_PLACED = "not-placed.json"


@dataclass
class Unplaced:
    """A file that no student's row holds, and why (for a notebook, with how to place it)."""

    file: str  # as named in the zip or below the folder
    why: str
    student: str = ""  # the student its name gives, if any
    lab: str = ""  # the lab the hint names, if one
    pending: bool = True  # a notebook to place that export names until it has a row


@dataclass
class Intake:
    """What was found: the submissions (graded or refused), the files no row holds, the
    layout, and the names the platform gave to the student ids."""

    layout: str  # "folders", "canvas" or "moodle"
    submissions: list[Submission]
    unplaced: list[Unplaced] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)  # student id -> name in the download
    late: list[str] = field(default_factory=list)  # "<student>/<lab>" the platform marked late
    kept_apart: str = ""  # a line for the summary: Moodle names that fold alike, their ids
    # (student, lab) -> when it was submitted, as the layout tells: nbgrader's timestamp.txt
    # beside a folder submission, Canvas's _LATE mark (a mark without a time)
    times: dict[tuple[str, str], timestamps.Submitted] = field(default_factory=dict)
    moodle_names: dict[str, str] | None = None  # the course folder's name map, if it grew
    # a Moodle download's participants: lab -> student id -> {"participant", "name"}
    participants: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)
    # lines for the summary: one name held by several people, each graded under an id
    shared_names: list[str] = field(default_factory=list)
    # a Canvas download's files: (student, lab) -> {"file", "attachment", "name"}
    canvas_files: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)

    def keep_names(self, course: Path) -> None:
        """Write the grown Moodle name map, this download's participant ids and where its
        students' ids came from (:data:`SOURCES_FILE`) into the course folder (the run
        does, once it holds the folder's lock and has set apart the ids that came from
        another source, :func:`apart`, so that nothing is made before the submissions are
        read)."""
        if self.moodle_names is not None:
            write_names(course, self.moodle_names)
        if self.participants:
            write_participants(course, self.participants)
        students = {sub.student for sub in self.submissions}
        if students:
            write_sources(course, dict.fromkeys(students, self.layout))
        names = {s: n for s, n in self.names.items() if s in students and n}
        if names:
            keep_student_names(course, names, "download")

    def report(self) -> dict:
        return {
            "layout": self.layout,
            "not placed": [{"file": u.file, "why": u.why} for u in self.unplaced],
            "names": dict(self.names),
            "late": list(self.late),
            "kept apart": self.kept_apart,
            "shared names": list(self.shared_names),
        }


# ---------------------------------------------------------------------------------------
# Reading a zip, member by member


@dataclass
class _Listing:
    """The files of a download: their relative POSIX names, the folder they are in (a
    zip's notebooks are unpacked there, its other files are not), and the problems found
    for some of them."""

    root: Path
    files: list[str]
    problems: dict[str, str] = field(default_factory=dict)

    def path(self, name: str) -> Path:
        return self.root / name


def _unsafe(name: str) -> str | None:
    """Why a zip entry's name is not safe to unpack anywhere (absolute, ``..``, a drive
    letter, a backslash, which Windows tools read as a folder separator), or None. The
    entries the tools write are checked by it too (:mod:`labtools.out.platforms`)."""
    path = PurePosixPath(name)
    if (
        "\0" in name
        or "\\" in name
        or path.is_absolute()
        or ".." in path.parts
        or re.match(r"[A-Za-z]:", name)
    ):
        return f"the zip entry {name!r} would land outside the folder it is unpacked into"
    return None


def extract(zip_path: Path, target: Path) -> _Listing:
    """Unpack the notebooks of ``zip_path`` into ``target``, one member at a time, and list
    every file with the problems found (see the module). Raises UsageError for a file
    that is not a readable zip or holds more than :data:`MAX_MEMBERS` entries."""
    target = Path(target)
    try:
        archive = zipfile.ZipFile(zip_path)
    except (zipfile.BadZipFile, OSError) as err:
        raise UsageError(f"{zip_path} is not a readable zip ({err})") from None
    with archive:
        members = archive.infolist()
        if len(members) > MAX_MEMBERS:
            raise UsageError(
                f"{zip_path} holds {len(members)} entries, more than {MAX_MEMBERS}: "
                "that is not one class's download"
            )
        problems: dict[str, str] = {}
        files: dict[str, list[zipfile.ZipInfo]] = defaultdict(list)
        folders: set[str] = set()
        for info in members:
            name = str(PurePosixPath(info.filename))  # "./a//b/" and "a/b" are one path
            if name in (".", "/"):
                continue
            bad = _unsafe(name)
            if not bad:  # an unsafe name makes no folder either
                folders |= {str(p) for p in PurePosixPath(name).parents if str(p) != "."}
            if info.is_dir():
                folders |= set() if bad else {name}
                continue
            files[name].append(info)
            if bad:
                problems[name] = bad
            elif stat.S_ISLNK(info.external_attr >> 16):
                problems[name] = f"the zip entry {name!r} is a symbolic link"
            elif info.file_size > MAX_NOTEBOOK:
                problems[name] = (
                    f"the zip entry {name!r} is larger than {MAX_NOTEBOOK // 2**20} MB "
                    f"unpacked ({info.file_size} bytes)"
                )
        for name, infos in files.items():
            if len(infos) > 1:
                problems[name] = f"the zip holds {name!r} {len(infos)} times"
        clashes = set(files) & folders
        for name in files:
            path = PurePosixPath(name)
            hit = next((str(p) for p in (path, *path.parents) if str(p) in clashes), None)
            if hit:
                problems.setdefault(name, f"the zip puts both a file and a folder at {hit!r}")
        written = 0
        for name in sorted(files):
            wanted = (
                name.lower().endswith(".ipynb") or PurePosixPath(name).name == timestamps.TIMESTAMP
            )
            if name in problems or _unsafe(name) or not wanted:
                continue
            (info,) = files[name]
            if written + info.file_size > MAX_EXTRACTED:
                problems[name] = (
                    f"the zip's notebooks add up to more than {MAX_EXTRACTED // 2**20} MB; "
                    f"{name!r} was not unpacked"
                )
                continue
            dest = target / name
            try:
                with archive.open(info) as source:
                    data = source.read(MAX_NOTEBOOK + 1)
                if len(data) > MAX_NOTEBOOK:
                    raise ValueError(f"larger than {MAX_NOTEBOOK // 2**20} MB")
                dest.parent.mkdir(parents=True, exist_ok=True)
                with open(dest, "xb") as out:
                    out.write(data)
                written += len(data)
            except (OSError, ValueError, RuntimeError, NotImplementedError, EOFError,
                    zipfile.BadZipFile, zlib.error) as err:  # fmt: skip
                problems[name] = f"the zip entry {name!r} could not be read ({err})"
        for name in sorted(folders):  # folders too, so that an empty lab folder shows
            if not _unsafe(name):
                try:
                    (target / name).mkdir(parents=True, exist_ok=True)
                except OSError:
                    pass  # a file of the same name: its problem is recorded
    return _Listing(target, sorted(files), problems)


def _walk(root: Path) -> _Listing:
    """The files below a folder, links not followed (a link is listed, as a file)."""
    files = []
    for folder, dirs, names in os.walk(root):
        base = Path(folder).relative_to(root)
        for name in sorted(names) + sorted(d for d in dirs if (Path(folder) / d).is_symlink()):
            files.append((base / name).as_posix())
    return _Listing(root, sorted(files))


# ---------------------------------------------------------------------------------------
# Which layout, and who and which lab a file is


def _native(file: str, known: list[str]) -> bool:
    parts = PurePosixPath(file).parts
    return len(parts) >= 3 and parts[-2] in known and parts[-1] == f"{parts[-2]}.ipynb"


def detect(files: list[str], known: list[str]) -> str:
    """The layout that places the most files (the folders layout on a tie)."""
    counts = {
        "folders": sum(_native(f, known) for f in files),
        "moodle": sum(isinstance(_place(f, "moodle", known), _Place) for f in files),
        "canvas": sum(isinstance(_place(f, "canvas", known), _Place) for f in files),
    }
    return max(counts, key=lambda kind: counts[kind])


def lab_of(filename: str, known: list[str]) -> str | None:
    """The lab a file's original name names (``lab1_perceptron.ipynb``, or ``-1.ipynb``
    after it, as a platform renames a resubmitted file), or None."""
    stem, dot, ext = filename.rpartition(".")
    if not dot or ext.lower() != "ipynb":
        return None
    folded = {lab.casefold(): lab for lab in known}
    return folded.get(stem.casefold()) or folded.get(RESUBMITTED.sub("", stem).casefold())


def moodle_student(name: str) -> str:
    """A stable student id from a Moodle full name: ASCII, lower case, words joined by
    dots; a short digest of the name is added when folding to ASCII lost letters."""
    name = unicodedata.normalize("NFC", " ".join(name.split()))
    decomposed = unicodedata.normalize("NFKD", name)
    kept = decomposed.encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", ".", kept.lower()).strip(".")[:48].strip(".")
    lost = any(ch.isalnum() and not ch.isascii() for ch in decomposed)
    if lost or not slug:
        digest = hashlib.sha256(name.casefold().encode()).hexdigest()[:8]
        slug = f"{slug}-{digest}" if slug else f"moodle-{digest}"
    return slug


def exact_name(name: str) -> str:
    """A Moodle name as it is compared: the download's exact text, in Unicode's composed
    form (NFC), so that a zip tool that wrote it decomposed changes nothing."""
    return unicodedata.normalize("NFC", name)


def _digest(name: str, salt: int) -> str:
    return hashlib.sha256(f"{salt}:{name}".encode() if salt else name.encode()).hexdigest()[:6]


def moodle_ids(names: Iterable[str], known: dict[str, str]) -> dict[str, str]:
    """The student id of every name: ``known`` (exact name -> id, from the course folder)
    with the new ``names`` added. A known name keeps its id. A new name gets its folded id
    (:func:`moodle_student`) if no other name holds it, else the folded id plus ``-`` and 6
    hex digits of a digest of its exact name (another digest in the unlikely case that one
    is held too). New names are taken in the order of their folded id, then of their exact
    text, so one download gives the same ids whatever the order of its files. Every id
    fits :data:`labtools.door.layout.STUDENT_ID` (at most 57 + 7 characters)."""
    ids = dict(known)
    held: dict[str, set[str]] = defaultdict(set)
    for name, student in ids.items():
        held[student].add(name)
    new = {exact_name(n) for n in names} - set(ids)
    for name in sorted(new, key=lambda n: (moodle_student(n), n)):
        folded = student = moodle_student(name)
        salt = 0
        while held[student]:
            student = f"{folded}-{_digest(name, salt)}"
            salt += 1
        ids[name] = student
        held[student].add(name)
    return ids


def kept_apart(names: Iterable[str], ids: dict[str, str]) -> str:
    """A line for the summary naming, for each of ``names`` whose folded id other names of
    ``ids`` share under other ids, every such name and its id (the one holding the folded
    id first); "" when there is none (names that ``ids`` joins under one id, as an
    instructor may in the course folder's file for one person, are not kept apart). Names
    are shown by ``repr``, so an invisible or bidi character shows as its escape
    (``'Alice Smith\\u202e'``)."""
    alike: dict[str, set[str]] = defaultdict(set)
    for name in ids:
        alike[moodle_student(name)].add(name)
    groups = []
    for folded in sorted({moodle_student(exact_name(n)) for n in names}):
        if len({ids[n] for n in alike[folded]}) > 1:
            group = sorted(alike[folded], key=lambda n: (ids[n] != folded, ids[n], n))
            groups.append(", ".join(f"{n!r} -> {ids[n]}" for n in group))
    return "Moodle names that fold alike were kept apart: " + "; ".join(groups) if groups else ""


def read_names(course: Path) -> dict[str, str]:
    """The Moodle names the course folder has seen, with their ids ({} before the first)."""
    import json

    path = Path(course) / NAMES_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as err:
        raise UsageError(f"{path} cannot be read ({err.strerror})") from None
    try:
        names = json.loads(text)
    except ValueError:
        names = None
    if not isinstance(names, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and layout.valid_student(v)
        for k, v in names.items()
    ):
        raise UsageError(
            f"{path} is not a map of Moodle names to student ids: restore it (from a backup "
            "of the course folder), since the ids of names that fold alike depend on it"
        )
    return {exact_name(k): v for k, v in names.items()}


def write_names(course: Path, ids: dict[str, str]) -> None:
    """Keep ``ids`` (exact name -> student id) in the course folder, whole."""
    import json

    text = json.dumps(dict(sorted(ids.items())), indent=1, ensure_ascii=True) + "\n"
    layout.write_whole(Path(course) / NAMES_FILE, text)


def read_participants(course: Path) -> dict[str, dict[str, dict[str, str]]]:
    """The Moodle participant ids the course folder keeps: lab -> student id ->
    ``{"participant": "1234567", "name": "Jane Doe"}`` ({} before the first download)."""
    path = Path(course) / PARTICIPANTS_FILE
    found = _read_json(course, PARTICIPANTS_FILE, "grade the Moodle download again to rebuild it")
    if not isinstance(found, dict) or not all(
        isinstance(who, dict)
        and all(
            isinstance(v, dict) and str(v.get("participant", "")).isdigit() for v in who.values()
        )
        for who in found.values()
    ):
        raise UsageError(
            f"{path} is not a map of labs to Moodle participant ids: grade the Moodle "
            "download again to rebuild it"
        )
    return found


def write_participants(course: Path, participants: dict) -> None:
    """Add ``participants`` (lab -> student id -> participant id and name) to the course
    folder's :data:`PARTICIPANTS_FILE`, whole: a later download's entry replaces one."""
    import json

    kept = read_participants(course)
    for lab, students in participants.items():
        kept.setdefault(lab, {}).update(students)
    text = json.dumps(kept, indent=1, sort_keys=True, ensure_ascii=True) + "\n"
    layout.write_whole(Path(course) / PARTICIPANTS_FILE, text)


def read_sources(course: Path) -> dict[str, str]:
    """Where each student id of the course folder came from (:data:`SOURCES_FILE`: one of
    :data:`SOURCES`); {} before the first run that kept it."""
    path = Path(course) / SOURCES_FILE
    found = _read_json(
        course,
        SOURCES_FILE,
        "restore it from a backup of the course folder; it says where each student id came from",
    )
    if not isinstance(found, dict) or not all(
        isinstance(k, str) and v in SOURCES for k, v in found.items()
    ):
        raise UsageError(
            f"{path} is not a map of student ids to {', '.join(SOURCES)}: restore it from a "
            "backup of the course folder"
        )
    return found


def write_sources(course: Path, sources: dict[str, str]) -> None:
    """Add ``sources`` (student id -> where it came from) to :data:`SOURCES_FILE`, whole."""
    import json

    kept = read_sources(course)
    kept.update(sources)
    text = json.dumps(dict(sorted(kept.items())), indent=1) + "\n"
    layout.write_whole(Path(course) / SOURCES_FILE, text)


def _read_json(course: Path, name: str, what: str):
    """The JSON value of the course folder's file ``name``, {} before the first; a
    UsageError of one line for one that cannot be read (``what``: what to do then)."""
    import json

    path = Path(course) / name
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as err:
        raise UsageError(f"{path} cannot be read ({err}): {what}") from None


def _read_map(course: Path, name: str, what: str) -> dict:
    """A JSON object the course folder keeps (``name``): :func:`_read_json`, and a
    UsageError for anything else."""
    found = _read_json(course, name, what)
    if not isinstance(found, dict):
        raise UsageError(f"{Path(course) / name} is not a JSON object: {what}")
    return found


def _write_map(course: Path, name: str, data: dict) -> None:
    import json

    text = json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a file name that is not UTF-8 (a lone surrogate): escaped
        text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    layout.write_whole(Path(course) / name, text)


def student_names(course: Path) -> dict[str, str]:
    """Each student id's name as the course folder knows it (:data:`STUDENT_NAMES`): the
    one Canvas's gradebook export gave, else the one its download gave ({} for none)."""
    kept = _read_map(course, STUDENT_NAMES, "move it away; the next run writes it again")
    names = {}
    for student, given in kept.items():
        if isinstance(given, dict):
            name = given.get("gradebook") or given.get("download")
            if isinstance(name, str) and name:
                names[student] = name
    return names


def keep_student_names(course: Path, names: dict[str, str], source: str) -> None:
    """Add ``names`` (student id -> name) from ``source`` ("download" or "gradebook") to
    the course folder's :data:`STUDENT_NAMES`, whole."""
    from labtools.wire import NAME, capped

    kept = _read_map(course, STUDENT_NAMES, "move it away; the next run writes it again")
    changed = False
    for student, name in names.items():
        name = capped(name, NAME)
        entry = kept.get(student) if isinstance(kept.get(student), dict) else {}
        if entry.get(source) != name:
            kept[student] = {**entry, source: name}
            changed = True
    if changed:
        _write_map(course, STUDENT_NAMES, kept)


def shown(student: str, names: dict[str, str]) -> str:
    """A student as the instructor reads one: the id, and the name beside it if known
    ("4242 (annnormal)")."""
    from labtools.wire import NAME, capped

    name = names.get(student)
    return f"{student} ({capped(name, NAME)})" if name and name != student else student


def canvas_files(course: Path) -> dict[str, dict[str, dict[str, str]]]:
    """The Canvas download's file of each graded notebook (:data:`CANVAS_FILE_NAMES`): lab
    -> student -> {"file", "attachment", "name", "digest"}."""
    what = "grade the Canvas download again (without --regrade) to write it anew"
    return _read_map(course, CANVAS_FILE_NAMES, what)


def keep_canvas_files(course: Path, files: dict[tuple[str, str], dict[str, str]]) -> None:
    """Keep these Canvas files ((student, lab) -> {"file", "attachment", "name",
    "digest"}), a later download's replacing an earlier one's."""
    if not files:
        return
    kept = canvas_files(course)
    for (student, lab), entry in files.items():
        kept.setdefault(lab, {})[student] = dict(entry)
    _write_map(course, CANVAS_FILE_NAMES, kept)


def not_placed(course: Path) -> dict[str, list[dict[str, str]]]:
    """The notebooks of each download that could not be placed (:data:`NOT_PLACED`)."""
    return _read_map(course, NOT_PLACED, "move it away; the next run writes it again")


def keep_not_placed(course: Path, download: str, unplaced: list[Unplaced]) -> None:
    """Keep the notebooks among ``unplaced`` (this download's, which replace what an
    earlier run of it kept)."""
    kept = not_placed(course)
    notebooks = [
        {"file": u.file, "why": u.why, "student": u.student, "lab": u.lab}
        for u in unplaced
        if u.pending and u.file.lower().endswith(".ipynb")
    ]
    if notebooks:
        kept[download] = notebooks
    elif download not in kept:
        return
    else:
        del kept[download]
    _write_map(course, NOT_PLACED, kept)


def apart(course: Path, taken: Intake) -> set[tuple[str, str]]:
    """Set apart the submissions of ``taken`` whose student id the course folder holds
    from another source (a Canvas user id, a Moodle name's id, a folder's name are never
    one person because they are one string): they are not graded, and each is listed in
    :attr:`Intake.unplaced` with why and what to do. Returns their (student, lab). An id
    the course folder has results for but no source (a folder made by an earlier version)
    is taken as this download's."""
    sources = read_sources(course)
    refused = set()
    kept = []
    for sub in taken.submissions:
        source = sources.get(sub.student)
        if source is None or source == taken.layout:
            kept.append(sub)
            continue
        refused.add((sub.student, sub.lab))
        why = (
            f"not graded: the student id {sub.student} came to {Path(course).name} from "
            f"{SOURCES[source]}, and here from {SOURCES[taken.layout]}; two sources never "
            "name one person: grade this download into another --course"
        )
        # (not kept as pending: it belongs to another course folder, the line says so)
        taken.unplaced.append(Unplaced(sub.file or sub.path.name, why, pending=False))
    taken.submissions = kept
    return refused


@dataclass
class _Place:
    student: str
    lab: str
    name: str  # the student's name in the download
    late: bool = False
    participant: str = ""  # Moodle's participant id (made per assignment)
    attachment: str = ""  # Canvas's id of the file handed in


@dataclass
class _NoLab:
    """A notebook of a platform's download whose own name names no lab (renamed by its
    student): who it is, and how its name would be written to be placed."""

    why: str
    student: str
    before: str  # what comes before the notebook's own name (Canvas: "<name>_<ids>_")
    folder: str  # the folder it is in, "" for a flat file


def _place(file: str, kind: str, known: list[str]) -> _Place | _NoLab | str:
    """Who and which lab a file of a Canvas or Moodle download is, or why it cannot be told."""
    path = PurePosixPath(file)
    folder_name = ""
    if kind == "canvas":
        match = CANVAS.fullmatch(path.name)
        if not match:
            return "not a Canvas file name (<name>[_LATE]_<userid>_<submissionid>_<file>)"
        original, student, name = match["file"], match["userid"], match["name"]
    else:
        folder = next(
            (i for i, part in enumerate(path.parts[:-1]) if MOODLE_FOLDER.fullmatch(part)), None
        )
        if folder is not None:
            match = MOODLE_FOLDER.fullmatch(path.parts[folder])
            original = path.name
            folder_name = "/".join(path.parts[: folder + 1])
        else:
            match = MOODLE_FILE.fullmatch(path.name)
            if not match:
                return (
                    "not in a Moodle participant folder "
                    "(<Full Name>_<participant id>_assignsubmission_file_/)"
                )
            original = match["file"]
        if match["plugin"] != "file":
            return f"Moodle's {match['plugin']} submission, not a file"
        name = match["name"]
        student = moodle_student(name)
    if not original.lower().endswith(".ipynb"):
        return f"not a notebook ({original!r})"
    lab = lab_of(original, known)
    if lab is None:
        labs = ", ".join(f"{lab}.ipynb" for lab in known)
        why = f"{original!r} names no lab (expected one of {labs})"
        if not layout.valid_student(student):
            return why
        before = path.name[: len(path.name) - len(original)] if not folder_name else ""
        return _NoLab(why, student, before, folder_name)
    if not layout.valid_student(student):
        return f"{student!r} is not a valid student id"
    participant = match["id"] if kind == "moodle" else ""
    attachment = match["sub"] if kind == "canvas" else ""
    late_mark = bool(kind == "canvas" and match["late"])
    return _Place(student, lab, name, late_mark, participant, attachment)


def placing_hint(kind: str, file: str, where: _NoLab, lab: str | None, known: list[str],
                 course: Path | None) -> str:  # fmt: skip
    """How to place a renamed notebook of a platform's download: a copy named as the
    download names the lab's notebook, in a folder of its own, graded into the course
    folder. The copy keeps the download's naming, so its id keeps its source (a folder
    named by a Canvas id would be another source's, :func:`apart`)."""
    from labtools.options import course_args

    name = f"{lab or 'LAB'}.ipynb"
    if kind == "canvas":
        placed = f"{where.before}{name}"
    else:
        placed = f"{where.folder or PurePosixPath(file).parent}/{name}"
    command = ["python3", "tasks.py", "grade", "FOLDER", *course_args(course or "grading")]
    which = "" if lab else f" (LAB: its lab, one of {', '.join(known)})"
    return (
        f"{where.why}: to grade it, copy it as FOLDER/{placed}{which} into a new folder "
        f"FOLDER and run `{' '.join(command)}`"
    )


def _file_refusal(listing: _Listing, file: str, from_zip: bool) -> str | None:
    """Why a placed file of a platform's download is not graded, or None."""
    if file in listing.problems:
        return f"refused: {listing.problems[file]}"
    if from_zip:
        return None
    parts = PurePosixPath(file).parts
    for end in range(1, len(parts) + 1):
        if layout._is_link(listing.root.joinpath(*parts[:end])):
            return f"refused: {'/'.join(parts[:end])!r} is a symbolic link"
    try:
        info = os.lstat(listing.path(file))
    except OSError as err:
        return f"refused: the notebook cannot be read ({err.strerror})"
    return layout.file_refusal(info)


def _duplicates(files: list[str]) -> str:
    shown = ", ".join(repr(f) for f in files)
    return (
        f"refused: {len(files)} files name this student for this lab ({shown}); "
        "keep one and grade again"
    )


def _platform(
    listing: _Listing,
    kind: str,
    labs: list[str],
    known: list[str],
    from_zip: bool,
    course: Path | None,
):
    result = Intake(kind, [])
    placed: dict[tuple[str, str], list[str]] = defaultdict(list)
    places: list[tuple[str, _Place]] = []
    renamed: list[tuple[str, _NoLab]] = []
    for file in listing.files:
        where = _place(file, kind, known)
        if isinstance(where, _NoLab) and file not in listing.problems:
            renamed.append((file, where))
            continue
        if isinstance(where, str | _NoLab):
            why = where if isinstance(where, str) else where.why
            if not from_zip and layout._is_link(listing.path(file)):
                why = "a symbolic link (not followed)"
            result.unplaced.append(Unplaced(file, listing.problems.get(file, why)))
            continue
        if where.lab not in labs:
            continue  # another lab than the ones asked for
        places.append((file, where))
    # a renamed notebook: the lab of the download's other files, when they have one
    download_labs = sorted({where.lab for _, where in places})
    guess = download_labs[0] if len(download_labs) == 1 else None
    for file, where in renamed:
        why = placing_hint(kind, file, where, guess, known, course)
        result.unplaced.append(Unplaced(file, why, where.student, guess or ""))
    if kind == "moodle":
        before = read_names(course) if course else {}
        ids = moodle_ids((p.name for _, p in places), before)
        if ids != before:  # kept by the run, under the course folder's lock (keep_names)
            result.moodle_names = ids
        for _, where in places:
            where.name = exact_name(where.name)
        known = read_participants(course) if course else {}
        result.shared_names = moodle_people([p for _, p in places], ids, known)
        result.kept_apart = kept_apart((p.name for _, p in places), ids)
    else:
        result.shared_names = canvas_people([p for _, p in places])
    for file, where in places:
        placed[(where.student, where.lab)].append(file)
        result.names.setdefault(where.student, where.name)
        if where.participant:
            result.participants.setdefault(where.lab, {}).setdefault(
                where.student, {"participant": where.participant, "name": where.name}
            )
        if where.late:
            result.late.append(f"{where.student}/{where.lab}")
            result.times[(where.student, where.lab)] = timestamps.Submitted(
                late=True, source="Canvas"
            )
        if where.attachment:
            result.canvas_files[(where.student, where.lab)] = {
                "file": PurePosixPath(file).name, "attachment": where.attachment,
                "name": where.name,
            }  # fmt: skip
    for (student, lab), files in sorted(placed.items()):
        if len(files) > 1:
            refused = _duplicates(files)
        else:
            refused = _file_refusal(listing, files[0], from_zip)
        unsafe = from_zip and _unsafe(files[0])  # (a folder's own file names are its own)
        path = listing.root if unsafe else listing.path(files[0])  # never read
        result.submissions.append(Submission(student, lab, path, refused, files[0]))
    result.late = sorted(set(result.late))
    return result


def moodle_people(places: list[_Place], ids: dict[str, str], known: dict) -> list[str]:
    """Give each Moodle file its student id (in place): a person of a download is its
    participant id for the lab (made per assignment). A participant the course folder
    knows for the lab (``known``: :data:`PARTICIPANTS_FILE`) keeps its id; another gets
    its name's id (``ids``), unless another participant holds that id for the lab, a
    namesake: then its name's id and a digest of the lab and its participant id. Both are
    graded; returns a line for each name that several participants hold."""
    holder: dict[tuple[str, str], str] = {}  # (lab, student id) -> participant
    student_of: dict[tuple[str, str], str] = {}  # (lab, participant) -> student id
    for lab, who in known.items():
        for student, entry in who.items():
            holder[(lab, student)] = str(entry["participant"])
            student_of[(lab, str(entry["participant"]))] = student
    shared: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)  # (lab, name) -> ...

    def order(where: _Place):  # the participants the course folder knows first
        return where.lab, (where.lab, where.participant) not in student_of, int(where.participant)

    for where in sorted(places, key=order):
        student = student_of.get((where.lab, where.participant))
        if student is None:
            student = ids[where.name]
            other = holder.get((where.lab, student))
            if other is not None and other != where.participant:
                student = f"{student}-{_digest(f'{where.lab}:{where.participant}', 0)}"
            holder[(where.lab, student)] = where.participant
            student_of[(where.lab, where.participant)] = student
        where.student = student
        shared[(where.lab, where.name)][where.participant] = student
    lines = []
    for (lab, name), people in sorted(shared.items()):
        if len(people) > 1:
            each = ", ".join(f"participant {p} -> {s}" for p, s in sorted(people.items()))
            lines.append(
                f"{len(people)} Moodle participants of {lab} are named {name!r}, each graded "
                f"under an id of their own ({each}): check who is who; the Moodle export "
                "goes by participant id"
            )
    return lines


def canvas_people(places: list[_Place]) -> list[str]:
    """A line for each name that several Canvas user ids hold in the download (each is
    graded under its user id)."""
    ids: dict[str, set[str]] = defaultdict(set)
    for where in places:
        ids[where.name].add(where.student)
    return [
        f"the Canvas name {name!r} is held by {len(held)} user ids, each graded as its own "
        f"person: {', '.join(sorted(held, key=lambda s: (len(s), s)))}"
        for name, held in sorted(ids.items())
        if len(held) > 1
    ]


def find_submissions(root: Path, labs: list[str]) -> list[Submission]:
    """Every (student, lab) notebook under ``root``, sorted; refused ones carry a reason."""
    root = Path(root)
    if _is_link(root):
        raise UsageError(f"`submissions` must not be a symbolic link: {root}")
    candidates = [root / "submitted", root]
    candidates += [p for p in sorted(root.iterdir()) if p.is_dir() and not _is_link(p)]
    for base in candidates:
        if not base.is_dir() or _is_link(base):
            continue
        found = []
        for student_dir in sorted(base.iterdir()):
            student = student_dir.name
            for lab in labs:
                notebook = student_dir / lab / f"{lab}.ipynb"
                if not (student_dir / lab).exists() and not _is_link(student_dir / lab):
                    continue
                found.append(Submission(student, lab, notebook, _refusal(student_dir, lab)))
        if found:
            return found
    return []


def _refusal(student_dir: Path, lab: str) -> str | None:
    notebook = student_dir / lab / f"{lab}.ipynb"
    if not valid_student(student_dir.name):
        return "refused: the folder name is not a valid student id"
    for path, what in (
        (student_dir, "student folder"),
        (student_dir / lab, "lab folder"),
        (notebook, "notebook"),
    ):
        if _is_link(path):
            return f"refused: the {what} is a symbolic link"
    try:
        info = os.lstat(notebook)
    except OSError:
        return f"refused: no {lab}.ipynb in the lab folder"
    return file_refusal(info)


def _folders(listing: _Listing, labs: list[str], known: list[str]) -> Intake:
    """This project's own layout: :func:`find_submissions`, and then what
    it cannot see: zip problems, ids that differ only in case, invalid ids, other files."""
    result = Intake("folders", [])
    found = {}
    taken: set[str] = set()
    stamps: dict[tuple[str, str], Path] = {}
    for sub in find_submissions(listing.root, labs):
        relative = _relative(listing.root, sub.path)
        sub.file = relative
        taken |= {relative, *(str(p) for p in PurePosixPath(relative).parents)}
        if not layout.valid_student(sub.student):
            why = f"{sub.student!r} is not a valid student id (letters, digits, _ . @ -)"
            result.unplaced.append(Unplaced(relative, why))
            continue
        found[(sub.student, sub.lab)] = sub
        stamp = sub.path.parent / timestamps.TIMESTAMP
        if os.path.lexists(stamp):  # nbgrader's, beside the notebook
            taken.add(_relative(listing.root, stamp))
            if not sub.refused:  # (a lab folder that is a link is not looked into)
                stamps[(sub.student, sub.lab)] = stamp
    result.times.update(read_times(listing.root, stamps))
    for file, problem in sorted(listing.problems.items()):
        parts = PurePosixPath(file).parts
        lab_at = next((i for i, p in enumerate(parts) if i >= 1 and p in known), None)
        if (
            lab_at is None
            or not layout.valid_student(parts[lab_at - 1])
            or parts[lab_at + 1 :] not in ((), (f"{parts[lab_at]}.ipynb",))
        ):  # a problem with another file than the lab folder or its notebook: reported
            result.unplaced.append(Unplaced(file, problem))
            continue
        taken.add(file)
        student, lab = parts[lab_at - 1], parts[lab_at]
        if lab not in labs:
            continue
        sub = found.get((student, lab))
        if sub is None or not (sub.refused or "").startswith("refused: the zip"):
            path = listing.root if _unsafe(file) else listing.path(file)  # never read
            found[(student, lab)] = Submission(student, lab, path, f"refused: {problem}")
    same: dict[tuple[str, str], list[Submission]] = defaultdict(list)
    for sub in found.values():
        same[(sub.student.casefold(), sub.lab)].append(sub)
    for subs in same.values():
        if len(subs) > 1:
            folders = sorted(f"{s.student}/{s.lab}" for s in subs)
            for sub in subs:
                sub.refused = _duplicates(folders).replace("files", "folders")
    result.submissions = sorted(found.values(), key=lambda s: (s.student, s.lab))
    for file in listing.files:
        if file not in taken:
            why = listing.problems.get(file, "not <student>/<lab>/<lab>.ipynb")
            student, lab = "", ""
            if file not in listing.problems and file.lower().endswith(".ipynb"):
                why, student, lab = _folder_hint(file, known)
            result.unplaced.append(Unplaced(file, why, student, lab))
    result.unplaced.sort(key=lambda u: u.file)
    return result


def _folder_hint(file: str, known: list[str]) -> tuple[str, str, str]:
    """Why a notebook of a folder of submissions is not placed, with where to put it;
    and the student and lab that its folders name ("" where they name none)."""
    parts = PurePosixPath(file).parts
    lab = next((p for p in reversed(parts[:-1]) if p in known), "")
    at = parts.index(lab) if lab else len(parts) - 1
    student = parts[at - 1] if at >= 1 and layout.valid_student(parts[at - 1]) else ""
    base = "/".join(parts[: at - 1]) if student else ""
    where = f"{base}/" if base else ""
    if student and lab:
        hint = f"rename it {where}{student}/{lab}/{lab}.ipynb and grade again"
    elif student or len(parts) >= 2:
        who = student or parts[-2]
        hint = (
            f"move it to {where}{who}/LAB/LAB.ipynb (LAB: its lab, one of {', '.join(known)}; "
            f"{who}: the student's id) and grade again"
        )
    else:
        hint = (
            "put it at STUDENT/LAB/LAB.ipynb (STUDENT: the student's id; LAB: its lab, one "
            f"of {', '.join(known)}) and grade again"
        )
    return f"not <student>/<lab>/<lab>.ipynb: {hint}", student if lab else "", lab


def read_times(root: Path, stamps: dict[tuple[str, str], Path]) -> dict:
    """The times in these ``timestamp.txt`` files ((student, lab) -> path), read through the
    door (:func:`labtools.door.parse.read`, in a child under limits): a
    :class:`labtools.door.timestamps.Submitted` each, in UTC within
    :data:`labtools.door.timestamps.YEARS`, or with the problem that kept its time out."""
    keys = sorted(stamps)
    jobs = [functools.partial(_stamp, stamps[key]) for key in keys]
    names = [_relative(root, stamps[key]) for key in keys]
    found = {}
    for key, let in zip(keys, parse.read(jobs, names), strict=True):
        if let.refused is not None:
            found[key] = timestamps.Submitted(source=timestamps.TIMESTAMP, problem=str(let.refused))
        else:
            found[key] = timestamps.Submitted.from_json(let.value)
    return found


def _stamp(path: Path) -> dict:
    return timestamps.read_timestamp(path).to_json()  # (in the door's child)


def _relative(root: Path, path: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def collect(
    source: Path,
    labs: list[str],
    workdir: Path,
    known: list[str] | None = None,
    course: Path | None = None,
):
    """Every submission of ``labs`` in ``source`` (a folder or a zip; a zip is unpacked
    into ``workdir``), refused ones with their reason, and the files that no row holds.
    With ``course`` (the course folder), a Moodle download's names are read from its
    :data:`NAMES_FILE` and the new ones added by :meth:`Intake.keep_names`, so that names
    that fold alike keep apart from one download to the next; without it, only within this
    download."""
    source = Path(source)
    known = known or layout.lab_names()
    from_zip = source.is_file() and source.suffix.lower() == ".zip"
    if from_zip:
        listing = extract(source, Path(workdir))
    else:
        if layout._is_link(source):
            raise UsageError(f"`submissions` must not be a symbolic link: {source}")
        listing = _walk(source)
    kind = detect(listing.files, known)
    if kind == "folders":
        return _folders(listing, labs, known)
    return _platform(listing, kind, labs, known, from_zip, course)
