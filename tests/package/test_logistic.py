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
    assert np.all(np.diff(res.loss) <= 1e-12)  # -ℓ falls: ℓ rises
    assert res.loss.shape == (res.iterations + 1,)


def test_irls_matches_scikit_learn_and_gradient_ascent_in_few_steps():
    X, y = overlapping_classes()
    res = P.irls(X, y, tol=1e-10)
    assert res.converged and not res.diverged and res.iterations < 12
    skl = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(X, y)
    np.testing.assert_allclose(res.w, np.r_[skl.intercept_, skl.coef_[0]], rtol=1e-6, atol=1e-8)
    ascent = P.logistic_regression(X, y, eta=0.01, alpha=0.5, steps=20_000, tol=1e-8)
    np.testing.assert_allclose(res.w, ascent.w, rtol=1e-6, atol=1e-8)
    assert np.linalg.norm(P.log_likelihood_grad(res.w, X, y)) <= 1e-10
    assert np.all(np.diff(res.loss) <= 1e-12)  # -ℓ falls (LL rises), to rounding at the end


def test_irls_step_is_the_newton_step_with_the_hessian_from_finite_differences():
    X, y = overlapping_classes(40)
    w = np.array([0.3, -0.2, 0.5])
    hessian = np.array(
        [central_difference(lambda v, j=j: P.log_likelihood_grad(v, X, y)[j], w) for j in range(3)]
    )  # ∂²LL/∂w_j∂w_k by differences of the gradient
    Xa = P.augment(X)
    s = P.sigmoid(Xa @ w)
    np.testing.assert_allclose(hessian, -Xa.T @ ((s * (1 - s))[:, None] * Xa), rtol=1e-6)
    one = P.irls(X, y, w0=w, steps=1, warn=False)
    newton = w - np.linalg.solve(hessian, P.log_likelihood_grad(w, X, y))
    np.testing.assert_allclose(one.w, newton, rtol=1e-6)
    assert one.iterations == 1 and one.path.shape == (2, 3)


def test_irls_converges_quadratically():
    X, y = overlapping_classes()
    res = P.irls(X, y, tol=1e-12)
    g = [np.linalg.norm(P.log_likelihood_grad(w, X, y)) for w in res.path]
    near = [k for k in range(len(g) - 1) if 1e-9 < g[k] < 1e-1]  # near the maximum, above rounding
    assert len(near) >= 2
    assert all(g[k + 1] <= 10 * g[k] ** 2 for k in near)  # the error is squared at each step


def test_irls_reports_a_singular_system_as_divergence():
    # σ is exactly 0 or 1 for every example at w0, yet one example is misclassified: the
    # gradient is not 0 but XᵀSX is, so no Newton step exists
    X, y = np.array([[-1.0], [1.0], [2.0]]), np.array([0.0, 1.0, 0.0])
    w0 = np.array([0.0, 800.0])
    with pytest.warns(P.DivergenceWarning, match="singular"):
        res = P.irls(X, y, w0=w0)
    assert res.diverged and not res.converged and res.iterations == 0
    assert np.array_equal(res.w, w0)


def test_irls_on_separable_data_runs_far_out():
    X, y, _ = P.separable(50, rng=1)
    res = P.irls(X, y, steps=200, warn=False)
    assert np.linalg.norm(res.w) > 50  # no maximum: the weights run off
    assert np.all(np.diff(res.loss) <= 0) and res.loss[-1] < 1e-6  # ℓ rises towards 0


@pytest.mark.parametrize(
    ("kwargs", "error", "name"),
    [
        ({"steps": 0}, ValueError, "steps"),
        ({"tol": 0.0}, ValueError, "tol"),
        ({"w0": [1.0, 2.0]}, ValueError, "w0"),
        ({"c": [0.0, 2.0] * 60}, ValueError, "`c`"),
        ({"c": [1.0] * 120}, ValueError, "both classes"),
    ],
)
def test_irls_rejects_bad_input_by_name(kwargs, error, name):
    X, y = overlapping_classes()
    kwargs = {"c": y, **kwargs}
    with pytest.raises(error, match=name):
        P.irls(X, **kwargs)
