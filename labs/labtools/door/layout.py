"""Where things are: the labs, a folder of submissions, a course folder. Standard library
only, so that ``tasks.py`` can check its arguments before it installs anything.

Submissions are laid out as ``<root>/[submitted/]<student>/<lab>/<lab>.ipynb`` (one more
folder around it is looked through); :mod:`labtools.door.intake` reads this layout
(:func:`labtools.door.intake.find_submissions`), the learning platforms' downloads and zips.
They are taken as files and nothing else: a symbolic link anywhere below the root, a
notebook that is not a regular file, or one larger than :data:`MAX_NOTEBOOK` is refused
(:func:`file_refusal`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import stat
from dataclasses import dataclass, field
from pathlib import Path

LABS = Path(__file__).resolve().parents[2]
MAX_NOTEBOOK = 20 * 2**20
# matched in full (``fullmatch``): with ``match`` and ``$``, "alice\n" would pass
STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}")
MARK = ".labtools-course.json"  # marks a course folder made by these tools
LOCK = ".labtools-lock"  # held (flock) by the run that writes the course folder
COURSE = "single-layer-neural-networks"
EXPECTED = (
    "SUBMISSIONS/[submitted/]<student>/<lab>/<lab>.ipynb, a zip of that, or a Canvas or "
    "Moodle submissions download (zip or unpacked)"
)


class UsageError(Exception):
    """A wrong argument: the message says what was expected."""


def lab_names(labs: Path = LABS) -> list[str]:
    """Names of the labs, one folder each under source/."""
    return sorted(p.name for p in (labs / "source").iterdir() if (p / f"{p.name}.ipynb").exists())


@dataclass
class Submission:
    """One student's notebook for one lab, or why it was refused."""

    student: str
    lab: str
    path: Path
    refused: str | None = None  # why it is not graded
    # as the download names it (relative to its top), to tell the instructor; not compared
    file: str = field(default="", compare=False)


def valid_student(name: str) -> bool:
    """Whether ``name`` is a student id as the course folder keeps it (matched in full)."""
    return STUDENT_ID.fullmatch(name) is not None


def _is_link(path: Path) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:
        return False


def file_refusal(info: os.stat_result) -> str | None:
    """Why a notebook with this ``os.lstat`` result is not graded (not a regular file, or
    larger than :data:`MAX_NOTEBOOK`), or None."""
    if not stat.S_ISREG(info.st_mode):
        return "refused: the notebook is not a regular file"
    if info.st_size > MAX_NOTEBOOK:
        return f"refused: the notebook is larger than {MAX_NOTEBOOK // 2**20} MB"
    return None


def read_notebook(path: Path) -> bytes:
    """The bytes of a submitted notebook, opened without following a symbolic link."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as f:
        data = f.read(MAX_NOTEBOOK + 1)
    if len(data) > MAX_NOTEBOOK:
        raise ValueError(f"larger than {MAX_NOTEBOOK // 2**20} MB")
    return data


@contextlib.contextmanager
def whole(path: Path, mode: int = 0o666):
    """A binary file to write ``path`` through, whole or not at all: a temporary file in
    the same folder, renamed over ``path`` once it is complete (a run stopped midway, a
    full disk, leave the previous copy as it was). Permissions ``mode`` less the umask.
    A failure to write is a UsageError of one line that says the previous copy is kept.
    The one way the tools write a file of the course folder (``tests/door/test_door.py``
    checks that no module writes one otherwise)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(f".{path.name}.{secrets.token_hex(4)}.part")
    try:
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(part, path)
    except OSError as err:
        part.unlink(missing_ok=True)
        kept = "the previous copy is kept" if path.exists() else "nothing was written"
        raise UsageError(
            f"{path} could not be written ({err.strerror or err}): {kept}; free some space "
            "(or fix the folder's permissions) and run the command again"
        ) from None
    except BaseException:
        part.unlink(missing_ok=True)
        raise


def write_whole(path: Path, data: str | bytes, mode: int = 0o666) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` whole or not at all (:func:`whole`)."""
    with whole(path, mode) as f:
        f.write(data.encode("utf-8") if isinstance(data, str) else data)


def check_course(course: Path) -> None:
    """Refuse a course folder that holds something else than a course of these labs."""
    course = Path(course)
    if _is_link(course):
        raise UsageError(f"the course folder must not be a symbolic link: {course}")
    if course.exists() and not course.is_dir():
        raise UsageError(f"the course folder {course} is a file")
    if not course.exists() or all(p.name == LOCK for p in course.iterdir()):
        return
    mark = course / MARK
    if not mark.is_file():
        raise UsageError(
            f"{course} is not empty and was not made by `tasks.py grade` (no {MARK}); "
            "name a new folder with --course"
        )
    try:
        name = json.loads(mark.read_text()).get("course")
    except (ValueError, AttributeError):
        name = None
    if name != COURSE:
        raise UsageError(f"{course} belongs to another course ({name!r}); name a new folder")


def existing_course(course: Path) -> None:
    """Refuse a course folder that does not exist or was not made by ``grade`` (for the
    jobs that read one: export, feedback, formgrader, report)."""
    course = Path(course)
    if not course.exists():
        raise UsageError(
            f"no course folder {course}: grade submissions into it first "
            "(`tasks.py grade SUBMISSIONS --course FOLDER`), or name another with --course"
        )
    check_course(course)
    if not (course / MARK).is_file():
        raise UsageError(f"{course} was not made by `tasks.py grade` (no {MARK})")


def check_jobs(jobs: int | None) -> None:
    if jobs is not None and jobs < 1:
        raise UsageError(f"--jobs must be at least 1 (got {jobs})")


def check_arguments(
    submissions: str | None, course: str, labs: list[str] | None, jobs: int | None = None
) -> None:
    """Everything ``grade`` can check before anything is installed; raises UsageError."""
    check_jobs(jobs)
    if not submissions:
        raise UsageError(f"name the folder or zip of submissions, laid out as {EXPECTED}")
    path = Path(submissions)
    if not path.exists():
        raise UsageError(f"{path} does not exist; expected {EXPECTED}")
    if path.is_file() and path.suffix != ".zip":
        raise UsageError(f"{path} is a file but not a .zip; expected {EXPECTED}")
    if path.is_dir() and not any(path.iterdir()):
        raise UsageError(f"{path} is empty; expected {EXPECTED}")
    known = lab_names()
    unknown = sorted(set(labs or []) - set(known))
    if unknown:
        raise UsageError(f"unknown lab(s) {', '.join(unknown)}; the labs are {', '.join(known)}")
    check_course(Path(course))
