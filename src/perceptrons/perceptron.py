"""Perceptron training (PT) and the batch perceptron.

Introduced in the chapter *The perceptron* (``book/02_perceptron.ipynb``).

Notation: an example is x = (x0, x1, ..., xp) with x0 = 1 (the bias trick, w0 = -θ), its
class is c(x), and the perceptron outputs y(x) = heaviside(wᵀx). Inputs ``X`` have shape
(n, p) *without* the constant feature; the functions here prepend it.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from . import _checks
from ._results import ConvergenceWarning


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


def pt_error(c, wx, convention: str):
    """The PT error for target(s) c and activation(s) wx = wᵀx, in {-1, 0, 1}.

    convention "01":  error = c - heaviside(wᵀx)            (c in {0, 1})
    convention "pm1": error = c if c·wᵀx <= 0, else 0       (c in {-1, +1})
    """
    c, wx = np.asarray(c, dtype=float), np.asarray(wx, dtype=float)
    if convention == "01":
        return c - heaviside(wx)
    return np.where(c * wx <= 0, c, 0.0)


@dataclass(frozen=True)
class PTResult:
    """Outcome of :func:`pt`.

    w : ndarray (p+1,)       final weights, w[0] = w0 = -θ
    ws : ndarray (k+1, p+1)  weights before the first and after each of the k updates
    updated : ndarray (k,)   index of the example that caused each update
    mistakes : int           number of updates k
    epochs : int             passes over the data that were started
    converged : bool         whether the last epoch made no mistake
    """

    w: np.ndarray
    ws: np.ndarray
    updated: np.ndarray
    mistakes: int
    epochs: int
    converged: bool


def _mistakes(Xv, cv, w, convention):
    """Yield the position k of each example of Xv (n, p+1), in order, that w misclassifies.

    Same answers as testing the examples one by one: the caller updates ``w`` in place after
    each yield, and the scan resumes right after example k with the new w. Examples with
    error 0 leave w unchanged, so they are tested in blocks (one matrix-vector product per
    block) instead of one Python step each; the block grows while no mistake turns up.
    """
    start, block = 0, 64
    while start < len(Xv):
        wx = Xv[start : start + block] @ w  # (block,)
        if convention == "01":
            wrong = (wx >= 0) != (cv[start : start + block] == 1)  # heaviside(wᵀx) != c
        else:
            wrong = cv[start : start + block] * wx <= 0
        k = int(wrong.argmax())
        if not wrong[k]:  # no mistake in this block
            start, block = start + len(wx), min(2 * block, 8192)
            continue
        yield start + k
        start, block = start + k + 1, 64


def pt(X, c, eta=1.0, w0=None, max_epochs=100, order="cyclic", rng=None, warn=True) -> PTResult:
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

    Stops after the first epoch without a mistake (``converged=True``), or after
    ``max_epochs`` with a :class:`ConvergenceWarning` (unless ``warn=False``).
    """
    Xa = augment(X)  # (n, p+1), x0 = 1
    n, d = Xa.shape
    c, convention = _checks.as_labels(c, n)
    # On a misclassified example the error c - heaviside(wᵀx) is +1 for class 1 and -1 for
    # class 0; with labels ±1 it is c itself. Either way: the label as ±1.
    error_if_wrong = 2 * c - 1 if convention == "01" else c
    eta = _checks.positive(eta, "eta")
    max_epochs = _checks.positive_int(max_epochs, "max_epochs")
    order = _checks.choice(order, "order", ("cyclic", "random"))
    rng = np.random.default_rng(rng)

    w = _checks.initial_weights(w0, d)  # 1. init
    ws, updated = [w.copy()], []
    converged = False
    for t in range(1, max_epochs + 1):  # 2-3. REPEAT, t = t + 1 (t counts epochs here)
        visit = np.arange(n) if order == "cyclic" else rng.permutation(n)
        Xv, cv = (Xa, c) if order == "cyclic" else (Xa[visit], c[visit])  # examples in order
        ev = error_if_wrong if order == "cyclic" else error_if_wrong[visit]
        mistakes_before = len(updated)
        for k in _mistakes(Xv, cv, w, convention):  # 4-5. next x whose error is not 0
            w += (eta * ev[k]) * Xv[k]  # 6-7. Δw = η · error · x;  w = w + Δw
            ws.append(w.copy())
            updated.append(visit[k])
        if len(updated) == mistakes_before:  # 8. UNTIL no example is misclassified
            converged = True
            break
    if warn and not converged:
        warnings.warn(
            f"PT made mistakes in each of its {max_epochs} epochs; the data may not be "
            "linearly separable, or max_epochs is too small.",
            ConvergenceWarning,
            stacklevel=2,
        )
    return PTResult(
        w=w,
        ws=np.array(ws),
        updated=np.array(updated, dtype=int),
        mistakes=len(updated),
        epochs=t,
        converged=converged,
    )


@dataclass(frozen=True)
class BatchPerceptronResult:
    """Outcome of :func:`batch_perceptron`.

    w : ndarray (p+1,)           final weights
    ws : ndarray (t+1, p+1)      weights before the first and after each epoch
    criterion : ndarray (t+1,)   perceptron criterion J(w) = -Σ_{x in M} c·wᵀx for each row of ws
    misclassified : ndarray (t+1,)  size of the set M of misclassified examples for each row of ws
    epochs : int                 number of updates made
    converged : bool             whether M became empty
    """

    w: np.ndarray
    ws: np.ndarray
    criterion: np.ndarray
    misclassified: np.ndarray
    epochs: int
    converged: bool


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
    ws, Js, Ms = [w.copy()], [], []
    for t in range(max_epochs + 1):
        J, grad, size_M = perceptron_criterion(w, Xa, s)
        Js.append(J)
        Ms.append(size_M)
        if size_M == 0 or t == max_epochs:
            break
        w = w - eta * grad  # descent: w - η∇J = w + η Σ_M s·x
        ws.append(w.copy())
    converged = Ms[-1] == 0
    if warn and not converged:
        warnings.warn(
            f"The batch perceptron still misclassified {Ms[-1]} examples after {max_epochs} "
            "epochs; the data may not be linearly separable.",
            ConvergenceWarning,
            stacklevel=2,
        )
    return BatchPerceptronResult(
        w=w,
        ws=np.array(ws),
        criterion=np.array(Js),
        misclassified=np.array(Ms),
        epochs=len(ws) - 1,
        converged=converged,
    )
