"""Plot helpers draw where they say and return the Axes."""

import matplotlib.pyplot as plt
import numpy as np
import pytest

import perceptrons as P
from perceptrons import plotting


@pytest.fixture
def ax():
    fig, ax = plt.subplots()
    yield ax
    plt.close(fig)


def test_boundary_points_lie_on_the_hyperplane():
    for w in ([0.5, 1.0, -2.0], [0.3, 4.0, 0.5], [-1.0, 0.0, 1.0], [2.0, 1.0, 0.0]):
        pts = plotting.boundary_points(w, (-3, 3))
        np.testing.assert_allclose(pts @ np.array(w[1:]) + w[0], 0.0, atol=1e-12)
    assert plotting.boundary_points([1.0, 0.0, 0.0], (-1, 1)) is None


def test_plot_decision_boundary_draws_data_and_line(ax):
    X, c, _ = P.separable(20, rng=0)
    w = P.pt(X, c).w
    assert plotting.plot_decision_boundary(X, c, w, ax=ax) is ax
    assert len(ax.collections) == 2  # one scatter per class
    (line,) = ax.get_lines()
    xy = np.column_stack(line.get_data())
    np.testing.assert_allclose(xy @ w[1:] + w[0], 0.0, atol=1e-9)


def test_plot_path_and_loss_return_the_axes(ax):
    path = P.gd(P.rosenbrock_grad, [-1.0, 1.0], eta=1e-3, steps=50, warn=False).path
    assert plotting.plot_path(P.rosenbrock, path, ax=ax) is ax
    np.testing.assert_array_equal(ax.get_lines()[0].get_xydata(), path)
    fig, ax2 = plt.subplots()
    assert plotting.plot_loss([3.0, 2.0, 1.0], ax=ax2) is ax2
    assert ax2.get_yscale() == "log"
    plt.close(fig)


def test_palette_is_okabe_ito():
    assert plotting.CLASS_STYLE[0]["color"] == "#D55E00"
    assert plotting.CLASS_STYLE[1]["color"] == "#0072B2"
