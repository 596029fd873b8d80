"""The grader's messages: what crosses between a student's sandbox and the grader, and
between the grader and its workers, as typed objects.

What a student's value may be when it reaches the trusted side (plain data), the frames, the
requests and the agent's answers are defined in :mod:`labtools.inside.protocol`, which the
sandbox imports too; they are re-exported here. This module adds what only the grader needs:

- :func:`decode_answer`, the one parser of what the sandbox sends. The student's side may
  send any bytes (its code runs in the agent's process and can rewrite the agent), so the
  parser enforces :class:`Budget` before and while it builds anything: bytes, items,
  nesting depth, keys per dict and seconds. Whatever arrives, the grader holds at most a
  bounded amount of memory for it, spends a bounded time on it, and gets fresh objects of
  the built-in and numpy types: only data, never the behaviour of the student's objects.
- a grading worker's job and what it gives back: :class:`Task` (one notebook) and
  :class:`Outcome`;
- a notebook's row in the course folder: :class:`Row`, with its :class:`Status`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from enum import StrEnum

from labtools.inside.protocol import (  # noqa: F401 - the protocol, re-exported
    HEADER,
    MAX_DEPTH,
    MAX_ITEMS,
    NUMERIC_KINDS,
    REQUESTS,
    SCALARS,
    TEXTS,
    Answer,
    BadRequest,
    Budget,
    Call,
    Checkpoint,
    Decoder,
    FrameTooLarge,
    Get,
    NotPlainData,
    PackageRef,
    Release,
    Reply,
    Request,
    Resume,
    Run,
    decode_request,
    describe,
    encode_answer,
    encode_request,
    from_plain,
    package_name,
    parse,
    read_exactly,
    read_frame,
    to_plain,
    wait_readable,
    write_frame,
)

_parse = parse  # (the tests' name for it)


def _text(value, budget: Budget, name: str) -> str:
    if type(value) is not str:
        raise NotPlainData(f"an answer whose {name} is not text")
    if len(value) <= budget.text:
        return value
    return value[: budget.text] + "\n[... cut by the grader]"


MAX_FIGURES = 8  # figures kept of one cell
MAX_FIGURE = 512 * 1024  # characters of one figure (a PNG in base64)


def decode_answer(raw: bytes, budget: Budget) -> Answer:
    """The agent's answer in ``raw`` (one frame's payload): the only way from the sandbox's
    bytes to the grader's objects. Raises :class:`NotPlainData` for anything malformed or
    over ``budget``. A callback's arguments stay in their JSON-ready form, checked to be
    within the budget: the grader decodes them for the function they are for
    (:func:`decode_arguments`)."""
    deadline = time.monotonic() + budget.seconds
    data = parse(raw, budget)
    if type(data) is not dict:
        raise NotPlainData("an answer that is not an object")
    known = {"id", "value", "args", "missing", "function", "warnings", "callback", "figures"}
    known |= set(TEXTS)
    if not set(data) <= known:
        raise NotPlainData(f"an answer with unknown fields {sorted(set(data) - known)[:5]}")
    answer = Answer()
    if "id" in data:
        if type(data["id"]) is not str:
            raise NotPlainData("an answer whose id is not text")
        answer.id = data["id"]
    for name in TEXTS:
        if name in data and not (name == "error" and data[name] is None):
            setattr(answer, name, _text(data[name], budget, name))
    for name in ("missing", "function"):
        if name in data:
            if type(data[name]) is not bool:
                raise NotPlainData(f"an answer whose {name} is not True or False")
            setattr(answer, name, data[name])
    # a value that is not plain data, or over the budget, is that value's wrong answer
    # (as when the agent refuses it); everything else above refuses the whole message
    decoder = Decoder(budget, deadline)
    if "value" in data:
        try:
            answer.value, answer.has_value = decoder.value(data["value"]), True
        except NotPlainData as err:
            answer.refused = str(err)
    if "args" in data and data["args"] is not None:
        try:
            decoder.value(data["args"])  # well-formed and within the budget; compared as sent
            answer.args_plain = data["args"]
        except NotPlainData:
            answer.args_plain = None  # counted as changed arguments
    if "callback" in data:
        call = data["callback"]
        if type(call) is not list or len(call) != 3 or type(call[0]) is not str:
            raise NotPlainData("a malformed callback")
        if type(call[1]) is not list or type(call[2]) is not dict:
            raise NotPlainData("a malformed callback")
        checker = Decoder(budget, deadline, package=lambda ref: ref)
        for part in (call[1], *call[2].values()):  # within the budget; decoded later, for
            checker.value(part)  # the function they are for
        answer.callback = (call[0][:200], call[1], call[2])
    warnings = data.get("warnings") or []
    if type(warnings) is not list or len(warnings) > 20:
        raise NotPlainData("an answer with malformed warnings")
    for pair in warnings:
        if type(pair) is not list or len(pair) != 2:
            raise NotPlainData("an answer with malformed warnings")
        category = _text(pair[0], budget, "warning")[:80]
        answer.warnings.append((category, _text(pair[1], budget, "warning")))
    figures = data.get("figures") or []
    if type(figures) is not list or not all(type(f) is str for f in figures):
        raise NotPlainData("an answer with malformed figures")
    answer.figures = [f for f in figures[:MAX_FIGURES] if len(f) <= MAX_FIGURE]
    return answer


def decode_arguments(call: tuple, budget: Budget, package=None) -> tuple[list, dict]:
    """A callback's (args, kwargs) as fresh objects. ``package``: how a package function
    named among them (``$package``) is resolved, or None to refuse one."""
    name, args, kwargs = call
    decoder = Decoder(budget, time.monotonic() + budget.seconds, package)
    args = decoder.value(args)
    kwargs = {}
    for key, value in call[2].items():
        if type(key) is not str:
            raise NotPlainData("a callback whose keyword names are not text")
        kwargs[key] = decoder.value(value)
    if type(args) is not list:
        raise NotPlainData("a malformed callback")
    return args, kwargs


# --- a grading worker's job, and a notebook's row in the course folder -----------------------


#: the most characters of any text shown to a person outside the logs: a status in a results
#: file, grades.csv and the report, a platform's feedback comment, a name in a zip entry
TEXT = 1_000
NAME = 100  # of a person's name in a file or zip entry name
# characters that would change how a line is read (line breaks, tabs, other controls) or
# shown (bidi overrides and isolates, zero-width characters): shown as escapes
_HIDDEN = {c: f"\\u{c:04x}" for c in (*range(0x200B, 0x2010), *range(0x202A, 0x202F))}
_HIDDEN |= {c: f"\\u{c:04x}" for c in (*range(0x2066, 0x206A), 0xFEFF)}
_HIDDEN |= {c: " " for c in (*range(0x00, 0x20), *range(0x7F, 0xA0))}


_REMOVED = dict.fromkeys(_HIDDEN) | {c: " " for c in (*range(0x00, 0x20), *range(0x7F, 0xA0))}


def capped(text: str, limit: int = TEXT, *, escapes: bool = True) -> str:
    """``text`` as one line of at most ``limit`` characters: control characters become
    spaces, invisible and direction-changing ones their escapes (``\\u202e``; without
    ``escapes``, for a file name, they are left out), and a text that is longer ends with
    how much was cut. The one cap for every text a table cell, a page, a zip entry name or
    a platform's comment gets (the logs keep the whole text)."""
    text = str(text).translate(_HIDDEN if escapes else _REMOVED)
    if len(text) <= limit:
        return text
    keep = limit - len(f" [... {len(text)} more characters]")  # the note is never longer
    if keep < limit // 2:  # too short a limit for the note
        return text[:limit]
    return text[:keep] + f" [... {len(text) - keep} more characters]"


class Status(StrEnum):
    """What became of one submitted notebook. The results files and ``grades.csv`` keep
    the status as text that starts with the value ("graded; 4 points wait for manual
    grading", "refused: the notebook is a symbolic link"): :meth:`of` reads it back, from
    files written by any version of these tools."""

    GRADED = "graded"
    REFUSED = "refused"  # not read: a link, too large, not a valid student id, ...
    UNREADABLE = "unreadable notebook"  # not a notebook nbformat can read
    FAILED = "grading failed"  # the grader's own failure (the log says why)
    NOT_RUN = "not graded"  # its task never ran (a cluster lost): the next run grades it
    MISSING = "missing"  # nothing handed in (grades.csv only)

    @classmethod
    def split(cls, text: str) -> tuple[Status, str]:
        """(status, the rest of the text): ``"graded; a note"`` -> (GRADED, ``"; a note"``)."""
        for status in cls:
            rest = text[len(status.value) :]
            if text.startswith(status.value) and (not rest or rest[0] in ";:( "):
                return status, rest
        raise ValueError(f"not a grading status: {text[:80]!r}")

    @classmethod
    def of(cls, text: str) -> Status:
        """The status a row's text starts with."""
        return cls.split(text)[0]


@dataclass(frozen=True)
class Task:
    """One notebook to grade, as plain data: what a worker (a process of the local pool,
    or a dask worker on another machine) needs, and nothing from the course folder."""

    student: str
    lab: str
    source: dict  # the lab's source notebook
    notebook: str  # the submitted notebook's text
    limits: dict  # the fields of labtools.grader.limits.Limits
    unsafe: bool = False
    mpl_cache: str | None = None  # the grading machine's matplotlib cache, if a worker has it
    cold: bool = False  # a fresh sandbox for this notebook, not a child of the warm parent


@dataclass
class Outcome:
    """What a worker gives back for one :class:`Task`: GRADED with the verdicts
    (:func:`labtools.grader.verdicts.evaluate`) and the notebook as graded, UNREADABLE with why,
    or FAILED with the grader's traceback."""

    status: Status
    detail: str = ""  # UNREADABLE: " (JSONDecodeError)", ...; FAILED: the traceback
    evaluation: dict | None = None  # GRADED: what labtools.grader.verdicts.evaluate returned
    autograded: dict | None = None  # GRADED: the notebook as graded

    @property
    def seconds(self) -> float | None:
        return self.evaluation["seconds"] if self.evaluation else None


@dataclass
class Row:
    """One notebook's row: ``results/<student>/<lab>.json`` in the course folder, and what
    ``grade`` returns for it. ``text`` is the status as the files keep it."""

    student: str
    lab: str
    digest: str
    status: Status
    detail: str = ""  # the rest of the status's text: "; notes", ": why", ...
    tests: dict | None = None  # {grade id: {"score", "points", "message"[, "held"]}}
    seconds: float | None = None
    # what the rules name in the student's cells (perceptrons.handin): [{"cell", "line",
    # "what", "held", "exercise"}]; a held exercise's automatic points wait for the instructor
    review: list | None = None
    # {grade id: digest of its text} of each answer cell as graded, and "*" for all of them:
    # which answer a score given by hand belongs to (labtools.course.record)
    answers: dict | None = None

    def __setattr__(self, name, value):
        if name == "detail":  # the status's text is capped however it is set (capped())
            value = capped(value, TEXT - len(self.status.value))
        object.__setattr__(self, name, value)

    @property
    def text(self) -> str:
        return self.status.value + self.detail

    @property
    def graded(self) -> bool:
        return self.status is Status.GRADED

    @classmethod
    def of(cls, student: str, lab: str, digest: str, text: str) -> Row:
        """A row whose status is given as text ("refused: ...")."""
        status, detail = Status.split(text)
        return cls(student, lab, digest, status, detail)

    def to_json(self) -> dict:
        data = {"student": self.student, "lab": self.lab, "digest": self.digest}
        data["status"] = self.text
        if self.tests is not None:
            data["tests"] = self.tests
        if self.seconds is not None:
            data["seconds"] = self.seconds
        if self.review:
            data["review"] = self.review
        if self.answers is not None:
            data["answers"] = self.answers
        return data

    @classmethod
    def from_json(cls, data: dict) -> Row:
        row = cls.of(data["student"], data["lab"], data.get("digest", ""), data["status"])
        row.tests, row.seconds = data.get("tests"), data.get("seconds")
        row.review = data.get("review") or None
        answers = data.get("answers")
        row.answers = answers if isinstance(answers, dict) else None
        return row

    @property
    def held(self) -> list[str]:
        """The test cells whose automatic points wait for the instructor's review."""
        return sorted(gid for gid, verdict in (self.tests or {}).items() if verdict.get("held"))

    def reasons(self) -> list[str]:
        """Why its answers are held, one line each ('ex2-code, line 3: uses ...')."""
        return [
            f"{f['cell']}, line {f['line']}: {f['what']}" for f in self.review or [] if f["held"]
        ]
