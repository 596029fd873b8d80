"""Bad input gets a ValueError (or TypeError) naming the argument, never a wrong answer."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import perceptrons as P

X_OK = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0], [-1.0, 0.5]])
C01 = np.array([0, 1, 1, 0])

TRAINERS = {
    "pt": lambda X, c, **kw: P.pt(X, c, **kw),
    "batch_perceptron": lambda X, c, **kw: P.batch_perceptron(X, c, **kw),
    "bgd": lambda X, c, **kw: P.bgd(X, c, **{"eta": 0.01, **kw}),
    "igd": lambda X, c, **kw: P.igd(X, c, **{"eta": 0.01, **kw}),
    "logistic_regression": lambda X, c, **kw: P.logistic_regression(X, c, **{"eta": 0.01, **kw}),
}


@pytest.mark.parametrize("name", TRAINERS)
@pytest.mark.parametrize(
    "X, match",
    [
        (np.array([1.0, 2.0, 3.0, 4.0]), r"`X` must be a 2-D array"),
        (np.empty((0, 2)), r"`X` must have at least one row"),
        (np.array([[0.0, np.nan]] * 4), r"`X` must contain only finite"),
        (np.array([[0.0, np.inf]] * 4), r"`X` must contain only finite"),
    ],
)
def test_bad_X_is_named(name, X, match):
    with pytest.raises(ValueError, match=match):
        TRAINERS[name](X, C01)


@pytest.mark.parametrize("name", TRAINERS)
def test_targets_of_wrong_length_are_named(name):
    with pytest.raises(ValueError, match=r"`c` must have shape \(4,\)"):
        TRAINERS[name](X_OK, np.array([0, 1, 1]))


@pytest.mark.parametrize("name", TRAINERS)
@pytest.mark.parametrize("eta", [0.0, -0.1, np.nan, np.inf])
def test_eta_must_be_positive(name, eta):
    with pytest.raises(ValueError, match=r"`eta` must be > 0"):
        TRAINERS[name](X_OK, C01, eta=eta)


@pytest.mark.parametrize("name", ["pt", "batch_perceptron", "bgd", "igd"])
@pytest.mark.parametrize("epochs", [0, -3])
def test_epochs_must_be_positive(name, epochs):
    with pytest.raises(ValueError, match=r"`max_epochs` must be >= 1"):
        TRAINERS[name](X_OK, C01, max_epochs=epochs)


@pytest.mark.parametrize("name", ["pt", "batch_perceptron"])
@pytest.mark.parametrize("c", [[0, 1, 2, 0], [-1, 0, 1, 1], [0.5, 1, 0, 0]])
def test_labels_outside_the_convention(name, c):
    with pytest.raises(ValueError, match=r"`c` must hold labels in \{0, 1\} or in \{-1, \+1\}"):
        TRAINERS[name](X_OK, np.array(c))


@pytest.mark.parametrize("name", ["pt", "batch_perceptron"])
def test_single_class_is_refused(name):
    with pytest.raises(ValueError, match=r"`c` must contain both classes"):
        TRAINERS[name](X_OK, np.ones(4))


def test_logistic_labels_must_be_zero_one():
    with pytest.raises(ValueError, match=r"`c` must hold labels in \{0, 1\}"):
        P.logistic_regression(X_OK, np.array([-1, 1, 1, -1]), eta=0.1)


@pytest.mark.parametrize("alpha", [-0.1, 1.0, 1.5, np.nan])
def test_alpha_must_be_in_unit_interval(alpha):
    with pytest.raises(ValueError, match=r"`alpha` must be in \[0, 1\)"):
        P.gd(lambda w: w, [1.0], 0.1, alpha=alpha)


def test_w0_shape_is_checked():
    with pytest.raises(ValueError, match=r"`w0` must have shape \(3,\)"):
        P.pt(X_OK, C01, w0=np.zeros(2))


def test_wrong_types_raise_type_error():
    with pytest.raises(TypeError, match="`eta` must be a real number"):
        P.pt(X_OK, C01, eta="fast")
    with pytest.raises(TypeError, match="`max_epochs` must be an integer"):
        P.pt(X_OK, C01, max_epochs=2.5)
    with pytest.raises(ValueError, match="`order` must be one of"):
        P.pt(X_OK, C01, order="sorted")


def test_convergence_bound_checks_w_star_shape():
    with pytest.raises(ValueError, match=r"`w_star` must have shape \(3,\)"):
        P.convergence_bound(X_OK, C01, np.ones(5))


finite = st.floats(-1e3, 1e3, allow_nan=False)
anything = st.floats(allow_nan=True, allow_infinity=True)


@settings(max_examples=60, deadline=None)
@given(
    X=hnp.arrays(
        np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=6), elements=anything
    ),
    c=hnp.arrays(
        np.float64, hnp.array_shapes(min_dims=1, max_dims=2, max_side=6), elements=anything
    ),
    eta=anything,
)
def test_trainers_never_fail_with_another_error_or_a_nan_result(X, c, eta):
    for name, train in TRAINERS.items():
        try:
            res = (
                train(X, c, eta=eta, max_epochs=3, warn=False)
                if name != "logistic_regression"
                else train(X, c, eta=eta, steps=3, warn=False)
            )
        except (ValueError, TypeError) as err:
            assert "`" in str(err), f"{name}: message does not name an argument: {err}"
            continue
        assert np.all(np.isfinite(res.w)), f"{name} returned a non-finite w"


@settings(max_examples=60, deadline=None)
@given(
    X=hnp.arrays(np.float64, st.tuples(st.integers(1, 8), st.integers(1, 3)), elements=finite),
    data=st.data(),
)
def test_valid_random_problems_give_finite_results(X, data):
    n = X.shape[0]
    c = data.draw(hnp.arrays(np.float64, n, elements=st.sampled_from([0.0, 1.0])))
    eta = data.draw(st.floats(1e-4, 10.0))
    for name in ("bgd", "igd"):
        res = TRAINERS[name](X, c, eta=eta, max_epochs=20, warn=False)
        assert np.all(np.isfinite(res.w)) and np.all(np.isfinite(res.loss))
    if len(np.unique(c)) == 2:
        res = P.pt(X, c, eta=eta, max_epochs=20, warn=False)
        assert np.all(np.isfinite(res.path))


def test_logistic_regression_needs_both_classes():
    with pytest.raises(ValueError, match=r"`c` must contain both classes"):
        P.logistic_regression(X_OK, np.ones(4), eta=0.1)


def test_plot_helpers_name_bad_arguments():
    from perceptrons import plotting

    with pytest.raises(ValueError, match=r"`X` must have shape \(n, 2\)"):
        plotting.plot_data(np.zeros((3, 3)), [0, 1, 0])
    with pytest.raises(ValueError, match=r"`w` must have shape \(3,\)"):
        plotting.boundary_points([1.0, 2.0], (0, 1))
    with pytest.raises(ValueError, match=r"`values` must contain only finite"):
        plotting.plot_loss([1.0, np.nan])


def named(err):
    return "`" in str(err)


reals = st.floats(allow_nan=True, allow_infinity=True, width=64)


# deadline: a hang shows up as a missed deadline, not as a stuck test run
@settings(max_examples=80, deadline=5000)
@given(
    w0=hnp.arrays(np.float64, hnp.array_shapes(max_dims=2, max_side=4), elements=reals),
    eta=st.one_of(reals, st.integers(-3, 3)),
    alpha=reals,
    steps=st.integers(-2, 200),
)
def test_gradient_methods_fail_cleanly_or_return_finite_paths(w0, eta, alpha, steps):
    def grad(w):
        return np.array([2.0, 40.0])[: w.size] * w if w.size <= 2 else 2 * w

    methods = {
        "gd": lambda: P.gd(grad, w0, eta, alpha=alpha, steps=steps, warn=False),
        "nesterov": lambda: P.nesterov(grad, w0, eta, alpha=alpha, steps=steps, warn=False),
        "adagrad": lambda: P.adagrad(grad, w0, eta, steps=steps, warn=False),
        "rmsprop": lambda: P.rmsprop(grad, w0, eta, steps=steps, warn=False),
        "adam": lambda: P.adam(grad, w0, eta, steps=steps, warn=False),
    }
    for name, run in methods.items():
        try:
            res = run()
        except (ValueError, TypeError) as err:
            assert named(err), f"{name}: {err}"
            continue
        assert np.all(np.isfinite(res.path)), name
        assert res.path.shape == (res.iterations + 1, np.size(w0))
        assert not (res.converged and res.diverged)


@settings(max_examples=60, deadline=5000)
@given(
    n=st.integers(-2, 60),
    p=st.integers(-1, 4),
    margin=reals,
    flip=reals,
    distance=reals,
    seed=st.integers(0, 2**32 - 1),
)
def test_data_sets_fail_cleanly_or_are_well_formed(n, p, margin, flip, distance, seed):
    makers = {
        "separable": lambda: P.separable(n, p, margin=margin, rng=seed)[:2],
        "noisy": lambda: P.noisy(n, p, flip=flip, rng=seed),
        "blobs": lambda: P.blobs(n, p, distance=distance, rng=seed),
        "xor": lambda: P.xor(n, rng=seed),
    }
    for name, make in makers.items():
        try:
            X, c = make()
        except (ValueError, TypeError) as err:
            assert named(err), f"{name}: {err}"
            continue
        assert X.ndim == 2 and len(X) == len(c) == n and np.all(np.isfinite(X)), name
        assert set(np.unique(c)) <= {0.0, 1.0}, name


@settings(max_examples=60, deadline=5000)
@given(
    X=hnp.arrays(np.float64, st.tuples(st.integers(1, 30), st.integers(1, 3)), elements=reals),
    d=st.data(),
    eta=reals,
)
def test_lms_and_lls_fail_cleanly_or_are_finite(X, d, eta):
    targets = d.draw(hnp.arrays(np.float64, len(X), elements=reals))
    for name, run in (
        ("lms", lambda: P.lms(X, targets, eta).path),
        ("lls", lambda: P.lls(X, targets)),
    ):
        try:
            out = run()
        except (ValueError, TypeError) as err:
            assert named(err), f"{name}: {err}"
            continue
        assert np.all(np.isfinite(out)), name


@settings(max_examples=60, deadline=None)
@given(
    X=hnp.arrays(
        np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=6), elements=anything
    ),
    c=hnp.arrays(
        np.float64, hnp.array_shapes(min_dims=1, max_dims=2, max_side=6), elements=anything
    ),
)
def test_irls_never_fails_with_another_error_or_a_nan_result(X, c):
    try:
        res = P.irls(X, c, steps=5, warn=False)
    except (ValueError, TypeError) as err:
        assert "`" in str(err), f"irls: message does not name an argument: {err}"
        return
    assert np.all(np.isfinite(res.w)) and np.all(np.isfinite(res.path))


@settings(max_examples=60, deadline=None)
@given(
    X=hnp.arrays(np.float64, st.tuples(st.integers(2, 8), st.integers(1, 3)), elements=finite),
    data=st.data(),
)
def test_irls_on_valid_random_problems_gives_finite_weights_and_likelihoods(X, data):
    n = X.shape[0]
    c = data.draw(hnp.arrays(np.float64, n, elements=st.sampled_from([0.0, 1.0])))
    assume(len(np.unique(c)) == 2)  # one class alone is refused (tested above)
    res = P.irls(X, c, steps=10, warn=False)
    assert np.all(np.isfinite(res.w)) and np.all(np.isfinite(res.loss))
