"""Seeded data sets and the two test functions of the course.

Every function that draws random numbers takes ``rng``: a seed or a numpy Generator.
Labels come in {0, 1} unless ``labels="pm1"`` asks for {-1, +1}.
"""

from __future__ import annotations

import numpy as np

from . import _checks


def _labels(s, labels):
    _checks.choice(labels, "labels", ("01", "pm1"))
    return s if labels == "pm1" else (s + 1) / 2


def separable(n=50, p=2, margin=0.1, rng=None, labels="01"):
    """Linearly separable data with a gap of at least ``margin`` around the true hyperplane.

    Draws points uniformly in [-1, 1]^p and keeps those at distance >= margin from a random
    hyperplane uᵀx + b = 0 (‖u‖ = 1, |b| <= 0.3) until n are kept.
    Returns X (n, p), c (n,) and w_star = (b, u) (p+1,); every example has c·w*ᵀx >= margin
    (with c as ±1), so the geometric margin of w_star is at least ``margin``.
    """
    n = _checks.positive_int(n, "n")
    if n < 2:
        raise ValueError(f"`n` must be >= 2 so that both classes occur; got {n!r}.")
    p = _checks.positive_int(p, "p")
    margin = _checks.positive(margin, "margin")
    if margin >= 0.5:
        raise ValueError(f"`margin` must be < 0.5 so that points fit in [-1, 1]^p; got {margin!r}.")
    rng = np.random.default_rng(rng)
    u = rng.normal(size=p)
    u /= np.linalg.norm(u)
    b = rng.uniform(-0.3, 0.3)
    # Both sides of the hyperplane reach a distance >= 0.7 inside the box (‖u‖₁ >= 1,
    # |b| <= 0.3), so both classes have room beyond any margin < 0.5.
    kept = np.empty((0, p))
    for _ in range(10_000):
        X = rng.uniform(-1, 1, size=(4 * n, p))
        kept = np.vstack([kept, X[np.abs(X @ u + b) >= margin]])
        side = np.sign(kept @ u + b)
        if len(kept) >= n and np.any(side > 0) and np.any(side < 0):
            break
    else:  # pragma: no cover - needs a vanishing region of the box
        raise RuntimeError("could not draw enough points at this margin; try a smaller one")
    X = kept[:n].copy()
    s = side[:n].copy()
    if len(np.unique(s)) < 2:  # make sure both classes occur among the n kept points
        other = np.flatnonzero(side != s[0])[0]
        X[-1], s[-1] = kept[other], side[other]
    return X, _labels(s, labels), np.concatenate([[b], u])


def noisy(n=50, p=2, flip=0.1, rng=None, labels="01"):
    """Separable data (margin 0.05) with a fraction ``flip`` of the labels flipped.

    Returns X (n, p) and c (n,). With flip > 0 the classes usually overlap, so PT never
    settles; check separability before relying on it.
    """
    if not (0 < flip < 0.5):
        raise ValueError(f"`flip` must be in (0, 0.5); got {flip!r}.")
    rng = np.random.default_rng(rng)
    X, s, _ = separable(n, p, margin=0.05, rng=rng, labels="pm1")
    k = max(1, round(flip * n))
    flipped = rng.choice(n, size=k, replace=False)
    s = s.copy()
    s[flipped] *= -1
    return X, _labels(s, labels)


def blobs(n=100, p=2, distance=2.0, rng=None, labels="01"):
    """Two Gaussian clouds with unit covariance whose means lie ``distance`` apart.

    Half the examples in each class (class 1 first when n is odd); the means sit at
    ±distance/2 along a random unit direction. Returns X (n, p), c (n,). The classes
    overlap, so the data are usually not separable.
    """
    n = _checks.positive_int(n, "n")
    p = _checks.positive_int(p, "p")
    distance = _checks.positive(distance, "distance")
    if n < 2:
        raise ValueError(f"`n` must be >= 2 so that both classes occur; got {n!r}.")
    rng = np.random.default_rng(rng)
    u = rng.normal(size=p)
    u /= np.linalg.norm(u)
    s = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    X = rng.normal(size=(n, p)) + np.outer(s, u) * distance / 2
    return X, _labels(s, labels)


def xor(n=4, noise=0.0, rng=None, labels="01"):
    """The XOR problem: corners (0,0), (1,1) in one class, (0,1), (1,0) in the other.

    n = 4 gives the four corners; larger n (a multiple of 4) repeats them with Gaussian
    jitter of standard deviation ``noise``. Returns X (n, 2), c (n,).
    """
    n = _checks.positive_int(n, "n")
    if n % 4:
        raise ValueError(f"`n` must be a multiple of 4; got {n!r}.")
    rng = np.random.default_rng(rng)
    corners = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    s = np.array([-1.0, 1.0, 1.0, -1.0])
    X = np.tile(corners, (n // 4, 1)) + noise * rng.normal(size=(n, 2))
    return X, _labels(np.tile(s, n // 4), labels)


def _xy(w):
    w = np.asarray(w, dtype=float)
    if w.shape[-1:] != (2,):
        raise ValueError(f"`w` must have shape (..., 2); got shape {w.shape}.")
    return w[..., 0], w[..., 1]


def hill_valley(w):
    """f(x, y) = (3x² + y)·exp(-x² - y²) for w = (x, y) of shape (..., 2); returns shape (...).

    A hill and a valley side by side: the pitfalls function of the course.
    """
    x, y = _xy(w)
    return (3 * x**2 + y) * np.exp(-(x**2) - y**2)


def hill_valley_grad(w):
    """∇f for :func:`hill_valley`, shape (..., 2).

    ∂f/∂x = 2x·e·(3 - 3x² - y),   ∂f/∂y = e·(1 - 2y(3x² + y)),   e = exp(-x² - y²).
    """
    x, y = _xy(w)
    e = np.exp(-(x**2) - y**2)
    return np.stack([2 * x * e * (3 - 3 * x**2 - y), e * (1 - 2 * y * (3 * x**2 + y))], axis=-1)


def rosenbrock(w, a=1.0, b=100.0):
    """f(x, y) = (a - x)² + b·(y - x²)², w of shape (..., 2). Minimum f = 0 at (x, y) = (a, a²)."""
    x, y = _xy(w)
    return (a - x) ** 2 + b * (y - x**2) ** 2


def rosenbrock_grad(w, a=1.0, b=100.0):
    """∇f for :func:`rosenbrock`: (-2(a - x) - 4bx(y - x²), 2b(y - x²)), shape (..., 2)."""
    x, y = _xy(w)
    return np.stack([-2 * (a - x) - 4 * b * x * (y - x**2), 2 * b * (y - x**2)], axis=-1)
