"""One vocabulary for every result, and one recorder whose checks do not record."""

import dataclasses

import numpy as np
import pytest

import perceptrons as P
from perceptrons._results import Recorder, Result, _norm

FIELDS = ["w", "path", "loss", "iterations", "converged", "diverged"]


def runs():
    """One run of every trainer, with what its loss is (None: it has none)."""
    X, c, _ = P.separable(n=30, p=2, margin=0.1, rng=0)
    Xb, cb = P.blobs(n=40, p=2, distance=2.5, rng=1)
    bowl = lambda w: np.array([2 * w[0], 8 * w[1]])  # noqa: E731
    return {
        "pt": (P.pt(X, c, warn=False), None),
        "batch_perceptron": (P.batch_perceptron(X, c, warn=False), "J"),
        "bgd": (P.bgd(Xb, cb, eta=0.002, warn=False), "Err"),
        "igd": (P.igd(Xb, cb, eta=0.002, warn=False), "Err"),
        "mbgd": (P.mbgd(Xb, cb, eta=0.002, batch_size=8, warn=False), "Err"),
        "lms": (P.lms(Xb, cb, eta=0.002), None),
        "gd": (P.gd(bowl, [1.0, 1.0], 0.05, warn=False), None),
        "adam": (P.adam(bowl, [1.0, 1.0], 0.05, steps=300, warn=False), None),
        "logistic_regression": (P.logistic_regression(Xb, cb, eta=0.01, warn=False), "-ℓ"),
        "irls": (P.irls(Xb, cb, warn=False), "-ℓ"),
    }


def test_every_result_has_the_six_fields_and_none_of_the_old_names():
    for name, (res, _) in runs().items():
        assert isinstance(res, Result), name
        assert [f.name for f in dataclasses.fields(res)][:6] == FIELDS, name
        for old in ("ws", "epochs", "steps", "errors", "criterion", "log_likelihoods"):
            if not (name == "lms" and old == "errors"):  # LMS's e(t) keep their name
                assert not hasattr(res, old), (name, old)
        assert isinstance(res.iterations, int) and res.iterations >= 0, name
        assert type(res.converged) is bool and type(res.diverged) is bool, name
        with pytest.raises(dataclasses.FrozenInstanceError):
            res.w = None


def test_path_and_loss_have_one_row_per_iteration_and_end_at_w():
    for name, (res, loss) in runs().items():
        assert np.array_equal(res.path[-1], res.w), name
        if name == "pt":  # PT's rows are its updates; its iterations are epochs
            assert len(res.path) == res.mistakes + 1
        else:
            assert len(res.path) == res.iterations + 1, name
        assert (res.loss is None) == (loss is None), name
        if loss is not None:
            assert res.loss.shape == (len(res.path),), name


def test_each_loss_is_the_value_its_method_minimises():
    X, c, _ = P.separable(n=30, p=2, margin=0.1, rng=0)
    Xb, cb = P.blobs(n=40, p=2, distance=2.5, rng=1)
    got = runs()
    s = 2 * c - 1
    J = [P.perceptron_criterion(w, P.augment(X), s)[0] for w in got["batch_perceptron"][0].path]
    np.testing.assert_array_equal(got["batch_perceptron"][0].loss, J)
    for name in ("bgd", "igd", "mbgd"):
        err = [P.sq_error(w, Xb, cb) for w in got[name][0].path]
        np.testing.assert_allclose(got[name][0].loss, err, rtol=1e-13)
    for name in ("logistic_regression", "irls"):
        ll = [P.log_likelihood(w, Xb, cb) for w in got[name][0].path]
        np.testing.assert_array_equal(-got[name][0].loss, ll)


def test_pt_batch_perceptron_and_lms_never_diverge_and_lms_never_converges():
    X, c = P.xor()
    assert not P.pt(X, c, max_epochs=5, warn=False).diverged
    assert not P.batch_perceptron(X, c, max_epochs=5, warn=False).diverged
    Xb, cb = P.blobs(n=40, p=2, distance=2.5, rng=1)
    lms = P.lms(Xb, cb, eta=0.002)
    assert not lms.converged and not lms.diverged and lms.iterations == 40


def state(run):
    return (
        run.count,
        run.w.copy(),
        None if run.path is None else [w.copy() for w in run.path],
        None if run.losses is None else list(run.losses),
    )


def same(a, b):
    return (
        a[0] == b[0]
        and np.array_equal(a[1], b[1])
        and (a[2] is None) == (b[2] is None)
        and (a[2] is None or all(np.array_equal(x, y) for x, y in zip(a[2], b[2], strict=True)))
        and a[3] == b[3]
    )


@pytest.mark.parametrize("stop", ["grad", "change", "loss"])
def test_the_recorder_checks_answer_without_recording(stop):
    run = Recorder(
        np.zeros(2),
        4.0,
        stop=stop,
        tol=0.5,
        gradient=lambda w: w - 1.0,
        loss_limit=10.0,
        max_norm=3.0,
    )
    run.record(np.array([0.5, 0.5]), 1.0)
    before = state(run)
    answers = [
        run.converged(),
        run.converged(np.array([0.1, 0.1])),
        run.diverged(w=np.array([5.0, 0.0])),
        run.diverged(w=np.array([np.nan, 0.0])),
        run.diverged(loss=11.0),
        run.diverged(loss=np.inf),
        run.diverged(gradient=np.array([np.inf, 0.0])),
        run.diverged(w=np.array([1.0, 1.0]), loss=2.0, gradient=np.array([1.0, 0.0])),
    ]
    assert same(state(run), before)  # asking changed nothing
    assert answers[2:] == [True, True, True, True, True, False]
    # the rules: ‖∇E(w)‖ = ‖(-0.5, -0.5)‖ ≈ 0.71 > 0.5; |4 - 1| = 3 > 0.5; 1 > 0.5
    assert answers[0] is False
    if stop == "grad":
        assert answers[1] is True  # the gradient given is used: ‖(0.1, 0.1)‖ <= 0.5
    run.record(np.array([0.9, 0.9]), 0.5)
    assert run.converged() is True  # ‖(-0.1, -0.1)‖ ≈ 0.14, |1 - 0.5|, 0.5: each <= 0.5
    assert run.count == 2 and len(run.path) == 3 and run.losses == [4.0, 1.0, 0.5]


def test_the_change_rule_needs_an_iteration():
    run = Recorder(np.zeros(2), 1.0, stop="change", tol=10.0)
    assert run.converged() is False
    run.record(np.ones(2), 1.0)
    assert run.converged() is True


def test_a_recorder_without_history_keeps_the_count_and_the_last_weights_only():
    run = Recorder(np.zeros(3), history=False, updated=[])
    for k in range(1, 6):
        run.record(np.full(3, float(k)), updated=k)
    res = run.result(P.PTResult, converged=True, diverged=False, mistakes=run.count)
    assert run.path is None and res.path is None and res.updated is None
    assert res.mistakes == res.iterations == 5 and np.array_equal(res.w, np.full(3, 5.0))


def test_the_recorder_keeps_copies():
    w = np.zeros(2)
    run = Recorder(w)
    w += 1.0  # the caller changes its array in place: the record does not move
    run.record(w)
    w += 1.0
    res = run.result(P.GDResult, converged=False, diverged=False)
    np.testing.assert_array_equal(res.path, [[0.0, 0.0], [1.0, 1.0]])
    np.testing.assert_array_equal(res.w, [1.0, 1.0])


def test_igd_runs_its_own_loop(monkeypatch):
    Xb, cb = P.blobs(n=20, p=2, distance=2.5, rng=1)
    before = P.igd(Xb, cb, eta=0.01, max_epochs=5, warn=False)

    def no_pass(*args, **kwargs):
        raise AssertionError("igd called the LMS pass")

    monkeypatch.setattr(P.delta_rule, "_lms_pass", no_pass)
    after = P.igd(Xb, cb, eta=0.01, max_epochs=5, warn=False)
    np.testing.assert_array_equal(after.path, before.path)
    with pytest.raises(AssertionError, match="LMS pass"):
        P.lms(Xb, cb, eta=0.01)  # LMS keeps it


def test_the_loops_norm_is_numpys_bit_for_bit():
    """The recorder asks ‖w‖ and ‖∇E‖ at every step through its own ``_norm`` (numpy's
    checks cost more than the step): the same float as ``np.linalg.norm``, always."""
    rng = np.random.default_rng(0)
    vectors = [
        rng.normal(size=d) * scale for d in (1, 2, 3, 10, 257) for scale in (1e-200, 1, 1e150)
    ]
    vectors += [np.array([3, 4]), np.array([np.inf, 1.0]), np.array([np.nan, 1.0]), np.zeros(3)]
    vectors += [rng.normal(size=(4, 3))]
    for v in vectors:
        expected = np.linalg.norm(v)
        got = _norm(v)
        assert (np.isnan(got) and np.isnan(expected)) or got == expected, v
