"""Gradient descent with momentum, and the two test functions' gradients."""

import numpy as np
import pytest
from _helpers import central_difference

import perceptrons as P


@pytest.mark.parametrize("point", [(0.3, -0.8), (1.0, 1.0), (-1.2, 0.4), (0.0, 0.0), (2.0, -1.5)])
def test_test_function_gradients_match_finite_differences(point):
    w = np.array(point)
    for f, grad in ((P.hill_valley, P.hill_valley_grad), (P.rosenbrock, P.rosenbrock_grad)):
        np.testing.assert_allclose(grad(w), central_difference(f, w), rtol=1e-6, atol=1e-6)


def test_test_functions_broadcast_over_grids():
    g = np.zeros((7, 5, 2))
    assert P.hill_valley(g).shape == (7, 5) and P.hill_valley_grad(g).shape == (7, 5, 2)
    assert P.rosenbrock(g).shape == (7, 5) and P.rosenbrock_grad(g).shape == (7, 5, 2)


def test_rosenbrock_minimum_value_zero_at_one_one():
    assert P.rosenbrock(np.array([1.0, 1.0])) == 0.0
    assert np.array_equal(P.rosenbrock_grad(np.array([1.0, 1.0])), [0.0, 0.0])


def test_gd_reaches_minimum_of_a_quadratic():
    A = np.diag([1.0, 10.0])
    res = P.gd(lambda w: A @ w - np.array([1.0, 1.0]), w0=[3.0, -2.0], eta=0.1, steps=2000)
    assert res.converged and not res.diverged
    np.testing.assert_allclose(res.w, np.linalg.solve(A, [1.0, 1.0]), atol=1e-5)
    assert res.path.shape == (res.iterations + 1, 2)


def test_momentum_update_uses_previous_change_not_previous_weights():
    def grad(w):
        return 2 * w  # E(w) = ‖w‖²

    res = P.gd(grad, w0=[1.0], eta=0.1, alpha=0.5, steps=2, tol=1e-12, warn=False)
    w0 = 1.0
    d0 = -0.1 * 2 * w0  # Δw(0) = -η∇E(w(0))
    w1 = w0 + d0
    d1 = -0.1 * 2 * w1 + 0.5 * d0  # Δw(1) = -η∇E(w(1)) + αΔw(0)
    np.testing.assert_allclose(res.path[:, 0], [w0, w1, w1 + d1], rtol=1e-15)


def test_momentum_speeds_up_rosenbrock():
    plain = P.gd(P.rosenbrock_grad, [-1.0, 1.0], eta=1e-3, steps=5000, warn=False)
    heavy = P.gd(P.rosenbrock_grad, [-1.0, 1.0], eta=1e-3, alpha=0.9, steps=5000, warn=False)
    assert P.rosenbrock(heavy.w) < P.rosenbrock(plain.w)


def test_gd_detects_divergence_on_rosenbrock():
    with pytest.warns(P.DivergenceWarning, match="diverged at step"):
        res = P.gd(P.rosenbrock_grad, [-1.0, 1.0], eta=0.1, steps=100)
    assert res.diverged and not res.converged
    assert np.all(np.isfinite(res.path))


def test_gd_schedule_is_called_with_step_index():
    seen = []

    def eta(t):
        seen.append(t)
        return 0.1 / (1 + t)

    P.gd(lambda w: w, [1.0], eta, steps=3, tol=1e-12, warn=False)
    assert seen == [0, 1, 2]


def test_gd_rejects_gradient_of_wrong_shape():
    with pytest.raises(ValueError, match="`grad` must return shape"):
        P.gd(lambda w: np.zeros(3), [1.0, 2.0], 0.1)


def test_hill_valley_start_decides_which_minimum():
    # from (1, 1) the path slides into a shallow basin away from the deepest valley
    deep = P.gd(P.hill_valley_grad, [0.0, -0.5], eta=0.1, steps=5000)
    other = P.gd(P.hill_valley_grad, [1.0, 1.0], eta=0.1, steps=5000, warn=False)
    assert deep.converged
    assert P.hill_valley(deep.w) < -0.4
    assert P.hill_valley(other.w) > P.hill_valley(deep.w) + 0.3


def quadratic(kappa):
    A = np.diag([1.0, kappa])
    return (lambda w: 0.5 * w @ A @ w), (lambda w: A @ w), A


def test_exact_step_on_a_quadratic_is_g_g_over_g_a_g():
    f, grad, A = quadratic(10.0)
    w = np.array([1.0, 1.0])
    g = grad(w)
    assert P.exact_step(f, w, g) == pytest.approx((g @ g) / (g @ A @ g), rel=1e-7)


def test_steepest_descent_rate_is_linear_with_the_kantorovich_factor():
    kappa = 10.0
    f, grad, _ = quadratic(kappa)
    res = P.steepest_descent(f, grad, [1.0, 1.0 / kappa], steps=40, tol=1e-12, warn=False)
    values = np.array([f(w) for w in res.path])
    ratios = values[1:] / values[:-1]
    worst = ((kappa - 1) / (kappa + 1)) ** 2
    assert np.all(ratios <= worst + 1e-9)
    np.testing.assert_allclose(ratios[:10], worst, rtol=1e-6)  # this start is the worst case


def test_adaptive_methods_first_steps_by_hand():
    def grad(w):
        return np.array([2.0 * w[0]])

    w0 = np.array([1.0])
    g0 = 2.0
    # AdaGrad and RMSProp: the first step has length about η whatever the gradient
    assert P.adagrad(grad, w0, 0.1, steps=1, warn=False).path[1, 0] == pytest.approx(
        1 - 0.1 * g0 / (np.sqrt(g0**2) + 1e-8)
    )
    s = 0.1 * g0**2
    assert P.rmsprop(grad, w0, 0.1, steps=1, warn=False).path[1, 0] == pytest.approx(
        1 - 0.1 * g0 / (np.sqrt(s) + 1e-8)
    )
    # Adam's bias correction makes the first step -η·sign(g)
    assert P.adam(grad, w0, 0.1, steps=1, warn=False).path[1, 0] == pytest.approx(0.9, rel=1e-6)
    # Nesterov on the look-ahead point: Δw̃(0) = α v(0) - η g with v(0) = -η g
    assert P.nesterov(grad, w0, 0.1, alpha=0.5, steps=1, warn=False).path[1, 0] == pytest.approx(
        1 + 0.5 * (-0.2) - 0.2
    )


def test_nesterov_matches_the_textbook_form_and_reports_the_look_ahead_points():
    f, grad, _ = quadratic(20.0)
    eta, alpha = 0.04, 0.8
    res = P.nesterov(grad, [1.0, 1.0], eta, alpha=alpha, steps=30, tol=1e-14, warn=False)
    w, delta_w = np.array([1.0, 1.0]), np.zeros(2)  # w(0), Δw(-1)
    ws, look_ahead = [w], [w]
    for _ in range(30):  # Δw(t) = αΔw(t-1) - η∇E(w(t) + αΔw(t-1)), w(t+1) = w(t) + Δw(t)
        delta_w = alpha * delta_w - eta * grad(w + alpha * delta_w)
        w = w + delta_w
        ws.append(w)
        look_ahead.append(w + alpha * delta_w)
    np.testing.assert_allclose(res.path, look_ahead, rtol=1e-12)  # the points w(t) + αΔw(t-1)
    np.testing.assert_allclose(res.w, look_ahead[-1], rtol=1e-12)
    assert np.abs(res.path - np.array(ws)).max() > 1e-3  # not the w(t) themselves


@pytest.mark.parametrize("method", [P.adagrad, P.rmsprop, P.adam, P.nesterov])
def test_adaptive_methods_reach_the_rosenbrock_valley(method):
    res = method(
        P.rosenbrock_grad,
        [-1.0, 1.0],
        1e-3 if method is P.nesterov else 0.05,
        steps=5000,
        warn=False,
    )
    assert not res.diverged
    assert P.rosenbrock(res.w) < P.rosenbrock(np.array([-1.0, 1.0]))
