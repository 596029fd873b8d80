"""The door: what a student or a learning platform hands over, read once, in a child under
limits, into typed values.

Every file of a download that the tools read is parsed here and nowhere else: a submitted
notebook (:func:`notebook`), nbgrader's ``timestamp.txt`` beside it
(:func:`labtools.door.timestamps.read_timestamp`, through :func:`read`), a platform's CSV
(:func:`table`). The parsing runs in a child of the command (:func:`labtools.children.fork`)
whose address space may grow by at most :data:`MEMORY` and which is killed after
:data:`SECONDS` on one file, so that no file can stop the command, hold its memory or
outlive it. Each file becomes a value with stated ranges:

- a notebook: JSON of at most :data:`MAX_DEPTH` levels, at most
  :data:`labtools.door.layout.MAX_NOTEBOOK` bytes, an object with a list of cells; it leaves
  the door as the canonical JSON text this module writes of it, which is all that the
  grading, the course folder's submitted copy and the report read (nothing after the
  door parses what the student wrote);
- a time: aware, in UTC, within the years :data:`labtools.door.timestamps.YEARS`;
- a table: rows of strings, as the platform wrote them.

What fails is refused for its own file (:class:`Refused`, one line naming the file and
what to do); a child that a file killed or stopped is replaced by a new one for the files
after it. Names and ids come from file names, which are short: the intake checks them
itself (:mod:`labtools.door.intake`).
"""

from __future__ import annotations

import csv
import io
import json
import os
import resource
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass

from labtools import children, wire

SECONDS = 60.0  # for one file, in the child
MEMORY = 2**30  # bytes of address space the child may add to what it starts with
MAX_DEPTH = 64  # levels of nesting of a notebook's JSON (JupyterLab writes 6 or 7)
MAX_TABLE = 64 * 2**20  # bytes of a platform's CSV file
FRAME = 512 * 2**20  # the largest answer a child sends (a notebook's text, at most)
SAVE = "hand in the notebook as JupyterLab saves it (File > Save Notebook), then grade again"
AGAIN = "ask the student to hand it in again, then grade again"


class Refused(Exception):
    """A file the door does not let in: one line that names it and says what to do;
    ``unreadable``: not a notebook at all (the row's status is "unreadable notebook"),
    else refused ("refused")."""

    def __init__(self, why: str, unreadable: bool = False):
        super().__init__(why)
        self.unreadable = unreadable

    @property
    def status(self) -> str:
        """The text a row's status keeps for it (:class:`labtools.wire.Status`)."""
        kind = wire.Status.UNREADABLE if self.unreadable else wire.Status.REFUSED
        return f"{kind.value}: {self}"


@dataclass
class Let:
    """What came through the door for one file: its value, or why it was refused."""

    value: object = None
    refused: Refused | None = None


# ---------------------------------------------------------------------------------------
# The child


def read(
    jobs: list[Callable[[], object]],
    names: list[str],
    advice: str = "",
    *,
    seconds=SECONDS,
    memory=MEMORY,
) -> list[Let]:
    """Run each job (a function of no arguments that reads one file and returns plain
    JSON data, or raises :class:`Refused` with a line that names the file) in a child
    under the limits (see the module), in order; one :class:`Let` each. A job that kills
    its child, runs out of its memory or passes ``seconds`` is refused (its file named by
    ``names``, what to do by ``advice``); the jobs after it go to a new child."""
    tail = f": {advice}" if advice else ""
    found: list[Let] = []
    while len(found) < len(jobs):
        first = len(found)
        read_end, write_end = os.pipe()
        try:
            pid = children.fork(_serve, jobs, names, advice, first, read_end, write_end, memory)
        except BaseException:
            os.close(read_end)
            os.close(write_end)
            raise
        os.close(write_end)
        try:
            while len(found) < len(jobs):
                deadline = time.monotonic() + seconds
                try:
                    raw = wire.read_frame(read_end, FRAME, deadline)
                except TimeoutError:
                    why = f"{names[len(found)]} was not read within {seconds:g} s{tail}"
                    found.append(Let(refused=Refused(why)))
                    break
                except (EOFError, OSError, wire.FrameTooLarge):
                    raw = None
                if raw is None:
                    why = f"{names[len(found)]} could not be read within {memory // 2**20} MB"
                    why += f" of memory{tail}"
                    found.append(Let(refused=Refused(why)))
                    break
                answer = json.loads(raw)
                if "refused" in answer:
                    refused = Refused(answer["refused"], answer.get("unreadable", False))
                    found.append(Let(refused=refused))
                else:
                    found.append(Let(answer["value"]))
        finally:
            os.close(read_end)
            children.reap(pid)
        if len(found) == first:  # (cannot happen: each pass lets one file in or out)
            raise RuntimeError("the door's child answered nothing")
    return found


def _limit_memory(more: int) -> None:
    """This process's address space at most what it has now plus ``more`` bytes."""
    try:
        status = open("/proc/self/status").read()  # noqa: SIM115 - read once, closed by GC
        now = next(int(line.split()[1]) * 1024 for line in status.splitlines()
                   if line.startswith("VmSize:"))  # fmt: skip
    except (OSError, StopIteration, ValueError):
        now = 4 * 2**30
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    size = now + more if hard == resource.RLIM_INFINITY else min(now + more, hard)
    resource.setrlimit(resource.RLIMIT_AS, (size, hard))


def _serve(jobs, names, advice, first: int, read_end: int, write_end: int, memory: int) -> None:
    """The child: each job from ``first`` on, its answer one frame each."""
    os.close(read_end)
    _limit_memory(memory)
    for k, job in enumerate(jobs[first:], first):
        tail = f": {advice}" if advice else ""
        try:
            answer = {"value": job()}
        except Refused as err:
            answer = {"refused": str(err), "unreadable": err.unreadable}
        except RecursionError:
            why = f"is nested more than {MAX_DEPTH} levels deep"
            answer = {"refused": f"{names[k]} {why}{tail}"}
        except MemoryError:
            why = f"could not be read within {memory // 2**20} MB of memory"
            answer = {"refused": f"{names[k]} {why}{tail}"}
        except Exception:  # noqa: BLE001 - the door's own failure, on this file alone
            last = wire.capped(traceback.format_exc().strip().splitlines()[-1], 200)
            answer = {"refused": f"{names[k]} could not be read ({last}){tail}"}
        wire.write_frame(write_end, canonical(answer).encode("utf-8"))


# ---------------------------------------------------------------------------------------
# What a job reads


def depth(value) -> int:
    """How deep lists and dicts nest in ``value`` (a scalar: 0), without recursion."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        item, level = todo.pop()
        if isinstance(item, dict):
            item = item.values()
        elif not isinstance(item, list):
            continue
        deepest = max(deepest, level)
        if level > MAX_DEPTH:
            return level
        todo.extend((x, level + 1) for x in item if isinstance(x, dict | list))
    return deepest


def canonical(value) -> str:
    """The JSON text this module writes of a value it read (UTF-8, escapes only where a
    character cannot be written: a lone surrogate)."""
    text = json.dumps(value, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(value)
    return text


def notebook(data: bytes, name: str, check: Callable[[dict], str | None] | None = None) -> dict:
    """The door's reading of a submitted notebook's bytes (in the child, :func:`read`):
    ``{"text": its canonical JSON}``; :class:`Refused` for what is not JSON, not an object
    with a list of cells, nested deeper than :data:`MAX_DEPTH`, or refused by ``check``
    (the notebook as a dict: a refusal's text or None). ``name``: the file, as refusals
    name it."""
    text = data.decode("utf-8", errors="replace")  # bytes that are not UTF-8: replaced
    try:
        nb = json.loads(text)
    except RecursionError:
        raise Refused(f"{name} is nested more than {MAX_DEPTH} levels deep: {SAVE}") from None
    except ValueError as err:
        raise Refused(not_json(name, data, text, err), unreadable=True) from None
    if depth(nb) > MAX_DEPTH:
        raise Refused(f"{name} is nested more than {MAX_DEPTH} levels deep: {SAVE}")
    version = nb.get("nbformat") if isinstance(nb, dict) else None
    if isinstance(version, int) and not isinstance(version, bool) and version != 4:
        raise Refused(
            f"{name} is a notebook of format {version} (the grader reads format 4, which "
            "JupyterLab writes): ask the student to open it in JupyterLab, save it (File > "
            "Save Notebook) and hand it in again, then grade again",
            unreadable=True,
        )
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise Refused(f"{name} is not a notebook (no list of cells): {SAVE}", unreadable=True)
    if check is not None:
        why = check(nb)
        if why:
            raise Refused(why)
    return {"text": canonical(nb)}


def not_json(name: str, data: bytes, text: str, err: ValueError) -> str:
    """Why a notebook's bytes are not JSON, in the words an instructor acts on: an empty
    file, a file cut off (an upload interrupted), a web page saved in its place, or else
    the parser's own message."""
    body = text.lstrip("\ufeff \t\r\n")
    if not body:
        return f"{name} is empty ({len(data)} bytes): the upload failed; {AGAIN}"
    if body.startswith("<"):
        return (
            f"{name} is a web page (HTML), not a notebook: the browser saved the page that "
            "shows the notebook; ask the student to download the notebook itself from "
            "JupyterLab (File > Download) and hand it in again, then grade again"
        )
    message = str(getattr(err, "msg", err))
    position = getattr(err, "pos", 0)
    if body.startswith("{") and (
        message.startswith("Unterminated string") or position >= len(text.rstrip())
    ):
        return (
            f"{name} is cut off after {len(data)} bytes (its JSON stops before the notebook "
            f"ends): the upload was interrupted; {AGAIN}"
        )
    return f"{name} is not JSON ({err}): {SAVE}"


def table(path: str) -> dict:
    """The door's reading of a platform's CSV file (in the child, :func:`read`): its rows
    (lists of strings) and how it is written: ``bom``, ``encoding`` ("utf-8", or "latin-1"
    for a file a spreadsheet saved again), ``newline``, ``delimiter`` ("," or ";", told
    as Canvas's gradebook importer tells it: :func:`delimiter`) and ``quoting`` ("all",
    "fputcsv" or "minimal": every field quoted, or only those holding a character that
    PHP's ``fputcsv`` quotes (a space too), or csv's). :class:`Refused` for a file larger
    than :data:`MAX_TABLE` or not CSV."""
    with open(path, "rb") as f:
        data = f.read(MAX_TABLE + 1)
    if len(data) > MAX_TABLE:
        raise Refused(f"{path} is larger than {MAX_TABLE // 2**20} MB")
    bom = data.startswith(b"\xef\xbb\xbf")
    try:
        text, encoding = data.decode("utf-8-sig"), "utf-8"
    except UnicodeDecodeError:  # saved again by a spreadsheet: its bytes kept as they are
        text, encoding = data.decode("latin-1"), "latin-1"
    newline = "\r\n" if "\r\n" in text else "\n"
    separator = delimiter(text)
    try:
        rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=separator, strict=True))
    except csv.Error as err:
        raise Refused(f"{path} is not a CSV file ({err})") from None
    header = rows[0] if rows else []
    first = text.split("\n", 1)[0].rstrip("\r")
    specials = f'{separator}"'
    if header and first.count('"') >= 2 * len(header) and first.startswith('"'):
        quoting = "all"
    elif any(" " in h and f'"{h}"' in first and not set(h) & set(specials) for h in header):
        quoting = "fputcsv"
    else:
        quoting = "minimal"
    return {"rows": rows, "bom": bom, "encoding": encoding, "newline": newline,
            "quoting": quoting, "delimiter": separator}  # fmt: skip


def delimiter(text: str) -> str:
    """The field separator of a CSV text, as Canvas's gradebook importer tells it
    (``GradebookImporter#identify_delimiter``, for its "semicolons" export setting): its
    first three lines parsed with ";" and with ","; a separator that gives every line the
    same number of fields counts that number; ";" when it counts more than "," and at
    least two (a comma file whose lines differ is still a comma file)."""
    lines = text.splitlines()[:3]
    counts = {}
    for separator in (";", ","):
        try:
            found = {len(next(csv.reader([line], delimiter=separator), [])) for line in lines}
        except csv.Error:
            found = set()
        counts[separator] = found.pop() if len(found) == 1 else 0
    return ";" if counts[";"] > max(counts[","], 1) else ","
