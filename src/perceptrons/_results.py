"""What every trainer returns, the recorder that builds it, and the warnings they raise.

One vocabulary for every result, in the spirit of ``scipy.optimize.OptimizeResult``:

    w : ndarray (p+1,)          final weights, w[0] = w0 = -θ (for :func:`gd` and its
                                variants the final point, shape (d,))
    path : ndarray (k+1, p+1)   the weights at the start and after each iteration (each update
                                for PT); None where the trainer kept no history
    loss : ndarray (k+1,)       the value the method minimises, one per row of ``path``; None
                                where the method has none (the trainers of :func:`gd` see only
                                a gradient, the LMS filter has no stopping loss)
    iterations : int            how many times the outer loop ran (epochs or steps: each result
                                says which)
    converged : bool            whether the stopping rule was met
    diverged : bool             whether the run stopped because it blew up

Method-specific extras keep their own names (PT's ``mistakes`` and ``updated``, the batch
perceptron's ``misclassified``, LMS's ``errors``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


class ConvergenceWarning(UserWarning):
    """Training stopped at its budget of epochs or steps before it converged."""


class DivergenceWarning(UserWarning):
    """Training stopped because the weights or the error grew without bound (η too large)."""


def _norm(v) -> float:
    """‖v‖, the value ``np.linalg.norm(v)`` gives (the square root of v·v, in floats), without
    its checks: the loops ask it at every step."""
    v = np.asarray(v)
    if v.dtype.kind != "f":
        v = v.astype(float)
    v = v.ravel()
    return math.sqrt(v.dot(v))


@dataclass(frozen=True, kw_only=True)
class Result:
    """The fields every trainer's result has (see the module's docstring)."""

    w: np.ndarray
    path: np.ndarray | None
    loss: np.ndarray | None
    iterations: int
    converged: bool
    diverged: bool


class Recorder:
    """A run as it goes: the weights at the start and after each iteration, and the loss at
    each, if the method has one. ``record(w, loss)`` is the only method that records;
    :meth:`converged` and :meth:`diverged` only answer, from their arguments and what was
    recorded, and change nothing.

    w : ndarray          the weights at the start (recorded as the first row of the path)
    loss : float | None  the loss at w, or None if the method has none
    history : bool       keep the path and the marks (False keeps only the last weights,
                         the last two losses and the count, so memory stays constant)
    stop : str           the stopping rule of :meth:`converged`: "grad" (‖∇E‖ <= tol),
                         "change" (|E(t-1) - E(t)| <= tol) or "loss" (E <= tol)
    tol : float          the tolerance of the stopping rule
    gradient : callable  w -> ∇E(w), for stop="grad" when the caller gives no gradient
    loss_limit : float   a loss above it counts as divergence
    max_norm : float     weights with ‖w‖ above it count as divergence
    marks : lists        integer marks kept with each record (with ``history``), such as
                         the example behind each PT update; each list starts with the
                         marks of the start, if any
    """

    def __init__(
        self,
        w,
        loss=None,
        *,
        history=True,
        stop="grad",
        tol=0.0,
        gradient=None,
        loss_limit=math.inf,
        max_norm=math.inf,
        **marks,
    ):
        self.history, self.stop, self.tol, self.gradient = history, stop, tol, gradient
        self.loss_limit, self.max_norm = loss_limit, max_norm
        self.w = w.copy()
        self.count = 0  # records after the start
        self.path = [self.w] if history else None
        self.losses = None if loss is None else [loss]
        self.marks = {name: list(values) if history else None for name, values in marks.items()}

    def record(self, w, loss=None, **marks) -> None:
        """Record the weights w after an iteration, the loss there and the marks."""
        self.w = w.copy()
        self.count += 1
        if self.history:
            self.path.append(self.w)
            for name, value in marks.items():
                self.marks[name].append(value)
        if self.losses is not None:
            self.losses.append(loss)
            if not self.history:
                del self.losses[:-2]  # the last two are all the rule "change" needs

    def converged(self, gradient=None) -> bool:
        """Whether the stopping rule holds at the last recorded weights. ``gradient`` is
        ∇E there (for stop="grad"; else ``self.gradient`` computes it)."""
        if self.stop == "grad":
            g = self.gradient(self.w) if gradient is None else gradient
            return bool(_norm(g) <= self.tol)
        if self.stop == "change":
            if len(self.losses) < 2:  # no iteration yet: no change to measure
                return False
            return bool(abs(self.losses[-2] - self.losses[-1]) <= self.tol)
        return bool(self.losses[-1] <= self.tol)

    def diverged(self, *, w=None, loss=None, gradient=None) -> bool:
        """Whether these values of the next iteration (not recorded) show a blow-up: one of
        them not finite, ‖w‖ > max_norm or loss > loss_limit."""
        if w is not None and (not np.isfinite(w).all() or _norm(w) > self.max_norm):
            return True
        if loss is not None and (not np.isfinite(loss) or loss > self.loss_limit):
            return True
        return gradient is not None and not np.isfinite(gradient).all()

    def result(self, cls, *, converged, diverged, iterations=None, **extra):
        """The result ``cls`` of the run: the last recorded weights, the path and the losses
        as arrays, the marks as integer arrays (None without history), ``iterations`` (by
        default the number of records after the start) and the ``extra`` fields."""
        marks = {
            name: None if values is None else np.array(values, dtype=int)
            for name, values in self.marks.items()
        }
        return cls(
            w=self.w,
            path=np.array(self.path) if self.history else None,
            loss=None if self.losses is None or not self.history else np.array(self.losses),
            iterations=self.count if iterations is None else iterations,
            converged=bool(converged),
            diverged=bool(diverged),
            **marks,
            **extra,
        )
