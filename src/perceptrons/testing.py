"""Checks for the labs: an answer is compared with a reference by kind, shape, then values.

``np.allclose(answer, reference)`` is not a check of an answer: it broadcasts, so an
empty array of shape (0, k) is "close" to any reference of shape (k,), and a loop
``for a, b in zip(answer, reference)`` asserts nothing when the answer is empty.
:func:`assert_same` compares in the order a grader would: is it the right kind of thing
(a number, a truth value, an array, a tuple of them), does it have the reference's shape
or length, and only then are its values close. It never broadcasts.

Used by the labs' visible and hidden checks, so that a student's run and the grader's
give the same verdict.
"""

from __future__ import annotations

import copy
import math
import numbers

import numpy as np

__all__ = ["NotSame", "assert_same", "keeps_inputs"]


class NotSame(AssertionError):
    """What :func:`assert_same` raises: the message, and ``what`` was compared (the words
    the check gave it, without the values), which a grader may show where the values must
    stay hidden."""

    def __init__(self, message: str, what: str):
        super().__init__(message)
        self.what = what


def _kind(value) -> str:
    return type(value).__name__


def _is_bool(value) -> bool:
    return isinstance(value, bool | np.bool_)


def _is_number(value) -> bool:
    """A real number: int, float or a numpy integer or float, not a truth value."""
    return isinstance(value, numbers.Real) and not _is_bool(value)


def _numeric_array(value, what: str) -> np.ndarray:
    """``value`` as an array of numbers (bool arrays stay bool); AssertionError otherwise."""
    if value is None or isinstance(value, str | bytes | dict | set):
        raise NotSame(f"{what} must be an array of numbers; got {_kind(value)}", what)
    try:
        array = np.asarray(value)
    except ValueError as err:  # ragged nested lists
        raise NotSame(f"{what} must be a rectangular array of numbers", what) from err
    if array.dtype.kind == "O" and all(_is_number(v) for v in array.ravel().tolist()):
        array = array.astype(float)  # what np.frompyfunc returns: numbers, as objects
    if array.dtype.kind not in "biuf":
        raise NotSame(f"{what} must be an array of numbers; got dtype {array.dtype}", what)
    return array


def assert_same(
    actual, expected, *, rtol: float = 1e-9, atol: float = 0.0, what: str = "the result"
):
    """Assert that ``actual`` is ``expected`` up to rounding, checking kind and shape first.

    expected : the reference. A bool needs a bool; a number (int or float) needs a real
        number that is not a bool; an array, or a list of numbers, needs an array of the
        same shape (not one that broadcasts to it); a tuple needs a tuple, a list or an
        array (along its first axis) of the same length, compared item by item; a dict
        needs the same keys.
    rtol, atol : values agree when ``|actual - expected| <= atol + rtol * |expected|``;
        NaN agrees with nothing, infinities only with themselves.
    what : how the message names ``actual`` (e.g. "pt_step(w, x, 1, 0.5)").

    Raises AssertionError with a message that says what differs, and returns None.
    """
    if rtol < 0 or atol < 0:
        raise ValueError(f"`rtol` and `atol` must be >= 0; got {rtol} and {atol}.")
    if _is_bool(expected):
        if not _is_bool(actual):
            raise NotSame(f"{what} must be True or False; got {_kind(actual)}", what)
        if bool(actual) != bool(expected):
            raise NotSame(f"{what} is {bool(actual)}; expected {bool(expected)}", what)
        return
    if isinstance(expected, tuple):
        is_array = isinstance(actual, np.ndarray) and actual.ndim >= 1
        if not (isinstance(actual, tuple | list) or is_array):
            raise NotSame(
                f"{what} must be a tuple (or list, or array) of {len(expected)} items; "
                f"got {_kind(actual)}",
                what,
            )
        if len(actual) != len(expected):
            raise NotSame(f"{what} must have {len(expected)} items; got {len(actual)}", what)
        for k, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert_same(a, e, rtol=rtol, atol=atol, what=f"{what}[{k}]")
        return
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            raise NotSame(f"{what} must be a dict; got {_kind(actual)}", what)
        if set(actual) != set(expected):
            raise NotSame(f"{what} must have the keys {sorted(expected, key=repr)}", what)
        for key, e in expected.items():
            assert_same(actual[key], e, rtol=rtol, atol=atol, what=f"{what}[{key!r}]")
        return
    if _is_number(expected) or (isinstance(expected, np.ndarray) and expected.ndim == 0):
        if isinstance(actual, np.ndarray) and actual.ndim == 0 and actual.dtype.kind in "iuf":
            actual = actual[()]
        if not _is_number(actual):
            raise NotSame(f"{what} must be a number; got {_kind(actual)}", what)
        a, e = float(actual), float(expected)
        if not (a == e or math.isclose(a, e, rel_tol=rtol, abs_tol=atol)):
            raise NotSame(f"{what} is {a!r}; expected {e!r}", what)
        return
    reference = _numeric_array(expected, "the reference")
    array = _numeric_array(actual, what)
    if array.shape != reference.shape:
        raise NotSame(f"{what} must have shape {reference.shape}; got {array.shape}", what)
    if (reference.dtype.kind == "b") != (array.dtype.kind == "b"):
        kind = "truth values" if reference.dtype.kind == "b" else "numbers"
        raise NotSame(f"{what} must be an array of {kind}", what)
    a, e = array.astype(float), reference.astype(float)
    with np.errstate(invalid="ignore"):  # inf - inf: equal infinities pass by a == e
        close = (a == e) | (np.abs(a - e) <= atol + rtol * np.abs(e))
    if not np.all(close):
        k = tuple(int(i) for i in np.argwhere(~close)[0])
        raise NotSame(
            f"{what} differs at index {k}: {a[k]!r} where {e[k]!r} is expected "
            f"({int(np.count_nonzero(~close))} of {close.size} values differ)",
            what,
        )


def keeps_inputs(func):
    """``func`` as a check of the labs' rule "inputs unchanged": calling the result calls
    ``func`` and then raises AssertionError if it changed any argument in place (as
    ``w += delta`` changes the caller's ``w``), naming the argument; else it returns what
    ``func`` returned. The grader applies the same rule to every call of a graded
    function; this lets a visible check tell the student first.
    """

    def call(*args, **kwargs):
        before = copy.deepcopy((args, kwargs))
        result = func(*args, **kwargs)
        named = [
            (f"argument {k + 1}", a, b)
            for k, (a, b) in enumerate(zip(args, before[0], strict=True))
        ]
        named += [(f"argument {key}", kwargs[key], before[1][key]) for key in kwargs]
        for which, after, was in named:
            if not _equal(after, was):
                name = getattr(func, "__name__", "the function")
                raise AssertionError(
                    f"{name} changed its {which} in place; the labs' functions must leave "
                    "what they are given unchanged (write w = w + delta, not w += delta)"
                )
        return result

    return call


def _equal(a, b) -> bool:
    """Whether an argument is as it was (arrays element by element, NaN equal to NaN)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return type(a) is type(b) and len(a) == len(b) and all(map(_equal, a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    return bool(a == b) if not isinstance(a, float) or a == a else b != b
