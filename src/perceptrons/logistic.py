"""Logistic regression fitted by gradient ascent, or by Newton's method (IRLS), on the
log-likelihood.

Introduced in the chapter *Logistic regression*.

    σ(z) = 1 / (1 + e^{-z}),   P(c = 1 | x) = σ(wᵀx),
    ℓ(w) = Σ_x [ c log σ(wᵀx) + (1 - c) log(1 - σ(wᵀx)) ],
    ∇ℓ(w) = Σ_x (c - σ(wᵀx))·x,   Hessian -XᵀSX with S = diag(σ(wᵀx)(1 - σ(wᵀx))).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _checks
from ._results import Result
from .gradient_descent import descend, gd
from .perceptron import augment


def sigmoid(z):
    """σ(z) = 1/(1 + e^{-z}), elementwise, without overflow for large |z|."""
    z = np.asarray(z, dtype=float)
    e = np.exp(-np.abs(z))
    return np.where(z >= 0, 1 / (1 + e), e / (1 + e))


def _ll(w, Xa, c):
    z = Xa @ w
    return float(np.sum(c * z - np.logaddexp(0.0, z)))  # c log σ(z) + (1-c) log(1-σ(z))


def _ll_grad(w, Xa, c):
    return (c - sigmoid(Xa @ w)) @ Xa  # Σ (c - σ(wᵀx))·x


def _setup(w, X, c):
    Xa = augment(X)
    c = _checks.as_binary01(c, Xa.shape[0], name="c")
    w = _checks.as_vector(w, "w", size=Xa.shape[1])
    return w, Xa, c


def log_likelihood(w, X, c) -> float:
    """ℓ(w) for weights w (p+1,), examples X (n, p) and labels c (n,) in {0, 1}."""
    return _ll(*_setup(w, X, c))


def log_likelihood_grad(w, X, c) -> np.ndarray:
    """∇ℓ(w) = Σ (c - σ(wᵀx))·x, shape (p+1,)."""
    return _ll_grad(*_setup(w, X, c))


@dataclass(frozen=True, kw_only=True)
class LogisticResult(Result):
    """Outcome of :func:`logistic_regression` and :func:`irls`, in the vocabulary of
    :class:`~perceptrons._results.Result`.

    w : ndarray (p+1,)          final weights
    path : ndarray (k+1, p+1)   w(0) and the weights after each step
    loss : ndarray (k+1,)       -ℓ(w), the cross-entropy, along the path (ℓ is ``-loss``)
    iterations : int            steps taken, k
    converged, diverged         as in :class:`~perceptrons.gradient_descent.GDResult`
    """


def logistic_regression(
    X, c, eta, alpha=0.0, w0=None, steps=10000, tol=1e-6, warn=True
) -> LogisticResult:
    """Maximum likelihood by gradient ascent: w = w + η Σ (c - σ(wᵀx))·x (+ momentum α).

    X (n, p); c (n,) in {0, 1}; eta > 0; alpha in [0, 1); w0 (p+1,) or None (zeros).
    Stops when ‖∇ℓ‖ <= tol. Ascent on ℓ is descent on -ℓ, so this calls :func:`gd`.
    """
    Xa = augment(X)
    c = _checks.as_binary01(c, Xa.shape[0], name="c", both=True)  # one class: no finite MLE
    w = _checks.initial_weights(w0, Xa.shape[1])
    res = gd(lambda w: -_ll_grad(w, Xa, c), w, eta, alpha=alpha, steps=steps, tol=tol, warn=warn)
    return _logistic_result(res, Xa, c)


def irls(X, c, w0=None, steps=100, tol=1e-8, warn=True) -> LogisticResult:
    """Maximum likelihood by Newton's method, iteratively reweighted least squares (IRLS):

        w = w + (XᵀSX)⁻¹ Σ (c - σ(wᵀx))·x,    S = diag(σ(wᵀx)(1 - σ(wᵀx))).

    X (n, p); c (n,) in {0, 1}; w0 (p+1,) or None (zeros). Stops when ‖∇ℓ‖ <= tol, or
    after ``steps`` steps. On linearly separable data there is no maximum: ‖w‖ grows at
    every step until ‖∇ℓ‖ falls below tol far out, or until XᵀSX is singular (every σ
    0 or 1 in floating point), which the result reports as ``diverged``, with a warning.
    A Newton step for -ℓ, so this calls :func:`descend` with the step below.
    """
    Xa = augment(X)
    c = _checks.as_binary01(c, Xa.shape[0], name="c", both=True)
    w = _checks.initial_weights(w0, Xa.shape[1])

    def newton_step(t, w, g):  # g = ∇(-ℓ)(w) = -Σ (c - σ(wᵀx))·x
        sigma = sigmoid(Xa @ w)  # (n,)
        S = sigma * (1 - sigma)  # the diagonal of S, (n,)
        try:
            return np.linalg.solve(Xa.T @ (S[:, None] * Xa), -g)  # (XᵀSX)⁻¹ Xᵀ(c - σ)
        except np.linalg.LinAlgError:  # every σ is 0 or 1: no Newton step exists
            return np.full_like(w, np.nan)  # (descend stops and reports divergence)

    res = descend(
        lambda w: -_ll_grad(w, Xa, c),
        w,
        newton_step,
        steps=steps,
        tol=tol,
        warn=warn,
        name="Newton's method (IRLS)",
        why="XᵀSX is singular, or the classes are linearly separable (no maximum)",
    )
    return _logistic_result(res, Xa, c)


def _logistic_result(res, Xa, c) -> LogisticResult:
    """The GDResult of a descent on -ℓ with -ℓ along its path."""
    return LogisticResult(
        w=res.w,
        path=res.path,
        loss=np.array([-_ll(w, Xa, c) for w in res.path]),
        iterations=res.iterations,
        converged=res.converged,
        diverged=res.diverged,
    )
