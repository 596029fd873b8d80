"""The perceptron convergence theorem as numbers: margin, radius and the bound on updates.

Introduced in the chapter *The convergence theorem* (``book/03_convergence.ipynb``).

For examples x with x0 = 1 and a weight vector w* that separates the classes,
    γ = min_x c(x)·w*ᵀx        (the margin, c in {-1, +1})
    r = max_x ‖x‖              (the radius of the data)
and PT started at w = 0 makes at most  r²‖w*‖² / γ²  updates, whatever η and the order.
"""

from __future__ import annotations

import numpy as np

from . import _checks
from .perceptron import augment


def _signs(c, n):
    c, convention = _checks.as_labels(c, n)
    return 2 * c - 1 if convention == "01" else c


def margin(X, c, w_star) -> float:
    """γ = min over the examples of c·w*ᵀx, > 0 iff w* separates.

    X (n, p); c (n,) in {0, 1} or {-1, +1}; w_star (p+1,).
    """
    Xa = augment(X)
    s = _signs(c, Xa.shape[0])
    w_star = _checks.as_vector(w_star, "w_star", size=Xa.shape[1])
    return float(np.min(s * (Xa @ w_star)))


def radius(X) -> float:
    """r = max over the examples of ‖x‖, with x0 = 1 included; X has shape (n, p)."""
    return float(np.max(np.linalg.norm(augment(X), axis=1)))


def convergence_bound(X, c, w_star) -> float:
    """The theorem's bound r²‖w*‖²/γ² on the number of PT updates from w(0) = 0.

    Raises ValueError if w_star does not separate the classes (γ <= 0).
    """
    gamma = margin(X, c, w_star)
    if gamma <= 0:
        raise ValueError(
            f"`w_star` must separate the classes (c·w*ᵀx > 0 for every example); "
            f"got min c·w*ᵀx = {gamma:g}."
        )
    w_star = np.asarray(w_star, dtype=float)
    return radius(X) ** 2 * float(w_star @ w_star) / gamma**2
