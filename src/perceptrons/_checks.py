"""Input validation shared by every public function of ``perceptrons``.

Each check raises ``ValueError`` (or ``TypeError`` for a wrong type) with a message that
names the argument, says what was expected and shows what was received, so that a student
reads what to fix instead of getting a wrong answer.
"""

from __future__ import annotations

import math
import numbers

import numpy as np


def _shape(a) -> str:
    return str(np.shape(a))


def as_matrix(X, name: str = "X") -> np.ndarray:
    """Return ``X`` as a finite float array of shape (n, p) with n >= 1 and p >= 1."""
    try:
        A = np.asarray(X, dtype=float)
    except (TypeError, ValueError) as err:
        raise TypeError(f"`{name}` must be an array of numbers; got {type(X).__name__}.") from err
    if A.ndim != 2:
        raise ValueError(f"`{name}` must be a 2-D array of shape (n, p); got shape {A.shape}.")
    if A.shape[0] == 0 or A.shape[1] == 0:
        raise ValueError(
            f"`{name}` must have at least one row and one column; got shape {A.shape}."
        )
    if not np.all(np.isfinite(A)):
        raise ValueError(f"`{name}` must contain only finite numbers; got NaN or inf.")
    return A


def as_vector(v, name: str, size: int | None = None) -> np.ndarray:
    """Return ``v`` as a finite float array of shape (size,)."""
    try:
        a = np.asarray(v, dtype=float)
    except (TypeError, ValueError) as err:
        raise TypeError(f"`{name}` must be an array of numbers; got {type(v).__name__}.") from err
    if a.ndim != 1:
        raise ValueError(f"`{name}` must be a 1-D array; got shape {a.shape}.")
    if size is not None and a.shape[0] != size:
        raise ValueError(f"`{name}` must have shape ({size},); got shape {a.shape}.")
    if a.shape[0] == 0:
        raise ValueError(f"`{name}` must not be empty.")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"`{name}` must contain only finite numbers; got NaN or inf.")
    return a


def initial_weights(w0, size: int) -> np.ndarray:
    """A fresh copy of the start weights ``w0`` of shape (size,); None means the zero vector."""
    return np.zeros(size) if w0 is None else as_vector(w0, "w0", size=size).copy()


def as_targets(c, n: int, name: str = "c") -> np.ndarray:
    """Return real-valued targets of shape (n,) (delta rule, least squares)."""
    return as_vector(c, name, size=n)


def as_labels(c, n: int, name: str = "c") -> tuple[np.ndarray, str]:
    """Check class labels of shape (n,) and tell their convention.

    Returns the labels as floats and ``"01"`` for labels in {0, 1} or ``"pm1"`` for labels
    in {-1, +1}. Both classes must occur, since one class alone does not say which
    convention is meant.
    """
    a = as_vector(c, name, size=n)
    values = set(np.unique(a).tolist())
    if values == {0.0, 1.0}:
        return a, "01"
    if values == {-1.0, 1.0}:
        return a, "pm1"
    shown = sorted(values)[:5]
    if values <= {0.0, 1.0} or values <= {-1.0, 1.0}:
        raise ValueError(f"`{name}` must contain both classes; got only the label {shown[0]:g}.")
    raise ValueError(f"`{name}` must hold labels in {{0, 1}} or in {{-1, +1}}; got values {shown}.")


def as_binary01(y, n: int, name: str = "y", both: bool = False) -> np.ndarray:
    """Return labels in {0, 1} of shape (n,); with ``both`` each class must occur."""
    a = as_vector(y, name, size=n)
    bad = a[(a != 0) & (a != 1)]
    if bad.size:
        raise ValueError(f"`{name}` must hold labels in {{0, 1}}; got the value {bad[0]:g}.")
    if both and len(np.unique(a)) < 2:
        raise ValueError(f"`{name}` must contain both classes; got only the label {a[0]:g}.")
    return a


def points_2d(X, name: str = "X") -> np.ndarray:
    """Return ``X`` as a finite float array of shape (n, 2) (for plots in the plane)."""
    A = as_matrix(X, name)
    if A.shape[1] != 2:
        raise ValueError(f"`{name}` must have shape (n, 2) to be drawn; got shape {A.shape}.")
    return A


def _real(value, name: str) -> float:
    if type(value) is float:  # the common case, asked at every step of a loop
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"`{name}` must be a real number; got {type(value).__name__}.")
    return float(value)


def positive(value, name: str) -> float:
    """Return ``value`` as a float if it is finite and > 0."""
    v = _real(value, name)
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"`{name}` must be > 0; got {value!r}.")
    return v


def step_size(eta, t) -> float:
    """η at step or update t: ``eta`` itself, or ``eta(t)`` for a schedule, checked > 0
    (the error names ``eta(t)`` with its t)."""
    value = eta(t) if callable(eta) else eta
    return positive(value, f"eta({t})" if callable(eta) else "eta")


def momentum(value, name: str = "alpha") -> float:
    """Return the momentum factor if 0 <= alpha < 1."""
    v = _real(value, name)
    if not (0.0 <= v < 1.0):
        raise ValueError(f"`{name}` must be in [0, 1); got {value!r}.")
    return v


def positive_int(value, name: str) -> int:
    """Return ``value`` if it is an integer >= 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"`{name}` must be an integer; got {type(value).__name__}.")
    if value < 1:
        raise ValueError(f"`{name}` must be >= 1; got {value!r}.")
    return int(value)


def flag(value, name: str) -> bool:
    """Return ``value`` if it is True or False."""
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"`{name}` must be True or False; got {type(value).__name__}.")
    return bool(value)


def choice(value, name: str, allowed: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of ``allowed``."""
    if value not in allowed:
        raise ValueError(f"`{name}` must be one of {allowed}; got {value!r}.")
    return value
