"""Gradient descent with optional momentum on any differentiable function.

Introduced in the chapters *Gradient-descent pitfalls* and *Momentum*.

    Δw(t) = -η ∇E(w(t)) + α Δw(t-1),    w(t+1) = w(t) + Δw(t),    Δw(-1) = 0.

With α = 0 this is plain gradient descent. (One of the source slides prints the momentum
term as α·w(t-1); the term is the previous *change* α·Δw(t-1).)
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from . import _checks
from ._results import ConvergenceWarning, DivergenceWarning


@dataclass(frozen=True)
class GDResult:
    """Outcome of :func:`gd`.

    w : ndarray (d,)          final point (the last finite one if the run diverged)
    path : ndarray (k+1, d)   w(0), w(1), ..., w(k)
    steps : int               steps taken k
    converged : bool          whether ‖∇E(w)‖ <= tol was reached
    diverged : bool           whether w left the ball ‖w‖ <= max_norm or became non-finite
    """

    w: np.ndarray
    path: np.ndarray
    steps: int
    converged: bool
    diverged: bool


def _step_size(eta, t):
    value = eta(t) if callable(eta) else eta
    return _checks.positive(value, "eta" if not callable(eta) else f"eta({t})")


def gd(
    grad: Callable[[np.ndarray], np.ndarray],
    w0,
    eta,
    alpha: float = 0.0,
    steps: int = 1000,
    tol: float = 1e-6,
    max_norm: float = 1e6,
    warn: bool = True,
) -> GDResult:
    """Minimise E by gradient descent with momentum.

    grad : function w (d,) -> ∇E(w) (d,)
    w0 : start, shape (d,)
    eta : step size η > 0, or a function t -> η_t (a schedule)
    alpha : momentum factor α in [0, 1)
    steps : at most this many steps; tol : stop when ‖∇E(w)‖ <= tol
    max_norm : report divergence once ‖w‖ exceeds it
    warn : emit ConvergenceWarning / DivergenceWarning (sliders may turn this off)
    """
    w = _checks.as_vector(w0, "w0").copy()
    if not callable(grad):
        raise TypeError(f"`grad` must be a function w -> ∇E(w); got {type(grad).__name__}.")
    if not callable(eta):
        _checks.positive(eta, "eta")
    alpha = _checks.momentum(alpha)
    steps = _checks.positive_int(steps, "steps")
    tol = _checks.positive(tol, "tol")
    max_norm = _checks.positive(max_norm, "max_norm")

    path, delta_w = [w.copy()], np.zeros_like(w)
    converged = diverged = False
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(steps):
            g = np.asarray(grad(w), dtype=float)  # ∇E(w(t))
            if g.shape != w.shape:
                raise ValueError(f"`grad` must return shape {w.shape}; got shape {g.shape}.")
            if not np.all(np.isfinite(g)):
                diverged = True
                break
            if np.linalg.norm(g) <= tol:
                converged = True
                break
            delta_w = -_step_size(eta, t) * g + alpha * delta_w  # Δw(t) = -η∇E + αΔw(t-1)
            w_next = w + delta_w  # w(t+1) = w(t) + Δw(t)
            if not np.all(np.isfinite(w_next)) or np.linalg.norm(w_next) > max_norm:
                diverged = True
                break
            w = w_next
            path.append(w.copy())
    k = len(path) - 1
    if warn and diverged:
        warnings.warn(
            f"Gradient descent diverged at step {k + 1}: ‖w‖ passed {max_norm:g} or became "
            "non-finite; η is too large.",
            DivergenceWarning,
            stacklevel=2,
        )
    elif warn and not converged:
        warnings.warn(
            f"Gradient descent did not reach ‖∇E‖ <= {tol:g} in {steps} steps.",
            ConvergenceWarning,
            stacklevel=2,
        )
    return GDResult(w=w, path=np.array(path), steps=k, converged=converged, diverged=diverged)
