"""Logistic regression against finite differences and scikit-learn."""

import numpy as np
import pytest
from _helpers import central_difference
from sklearn.linear_model import LogisticRegression

import perceptrons as P


def overlapping_classes(n=120, seed=0):
    rng = np.random.default_rng(seed)
    y = (np.arange(n) % 2).astype(float)
    X = rng.normal(size=(n, 2)) + np.outer(2 * y - 1, [0.8, -0.5])
    return X, y


def test_sigmoid_derivative_is_sigma_times_one_minus_sigma():
    z = np.linspace(-6, 6, 25)
    fd = (P.sigmoid(z + 1e-6) - P.sigmoid(z - 1e-6)) / 2e-6
    s = P.sigmoid(z)
    np.testing.assert_allclose(fd, s * (1 - s), rtol=1e-7, atol=1e-10)


def test_sigmoid_is_stable_at_extremes():
    out = P.sigmoid(np.array([-1000.0, 0.0, 1000.0]))
    assert np.array_equal(out, [0.0, 0.5, 1.0])


def test_log_likelihood_gradient_matches_finite_differences():
    X, y = overlapping_classes()
    w = np.array([0.2, -0.7, 1.1])
    fd = central_difference(lambda v: P.log_likelihood(v, X, y), w)
    np.testing.assert_allclose(P.log_likelihood_grad(w, X, y), fd, rtol=1e-6, atol=1e-6)


def test_log_likelihood_matches_the_textbook_formula():
    X, y = overlapping_classes(20)
    w = np.array([0.1, 0.5, -0.3])
    s = P.sigmoid(np.hstack([np.ones((20, 1)), X]) @ w)
    expected = np.sum(y * np.log(s) + (1 - y) * np.log(1 - s))
    assert P.log_likelihood(w, X, y) == pytest.approx(expected, rel=1e-12)


def test_logistic_regression_matches_scikit_learn_without_penalty():
    X, y = overlapping_classes()
    res = P.logistic_regression(X, y, eta=0.01, alpha=0.5, steps=20_000, tol=1e-8)
    assert res.converged and not res.diverged
    skl = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(X, y)
    np.testing.assert_allclose(res.w, np.r_[skl.intercept_, skl.coef_[0]], rtol=1e-5, atol=1e-6)


def test_log_likelihood_rises_along_the_ascent():
    X, y = overlapping_classes()
    res = P.logistic_regression(X, y, eta=0.005, steps=500, warn=False)
    assert np.all(np.diff(res.log_likelihoods) >= -1e-12)
    assert res.log_likelihoods.shape == (res.steps + 1,)
