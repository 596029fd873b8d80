"""Delta rule, BGD, IGD and least squares against numpy and finite differences."""

import numpy as np
import pytest
from _helpers import central_difference

import perceptrons as P


def regression_data(n=40, p=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    c = 0.5 + X @ rng.normal(size=p) + 0.1 * rng.normal(size=n)
    return X, c


def test_lls_matches_numpy_lstsq():
    X, c = regression_data()
    Xa = np.hstack([np.ones((len(X), 1)), X])
    expected, *_ = np.linalg.lstsq(Xa, c, rcond=None)
    np.testing.assert_allclose(P.lls(X, c), expected, rtol=1e-10, atol=1e-12)


def test_sq_error_gradient_matches_finite_differences():
    X, c = regression_data()
    w = np.array([0.3, -1.0, 0.2, 0.7])
    fd = central_difference(lambda v: P.sq_error(v, X, c), w)
    np.testing.assert_allclose(P.sq_error_grad(w, X, c), fd, rtol=1e-6, atol=1e-6)


def test_gradient_vanishes_at_least_squares_solution():
    X, c = regression_data()
    assert np.linalg.norm(P.sq_error_grad(P.lls(X, c), X, c)) < 1e-9


def test_igd_with_small_eta_approaches_least_squares():
    X, c = regression_data()
    w_ls = P.lls(X, c)
    far = np.linalg.norm(P.igd(X, c, eta=0.01, max_epochs=2000, tol=1e-12, stop="change").w - w_ls)
    near = np.linalg.norm(P.igd(X, c, eta=0.0005, max_epochs=20000, tol=1e-13).w - w_ls)
    assert near < far and near < 1e-3


def hessian_lambda_max(X):
    Xa = np.hstack([np.ones((len(X), 1)), X])
    return np.linalg.eigvalsh(Xa.T @ Xa).max()


def test_bgd_decreases_err_monotonically_below_two_over_lambda_max():
    X, c = regression_data()
    lam = hessian_lambda_max(X)
    res = P.bgd(X, c, eta=1.9 / lam, max_epochs=5000, tol=1e-8)
    assert res.converged and not res.diverged
    assert np.all(np.diff(res.loss) <= 1e-12)
    np.testing.assert_allclose(res.w, P.lls(X, c), atol=1e-7)


def test_bgd_reports_divergence_above_two_over_lambda_max():
    X, c = regression_data()
    lam = hessian_lambda_max(X)
    with pytest.warns(P.DivergenceWarning, match="diverged at epoch"):
        res = P.bgd(X, c, eta=2.5 / lam, max_epochs=5000)
    assert res.diverged and not res.converged
    assert np.all(np.isfinite(res.loss)) and np.all(np.isfinite(res.w))
    assert res.loss[-1] > res.loss[0]


def test_igd_reports_divergence_for_huge_eta():
    X, c = regression_data()
    with pytest.warns(P.DivergenceWarning):
        res = P.igd(X, c, eta=50.0, max_epochs=100)
    assert res.diverged and np.all(np.isfinite(res.path))


@pytest.mark.parametrize("stop", ["grad", "change", "err"])
def test_bgd_stopping_rules(stop):
    X, c = regression_data()
    lam = hessian_lambda_max(X)
    tol = {"grad": 1e-6, "change": 1e-9, "err": P.sq_error(P.lls(X, c), X, c) + 1e-6}[stop]
    res = P.bgd(X, c, eta=1.0 / lam, max_epochs=10_000, tol=tol, stop=stop)
    assert res.converged
    w = res.w
    if stop == "grad":
        assert np.linalg.norm(P.sq_error_grad(w, X, c)) <= tol
    elif stop == "change":
        assert abs(res.loss[-2] - res.loss[-1]) <= tol
    else:
        assert res.loss[-1] <= tol


def test_bgd_epoch_is_one_delta_rule_step():
    X, c = regression_data(n=5, p=2)
    w0 = np.array([0.1, 0.2, -0.3])
    res = P.bgd(X, c, eta=0.01, w0=w0, max_epochs=1, tol=1e-12, stop="err", warn=False)
    Xa = np.hstack([np.ones((5, 1)), X])
    expected = w0 + 0.01 * sum((c[i] - w0 @ Xa[i]) * Xa[i] for i in range(5))
    np.testing.assert_allclose(res.path[1], expected, rtol=1e-14)


def test_igd_epoch_updates_after_every_example():
    X, c = regression_data(n=5, p=2)
    res = P.igd(X, c, eta=0.05, max_epochs=1, tol=1e-12, stop="err", warn=False)
    w = np.zeros(3)
    for x, t in zip(np.hstack([np.ones((5, 1)), X]), c, strict=True):
        w = w + 0.05 * (t - w @ x) * x
    np.testing.assert_allclose(res.path[1], w, rtol=1e-14)


def test_igd_with_a_schedule_counts_single_updates_across_epochs():
    X, c = regression_data(n=5, p=2)
    res = P.igd(
        X, c, eta=lambda k: 0.1 / (1 + k / 3), max_epochs=4, stop="err", tol=1e-12, warn=False
    )
    w, k = np.zeros(3), 0
    for _ in range(4):
        for x, t in zip(np.hstack([np.ones((5, 1)), X]), c, strict=True):
            w = w + 0.1 / (1 + k / 3) * (t - w @ x) * x
            k = k + 1
    np.testing.assert_allclose(res.w, w, rtol=1e-13)
    constant = P.igd(X, c, eta=0.05, max_epochs=3, stop="err", tol=1e-12, warn=False)
    scheduled = P.igd(X, c, eta=lambda k: 0.05, max_epochs=3, stop="err", tol=1e-12, warn=False)
    np.testing.assert_array_equal(scheduled.path, constant.path)


def test_igd_with_a_decaying_schedule_converges_where_a_constant_eta_hovers():
    X, c = regression_data(n=20, p=2)
    w_ls = P.lls(X, c)
    constant = P.igd(X, c, eta=0.02, max_epochs=3000, stop="grad", tol=1e-12, warn=False)
    decaying = P.igd(
        X,
        c,
        eta=lambda k: 0.02 / (1 + k / 2000),
        max_epochs=3000,
        stop="grad",
        tol=1e-12,
        warn=False,
    )
    assert np.linalg.norm(decaying.w - w_ls) < 0.1 * np.linalg.norm(constant.w - w_ls)


def test_a_schedule_with_a_bad_value_names_the_update_and_bgd_takes_no_schedule():
    X, c = regression_data(n=5, p=2)
    with pytest.raises(ValueError, match=r"`eta\(7\)` must be > 0"):
        P.igd(X, c, eta=lambda k: 0.1 if k < 7 else 0.0, max_epochs=3, warn=False)
    with pytest.raises(TypeError, match="`eta` must be a real number"):
        P.bgd(X, c, eta=lambda k: 0.1)


def test_lms_is_one_igd_epoch_and_records_every_step():
    X, c = regression_data(n=30)
    res = P.lms(X, c, eta=0.01)
    epoch = P.igd(X, c, eta=0.01, max_epochs=1, tol=1e-12, stop="err", warn=False)
    np.testing.assert_array_equal(res.w, epoch.path[1])
    assert res.path.shape == (31, 4) and res.errors.shape == (30,)
    Xa = np.hstack([np.ones((30, 1)), X])
    np.testing.assert_allclose(res.errors, c - np.sum(Xa * res.path[:-1], axis=1), rtol=1e-12)


def test_lms_tracks_a_system_that_changes():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(4000, 2))
    w_true = np.where(np.arange(4000)[:, None] < 2000, [1.0, -1.0], [-0.5, 2.0])
    d = np.sum(X * w_true, axis=1) + 0.05 * rng.normal(size=4000)
    res = P.lms(X, d, eta=0.02)
    np.testing.assert_allclose(res.path[1990, 1:], [1.0, -1.0], atol=0.1)
    np.testing.assert_allclose(res.path[-1, 1:], [-0.5, 2.0], atol=0.1)


def test_lms_refuses_an_eta_that_overflows():
    X, c = regression_data(n=2000)
    with pytest.raises(ValueError, match="`eta`"):
        P.lms(X, c, eta=100.0)


def test_mini_batch_of_all_examples_is_bgd_and_of_one_is_igd():
    X, c = regression_data()
    eta = 0.5 / hessian_lambda_max(X)
    whole = P.mbgd(X, c, eta=eta, batch_size=len(X), max_epochs=50, warn=False)
    batch = P.bgd(X, c, eta=eta, max_epochs=50, stop="change", warn=False)
    np.testing.assert_array_equal(whole.path, batch.path)  # the same products, bit for bit
    single = P.mbgd(X, c, eta=0.01, batch_size=1, max_epochs=50, warn=False)
    incremental = P.igd(X, c, eta=0.01, max_epochs=50, warn=False)
    # η·(e·x) here, (η·e)·x in IGD: the same up to rounding
    np.testing.assert_allclose(single.path, incremental.path, rtol=1e-12, atol=1e-14)
    assert single.iterations == incremental.iterations


def test_mini_batches_update_once_per_batch_with_the_summed_delta():
    X, c = regression_data(n=10, p=2)
    Xa = np.hstack([np.ones((10, 1)), X])
    w = np.zeros(3)
    for B in (range(0, 4), range(4, 8), range(8, 10)):  # b = 4: the last batch has 2
        B = list(B)
        w = w + 0.01 * ((c[B] - Xa[B] @ w) @ Xa[B])
    got = P.mbgd(X, c, eta=0.01, batch_size=4, max_epochs=1, warn=False)
    np.testing.assert_allclose(got.path[1], w, rtol=1e-14)


def test_mini_batch_random_order_is_seeded_and_reaches_least_squares():
    X, c = regression_data()
    # a fresh order each epoch keeps Err jittering by O(η): the "change" rule never holds
    kw = dict(eta=0.002, batch_size=8, max_epochs=3000, order="random", warn=False)
    a, b = P.mbgd(X, c, rng=3, **kw), P.mbgd(X, c, rng=np.random.default_rng(3), **kw)
    np.testing.assert_array_equal(a.path, b.path)
    assert np.linalg.norm(a.w - P.lls(X, c)) < 1e-2
    assert not np.array_equal(a.path, P.mbgd(X, c, rng=4, **kw).path)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"batch_size": 0}, "batch_size"),
        ({"batch_size": 41}, "batch_size"),
        ({"batch_size": 2.5}, "batch_size"),
        ({"batch_size": 4, "order": "sorted"}, "order"),
        ({"batch_size": 4, "eta": -1.0}, "eta"),
    ],
)
def test_mini_batch_bad_input_names_the_argument(kwargs, message):
    X, c = regression_data()
    with pytest.raises((ValueError, TypeError), match=message):
        P.mbgd(X, c, **{"eta": 0.01, **kwargs})


def test_mini_batch_reports_divergence():
    X, c = regression_data()
    with pytest.warns(P.DivergenceWarning, match="Mini-batch GD diverged"):
        res = P.mbgd(X, c, eta=1.0, batch_size=8)
    assert res.diverged and np.all(np.isfinite(res.path))
