"""The delta rule on the linear unit y = wᵀx: batch (BGD) and incremental (IGD) gradient descent,
and linear least squares in one step.

Introduced in the chapters *The delta rule* and *Batch and incremental gradient descent*.

Err(w) = ½ Σ_x (c(x) - wᵀx)²,   ∇Err(w) = -Σ_x (c(x) - wᵀx)·x.
IGD is also known as LMS, the Widrow–Hoff rule and the adaline rule.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from . import _checks
from ._results import ConvergenceWarning, DivergenceWarning
from .perceptron import augment

#: Training counts as diverged once Err exceeds this factor times max(Err(w(0)), ½Σc², 1).
DIVERGENCE_FACTOR = 1e6


def sq_error(w, X, c) -> float:
    """Err(w) = ½ Σ (c - wᵀx)²; w (p+1,), X (n, p), c (n,)."""
    Xa = augment(X)
    w = _checks.as_vector(w, "w", size=Xa.shape[1])
    c = _checks.as_targets(c, Xa.shape[0])
    return _err(w, Xa, c)


def sq_error_grad(w, X, c) -> np.ndarray:
    """∇Err(w) = -Σ (c - wᵀx)·x, shape (p+1,); w (p+1,), X (n, p), c (n,)."""
    Xa = augment(X)
    w = _checks.as_vector(w, "w", size=Xa.shape[1])
    c = _checks.as_targets(c, Xa.shape[0])
    return -((c - Xa @ w) @ Xa)


def _err(w, Xa, c) -> float:
    r = c - Xa @ w
    return 0.5 * float(r @ r)


def lls(X, d) -> np.ndarray:
    """Linear least squares: the w (p+1,) minimising Σ (d - wᵀx)², w = X⁺d (pseudo-inverse).

    This is the step that Gauss–Newton takes from any start; on a linear model it lands on
    the minimum at once. X (n, p), d (n,).
    """
    Xa = augment(X)
    d = _checks.as_targets(d, Xa.shape[0], name="d")
    return np.linalg.pinv(Xa) @ d


@dataclass(frozen=True)
class DeltaResult:
    """Outcome of :func:`bgd` and :func:`igd`.

    w : ndarray (p+1,)        final weights (the last finite ones if training diverged)
    ws : ndarray (t+1, p+1)   weights before the first and after each epoch
    errors : ndarray (t+1,)   Err(w) for each row of ws
    epochs : int              epochs completed
    converged : bool          whether the stopping rule was met
    diverged : bool           whether Err grew past the divergence limit or overflowed
    """

    w: np.ndarray
    ws: np.ndarray
    errors: np.ndarray
    epochs: int
    converged: bool
    diverged: bool


_STOPS = ("grad", "change", "err")


def _train(step, Xa, c, w, eta, max_epochs, tol, stop, name, warn):
    """The epoch loop of BGD and IGD: run ``step``, record Err, test stopping and divergence."""
    errors, ws = [_err(w, Xa, c)], [w.copy()]
    limit = DIVERGENCE_FACTOR * max(errors[0], 0.5 * float(c @ c), 1.0)
    converged = diverged = False
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(max_epochs):
            w = step(w)
            err = _err(w, Xa, c)
            if not np.isfinite(err) or err > limit:
                diverged = True
                break
            ws.append(w.copy())
            errors.append(err)
            if stop == "grad":
                converged = np.linalg.norm((c - Xa @ w) @ Xa) <= tol
            elif stop == "change":
                converged = abs(errors[-2] - errors[-1]) <= tol
            else:
                converged = err <= tol
            if converged:
                break
    epochs = len(ws) - 1
    if warn and diverged:
        warnings.warn(
            f"{name} diverged at epoch {epochs + 1}: Err grew past {limit:.3g}; "
            f"η = {eta:g} is too large for these data.",
            DivergenceWarning,
            stacklevel=3,
        )
    elif warn and not converged:
        warnings.warn(
            f"{name} did not meet its stopping rule ({stop} <= {tol:g}) in {max_epochs} epochs.",
            ConvergenceWarning,
            stacklevel=3,
        )
    return DeltaResult(ws[-1], np.array(ws), np.array(errors), epochs, converged, diverged)


def _setup(X, c, eta, w0, max_epochs, tol, stop):
    Xa = augment(X)  # (n, p+1)
    c = _checks.as_targets(c, Xa.shape[0])
    eta = _checks.positive(eta, "eta")
    max_epochs = _checks.positive_int(max_epochs, "max_epochs")
    tol = _checks.positive(tol, "tol")
    stop = _checks.choice(stop, "stop", _STOPS)
    w = _checks.initial_weights(w0, Xa.shape[1])
    return Xa, c, eta, w, max_epochs, tol, stop


def bgd(X, c, eta, w0=None, max_epochs=1000, tol=1e-6, stop="grad", warn=True) -> DeltaResult:
    """Batch gradient descent with the delta rule.

    X (n, p) examples; c (n,) real targets; eta > 0; w0 (p+1,) or None (zeros).
    Each epoch sums Δw over all examples, then updates w once. Stopping rule ``stop``:
    "grad" ‖∇Err‖ <= tol, "change" |Err(t-1) - Err(t)| <= tol, "err" Err <= tol.
    Reports ``diverged=True`` (with a DivergenceWarning) when Err blows up; ``warn=False``
    silences the warnings (the result still says what happened).
    """
    Xa, c, eta, w, max_epochs, tol, stop = _setup(X, c, eta, w0, max_epochs, tol, stop)

    def epoch(w):
        error = c - Xa @ w  # 5-7. error = c(x) - wᵀx for every x, shape (n,)
        delta_w = eta * (error @ Xa)  #      Δw = Σ η · error · x
        return w + delta_w  # 9. w = w + Δw

    return _train(epoch, Xa, c, w, eta, max_epochs, tol, stop, "BGD", warn)


@dataclass(frozen=True)
class LMSResult:
    """Outcome of :func:`lms`, one pass over a stream of examples.

    w : ndarray (p+1,)        weights after the last example
    ws : ndarray (n+1, p+1)   w(0), w(1), ..., w(n): the weights after each example
    errors : ndarray (n,)     e(t) = d(t) - w(t)ᵀx(t), the error before each update
    """

    w: np.ndarray
    ws: np.ndarray
    errors: np.ndarray


def _lms_pass(Xa, d, eta, w):
    """One pass of the delta rule over the rows of Xa (n, p+1); returns ws (n+1, p+1), e (n,)."""
    ws, errors = np.empty((len(Xa) + 1, len(w))), np.empty(len(Xa))
    ws[0] = w
    for t, (x, d_t) in enumerate(zip(Xa, d, strict=True)):  # 4. FOREACH (x, c(x)) in D
        errors[t] = d_t - w @ x  # 5. error = c(x) - wᵀx
        w = w + eta * errors[t] * x  # 6-7. Δw = η · error · x;  w = w + Δw
        ws[t + 1] = w
    return ws, errors


def lms(X, d, eta, w0=None) -> LMSResult:
    """The LMS adaptive filter: the delta rule applied once to each example of a stream.

    X (n, p) inputs x(t) in time order; d (n,) desired outputs d(t); eta > 0; w0 (p+1,) or
    None (zeros). A small η averages over a long past; a large η forgets quickly and tracks
    a system that changes.
    """
    Xa = augment(X)
    d = _checks.as_targets(d, Xa.shape[0], name="d")
    eta = _checks.positive(eta, "eta")
    w = _checks.initial_weights(w0, Xa.shape[1])
    with np.errstate(over="ignore", invalid="ignore"):
        ws, errors = _lms_pass(Xa, d, eta, w)
    if not (np.all(np.isfinite(ws)) and np.all(np.isfinite(errors))):
        raise ValueError(f"`eta` = {eta:g} is too large: the LMS weights overflowed.")
    return LMSResult(ws[-1].copy(), ws, errors)


def igd(X, c, eta, w0=None, max_epochs=1000, tol=1e-6, stop="change", warn=True) -> DeltaResult:
    """Incremental gradient descent with the delta rule (LMS, Widrow–Hoff, adaline).

    Same arguments as :func:`bgd`; w is updated after every example, in the given order.
    The default rule stops when an epoch changes Err by at most ``tol``.
    """
    Xa, c, eta, w, max_epochs, tol, stop = _setup(X, c, eta, w0, max_epochs, tol, stop)

    def epoch(w):
        ws, _ = _lms_pass(Xa, c, eta, w)  # 4-8. one pass of the delta rule over D
        return ws[-1]

    return _train(epoch, Xa, c, w, eta, max_epochs, tol, stop, "IGD", warn)
