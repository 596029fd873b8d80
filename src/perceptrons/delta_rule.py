"""The delta rule on the linear unit y = wᵀx: batch (BGD), mini-batch and incremental (IGD)
gradient descent, and linear least squares in one step.

Introduced in the chapters *The delta rule* and *Batch and incremental gradient descent*.

Err(w) = ½ Σ_x (c(x) - wᵀx)²,   ∇Err(w) = -Σ_x (c(x) - wᵀx)·x.
IGD is also known as LMS, the Widrow–Hoff rule and the adaline rule.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from . import _checks
from ._results import ConvergenceWarning, DivergenceWarning, Recorder, Result
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


@dataclass(frozen=True, kw_only=True)
class DeltaResult(Result):
    """Outcome of :func:`bgd`, :func:`igd` and :func:`mbgd`, in the vocabulary of
    :class:`~perceptrons._results.Result`.

    w : ndarray (p+1,)          final weights (the last finite ones if training diverged)
    path : ndarray (t+1, p+1)   weights before the first and after each epoch
    loss : ndarray (t+1,)       Err(w) for each row of path
    iterations : int            epochs completed, t
    converged : bool            whether the stopping rule was met
    diverged : bool             whether Err grew past the divergence limit or overflowed
    """


_STOPS = ("grad", "change", "err")


def _recorder(Xa, c, w, *, stop, tol) -> Recorder:
    """The recorder of BGD, IGD and mini-batch GD: w and Err(w) after each epoch; its checks
    are the stopping rule ``stop`` and divergence (Err past ``DIVERGENCE_FACTOR`` ·
    max(Err(w(0)), ½Σc², 1), or not finite). Xa (n, p+1), c (n,), w (p+1,) the initial
    weights."""
    with np.errstate(over="ignore"):  # targets near 1e154 square to inf: then Err is inf
        err = _err(w, Xa, c)
        limit = DIVERGENCE_FACTOR * max(err, 0.5 * float(c @ c), 1.0)
    return Recorder(
        w,
        err,
        stop="loss" if stop == "err" else stop,
        tol=tol,
        gradient=lambda w: (c - Xa @ w) @ Xa,  # -∇Err(w): the rule "grad" needs its norm
        loss_limit=limit,
    )


def _delta_result(run, converged, diverged, *, name, eta, stop, max_epochs, warn) -> DeltaResult:
    """The :class:`DeltaResult` of the recorded run, with a warning (unless ``warn=False``)
    if training diverged or did not meet its stopping rule; the warning points at the caller
    of ``name``."""
    if warn and diverged:
        warnings.warn(
            f"{name} diverged at epoch {run.count + 1}: Err grew past {run.loss_limit:.3g}; "
            f"{_eta_text(eta)} is too large for these data.",
            DivergenceWarning,
            stacklevel=3,
        )
    elif warn and not converged:
        warnings.warn(
            f"{name} did not meet its stopping rule ({stop} <= {run.tol:g}) in "
            f"{max_epochs} epochs.",
            ConvergenceWarning,
            stacklevel=3,
        )
    return run.result(DeltaResult, converged=converged, diverged=diverged)


def _setup(X, c, *, eta, max_epochs, tol, stop, schedule=False):
    """Checked inputs of BGD and IGD: Xa (n, p+1) with x0 = 1, c (n,), and the settings
    (``schedule``: eta may be a function, whose values are checked as they are used)."""
    Xa = augment(X)  # (n, p+1)
    c = _checks.as_targets(c, Xa.shape[0])
    if not (schedule and callable(eta)):
        eta = _checks.positive(eta, "eta")
    max_epochs = _checks.positive_int(max_epochs, "max_epochs")
    tol = _checks.positive(tol, "tol")
    stop = _checks.choice(stop, "stop", _STOPS)
    return Xa, c, eta, max_epochs, tol, stop


def bgd(X, c, eta, w0=None, max_epochs=1000, tol=1e-6, stop="grad", warn=True) -> DeltaResult:
    """Batch gradient descent with the delta rule.

    X (n, p) examples; c (n,) real targets; eta > 0; w0 (p+1,) or None (zeros).
    Each epoch sums Δw over all examples, then updates w once. Stopping rule ``stop``:
    "grad" ‖∇Err‖ <= tol, "change" |Err(t-1) - Err(t)| <= tol, "err" Err <= tol.
    Reports ``diverged=True`` (with a DivergenceWarning) when Err blows up; ``warn=False``
    silences the warnings (the result still says what happened).
    """
    Xa, c, eta, max_epochs, tol, stop = _setup(
        X, c, eta=eta, max_epochs=max_epochs, tol=tol, stop=stop
    )

    w = _checks.initial_weights(w0, Xa.shape[1])  # 1. initialise w
    run = _recorder(Xa, c, w, stop=stop, tol=tol)  # w and Err(w) after each epoch
    converged = diverged = False
    with np.errstate(over="ignore", invalid="ignore"):  # a too large η overflows: see below
        for t in range(1, max_epochs + 1):  # 2-3. repeat, t = t + 1
            error = c - Xa @ w  # 5-8. error = c(x) - wᵀx for every x, shape (n,)
            delta_w = eta * (error @ Xa)  # 4-8. Δw = Σ η · error · x
            w = w + delta_w  # 9. w = w + Δw
            err = _err(w, Xa, c)
            if diverged := run.diverged(loss=err):  # Err blew up: keep the last finite w
                break
            run.record(w, err)
            if converged := run.converged():  # 10. until the stopping rule holds
                break
    return _delta_result(
        run, converged, diverged, name="BGD", eta=eta, stop=stop, max_epochs=max_epochs, warn=warn
    )


@dataclass(frozen=True, kw_only=True)
class LMSResult(Result):
    """Outcome of :func:`lms`, one pass over a stream of examples, in the vocabulary of
    :class:`~perceptrons._results.Result`.

    w : ndarray (p+1,)          weights after the last example
    path : ndarray (n+1, p+1)   w(0), w(1), ..., w(n): the weights after each example
    loss : None                 a filter has no loss it stops on (see ``errors``)
    iterations : int            examples taken, n (one update each)
    converged : bool            always False: a filter has no stopping rule
    diverged : bool             always False: weights that overflow raise a ValueError
    errors : ndarray (n,)       e(t) = d(t) - w(t)ᵀx(t), the error before each update
    """

    errors: np.ndarray


def _lms_pass(Xa, d, eta, w):
    """One pass of the delta rule over the rows of Xa (n, p+1) with step size eta > 0;
    returns the weights before and after each update, ws (n+1, p+1), and the errors e (n,)."""
    ws, errors = np.empty((len(Xa) + 1, len(w))), np.empty(len(Xa))
    ws[0] = w
    for t, (x, d_t) in enumerate(zip(Xa, d, strict=True)):  # for each example, in time order
        errors[t] = d_t - w @ x  # e(t) = d(t) - w(t)ᵀx(t)
        w = w + eta * errors[t] * x  # w(t+1) = w(t) + η e(t) x(t)
        ws[t + 1] = w
    return ws, errors


def _schedule(eta, first: int, n: int) -> np.ndarray:
    """The step sizes of n updates from update number ``first`` on, shape (n,): eta n times
    if it is a number, else eta(first), ..., eta(first + n - 1), each checked to be > 0."""
    if not callable(eta):
        return np.broadcast_to(eta, n)
    return np.array([_checks.step_size(eta, k) for k in range(first, first + n)])


def _eta_text(eta) -> str:
    return "the schedule eta" if callable(eta) else f"η = {eta:g}"


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
        ws, errors = _lms_pass(Xa=Xa, d=d, eta=eta, w=w)
    if not (np.all(np.isfinite(ws)) and np.all(np.isfinite(errors))):
        raise ValueError(f"`eta` = {eta:g} is too large: the LMS weights overflowed.")
    return LMSResult(
        w=ws[-1].copy(),
        path=ws,
        loss=None,
        iterations=len(errors),
        converged=False,
        diverged=False,
        errors=errors,
    )


def igd(X, c, eta, w0=None, max_epochs=1000, tol=1e-6, stop="change", warn=True) -> DeltaResult:
    """Incremental gradient descent with the delta rule (LMS, Widrow–Hoff, adaline).

    Same arguments as :func:`bgd`; w is updated after every example, in the given order.
    ``eta`` may also be a schedule: a function t -> η_t > 0 of the number t = 0, 1, 2, ...
    of single updates made before (e.g. ``lambda t: eta0 / (1 + t / tau)``).
    The default rule stops when an epoch changes Err by at most ``tol``.
    """
    Xa, c, eta, max_epochs, tol, stop = _setup(
        X, c, eta=eta, max_epochs=max_epochs, tol=tol, stop=stop, schedule=True
    )

    n = Xa.shape[0]
    w = _checks.initial_weights(w0, Xa.shape[1])  # 1. initialise w
    run = _recorder(Xa, c, w, stop=stop, tol=tol)  # w and Err(w) after each epoch
    converged = diverged = False
    with np.errstate(over="ignore", invalid="ignore"):  # a too large η overflows: see below
        for t in range(1, max_epochs + 1):  # 2-3. repeat, t = t + 1
            # η, or η_t for each update t (the schedule's t counts single updates, not epochs)
            etas = _schedule(eta, first=(t - 1) * n, n=n)
            for x, c_x, eta_t in zip(Xa, c, etas, strict=True):  # 4. for each (x, c(x)) in D
                error = c_x - w @ x  # 5. error = c(x) - wᵀx
                delta_w = eta_t * error * x  # 6. Δw = η · error · x
                w = w + delta_w  # 7. w = w + Δw
            err = _err(w, Xa, c)
            if diverged := run.diverged(loss=err):  # Err blew up: keep the last finite w
                break
            run.record(w, err)
            if converged := run.converged():  # 9. until the stopping rule holds
                break
    return _delta_result(
        run, converged, diverged, name="IGD", eta=eta, stop=stop, max_epochs=max_epochs, warn=warn
    )


def mbgd(
    X,
    c,
    eta,
    batch_size,
    w0=None,
    max_epochs=1000,
    tol=1e-6,
    stop="change",
    order="cyclic",
    rng=None,
    warn=True,
) -> DeltaResult:
    """Mini-batch gradient descent with the delta rule: between BGD and IGD.

    Same arguments as :func:`bgd`, and batch_size b (1 <= b <= n): each epoch visits the
    examples in the given order ("cyclic") or in a fresh permutation from ``rng``
    ("random"), b at a time, and updates w after each mini-batch with the summed Δw of its
    examples (the last mini-batch of an epoch may be smaller). b = n is BGD, b = 1 is IGD.
    """
    Xa, c, eta, max_epochs, tol, stop = _setup(
        X, c, eta=eta, max_epochs=max_epochs, tol=tol, stop=stop
    )
    n = Xa.shape[0]
    b = _checks.positive_int(batch_size, "batch_size")
    if b > n:
        raise ValueError(f"`batch_size` must be at most the number of examples {n}; got {b}.")
    order = _checks.choice(order, "order", ("cyclic", "random"))
    rng = np.random.default_rng(rng)

    w = _checks.initial_weights(w0, Xa.shape[1])  # 1. initialise w
    run = _recorder(Xa, c, w, stop=stop, tol=tol)  # w and Err(w) after each epoch
    converged = diverged = False
    with np.errstate(over="ignore", invalid="ignore"):  # a too large η overflows: see below
        for t in range(1, max_epochs + 1):  # 2-3. repeat, t = t + 1
            visit = np.arange(n) if order == "cyclic" else rng.permutation(n)
            for start in range(0, n, b):  # 3-4. FOREACH mini-batch B of b examples, in order
                B = visit[start : start + b]
                error = c[B] - Xa[B] @ w  # 5. error = c(x) - wᵀx for every x in B
                w = w + eta * (error @ Xa[B])  # 6-7. w = w + Σ_B η · error · x
            err = _err(w, Xa, c)
            if diverged := run.diverged(loss=err):  # Err blew up: keep the last finite w
                break
            run.record(w, err)
            if converged := run.converged():  # 8. until the stopping rule holds
                break
    return _delta_result(
        run,
        converged,
        diverged,
        name="Mini-batch GD",
        eta=eta,
        stop=stop,
        max_epochs=max_epochs,
        warn=warn,
    )
