"""Perceptron training (PT) and the batch perceptron.

Introduced in the chapter *The perceptron* (``book/02_perceptron.ipynb``).

Notation: an example is x = (x0, x1, ..., xp) with x0 = 1 (the bias trick, w0 = -θ), its
class is c(x), and the perceptron outputs y(x) = heaviside(wᵀx). Inputs ``X`` have shape
(n, p) *without* the constant feature; the functions here prepend it.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from . import _checks
from ._results import ConvergenceWarning, Recorder, Result


def augment(X) -> np.ndarray:
    """Prepend the constant feature x0 = 1: shape (n, p) -> (n, p+1)."""
    X = _checks.as_matrix(X)
    return np.hstack([np.ones((X.shape[0], 1)), X])


def heaviside(z):
    """Heaviside step with H(0) = 1: 1 where z >= 0, else 0 (same shape as z)."""
    return np.where(np.asarray(z) >= 0, 1.0, 0.0)


def predict(X, w) -> np.ndarray:
    """Class in {0, 1} that the perceptron w, shape (p+1,), gives each row of X, shape (n, p)."""
    Xa = augment(X)
    w = _checks.as_vector(w, "w", size=Xa.shape[1])
    return heaviside(Xa @ w)


_NUMBER = (float, int)  # a single number (numpy's float64 is a float)


def pt_error(c, wx, convention: str):
    """The PT error for target(s) c and activation(s) wx = wᵀx, in {-1, 0, 1}.

    convention "01":  error = c - heaviside(wᵀx)            (c in {0, 1})
    convention "pm1": error = c if c·wᵀx <= 0, else 0       (c in {-1, +1})
    """
    if isinstance(c, _NUMBER) and isinstance(wx, _NUMBER):  # one example: no arrays
        c, wx = float(c), float(wx)  # (numpy's scalars too: plain floats are quicker)
        if convention == "01":
            return c - (1.0 if wx >= 0 else 0.0)
        return c if c * wx <= 0 else 0.0
    c, wx = np.asarray(c, dtype=float), np.asarray(wx, dtype=float)
    if convention == "01":
        return c - heaviside(wx)
    return np.where(c * wx <= 0, c, 0.0)


@dataclass(frozen=True, kw_only=True)
class PTResult(Result):
    """Outcome of :func:`pt`, in the vocabulary of :class:`~perceptrons._results.Result`.

    w : ndarray (p+1,)          final weights, w[0] = w0 = -θ
    path : ndarray (k+1, p+1)   weights before the first and after each of the k updates
                                (None when PT ran with ``history=False``)
    loss : None                 PT minimises no loss of its own (see *Batch and incremental
                                gradient descent*, last section)
    iterations : int            epochs: passes over the data that were started
    converged : bool            whether the last epoch made no mistake
    diverged : bool             always False: PT's weights cannot blow up in finitely many
                                epochs
    updated : ndarray (k,)      index of the example that caused each update (None likewise)
    mistakes : int              number of updates k, the count the convergence theorem bounds
    """

    updated: np.ndarray | None
    mistakes: int


class _Skip:
    """Line 4 of PT made fast: which example may w misclassify next?

    An example whose error is 0 leaves w unchanged, so PT may pass over every example that
    w certainly classifies correctly. ``next(w, visit, start)`` returns the first position
    k >= ``start`` in the order ``visit`` whose example w might misclassify, or n if there
    is none. It tests a block of examples with one matrix-vector product; the block grows
    while no candidate turns up and shrinks to about twice the last gap when one does.

    "Certainly correct" leaves room for rounding: s·wᵀx > slack, with s = ±1 the class and
    slack = 4·γ_d·max‖x‖·‖w‖ (γ_d = d·u/(1 - d·u), u = 2⁻⁵³), twice a bound on the rounding
    error of any way of summing the d products of wᵀx. So no example that PT's own
    ``w @ x`` calls a mistake is passed over, and the weights are exactly those of testing
    every example in turn. The answer depends on the arguments only; earlier calls set
    nothing but the block size.
    """

    def __init__(self, X, c, convention):
        n, d = X.shape
        s = 2 * c - 1 if convention == "01" else c  # the class as -1 or +1, shape (n,)
        self.sX = s[:, None] * X  # (n, d): s·wᵀx = (s·x)ᵀw exactly, since s = ±1
        gamma = d * 2.0**-53 / (1 - d * 2.0**-53)
        max_norm = float(np.sqrt(np.max(np.einsum("ij,ij->i", X, X))))  # max ‖x‖
        self.slack_per_norm_w = 4 * gamma * max_norm
        self.block = 16
        self.visit, self.rows = None, self.sX

    def next(self, w, visit, start):
        if visit is not self.visit:  # a new order: its rows, once per epoch
            in_order = isinstance(visit, range)  # (else a permutation of 0, ..., n-1)
            self.visit, self.rows = visit, self.sX if in_order else self.sX[visit]
        slack = self.slack_per_norm_w * math.hypot(*w.tolist())  # (‖w‖, quicker than numpy)
        n = len(self.rows)
        while start < n:
            margins = self.rows[start : start + self.block].dot(w)  # s·wᵀx for the block
            k = self.first_candidate(margins, slack)
            if k is not None:
                self.block = max(16, 2 * (k + 1))
                return start + k
            start, self.block = start + self.block, min(2 * self.block, 8192)
        return n

    @staticmethod
    def first_candidate(margins, slack):
        """The index of the first margin <= slack, or None if there is none."""
        if len(margins) <= 32:  # a short block (noisy data): a Python loop is quicker
            for k, margin in enumerate(margins.tolist()):
                if margin <= slack:
                    return k
            return None
        maybe_wrong = margins <= slack
        k = int(maybe_wrong.argmax())
        return k if maybe_wrong[k] else None


def pt(
    X,
    c,
    eta=1.0,
    w0=None,
    max_epochs=100,
    order="cyclic",
    rng=None,
    warn=True,
    history=True,
    fast=False,
) -> PTResult:
    """Rosenblatt's perceptron training (PT).

    Parameters
    ----------
    X : array of shape (n, p)     examples without the constant feature
    c : array of shape (n,)       classes in {0, 1} (heaviside, H(0) = 1) or in {-1, +1}
                                  (update exactly when c·wᵀx <= 0)
    eta : float > 0               learning rate η
    w0 : array of shape (p+1,)    initial weights; None means the zero vector
    max_epochs : int >= 1         budget of passes over D
    order : "cyclic" or "random"  visit the examples in the given order, or in a fresh
                                  random permutation (from ``rng``) each epoch
    rng : seed or numpy Generator used by order="random"
    history : bool                keep every weight vector and the example behind each
                                  update (``path``, ``updated``); False keeps memory constant
    fast : bool                   an opt-in shortcut for large data (:func:`_pt_skipping`):
                                  the same run, bit for bit, in a fraction of the time

    Stops after the first epoch without a mistake (``converged=True``), or after
    ``max_epochs`` with a :class:`ConvergenceWarning` (unless ``warn=False``).
    """
    Xa = augment(X)  # (n, p+1), x0 = 1
    n, d = Xa.shape
    c, convention = _checks.as_labels(c, n)
    eta = _checks.positive(eta, "eta")
    max_epochs = _checks.positive_int(max_epochs, "max_epochs")
    order = _checks.choice(order, "order", ("cyclic", "random"))
    rng = np.random.default_rng(rng)
    history, warn = _checks.flag(history, "history"), bool(warn)
    if _checks.flag(fast, "fast"):
        return _pt_skipping(Xa, c, convention, eta, w0, order, rng, max_epochs, history, warn)

    w = _checks.initial_weights(w0, d)  # 1. initialise w
    run = Recorder(w, history=history, updated=[])  # counts the updates, keeps w after each
    for t in range(1, max_epochs + 1):  # 2-3. repeat, t = t + 1 (t counts epochs here)
        visit = range(n) if order == "cyclic" else rng.permutation(n)  # this epoch's order
        mistakes_before = run.count
        for i in visit:  # 4. take each example (x, c(x)) in turn
            x, c_x = Xa[i], c[i]
            error = pt_error(c_x, w @ x, convention)  # 5. error = c(x) - heaviside(wᵀx)
            if error != 0:  # (an error of 0 leaves w as it is)
                delta_w = eta * error * x  # 6. Δw = η · error · x
                w = w + delta_w  # 7. w = w + Δw
                run.record(w, updated=i)  # keep w and the example behind the update
        if run.count == mistakes_before:  # 8. until no example is misclassified
            return _pt_result(run, epochs=t, converged=True, warn=warn)
    return _pt_result(run, epochs=max_epochs, converged=False, warn=warn)


def _pt_result(run, *, epochs: int, converged: bool, warn: bool, level: int = 3) -> PTResult:
    """The :class:`PTResult` of the recorded run; a warning that points ``level`` frames up
    (unless ``warn=False``) if PT did not converge."""
    if warn and not converged:
        warnings.warn(
            f"PT made mistakes in each of its {epochs} epochs; the data may not "
            "be linearly separable, or max_epochs is too small.",
            ConvergenceWarning,
            stacklevel=level,
        )
    return run.result(
        PTResult, iterations=epochs, converged=converged, diverged=False, mistakes=run.count
    )


def _pt_skipping(Xa, c, convention, eta, w0, order, rng, max_epochs, history, warn) -> PTResult:
    """``pt(..., fast=True)``: PT's run, with line 4 taking the next example that w might
    misclassify (:class:`_Skip`) instead of every example. The examples passed over have
    error 0 and would leave w unchanged, so the weights are those of :func:`pt`, bit for
    bit (tests/package/test_perceptron.py checks it); benchmarks/bench_pt.py times both."""
    n, d = Xa.shape
    skip = _Skip(Xa, c, convention)
    w = _checks.initial_weights(w0, d)
    run = Recorder(w, history=history, updated=[])
    for t in range(1, max_epochs + 1):
        visit = range(n) if order == "cyclic" else rng.permutation(n)
        mistakes_before = run.count
        k = skip.next(w, visit, start=0)
        while k < n:
            i = visit[k]
            error = pt_error(c[i], w @ Xa[i], convention)
            if error != 0:
                w = w + eta * error * Xa[i]
                run.record(w, updated=i)
            k = skip.next(w, visit, start=k + 1)
        if run.count == mistakes_before:
            return _pt_result(run, epochs=t, converged=True, warn=warn, level=4)
    return _pt_result(run, epochs=max_epochs, converged=False, warn=warn, level=4)


@dataclass(frozen=True, kw_only=True)
class BatchPerceptronResult(Result):
    """Outcome of :func:`batch_perceptron`, in the vocabulary of
    :class:`~perceptrons._results.Result`.

    w : ndarray (p+1,)              final weights
    path : ndarray (t+1, p+1)       weights before the first and after each epoch
    loss : ndarray (t+1,)           the perceptron criterion J(w) = -Σ_{x in M} c·wᵀx for each
                                    row of path
    iterations : int                epochs: the number of updates made, t
    converged : bool                whether M became empty
    diverged : bool                 always False: the criterion cannot blow up
    misclassified : ndarray (t+1,)  size of the set M of misclassified examples for each row
                                    of path
    """

    misclassified: np.ndarray


def perceptron_criterion(w, Xa, s) -> tuple[float, np.ndarray, int]:
    """J(w) = -Σ_{x in M} s·wᵀx, its gradient -Σ_{x in M} s·x, and |M|, M = {x : s·wᵀx <= 0}.

    w : (p+1,); Xa : (n, p+1) with x0 = 1; s : (n,) labels in {-1, +1}.
    """
    margins = s * (Xa @ w)  # (n,)
    M = margins <= 0
    return float(np.sum(-margins[M])) + 0.0, -(s[M] @ Xa[M]), int(M.sum())  # + 0.0: no -0.0


def batch_perceptron(X, c, eta=1.0, w0=None, max_epochs=1000, warn=True) -> BatchPerceptronResult:
    """Gradient descent on the perceptron criterion: w = w + η Σ_{x in M} c(x)·x.

    X : (n, p); c : (n,) in {0, 1} or {-1, +1} (0 is read as -1); eta > 0; w0 : (p+1,) or None
    (zeros). An example counts as misclassified when c·wᵀx <= 0. Stops when none is.
    """
    Xa = augment(X)
    n, d = Xa.shape
    c, convention = _checks.as_labels(c, n)
    s = 2 * c - 1 if convention == "01" else c  # labels as -1, +1
    eta = _checks.positive(eta, "eta")
    max_epochs = _checks.positive_int(max_epochs, "max_epochs")

    w = _checks.initial_weights(w0, d)
    J, grad, size_M = perceptron_criterion(w, Xa, s)
    run = Recorder(w, J, misclassified=[size_M])  # w, J(w) and |M| before each epoch
    for _ in range(max_epochs):
        if size_M == 0:  # until no example is misclassified
            break
        w = w - eta * grad  # descent: w - η∇J = w + η Σ_M s·x
        J, grad, size_M = perceptron_criterion(w, Xa, s)
        run.record(w, J, misclassified=size_M)
    converged = size_M == 0
    if warn and not converged:
        warnings.warn(
            f"The batch perceptron still misclassified {size_M} examples after {max_epochs} "
            "epochs; the data may not be linearly separable.",
            ConvergenceWarning,
            stacklevel=2,
        )
    return run.result(BatchPerceptronResult, converged=converged, diverged=False)
