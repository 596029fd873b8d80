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
from ._checks import step_size
from ._results import ConvergenceWarning, DivergenceWarning, Recorder, Result


@dataclass(frozen=True, kw_only=True)
class GDResult(Result):
    """Outcome of :func:`gd`, :func:`descend` and the methods built on it, in the vocabulary
    of :class:`~perceptrons._results.Result`.

    w : ndarray (d,)          final point (the last finite one if the run diverged)
    path : ndarray (k+1, d)   w(0), w(1), ..., w(k)
    loss : None               these methods are given ∇E only, not E
    iterations : int          steps taken, k
    converged : bool          whether ‖∇E(w)‖ <= tol was reached
    diverged : bool           whether w left the ball ‖w‖ <= max_norm or became non-finite
    """


def _recorder(grad, w0, *, steps, tol, max_norm) -> tuple[Recorder, int]:
    """What every descent loop here starts with: the settings checked, and the recorder of
    w(0), w(1), ... whose checks are ‖∇E(w)‖ <= tol (converged) and w outside the ball
    ‖w‖ <= max_norm or a value not finite (diverged). Its ``gradient(w)`` is ∇E(w), checked
    to have the shape of w. Returns the recorder and the checked budget of steps."""
    w = _checks.as_vector(w0, "w0").copy()
    if not callable(grad):
        raise TypeError(f"`grad` must be a function w -> ∇E(w); got {type(grad).__name__}.")

    def gradient(w) -> np.ndarray:
        g = np.asarray(grad(w), dtype=float)
        if g.shape != w.shape:
            raise ValueError(f"`grad` must return shape {w.shape}; got shape {g.shape}.")
        return g

    steps = _checks.positive_int(steps, "steps")
    tol = _checks.positive(tol, "tol")
    max_norm = _checks.positive(max_norm, "max_norm")
    return Recorder(w, stop="grad", tol=tol, gradient=gradient, max_norm=max_norm), steps


def _gd_result(run, converged, diverged, *, steps, name, warn, why="η is too large") -> GDResult:
    """The :class:`GDResult` of the recorded run, with a warning (unless ``warn=False``) if
    the run diverged (``why`` says the likely cause) or did not converge in ``steps``
    steps; the warning points at the caller of the method ``name``."""
    if warn and diverged:
        warnings.warn(
            f"{name} diverged at step {run.count + 1}: ‖w‖ passed {run.max_norm:g} or became "
            f"non-finite; {why}.",
            DivergenceWarning,
            stacklevel=3,
        )
    elif warn and not converged:
        warnings.warn(
            f"{name} did not reach ‖∇E‖ <= {run.tol:g} in {steps} steps.",
            ConvergenceWarning,
            stacklevel=3,
        )
    return run.result(GDResult, converged=converged, diverged=diverged)


def descend(
    grad,
    w0,
    step,
    steps=1000,
    tol=1e-6,
    max_norm=1e6,
    warn=True,
    name="Descent",
    *,
    why="η is too large",
):
    """The loop shared by the step rules (line search, Nesterov, AdaGrad, RMSProp, Adam):
    w(t+1) = w(t) + step(t, w(t), g(t)), the same loop as :func:`gd` with Δw(t) from ``step``.

    grad : w (d,) -> ∇E(w) (d,);  step : (t, w, g) -> Δw (d,), may keep state between calls.
    Stops when ‖∇E(w)‖ <= tol (converged), or when w leaves the ball ‖w‖ <= max_norm or a
    value turns non-finite (diverged, the last finite w is kept), or after ``steps`` steps.
    The warnings name the method ``name``; ``why`` is the likely cause of a divergence.
    """
    run, steps = _recorder(grad, w0, steps=steps, tol=tol, max_norm=max_norm)
    w = run.w.copy()  # w(0)
    converged = diverged = False
    with np.errstate(over="ignore", invalid="ignore"):  # overflow means divergence: see below
        for t in range(steps):
            g = run.gradient(w)  # ∇E(w(t))
            if diverged := run.diverged(gradient=g):  # ∇E(w(t)) is not finite
                break
            if converged := run.converged(g):  # ‖∇E(w(t))‖ <= tol
                break
            w = w + step(t, w, g)  # w(t+1) = w(t) + Δw(t)
            if diverged := run.diverged(w=w):  # ‖w(t+1)‖ > max_norm, or not finite
                break
            run.record(w)
    return _gd_result(run, converged, diverged, steps=steps, name=name, warn=warn, why=why)


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
    if not callable(eta):
        _checks.positive(eta, "eta")
    alpha = _checks.momentum(alpha)
    run, steps = _recorder(grad, w0, steps=steps, tol=tol, max_norm=max_norm)  # w after each step

    w = run.w.copy()  # w(0)
    delta_w = 0.0  # Δw(-1) = 0
    converged = diverged = False
    with np.errstate(over="ignore", invalid="ignore"):  # overflow means divergence: see below
        for t in range(steps):
            g = run.gradient(w)  # ∇E(w(t))
            if diverged := run.diverged(gradient=g):  # ∇E(w(t)) is not finite
                break
            if converged := run.converged(g):  # until ‖∇E(w(t))‖ <= tol
                break
            delta_w = -step_size(eta, t) * g + alpha * delta_w  # Δw(t) = -η∇E(w(t)) + αΔw(t-1)
            w = w + delta_w  # w(t+1) = w(t) + Δw(t)
            if diverged := run.diverged(w=w):  # ‖w(t+1)‖ > max_norm, or not finite
                break
            run.record(w)
    return _gd_result(run, converged, diverged, steps=steps, name="Gradient descent", warn=warn)


def exact_step(f, w, g, eta_max=1e6, tol=1e-10) -> float:
    """The η > 0 that minimises f(w - η g) along the ray (bracketing, then golden section).

    f : w (d,) -> float; w, g : (d,). Returns 0.0 if no step along -g lowers f.
    """
    phi = lambda eta: float(f(w - eta * g))  # noqa: E731
    lo, mid, f_mid = 0.0, 1e-8, phi(1e-8)
    if f_mid >= phi(0.0):
        return 0.0
    hi = 2 * mid
    while phi(hi) < f_mid and hi < eta_max:  # grow until the ray starts going up again
        lo, mid, f_mid, hi = mid, hi, phi(hi), 2 * hi
    inv_phi = (np.sqrt(5) - 1) / 2
    a, b = lo, hi
    while b - a > tol * max(1.0, b):
        x1, x2 = b - inv_phi * (b - a), a + inv_phi * (b - a)
        if phi(x1) < phi(x2):
            b = x2
        else:
            a = x1
    return (a + b) / 2


def steepest_descent(f, grad, w0, steps=1000, tol=1e-6, max_norm=1e6, warn=True) -> GDResult:
    """Gradient descent with the optimal step η_t = argmin_η f(w - η∇f(w)) at every step.

    f : w (d,) -> float; grad : w (d,) -> (d,); w0 : (d,). Even with the best step the rate is
    only linear: on a quadratic, the error shrinks per step by ((κ - 1)/(κ + 1))² at worst.
    """
    if not callable(f):
        raise TypeError(f"`f` must be a function w -> E(w); got {type(f).__name__}.")

    def step(t, w, g):
        return -exact_step(f, w, g) * g

    return descend(
        grad, w0, step, steps=steps, tol=tol, max_norm=max_norm, warn=warn, name="Steepest descent"
    )
