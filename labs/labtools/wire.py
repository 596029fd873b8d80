"""What crosses between a student's sandbox and the grader: plain data, and nothing else.

This module is the one place that says what a student's value may be when it reaches the
trusted side: ``None``, ``bool``, ``int``, ``float``, ``str``, lists, tuples and ``range``
of these, dicts whose keys are such scalars or tuples, numpy scalars and numpy arrays of a
numeric or boolean dtype. Anything else (a subclass of float with its own ``__eq__``, a
module, a lambda, an object array) is refused with :class:`NotPlainData`, which names what
was found.

:func:`encode` turns a value into JSON text; :func:`decode` builds fresh objects of the
built-in and numpy types from that text, so whatever an object did on the student's side,
only its data arrives. The grader trusts :func:`decode` alone: the student's side may send
any bytes, and ``decode`` either returns plain data or raises :class:`NotPlainData`.

Imported inside the sandbox too, so it needs nothing but the standard library and numpy.
"""

from __future__ import annotations

import base64
import json
import math

import numpy as np

#: numpy dtype kinds that may cross: bool, signed and unsigned int, float, complex
NUMERIC_KINDS = frozenset("biufc")
MAX_DEPTH = 32
MAX_ITEMS = 10_000_000  # array elements and list items in one message, all together
SCALARS = (type(None), bool, int, float, str)


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


def encode(value) -> str:
    """``value`` as JSON text (see :func:`to_plain`)."""
    return json.dumps(to_plain(value), allow_nan=False)


def _from_array(spec) -> np.ndarray:
    if type(spec) is not dict or set(spec) != {"dtype", "shape", "data"}:
        raise NotPlainData("a malformed array")
    dtype = np.dtype(str(spec["dtype"]))
    if dtype.kind not in NUMERIC_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise NotPlainData(f"an array of dtype {dtype}")
    shape = spec["shape"]
    if type(shape) is not list or not all(type(n) is int and n >= 0 for n in shape):
        raise NotPlainData("an array with a malformed shape")
    raw = base64.b64decode(str(spec["data"]), validate=True)
    if len(raw) != math.prod(shape) * dtype.itemsize:
        raise NotPlainData("an array whose data does not fit its shape")
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


def from_plain(data, depth: int = 0):
    """Fresh built-in and numpy objects from the JSON-ready form; strict about its shape."""
    if depth > MAX_DEPTH + 1:
        raise NotPlainData(f"nested deeper than {MAX_DEPTH} levels")
    kind = type(data)
    if kind in SCALARS:
        return data
    if kind is list:
        return [from_plain(v, depth + 1) for v in data]
    if kind is not dict or len(data) != 1:
        raise NotPlainData("a malformed message")
    ((tag, body),) = data.items()
    if tag == "$float" and body in ("nan", "inf", "-inf"):
        return float(body)
    if tag == "$ndarray":
        return _from_array(body)
    if tag == "$npscalar":
        array = _from_array(body)
        if array.shape != ():
            raise NotPlainData("a numpy scalar with a shape")
        return array[()]
    if tag == "$tuple" and type(body) is list:
        return tuple(from_plain(v, depth + 1) for v in body)
    if tag == "$range" and type(body) is list and len(body) == 3:
        if not all(type(v) is int for v in body) or body[2] == 0:
            raise NotPlainData("a malformed range")
        if _range_length(*body) > MAX_ITEMS:
            raise NotPlainData(f"a range of more than {MAX_ITEMS} items")
        return range(*body)
    if tag == "$dict" and type(body) is list:
        result = {}
        for pair in body:
            if type(pair) is not list or len(pair) != 2:
                raise NotPlainData("a malformed dict")
            key = from_plain(pair[0], depth + 1)
            try:
                hash(key)
            except TypeError as err:
                raise NotPlainData("a dict with an unhashable key") from err
            result[key] = from_plain(pair[1], depth + 1)
        return result
    raise NotPlainData(f"a value tagged {tag!r}")


def decode(text: str | bytes):
    """The plain data in JSON ``text``; :class:`NotPlainData` if it is anything else."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as err:  # not JSON, too deep, an int too long
        raise NotPlainData(f"not readable as data ({type(err).__name__})") from err
    return from_plain(data)
