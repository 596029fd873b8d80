"""perceptrons.testing.assert_same: kind and shape before values, and no broadcasting."""

import numpy as np
import pytest

from perceptrons.testing import assert_same


@pytest.mark.parametrize(
    "actual, expected",
    [
        (1.0 + 1e-12, 1.0),
        (3, 3.0),
        (np.float64(0.5), 0.5),
        (np.array(0.5), 0.5),
        (True, True),
        (np.bool_(False), False),
        ([0.5, 1.5], np.array([0.5, 1.5])),
        (np.zeros((0, 3)), np.zeros((0, 3))),  # an empty reference needs an empty answer
        ((np.ones(2), 1.0), (np.ones(2), 1.0)),
        ([np.ones(2), 1.0], (np.ones(2), 1.0)),
        ({0.1: True}, {0.1: True}),
        (range(3), np.arange(3)),
        (np.array([np.inf, 1.0]), np.array([np.inf, 1.0])),
        (np.array([True, False]), np.array([True, False])),
    ],
)
def test_the_same_answer_passes(actual, expected):
    assert_same(actual, expected)


@pytest.mark.parametrize(
    "actual, expected, says",
    [
        (np.zeros((0, 3)), np.ones(3), "shape"),  # np.allclose says True here
        (np.zeros(0), np.ones(3), "shape"),
        ([], np.ones(3), "shape"),
        ((), (np.ones(2), 1.0), "2 items"),
        (np.ones((1, 3)), np.ones(3), "shape"),
        (np.ones(3), 1.0, "number"),
        (None, 1.0, "number"),
        (True, 1.0, "number"),  # a truth value is not the number 1
        (1, True, "True or False"),
        ("0.5", 0.5, "number"),
        (None, np.ones(2), "array of numbers"),
        ("ab", np.ones(2), "array of numbers"),
        ([[1.0], [1.0, 2.0]], np.ones((2, 2)), "rectangular"),
        (np.array([1.0, np.nan]), np.array([1.0, 2.0]), "index (1,)"),
        (np.nan, 1.0, "nan"),
        (np.array([1.0, 2.1]), np.array([1.0, 2.0]), "1 of 2 values differ"),
        (np.ones(2), np.array([True, True]), "truth values"),
        ({0.1: True}, {0.1: True, 1.0: False}, "keys"),
        ([1.0, 2.0], (1.0, 2.0, 3.0), "3 items"),
        (1.0 + 1e-6, 1.0, "expected 1.0"),
    ],
)
def test_a_different_answer_fails_and_says_why(actual, expected, says):
    with pytest.raises(AssertionError, match=says.replace("(", r"\(").replace(")", r"\)")):
        assert_same(actual, expected, what="answer")


def test_tolerances_are_relative_and_absolute():
    assert_same(1.0 + 1e-7, 1.0, rtol=1e-6)
    assert_same(1e-13, 0.0, atol=1e-12)
    with pytest.raises(AssertionError):
        assert_same(1e-13, 0.0, rtol=1e-6)  # relative to 0 is exact
    with pytest.raises(ValueError, match="rtol"):
        assert_same(1.0, 1.0, rtol=-1)


def test_the_message_names_the_item_of_a_tuple():
    with pytest.raises(AssertionError, match=r"step\(\)\[1\] must have shape \(2,\)"):
        assert_same((np.ones(2), np.ones(3)), (np.ones(2), np.ones(2)), what="step()")


def test_a_pair_may_be_an_array_along_its_first_axis():
    """Lab 6 ex 4 and the labs' Rules: "the pair" may be a tuple, a list or an array."""
    assert_same(np.array([0.2, 50.0]), (0.2, 50.0))
    assert_same(np.ones((2, 3)), (np.ones(3), np.ones(3)))
    with pytest.raises(AssertionError, match="must have 2 items; got 3"):
        assert_same(np.array([0.2, 50.0, 1.0]), (0.2, 50.0))
    with pytest.raises(AssertionError, match=r"must be a tuple \(or list, or array\)"):
        assert_same(np.float64(0.2), (0.2, 50.0))


def test_keeps_inputs_names_the_argument_a_function_changed():
    from perceptrons.testing import keeps_inputs

    def step(w, delta):
        w += delta
        return w

    def fair(w, delta):
        return w + delta

    w = np.array([1.0, 2.0])
    assert_same(keeps_inputs(fair)(w, np.ones(2)), np.array([2.0, 3.0]))
    with pytest.raises(AssertionError, match=r"step changed its argument 1 in place"):
        keeps_inputs(step)(w, np.ones(2))
    with pytest.raises(AssertionError, match=r"argument delta in place"):
        keeps_inputs(lambda w, delta: delta.append(0))(w, delta=[1.0])
    assert keeps_inputs(lambda x: x)(float("nan")) != 0  # NaN stays NaN: unchanged
