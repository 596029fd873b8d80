"""Adadelta and Nadam against independent textbook loops written from the papers."""

import numpy as np
import pytest

import perceptrons as P


def quadratic_grad(w):
    """∇E for E(w) = ½(w₁² + 20 w₂²)."""
    return np.array([1.0, 20.0]) * w


def adadelta_reference(grad, w, steps, rho=0.95, eps=1e-6):
    """Zeiler (2012), Algorithm 1, with the accumulators named as in the paper."""
    w = np.array(w, dtype=float)
    Eg2, Edx2 = np.zeros_like(w), np.zeros_like(w)
    for _ in range(steps):
        g = grad(w)
        Eg2 = rho * Eg2 + (1 - rho) * g * g
        dx = -(np.sqrt(Edx2 + eps) / np.sqrt(Eg2 + eps)) * g
        Edx2 = rho * Edx2 + (1 - rho) * dx * dx
        w = w + dx
    return w


def nadam_reference(grad, w, eta, steps, mu=0.9, nu=0.999, eps=1e-8):
    """Dozat (2016), Algorithm 2 with a constant momentum schedule μ_t = μ, t from 1."""
    w = np.array(w, dtype=float)
    m, n = np.zeros_like(w), np.zeros_like(w)
    for t in range(1, steps + 1):
        g = grad(w)
        g_hat = g / (1 - mu**t)
        m = mu * m + (1 - mu) * g
        m_hat = m / (1 - mu ** (t + 1))
        n = nu * n + (1 - nu) * g * g
        n_hat = n / (1 - nu**t)
        m_bar = (1 - mu) * g_hat + mu * m_hat
        w = w - eta * m_bar / (np.sqrt(n_hat) + eps)
    return w


def test_adadelta_matches_the_paper():
    res = P.adadelta(quadratic_grad, [1.0, 1.0], steps=50, tol=1e-14, warn=False)
    np.testing.assert_allclose(
        res.w, adadelta_reference(quadratic_grad, [1.0, 1.0], 50), rtol=1e-12
    )


def test_nadam_matches_the_paper():
    res = P.nadam(quadratic_grad, [1.0, 1.0], 0.05, steps=50, tol=1e-14, warn=False)
    np.testing.assert_allclose(
        res.w, nadam_reference(quadratic_grad, [1.0, 1.0], 0.05, 50), rtol=1e-12
    )


def test_first_steps_by_hand():
    def grad(w):
        return np.array([2.0 * w[0]])

    # Adadelta: s = 0.05·4, step = -√(1e-6) / √(0.2 + 1e-6) · 2
    assert P.adadelta(grad, [1.0], steps=1, warn=False).path[1, 0] == pytest.approx(
        1 - np.sqrt(1e-6) / np.sqrt(0.05 * 4 + 1e-6) * 2
    )
    # Nadam: m̂ = 0.9·0.1·2/(1 - 0.81) + 0.1·2/0.1, v̂ = 4, so the step is -η·m̂/2
    m_hat = 0.9 * 0.2 / (1 - 0.81) + 0.2 / 0.1
    assert P.nadam(grad, [1.0], 0.1, steps=1, warn=False).path[1, 0] == pytest.approx(
        1 - 0.1 * m_hat / 2, rel=1e-6
    )


@pytest.mark.parametrize(
    "run",
    [
        lambda g, w0: P.adadelta(g, w0, steps=3000, warn=False),
        lambda g, w0: P.nadam(g, w0, 0.05, steps=3000, warn=False),
    ],
)
def test_both_descend_the_rosenbrock_valley(run):
    w0 = np.array([-1.2, 1.0])
    res = run(P.rosenbrock_grad, w0)
    assert not res.diverged
    assert P.rosenbrock(res.w) < 0.1 * P.rosenbrock(w0)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: P.adadelta(quadratic_grad, [1.0, 1.0], rho=1.0), "rho"),
        (lambda: P.adadelta(quadratic_grad, [1.0, 1.0], eps=0.0), "eps"),
        (lambda: P.nadam(quadratic_grad, [1.0, 1.0], -0.1), "eta"),
        (lambda: P.nadam(quadratic_grad, [1.0, 1.0], 0.1, beta2=1.5), "beta2"),
    ],
)
def test_bad_arguments_name_the_parameter(call, message):
    with pytest.raises(ValueError, match=message):
        call()
