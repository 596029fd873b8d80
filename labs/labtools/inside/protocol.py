"""What crosses between the grader and a student's sandbox: plain data, frames, requests and
answers. Both sides import this module; inside the sandbox it is part of what the student's
code may rewrite, so the grader never trusts what comes back through it
(:func:`labtools.wire.decode_answer` is the grader's one parser of answers).

Plain data: ``None``, ``bool``, ``int``, ``float``, ``str``, lists, tuples and ``range`` of
these, dicts whose keys are such scalars or tuples, numpy scalars and numpy arrays of a
numeric or boolean dtype. :func:`to_plain` turns a value into its JSON-ready form: a subclass
of one of these types (a ``namedtuple``, an ``OrderedDict``, a ``float`` subclass) crosses
as its plain value, and an object array whose items are all numbers (what ``np.frompyfunc``
returns) as an array of numbers, since only data crosses, never an object's behaviour;
anything else (a module, a lambda, an object array of other things) is refused with
:class:`NotPlainData`, which names what was found. :func:`from_plain` builds fresh objects
from that form within a :class:`Budget`.

Two more tags cross from the grader to the sandbox only, for the package functions a lab
closes (their code is not in the sandbox; :mod:`labtools.grader.closed`): a result of the package
(``$result``: its class's qualified name and fields) and, in the other direction, a package
function given as an argument (``$package``: its qualified name).

Frames: an 8-byte big-endian length, then that many bytes of JSON (:func:`write_frame`,
:func:`read_frame`).

The requests, each a dataclass: :class:`Run` (a cell), :class:`Get` (a name's value),
:class:`Call` (a student's function), :class:`Reply` (the grader's answer to a callback),
:class:`Checkpoint` (keep a copy of the notebook as it is now), :class:`Resume` (hand the
channel to a copy) and :class:`Release` (end the copy that holds it). The agent answers each
with an :class:`Answer`.

Standard library and numpy only.
"""

from __future__ import annotations

import base64
import json
import math
import numbers
import os
import select
import struct
import time
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from typing import ClassVar

import numpy as np

#: numpy dtype kinds that may cross: bool, signed and unsigned int, float, complex
NUMERIC_KINDS = frozenset("biufc")
MAX_DEPTH = 32
MAX_ITEMS = 2_000_000  # array numbers, list items and dict entries in one message, together
SCALARS = (type(None), bool, int, float, str)
HEADER = struct.Struct(">Q")  # a frame: its length, then that many bytes
PACKAGE = "perceptrons"


@dataclass(frozen=True)
class Budget:
    """What one message may cost its reader (the defaults are those of
    :class:`labtools.grader.limits.Limits`)."""

    message: int = 16 * 2**20  # bytes of one frame
    items: int = MAX_ITEMS  # list items, dict entries, array numbers, JSON values
    depth: int = MAX_DEPTH  # nesting of lists, tuples and dicts
    keys: int = 1_000  # entries of one dict (their hashes are the sender's to choose)
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


def _numbers_only(value: np.ndarray) -> np.ndarray:
    """An object array whose items are all real or complex numbers (``np.frompyfunc`` and
    ``np.vectorize(otypes=[object])`` return these) as an array of numbers."""
    items = value.ravel().tolist()
    if not all(isinstance(v, numbers.Number) and not isinstance(v, np.ndarray) for v in items):
        raise NotPlainData("a numpy array of dtype object whose items are not all numbers")
    complex_ = any(isinstance(v, complex | np.complexfloating) for v in items)
    try:
        return value.astype(complex if complex_ else float)
    except (TypeError, ValueError, OverflowError) as err:
        raise NotPlainData("a numpy array of dtype object that is not numbers") from err


def _array(value: np.ndarray) -> dict:
    if value.dtype.kind == "O" and value.dtype.fields is None:
        value = _numbers_only(value)
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


def package_name(value) -> str | None:
    """The qualified name ('perceptrons.datasets.rosenbrock_grad') of a function of the
    package, or None for anything else."""
    named = getattr(value, "__qualified__", None)  # a closed function's stand-in
    if isinstance(named, str):
        return named
    module, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    if not (isinstance(module, str) and isinstance(qualname, str) and callable(value)):
        return None
    if (module == PACKAGE or module.startswith(PACKAGE + ".")) and "<" not in qualname:
        return f"{module}.{qualname}"
    return None


def to_plain(value, depth: int = 0, budget: list | None = None, *, results: bool = False):
    """The JSON-ready form of ``value``; raises :class:`NotPlainData` for anything else.

    ``results``: the grader's side sending a package function's value into the sandbox,
    where a result of the package (a dataclass of ``perceptrons``) crosses as its fields
    and a package function as its name."""
    budget = [MAX_ITEMS] if budget is None else budget
    if depth > MAX_DEPTH:
        raise NotPlainData(f"nested deeper than {MAX_DEPTH} levels")
    kind = type(value)
    if kind in SCALARS:
        if kind is float and not math.isfinite(value):
            return {"$float": repr(value)}
        return value
    if isinstance(value, np.ndarray):
        budget[0] -= value.size
        if budget[0] < 0:
            raise NotPlainData(f"more than {MAX_ITEMS} numbers")
        return {"$ndarray": _array(np.asarray(value))}
    if isinstance(value, np.generic):
        return {"$npscalar": _array(np.asarray(value))}
    if isinstance(value, bool | int | float | str):  # a subclass: its plain value
        plain = next(base for base in (bool, int, float, str) if isinstance(value, base))
        if plain is float:
            return to_plain(float.__float__(value), depth, budget)
        if plain is int:
            return int.__index__(value)
        return str.__str__(value) if plain is str else bool(value)
    if isinstance(value, numbers.Real):  # a Fraction, or any real number: its float
        try:
            number = float(value)
        except Exception as err:  # noqa: BLE001 - the student's number would not say
            raise NotPlainData(f"{describe(value)} that has no float value") from err
        return to_plain(float.__float__(number), depth, budget)
    if isinstance(value, list | tuple):
        budget[0] -= len(value)
        if budget[0] < 0:
            raise NotPlainData(f"more than {MAX_ITEMS} items")
        items = [
            to_plain(v, depth + 1, budget, results=results)
            for v in (list.__iter__(value) if isinstance(value, list) else tuple.__iter__(value))
        ]
        return items if isinstance(value, list) else {"$tuple": items}
    if kind is range:
        budget[0] -= _range_length(value.start, value.stop, value.step)
        if budget[0] < 0:  # a test turns it into a list or an array: it counts as its items
            raise NotPlainData(f"more than {MAX_ITEMS} items")
        return {"$range": [value.start, value.stop, value.step]}
    if isinstance(value, dict):
        budget[0] -= len(value)
        if budget[0] < 0:
            raise NotPlainData(f"more than {MAX_ITEMS} items")
        pairs = []
        for key, item in dict.items(value):
            if not isinstance(key, (*SCALARS, tuple)):
                raise NotPlainData(f"a dict with a key that is {describe(key)}")
            pairs.append(
                [
                    to_plain(key, depth + 1, budget),
                    to_plain(item, depth + 1, budget, results=results),
                ]
            )
        return {"$dict": pairs}
    named = package_name(value)
    if named is not None:
        return {"$package": named}
    if results and is_dataclass(value) and package_name(kind) is not None:
        data = {f.name: to_plain(getattr(value, f.name), depth + 1, budget) for f in fields(value)}
        return {"$result": [package_name(kind), data]}
    raise NotPlainData(describe(value))


class PackageRef(str):
    """A package function named in a message (``$package``), which the reader resolves in
    its own copy of the package, or refuses."""


class Decoder:
    """Builds fresh objects from the JSON-ready form within a :class:`Budget`. ``package``
    turns a :class:`PackageRef` (``$package``) into an object, ``results`` a result's class
    name (``$result``) into its class; without them, those tags are refused (the grader
    resolves package functions given as arguments to a closed function; the sandbox
    rebuilds the package's results)."""

    def __init__(self, budget: Budget, deadline: float, package=None, results=None):
        self.budget, self.deadline, self.items = budget, deadline, budget.items
        self.checked = budget.items  # the clock is read every 1024 items
        self.package, self.results = package, results

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
        if tag == "$package" and self.package is not None and type(body) is str:
            return self.package(PackageRef(body[:200]))
        if tag == "$result" and self.results is not None and type(body) is list:
            if len(body) != 2 or type(body[0]) is not str or type(body[1]) is not dict:
                raise NotPlainData("a malformed result")
            cls = self.results(body[0][:200])
            return cls(**{str(k): self.value(v, depth + 1) for k, v in body[1].items()})
        raise NotPlainData(f"a value tagged {str(tag)[:40]!r}")


def parse(raw: bytes | str, budget: Budget):
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


def _small_object(pairs: list) -> dict:
    """json's hook for every JSON object: the protocol's objects have a few keys each, so a
    large one is refused before a dict (whose key hashes the sender chose) is built."""
    if len(pairs) > 16:
        raise NotPlainData("a message object with more than 16 keys")
    return dict(pairs)


def from_plain(data, budget: Budget | None = None, package=None, results=None):
    """Fresh built-in and numpy objects from the JSON-ready form, within ``budget``; strict
    about its shape. ``package``, ``results``: see :class:`Decoder`."""
    budget = budget or Budget()
    return Decoder(budget, time.monotonic() + budget.seconds, package, results).value(data)


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
    """Run a cell in the student's shell (magics work); answered with whether it raised,
    what it printed and, with ``figures``, the figures it left open as PNG images."""

    source: str
    figures: bool = False
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
    form). The names in ``reference`` stand for the instructor's versions while it runs:
    calling one sends the grader a callback (an :class:`Answer` whose ``callback`` is set),
    which the grader answers with a :class:`Reply` computed on its side. The instructor's
    code never enters the sandbox, only the names."""

    name: str
    args: list
    kwargs: dict
    reference: list[str] = field(default_factory=list)
    op: ClassVar[str] = "call"


@dataclass(frozen=True)
class Reply:
    """The grader's answer to a callback: the value (JSON-ready), or what it raised
    ('ValueError: ...'), and the warnings it gave ([category, message] pairs)."""

    value: object = None
    raised: str | None = None
    warnings: list = field(default_factory=list)
    op: ClassVar[str] = "reply"


@dataclass(frozen=True)
class Checkpoint:
    """Keep a copy of the notebook as it is now (a forked process that waits); answered
    with its number as the value."""

    op: ClassVar[str] = "checkpoint"


@dataclass(frozen=True)
class Resume:
    """Hand the channel to copy ``number``: it answers this request and the next ones, until
    :class:`Release`."""

    number: int
    op: ClassVar[str] = "resume"


@dataclass(frozen=True)
class Release:
    """End the copy that holds the channel (it answers first); the notebook's own process
    answers the next requests."""

    op: ClassVar[str] = "release"


Request = Run | Get | Call | Reply | Checkpoint | Resume | Release
REQUESTS: dict[str, type] = {
    kind.op: kind for kind in (Run, Get, Call, Reply, Checkpoint, Resume, Release)
}


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
    fields_ = json.loads(payload)
    id, op = fields_.pop("id", None), fields_.pop("op", None)
    if op not in REQUESTS:
        raise BadRequest(f"unknown request {op!r}", id)
    try:
        return id, REQUESTS[op](**fields_)
    except TypeError as err:
        raise BadRequest(f"a malformed {op} request ({err})", id) from None


# --- the agent's answers ----------------------------------------------------------------------


@dataclass
class Answer:
    """What the agent answered to one request: built by the agent, sent by
    :func:`encode_answer`, and rebuilt on the grader's side by
    :func:`labtools.wire.decode_answer`.

    On the grader's side ``value`` is decoded plain data (``has_value`` says whether there
    was a value at all); on the agent's, its JSON-ready form (:func:`to_plain`).
    ``args_plain`` is the arguments' JSON-ready form after a call, to compare with what was
    sent. ``figures``: PNG images (base64) of the figures a run left open. The grader cuts
    texts to the budget's ``text`` characters.
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
    # a call of a reference function (Call.reference) or of a function the lab closes, to
    # be answered with a Reply: (name, args, kwargs), decoded like a value by the grader
    callback: tuple | None = None
    figures: list = field(default_factory=list)


TEXTS = ("stdout", "stderr", "error", "refused", "raised")


def encode_answer(answer: Answer) -> bytes:
    """The payload of the frame that carries ``answer`` (the agent's side, where ``value``
    is already JSON-ready): the fields that are set."""
    data: dict = {"id": answer.id}
    for name in TEXTS:
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
    if answer.figures:
        data["figures"] = list(answer.figures)
    return json.dumps(data, allow_nan=False).encode()
