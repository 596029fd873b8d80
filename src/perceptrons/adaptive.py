"""Adaptive and accelerated variants of gradient descent, for the outlook in *Momentum*.

Each method is a rule for the change Δw(t) given the gradient g = ∇E(w(t)); the loop is
:func:`perceptrons.gradient_descent.descend`. Squares, roots and divisions act elementwise;
ε = 1e-8 keeps divisions finite. See Ruder (2016) for the family.
"""

from __future__ import annotations

import numpy as np

from . import _checks
from .gradient_descent import GDResult, descend

EPS = 1e-8


def nesterov(grad, w0, eta, alpha=0.9, steps=1000, tol=1e-6, warn=True) -> GDResult:
    """Nesterov momentum: the gradient is taken where momentum is about to carry w.

        Δw(t) = α Δw(t-1) - η ∇E(w(t) + α Δw(t-1)),   w(t+1) = w(t) + Δw(t),   Δw(-1) = 0.

    The loop runs on the look-ahead points w̃(t) = w(t) + α Δw(t-1), where the gradient is
    taken, so that a step needs one gradient: w̃(t+1) = w̃(t) + α Δw(t) - η ∇E(w̃(t)). The
    result reports them: ``path`` (k+1, d) holds w̃(0) = w(0), w̃(1), ..., w̃(k), not the
    w(t) of the formula; ``w`` is w̃(k), and ``converged`` means ‖∇E(w̃)‖ <= tol. Both
    sequences tend to the same minimum.

    grad : w (d,) -> ∇E(w) (d,);  w0 : (d,);  eta > 0;  alpha in [0, 1).
    """
    eta, alpha = _checks.positive(eta, "eta"), _checks.momentum(alpha)
    delta_w = 0.0  # Δw(-1) = 0

    def step(t, w, g):  # w = w̃(t), g = ∇E(w̃(t))
        nonlocal delta_w
        delta_w = alpha * delta_w - eta * g  # Δw(t)
        return alpha * delta_w - eta * g  # w̃(t+1) - w̃(t)

    return descend(grad, w0, step, steps=steps, tol=tol, warn=warn, name="Nesterov")


def adagrad(grad, w0, eta, steps=1000, tol=1e-6, warn=True) -> GDResult:
    """AdaGrad: each weight's step is η divided by the root of its summed squared gradients.

    G(t) = G(t-1) + g²,  Δw = -η g / (√G(t) + ε).
    """
    eta = _checks.positive(eta, "eta")
    G = 0.0

    def step(t, w, g):
        nonlocal G
        G = G + g**2
        return -eta * g / (np.sqrt(G) + EPS)

    return descend(grad, w0, step, steps=steps, tol=tol, warn=warn, name="AdaGrad")


def rmsprop(grad, w0, eta, rho=0.9, steps=1000, tol=1e-6, warn=True) -> GDResult:
    """RMSProp: like AdaGrad, with a decaying average of squared gradients instead of a sum.

    s(t) = ρ s(t-1) + (1 - ρ) g²,  Δw = -η g / (√s(t) + ε).
    """
    eta, rho = _checks.positive(eta, "eta"), _checks.momentum(rho, "rho")
    s = 0.0

    def step(t, w, g):
        nonlocal s
        s = rho * s + (1 - rho) * g**2
        return -eta * g / (np.sqrt(s) + EPS)

    return descend(grad, w0, step, steps=steps, tol=tol, warn=warn, name="RMSProp")


def adam(grad, w0, eta, beta1=0.9, beta2=0.999, steps=1000, tol=1e-6, warn=True) -> GDResult:
    """Adam: momentum on the gradient (m) and RMSProp's scaling (v), both bias-corrected.

    m(t) = β1 m + (1 - β1) g,  v(t) = β2 v + (1 - β2) g²,
    Δw = -η m̂ / (√v̂ + ε) with m̂ = m / (1 - β1^(t+1)), v̂ = v / (1 - β2^(t+1)).
    """
    eta = _checks.positive(eta, "eta")
    beta1, beta2 = _checks.momentum(beta1, "beta1"), _checks.momentum(beta2, "beta2")
    m = v = 0.0

    def step(t, w, g):
        nonlocal m, v
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g**2
        m_hat, v_hat = m / (1 - beta1 ** (t + 1)), v / (1 - beta2 ** (t + 1))
        return -eta * m_hat / (np.sqrt(v_hat) + EPS)

    return descend(grad, w0, step, steps=steps, tol=tol, warn=warn, name="Adam")


def adadelta(grad, w0, eta=1.0, rho=0.95, eps=1e-6, steps=1000, tol=1e-6, warn=True) -> GDResult:
    """Adadelta (Zeiler 2012): RMSProp's scaling, with the units fixed by past steps.

    s(t) = ρ s(t-1) + (1 - ρ) g²,  Δw = -η √(s_Δ(t-1) + ε) / √(s(t) + ε) · g,
    s_Δ(t) = ρ s_Δ(t-1) + (1 - ρ) Δw².  The original has η = 1; ε (default 1e-6, as there)
    also sets the size of the first steps, √ε / √(s + ε) · g.
    """
    eta, rho = _checks.positive(eta, "eta"), _checks.momentum(rho, "rho")
    eps = _checks.positive(eps, "eps")
    s = s_delta = 0.0

    def step(t, w, g):
        nonlocal s, s_delta
        s = rho * s + (1 - rho) * g**2
        delta_w = -eta * np.sqrt(s_delta + eps) / np.sqrt(s + eps) * g
        s_delta = rho * s_delta + (1 - rho) * delta_w**2
        return delta_w

    return descend(grad, w0, step, steps=steps, tol=tol, warn=warn, name="Adadelta")


def nadam(grad, w0, eta, beta1=0.9, beta2=0.999, steps=1000, tol=1e-6, warn=True) -> GDResult:
    """Nadam (Dozat 2016): Adam with Nesterov's look-ahead in the momentum term.

    m and v as in :func:`adam`; the first moment looks one step ahead,
    m̂ = β1 m / (1 - β1^(t+2)) + (1 - β1) g / (1 - β1^(t+1)),  v̂ = v / (1 - β2^(t+1)),
    Δw = -η m̂ / (√v̂ + ε).
    """
    eta = _checks.positive(eta, "eta")
    beta1, beta2 = _checks.momentum(beta1, "beta1"), _checks.momentum(beta2, "beta2")
    m = v = 0.0

    def step(t, w, g):
        nonlocal m, v
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g**2
        m_hat = beta1 * m / (1 - beta1 ** (t + 2)) + (1 - beta1) * g / (1 - beta1 ** (t + 1))
        v_hat = v / (1 - beta2 ** (t + 1))
        return -eta * m_hat / (np.sqrt(v_hat) + EPS)

    return descend(grad, w0, step, steps=steps, tol=tol, warn=warn, name="Nadam")
