"""PT and the batch perceptron against independent references."""

import warnings

import numpy as np
import pytest
from scipy.optimize import linprog
from sklearn.linear_model import Perceptron

import perceptrons as P


def textbook_pt(X, c, eta, w0, max_epochs, visits):
    """PT one example at a time, written from the pseudocode with no shortcut."""
    Xa = np.hstack([np.ones((len(X), 1)), X])
    w = np.array(w0, dtype=float)
    mistakes = 0
    for epoch in range(max_epochs):
        clean = True
        for i in visits[epoch]:
            wx = Xa[i] @ w
            if set(np.unique(c)) == {0.0, 1.0}:
                error = c[i] - (1.0 if wx >= 0 else 0.0)
            else:
                error = c[i] if c[i] * wx <= 0 else 0.0
            if error != 0:
                w = w + eta * error * Xa[i]
                mistakes += 1
                clean = False
        if clean:
            return w, mistakes, epoch + 1
    return w, mistakes, max_epochs


def linearly_separable(X, c):
    """Decide separability with a linear program: find w with s·wᵀx >= 1 for all examples."""
    Xa = np.hstack([np.ones((len(X), 1)), X])
    s = np.where(np.asarray(c) > 0, 1.0, -1.0)
    res = linprog(
        np.zeros(Xa.shape[1]),
        A_ub=-(s[:, None] * Xa),
        b_ub=-np.ones(len(X)),
        bounds=[(None, None)] * Xa.shape[1],
        method="highs",
    )
    return res.status == 0


@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize("labels", ["01", "pm1"])
@pytest.mark.parametrize("seed", range(5))
def test_pt_matches_one_at_a_time_loop_bit_for_bit(labels, seed, fast):
    X, c, _ = P.separable(300, p=5, margin=0.02, rng=seed, labels=labels)
    res = P.pt(X, c, eta=0.7, max_epochs=500, fast=fast)
    visits = [np.arange(len(X))] * 500
    w, mistakes, epochs = textbook_pt(X, c, 0.7, np.zeros(6), 500, visits)
    assert res.converged
    assert np.array_equal(res.w, w)
    assert (res.mistakes, res.iterations) == (mistakes, epochs)
    assert res.path.shape == (mistakes + 1, 6)
    assert np.array_equal(res.path[-1], res.w) and np.array_equal(res.path[0], np.zeros(6))


def test_pt_random_order_uses_one_permutation_per_epoch_from_rng():
    X, c, _ = P.separable(100, p=3, margin=0.02, rng=11)
    res = P.pt(X, c, order="random", rng=np.random.default_rng(5), max_epochs=200)
    rng = np.random.default_rng(5)
    visits = [rng.permutation(100) for _ in range(200)]
    w, mistakes, epochs = textbook_pt(X, c, 1.0, np.zeros(4), 200, visits)
    assert np.array_equal(res.w, w) and res.mistakes == mistakes and res.iterations == epochs
    again = P.pt(X, c, order="random", rng=5, max_epochs=200)
    assert np.array_equal(again.path, res.path)


@pytest.mark.parametrize("seed", range(5))
def test_pt_matches_scikit_learn_perceptron(seed):
    X, c, _ = P.separable(200, p=4, margin=0.05, rng=seed, labels="pm1")
    res = P.pt(X, c, eta=1.0, max_epochs=1000)
    assert res.converged
    skl = Perceptron(eta0=1.0, alpha=0.0, shuffle=False, tol=None, max_iter=res.iterations)
    skl.fit(X, c)
    np.testing.assert_allclose(skl.intercept_[0], res.w[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(skl.coef_[0], res.w[1:], rtol=1e-12, atol=1e-12)


def test_label_conventions_make_the_same_updates_without_ties():
    X, c01, _ = P.separable(100, p=2, margin=0.05, rng=3, labels="01")
    w0 = np.array([0.31, -0.72, 0.45])  # no example lies exactly on this start's hyperplane
    a = P.pt(X, c01, w0=w0, max_epochs=500)
    b = P.pt(X, 2 * c01 - 1, w0=w0, max_epochs=500)
    assert a.mistakes > 0
    assert np.array_equal(a.path, b.path) and np.array_equal(a.updated, b.updated)


def test_pt_error_values():
    assert P.pt_error(1, 0.0, "01") == 0 and P.pt_error(0, 0.0, "01") == -1
    assert P.pt_error(1, -0.5, "01") == 1 and P.pt_error(0, -0.5, "01") == 0
    assert P.pt_error(1, 0.0, "pm1") == 1 and P.pt_error(-1, 0.0, "pm1") == -1
    assert P.pt_error(-1, -2.0, "pm1") == 0


@pytest.mark.parametrize("labels", ["01", "pm1"])
def test_measured_mistakes_never_exceed_the_convergence_bound(labels):
    for seed in range(40):
        rng = np.random.default_rng(seed)
        margin = rng.uniform(0.01, 0.2)
        X, c, w_star = P.separable(60, p=3, margin=margin, rng=rng, labels=labels)
        bound = P.convergence_bound(X, c, w_star)
        for eta in (0.1, 1.0, 7.0):
            res = P.pt(X, c, eta=eta, max_epochs=10_000, order="random", rng=seed)
            assert res.converged
            assert 0 < res.mistakes <= bound, (seed, eta, res.mistakes, bound)


def test_convergence_bound_formula_and_helpers():
    X = np.array([[2.0, 0.0], [-2.0, 0.0]])
    c = np.array([1, -1])
    w_star = np.array([0.0, 1.0, 0.0])
    assert P.margin(X, c, w_star) == 2.0
    assert P.radius(X) == pytest.approx(np.sqrt(5.0))
    assert P.convergence_bound(X, c, w_star) == pytest.approx(5.0 * 1.0 / 4.0)
    with pytest.raises(ValueError, match="w_star"):
        P.convergence_bound(X, c, np.array([0.0, -1.0, 0.0]))


def test_pt_on_noisy_data_stops_at_max_epochs_unconverged():
    X, c = P.noisy(80, p=2, flip=0.1, rng=4)
    assert not linearly_separable(X, c)
    with pytest.warns(P.ConvergenceWarning, match="linearly separable"):
        res = P.pt(X, c, max_epochs=25)
    assert not res.converged and res.iterations == 25 and res.mistakes >= 25


def test_pt_fails_on_xor():
    X, c = P.xor()
    assert not linearly_separable(X, c)
    with pytest.warns(P.ConvergenceWarning):
        res = P.pt(X, c, max_epochs=100)
    assert not res.converged
    assert np.any(P.predict(X, res.w) != c)


def test_separable_data_is_separable_with_the_stated_margin():
    X, c, w_star = P.separable(200, p=4, margin=0.15, rng=9, labels="pm1")
    assert X.shape == (200, 4) and set(np.unique(c)) == {-1.0, 1.0}
    assert np.linalg.norm(w_star[1:]) == pytest.approx(1.0)
    assert P.margin(X, c, w_star) >= 0.15
    assert linearly_separable(X, c)


def test_predict_is_heaviside_of_w_x():
    X = np.array([[1.0, 1.0], [-1.0, -1.0], [0.5, -0.5]])
    w = np.array([0.0, 1.0, 1.0])  # the third point lies on the hyperplane: H(0) = 1
    assert np.array_equal(P.predict(X, w), [1.0, 0.0, 1.0])


def test_batch_perceptron_separates_and_decreases_to_zero_criterion():
    X, c, _ = P.separable(100, p=2, margin=0.05, rng=2)
    res = P.batch_perceptron(X, c, eta=0.1, max_epochs=5000)
    assert res.converged and res.misclassified[-1] == 0 and res.loss[-1] == 0
    assert np.array_equal(P.predict(X, res.w), c)
    assert len(res.loss) == len(res.path) == res.iterations + 1


def test_perceptron_criterion_gradient_matches_finite_differences():
    X, s, _ = P.separable(50, p=3, margin=0.05, rng=1, labels="pm1")
    Xa = P.augment(X)
    w = np.array([0.2, -0.4, 0.9, 0.3])
    _, grad, _ = P.perceptron_criterion(w, Xa, s)
    h = 1e-7  # J is piecewise linear; w is away from a kink when no margin is within h
    assert np.min(np.abs(Xa @ w)) > 1e-4
    fd = [
        (P.perceptron_criterion(w + h * e, Xa, s)[0] - P.perceptron_criterion(w - h * e, Xa, s)[0])
        / (2 * h)
        for e in np.eye(4)
    ]
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-6)


def test_batch_perceptron_warns_on_xor():
    X, c = P.xor()
    with pytest.warns(P.ConvergenceWarning):
        res = P.batch_perceptron(X, c, max_epochs=50)
    assert not res.converged and res.iterations == 50


def test_no_warning_when_pt_converges():
    X, c, _ = P.separable(30, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        P.pt(X, c)


@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize("eta", [1.0, 0.1, 0.3])
@pytest.mark.parametrize("order", ["cyclic", "random"])
def test_pt_matches_the_loop_on_data_full_of_ties(eta, order, fast):
    # integer inputs put many examples exactly on the hyperplane (wᵀx = 0), where the two
    # label conventions differ and where rounding decides for η = 0.1 or 0.3
    X = np.array([[0, 0], [0, 1], [1, 0], [1, 1], [2, 1], [1, 2], [0, 2], [2, 0]], float)
    c = np.array([0, 0, 0, 1, 1, 1, 0, 1])
    for labels in (c, 2 * c - 1):
        res = P.pt(X, labels, eta=eta, max_epochs=300, order=order, rng=3, warn=False, fast=fast)
        rng = np.random.default_rng(3)
        visits = [np.arange(8) if order == "cyclic" else rng.permutation(8) for _ in range(300)]
        w, mistakes, epochs = textbook_pt(X, labels, eta, np.zeros(3), 300, visits)
        assert np.array_equal(res.w, w) and (res.mistakes, res.iterations) == (mistakes, epochs)


def test_skipped_examples_are_exactly_those_certainly_classified_right():
    from perceptrons.perceptron import _Skip

    rng = np.random.default_rng(0)
    X = P.augment(rng.integers(-2, 3, size=(500, 4)).astype(float))  # many exact ties
    c = rng.choice([-1.0, 1.0], size=500)
    skip, visit = _Skip(X, c, "pm1"), rng.permutation(500)
    for _ in range(200):
        w = rng.integers(-2, 3, size=5).astype(float)
        start = int(rng.integers(0, 500))
        k = skip.next(w, visit, start=start)
        margins = c[visit] * (X[visit] @ w)  # (500,)
        first_mistake = next((j for j in range(start, 500) if margins[j] <= 0), 500)
        assert k == first_mistake  # integer data: no rounding, so no false candidates


def test_pt_without_history_makes_the_same_run():
    X, c = P.noisy(300, p=3, flip=0.1, rng=2)
    full = P.pt(X, c, max_epochs=40, order="random", rng=1, warn=False)
    lean = P.pt(X, c, max_epochs=40, order="random", rng=1, warn=False, history=False)
    assert lean.path is None and lean.updated is None
    assert np.array_equal(lean.w, full.w)
    assert (lean.mistakes, lean.iterations, lean.converged) == (
        full.mistakes,
        full.iterations,
        full.converged,
    )
    assert full.path.shape == (full.mistakes + 1, 4) and full.updated.shape == (full.mistakes,)
    with pytest.raises(TypeError, match="history"):
        P.pt(X, c, history="no")
    with pytest.raises(TypeError, match="fast"):
        P.pt(X, c, fast="yes")


def test_the_fast_path_makes_the_same_run_with_every_option():
    X, c = P.noisy(400, p=3, flip=0.1, rng=5)
    for kw in ({}, {"order": "random", "rng": 2}, {"history": False}, {"w0": [1.0, -2, 0, 3]}):
        plain = P.pt(X, c, eta=0.3, max_epochs=30, warn=False, **kw)
        fast = P.pt(X, c, eta=0.3, max_epochs=30, warn=False, fast=True, **kw)
        assert np.array_equal(plain.w, fast.w), kw
        assert (plain.mistakes, plain.iterations, plain.converged) == (
            fast.mistakes,
            fast.iterations,
            fast.converged,
        )
        if plain.path is not None:
            assert np.array_equal(plain.path, fast.path)
            assert np.array_equal(plain.updated, fast.updated)
    for seed in range(3):  # chapter 3's check of the bound against n runs the fast path
        X_n, c_n, _ = P.separable(n=10_000, margin=0.1, rng=seed)
        kw = {"order": "random", "rng": seed, "history": False}
        plain, fast = P.pt(X_n, c_n, **kw), P.pt(X_n, c_n, fast=True, **kw)
        assert np.array_equal(plain.w, fast.w)
        assert (plain.mistakes, plain.iterations) == (fast.mistakes, fast.iterations)
    with pytest.warns(P.ConvergenceWarning) as caught:
        P.pt(X, c, max_epochs=2, fast=True)
    assert caught[0].filename == __file__  # the warning points at the caller, as without fast


def peak_memory_of_pt(X, c, **kw):
    """Peak memory that tracemalloc sees while PT runs (numpy reports its arrays to it)."""
    import tracemalloc

    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        res = P.pt(X, c, warn=False, **kw)
        return res, tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def test_history_costs_memory_per_update():
    # the control for the next test: the same measurement sees the history grow
    X, c = P.noisy(1000, p=2, flip=0.3, rng=0)
    res, peak = peak_memory_of_pt(X, c, max_epochs=50)
    assert res.mistakes > 10_000
    assert peak > res.mistakes * 3 * 8  # at least the (k+1, 3) array of weights


def contradictions(n):
    """n copies of the example x = 1 with the classes +1, -1, +1, ... in turn: from w = 0,
    w is 0 before each +1 and (1, 1) before each -1, so every visit is an update."""
    return np.ones((n, 1)), np.resize([1, -1], n)


@pytest.mark.slow  # tracemalloc slows every allocation: a few seconds
def test_pt_without_history_runs_in_constant_memory():
    X, c = contradictions(1000)
    few, peak_few = peak_memory_of_pt(X, c, max_epochs=10, history=False)
    res, peak = peak_memory_of_pt(X, c, max_epochs=100, history=False)
    assert few.mistakes == 10_000
    assert res.mistakes == 100_000
    assert peak < 1_000_000  # bytes: X and its copies are 16 kB each, weights 16 bytes
    # ten times the updates, the same memory (the history would take 1.6 MB more: the
    # test above sees it grow)
    assert peak <= peak_few + 1024
