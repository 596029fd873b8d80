"""The grader's messages: what crosses between a student's sandbox and the grader, and
between the grader and its workers, as typed objects.

This module is the one place that says what a student's value may be when it reaches the
trusted side: ``None``, ``bool``, ``int``, ``float``, ``str``, lists, tuples and ``range``
of these, dicts whose keys are such scalars or tuples, numpy scalars and numpy arrays of a
numeric or boolean dtype. Anything else (a subclass of float with its own ``__eq__``, a
module, a lambda, an object array) is refused with :class:`NotPlainData`, which names what
was found.

It is also the one place that moves bytes between the two sides (:func:`write_frame`,
:func:`read_frame`: an 8-byte big-endian length, then that many bytes of JSON) and the one
parser of what the sandbox sends: :func:`decode_answer` turns a frame into an
:class:`Answer`, or refuses it with :class:`NotPlainData`. The student's side may send any
bytes (its code runs in the agent's process and can rewrite the agent), so the parser
enforces :class:`Budget` before and while it builds anything: bytes, items, nesting depth,
keys per dict and seconds. Whatever arrives, the grader holds at most a bounded amount of
memory for it, spends a bounded time on it, and gets fresh objects of the built-in and
numpy types: only data, never the behaviour of the student's objects.

The protocol, each message a dataclass:

- the grader's requests to the agent: :class:`Run` (a cell), :class:`Get` (a name's
  value), :class:`Call` (a student's function), sent by :func:`encode_request` and read by
  :func:`decode_request`; the agent's answer to each: :class:`Answer`, sent by
  :func:`encode_answer` and read by :func:`decode_answer`; during a call, an answer may be
  a callback (the student's code called one of the instructor's functions, which stay on
  the grader's side), which the grader answers with a :class:`Reply`;
- a grading worker's job and what it gives back: :class:`Task` (one notebook) and
  :class:`Outcome`;
- a notebook's row in the course folder: :class:`Row`, with its :class:`Status`.

Imported inside the sandbox too, so it needs nothing but the standard library and numpy.
"""

from __future__ import annotations

import base64
import json
import math
import os
import select
import struct
import time
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import ClassVar

import numpy as np

#: numpy dtype kinds that may cross: bool, signed and unsigned int, float, complex
NUMERIC_KINDS = frozenset("biufc")
MAX_DEPTH = 32
MAX_ITEMS = 2_000_000  # array numbers, list items and dict entries in one message, together
SCALARS = (type(None), bool, int, float, str)
HEADER = struct.Struct(">Q")  # a frame: its length, then that many bytes


@dataclass(frozen=True)
class Budget:
    """What one message from the sandbox may cost the grader (checked by
    :func:`decode_answer`; the defaults are those of :class:`labtools.sandbox.Limits`)."""

    message: int = 16 * 2**20  # bytes of one frame
    items: int = MAX_ITEMS  # list items, dict entries, array numbers, JSON values
    depth: int = MAX_DEPTH  # nesting of lists, tuples and dicts
    keys: int = 1_000  # entries of one dict (their hashes are the student's to choose)
    seconds: float = 10.0  # to decode one message
    text: int = 20_000  # characters kept of each text (printed output, messages)


class NotPlainData(TypeError):
    """A value that may not cross: its message says what it was."""


def describe(value) -> str:
    """'a Sneaky object', 'a function', 'a module': how a refused value is named."""
    kind = type(value)
    if callable(value) and not isinstance(value, type):
        return (
            "a function"
            if kind.__name__ in ("function", "builtin_function_or_method")
            else (f"a callable {kind.__name__} object")
        )
    if kind.__name__ == "module":
        return "a module"
    return f"a {kind.__module__}.{kind.__qualname__} object".replace("builtins.", "")


def _array(value: np.ndarray) -> dict:
    if value.dtype.kind not in NUMERIC_KINDS or value.dtype.fields is not None:
        raise NotPlainData(f"a numpy array of dtype {value.dtype} (only numbers and booleans)")
    return {
        "dtype": value.dtype.str,
        "shape": list(value.shape),
        "data": base64.b64encode(value.tobytes()).decode("ascii"),  # C order, any layout
    }


def _range_length(start: int, stop: int, step: int) -> int:
    """len(range(start, stop, step)), without the OverflowError of len() on huge ranges."""
    span = stop - start if step > 0 else start - stop
    return max(0, -(-span // abs(step)))


def to_plain(value, depth: int = 0, budget: list | None = None):
    """The JSON-ready form of ``value``; raises :class:`NotPlainData` for anything else."""
    budget = [MAX_ITEMS] if budget is None else budget
    if depth > MAX_DEPTH:
        raise NotPlainData(f"nested deeper than {MAX_DEPTH} levels")
    kind = type(value)  # exact types only: a subclass may carry its own __eq__
    if kind in SCALARS:
        if kind is float and not math.isfinite(value):
            return {"$float": repr(value)}
        return value
    if kind is np.ndarray:
        budget[0] -= value.size
        if budget[0] < 0:
            raise NotPlainData(f"more than {MAX_ITEMS} numbers")
        return {"$ndarray": _array(value)}
    if isinstance(value, np.generic) and kind.__module__ == "numpy":
        return {"$npscalar": _array(np.asarray(value))}
    if kind in (list, tuple):
        budget[0] -= len(value)
        if budget[0] < 0:
            raise NotPlainData(f"more than {MAX_ITEMS} items")
        items = [to_plain(v, depth + 1, budget) for v in value]
        return items if kind is list else {"$tuple": items}
    if kind is range:
        budget[0] -= _range_length(value.start, value.stop, value.step)
        if budget[0] < 0:  # a test turns it into a list or an array: it counts as its items
            raise NotPlainData(f"more than {MAX_ITEMS} items")
        return {"$range": [value.start, value.stop, value.step]}
    if kind is dict:
        budget[0] -= len(value)
        if budget[0] < 0:
            raise NotPlainData(f"more than {MAX_ITEMS} items")
        pairs = []
        for key, item in value.items():
            if type(key) not in SCALARS and type(key) is not tuple:
                raise NotPlainData(f"a dict with a key that is {describe(key)}")
            pairs.append([to_plain(key, depth + 1, budget), to_plain(item, depth + 1, budget)])
        return {"$dict": pairs}
    raise NotPlainData(describe(value))


class _Decoder:
    """Builds fresh objects from the JSON-ready form within a :class:`Budget`."""

    def __init__(self, budget: Budget, deadline: float):
        self.budget, self.deadline, self.items = budget, deadline, budget.items
        self.checked = budget.items  # the clock is read every 1024 items

    def spend(self, count: int, what: str = "items") -> None:
        self.items -= count
        if self.items < 0:
            raise NotPlainData(f"more than {self.budget.items} {what} in one message")
        if self.checked - self.items >= 1024 or count > 1:
            self.checked = self.items
            if time.monotonic() > self.deadline:
                raise NotPlainData(f"took longer than {self.budget.seconds:g} s to decode")

    def array(self, spec) -> np.ndarray:
        if type(spec) is not dict or set(spec) != {"dtype", "shape", "data"}:
            raise NotPlainData("a malformed array")
        if type(spec["dtype"]) is not str or len(spec["dtype"]) > 8:
            raise NotPlainData("an array with a malformed dtype")
        try:
            dtype = np.dtype(spec["dtype"])
        except TypeError as err:
            raise NotPlainData("an array with a malformed dtype") from err
        if dtype.kind not in NUMERIC_KINDS or dtype.fields is not None or dtype.subdtype:
            raise NotPlainData(f"an array of dtype {dtype}")
        shape = spec["shape"]
        if type(shape) is not list or len(shape) > 32:
            raise NotPlainData("an array with a malformed shape")
        if not all(type(n) is int and 0 <= n <= self.budget.items for n in shape):
            raise NotPlainData("an array with a malformed shape")
        size = math.prod(shape)
        self.spend(size, "numbers")
        if type(spec["data"]) is not str:
            raise NotPlainData("a malformed array")
        try:
            raw = base64.b64decode(spec["data"], validate=True)
        except ValueError as err:
            raise NotPlainData("an array whose data is not base64") from err
        if len(raw) != size * dtype.itemsize:
            raise NotPlainData("an array whose data does not fit its shape")
        return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()

    def value(self, data, depth: int = 0):
        if depth > self.budget.depth:
            raise NotPlainData(f"nested deeper than {self.budget.depth} levels")
        self.spend(1)
        kind = type(data)
        if kind in SCALARS:
            return data
        if kind is list:
            return [self.value(v, depth + 1) for v in data]
        if kind is not dict or len(data) != 1:
            raise NotPlainData("a malformed message")
        ((tag, body),) = data.items()
        if tag == "$float" and body in ("nan", "inf", "-inf"):
            return float(body)
        if tag == "$ndarray":
            return self.array(body)
        if tag == "$npscalar":
            array = self.array(body)
            if array.shape != ():
                raise NotPlainData("a numpy scalar with a shape")
            return array[()]
        if tag == "$tuple" and type(body) is list:
            return tuple(self.value(v, depth + 1) for v in body)
        if tag == "$range" and type(body) is list and len(body) == 3:
            if not all(type(v) is int for v in body) or body[2] == 0:
                raise NotPlainData("a malformed range")
            length = _range_length(*body)
            if length > self.budget.items:
                raise NotPlainData(f"a range of more than {self.budget.items} items")
            # a test may turn it into a list: it counts as its items (one is counted already)
            self.spend(max(length - 1, 0))
            return range(*body)
        if tag == "$dict" and type(body) is list:
            if len(body) > self.budget.keys:
                raise NotPlainData(f"a dict of more than {self.budget.keys} keys")
            result = {}
            for pair in body:
                if type(pair) is not list or len(pair) != 2:
                    raise NotPlainData("a malformed dict")
                key = self.value(pair[0], depth + 1)
                try:
                    hash(key)
                except TypeError as err:
                    raise NotPlainData("a dict with an unhashable key") from err
                result[key] = self.value(pair[1], depth + 1)
            return result
        raise NotPlainData(f"a value tagged {str(tag)[:40]!r}")


def _small_object(pairs: list) -> dict:
    """json's hook for every JSON object: the protocol's objects have a few keys each, so a
    large one is refused before a dict (whose key hashes the sender chose) is built."""
    if len(pairs) > 16:
        raise NotPlainData("a message object with more than 16 keys")
    return dict(pairs)


def _parse(raw: bytes | str, budget: Budget):
    """JSON text into Python's JSON types, refusing what would cost too much to build."""
    if len(raw) > budget.message:
        raise NotPlainData(f"a message of more than {budget.message} bytes")
    data = raw.encode() if isinstance(raw, str) else raw
    # every JSON value but the first follows a comma or opens a container: this bounds the
    # objects json.loads may build (strings with commas count too: an upper bound)
    if data.count(b",") + data.count(b"[") + data.count(b"{") > budget.items:
        raise NotPlainData(f"more than {budget.items} items in one message")
    try:
        return json.loads(data, object_pairs_hook=_small_object)
    except (ValueError, RecursionError) as err:  # not JSON or UTF-8, too deep, an int too long
        raise NotPlainData(f"not readable as data ({type(err).__name__})") from err


def from_plain(data, budget: Budget | None = None):
    """Fresh built-in and numpy objects from the JSON-ready form, within ``budget``; strict
    about its shape (used inside the sandbox for the grader's arguments)."""
    budget = budget or Budget()
    return _Decoder(budget, time.monotonic() + budget.seconds).value(data)


# --- frames --------------------------------------------------------------------------------


def write_frame(fd: int, payload: bytes) -> None:
    """Send ``payload`` as one frame on file descriptor ``fd``."""
    data = HEADER.pack(len(payload)) + payload
    while data:
        data = data[os.write(fd, data) :]


def read_exactly(fd: int, size: int, deadline: float | None = None) -> bytes:
    """``size`` bytes from ``fd``; TimeoutError after ``deadline`` (time.monotonic), EOFError
    if the other side closes first. Without a deadline it waits as long as it takes."""
    chunks, left = [], size
    while left:
        if deadline is not None:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([fd], [], [], wait)[0]:
                raise TimeoutError
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


class FrameTooLarge(Exception):
    """A frame announced more bytes than the reader accepts."""


def wait_readable(fd: int, deadline: float) -> bool:
    """Whether ``fd`` has something to read (or is closed) before ``deadline``."""
    wait = max(0.0, deadline - time.monotonic())
    return bool(select.select([fd], [], [], wait)[0])


def read_frame(fd: int, limit: int, deadline: float | None = None) -> bytes | None:
    """One frame's payload from ``fd``, or None if the other side closed before a frame.

    ``limit``: the largest payload accepted (FrameTooLarge beyond, before it is read);
    ``deadline``: for the whole frame (TimeoutError), none to wait as long as it takes.
    """
    try:
        header = read_exactly(fd, HEADER.size, deadline)
    except EOFError:
        return None
    (size,) = HEADER.unpack(header)
    if size > limit:
        raise FrameTooLarge(f"a frame of {size} bytes (at most {limit})")
    return read_exactly(fd, size, deadline)


# --- the grader's requests ----------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """Run a cell in the student's shell (magics work); answered with whether it raised
    and what it printed."""

    source: str
    op: ClassVar[str] = "run"


@dataclass(frozen=True)
class Get:
    """The value of a name as plain data, or why it cannot be sent (missing, a function,
    not plain data)."""

    name: str
    op: ClassVar[str] = "get"


@dataclass(frozen=True)
class Call:
    """Call the student's function ``name`` with plain-data arguments (their JSON-ready
    form); the package functions in ``forbid`` raise while it runs ("write it yourself"),
    and the names in ``reference`` stand for the instructor's versions: calling one sends
    the grader a callback (an :class:`Answer` whose ``callback`` is set), which the grader
    answers with a :class:`Reply` computed on its side. The instructor's code never
    enters the sandbox, only the names."""

    name: str
    args: list
    kwargs: dict
    forbid: list[str] = field(default_factory=list)
    reference: list[str] = field(default_factory=list)
    op: ClassVar[str] = "call"


@dataclass(frozen=True)
class Reply:
    """The grader's answer to a callback: the instructor's function's value (JSON-ready),
    or what it raised."""

    value: object = None
    raised: str | None = None
    op: ClassVar[str] = "reply"


Request = Run | Get | Call | Reply
REQUESTS: dict[str, type] = {kind.op: kind for kind in (Run, Get, Call, Reply)}


def encode_request(request: Request, id: str) -> bytes:
    """The payload of a frame that carries ``request`` with the nonce ``id``."""
    return json.dumps({"op": request.op, "id": id, **asdict(request)}, allow_nan=False).encode()


class BadRequest(ValueError):
    """A request this agent does not know; ``id`` is its nonce, for the answer."""

    def __init__(self, message: str, id: str | None):
        super().__init__(message)
        self.id = id


def decode_request(payload: bytes) -> tuple[str | None, Request]:
    """(id, request) from a frame the grader wrote (trusted: no student code has run on
    it); :class:`BadRequest` for a request this agent does not know."""
    fields = json.loads(payload)
    id, op = fields.pop("id", None), fields.pop("op", None)
    if op not in REQUESTS:
        raise BadRequest(f"unknown request {op!r}", id)
    try:
        return id, REQUESTS[op](**fields)
    except TypeError as err:
        raise BadRequest(f"a malformed {op} request ({err})", id) from None


# --- the agent's answers ----------------------------------------------------------------------


@dataclass
class Answer:
    """What the agent answered to one request: built by the agent, sent by
    :func:`encode_answer`, and rebuilt on the grader's side by :func:`decode_answer`.

    On the grader's side ``value`` is decoded plain data (``has_value`` says whether there
    was a value at all); on the agent's, its JSON-ready form (:func:`to_plain`).
    ``args_plain`` is the arguments' JSON-ready form after a call, to compare with what was
    sent. The grader cuts texts to the budget's ``text`` characters.
    """

    id: str | None = None
    stdout: str = ""
    stderr: str = ""
    error: str | None = None  # a run: the exception, if the cell raised
    has_value: bool = False
    value: object = None
    refused: str | None = None  # a value that is not plain data, and why
    missing: bool = False  # the name is not defined
    function: bool = False  # the name is a function
    raised: str | None = None  # a call: the exception the function raised
    args_plain: object = None
    warnings: list = field(default_factory=list)  # [(category, message)], at most 20
    interrupted: str | None = None  # set by the sandbox when it interrupted the request
    # a call of a reference function (Call.reference), to be answered with a Reply:
    # (name, args, kwargs), decoded like a value on the grader's side
    callback: tuple | None = None


_TEXTS = ("stdout", "stderr", "error", "refused", "raised")


def encode_answer(answer: Answer) -> bytes:
    """The payload of the frame that carries ``answer`` (the agent's side, where ``value``
    is already JSON-ready): the fields that are set, under the names
    :func:`decode_answer` reads."""
    data: dict = {"id": answer.id}
    for name in _TEXTS:
        if getattr(answer, name):
            data[name] = getattr(answer, name)
    for name in ("missing", "function"):
        if getattr(answer, name):
            data[name] = True
    if answer.has_value:
        data["value"] = answer.value
    if answer.args_plain is not None:
        data["args"] = answer.args_plain
    if answer.warnings:
        data["warnings"] = [list(pair) for pair in answer.warnings]
    if answer.callback is not None:
        data["callback"] = list(answer.callback)
    return json.dumps(data, allow_nan=False).encode()


def _text(value, budget: Budget, name: str) -> str:
    if type(value) is not str:
        raise NotPlainData(f"an answer whose {name} is not text")
    if len(value) <= budget.text:
        return value
    return value[: budget.text] + "\n[... cut by the grader]"


def decode_answer(raw: bytes, budget: Budget) -> Answer:
    """The agent's answer in ``raw`` (one frame's payload): the only way from the sandbox's
    bytes to the grader's objects. Raises :class:`NotPlainData` for anything malformed or
    over ``budget``."""
    deadline = time.monotonic() + budget.seconds
    data = _parse(raw, budget)
    if type(data) is not dict:
        raise NotPlainData("an answer that is not an object")
    known = {"id", "value", "args", "missing", "function", "warnings", "callback", *_TEXTS}
    if not set(data) <= known:
        raise NotPlainData(f"an answer with unknown fields {sorted(set(data) - known)[:5]}")
    answer = Answer()
    if "id" in data:
        if type(data["id"]) is not str:
            raise NotPlainData("an answer whose id is not text")
        answer.id = data["id"]
    for name in _TEXTS:
        if name in data and not (name == "error" and data[name] is None):
            setattr(answer, name, _text(data[name], budget, name))
    for name in ("missing", "function"):
        if name in data:
            if type(data[name]) is not bool:
                raise NotPlainData(f"an answer whose {name} is not True or False")
            setattr(answer, name, data[name])
    # a value that is not plain data, or over the budget, is that value's wrong answer
    # (as when the agent refuses it); everything else above refuses the whole message
    decoder = _Decoder(budget, deadline)
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
        args, kwargs = decoder.value(call[1]), decoder.value(call[2])
        if type(args) is not list or type(kwargs) is not dict:
            raise NotPlainData("a malformed callback")
        if not all(type(key) is str for key in kwargs):
            raise NotPlainData("a callback whose keyword names are not text")
        answer.callback = (call[0][:200], args, kwargs)
    warnings = data.get("warnings") or []
    if type(warnings) is not list or len(warnings) > 20:
        raise NotPlainData("an answer with malformed warnings")
    for pair in warnings:
        if type(pair) is not list or len(pair) != 2:
            raise NotPlainData("an answer with malformed warnings")
        category = _text(pair[0], budget, "warning")[:80]
        answer.warnings.append((category, _text(pair[1], budget, "warning")))
    return answer


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
    limits: dict  # the fields of labtools.sandbox.Limits
    unsafe: bool = False
    mpl_cache: str | None = None  # the grading machine's matplotlib cache, if a worker has it
    cold: bool = False  # a fresh sandbox for this notebook, not a child of the warm parent


@dataclass
class Outcome:
    """What a worker gives back for one :class:`Task`: GRADED with the verdicts
    (:func:`labtools.verdicts.evaluate`) and the notebook as graded, UNREADABLE with why,
    or FAILED with the grader's traceback."""

    status: Status
    detail: str = ""  # UNREADABLE: " (JSONDecodeError)", ...; FAILED: the traceback
    evaluation: dict | None = None  # GRADED: what labtools.verdicts.evaluate returned
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
    tests: dict | None = None  # {grade id: {"score", "points", "message"}} once graded
    seconds: float | None = None
    # {grade id: digest of its text} of each answer cell as graded, and "*" for all of them:
    # which answer a score given by hand belongs to (labtools.record)
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
        if self.answers is not None:
            data["answers"] = self.answers
        return data

    @classmethod
    def from_json(cls, data: dict) -> Row:
        row = cls.of(data["student"], data["lab"], data.get("digest", ""), data["status"])
        row.tests, row.seconds = data.get("tests"), data.get("seconds")
        answers = data.get("answers")
        row.answers = answers if isinstance(answers, dict) else None
        return row
