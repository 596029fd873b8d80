"""Slider callbacks never raise over their whole range and report what happened."""

import ipywidgets
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.animation import FuncAnimation

import perceptrons as P
from perceptrons import plotting, widgets


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_pt_eta_demo_over_the_slider_range():
    X, c, _ = P.separable(40, margin=0.05, rng=0)
    fig, update = widgets.pt_eta_demo(X, c, w0=np.array([0.5, -1.0, 0.3]))
    final = fig.axes[0].get_lines()[-1]
    for eta in np.logspace(-3, 2, 26):  # the chapter's FloatLogSlider: 10^-3 .. 10^2
        status = update(eta=float(eta))
        assert status.startswith(f"η = {eta:g}:")
        w = P.pt(X, c, eta=float(eta), w0=np.array([0.5, -1.0, 0.3]), max_epochs=50, warn=False).w
        xy = np.column_stack(final.get_data())
        np.testing.assert_allclose(xy @ w[1:] + w[0], 0.0, atol=1e-8)


def test_pt_eta_demo_reports_non_convergence():
    X, c = P.xor()
    _, update = widgets.pt_eta_demo(X, c, w0=np.zeros(3), max_epochs=5)
    assert "not converged in 5 epochs" in update(eta=1.0)


def test_small_multiples_makes_one_panel_per_value():
    X, c, _ = P.separable(20, rng=1)
    fig = widgets.small_multiples(
        widgets.pt_eta_demo, "eta", [0.1, 1, 10, 100], X=X, c=c, w0=np.array([0.1, 1.0, 1.0])
    )
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len(visible) == 4
    assert [ax.get_title().split(":")[0] for ax in visible] == [
        "η = 0.1",
        "η = 1",
        "η = 10",
        "η = 100",
    ]


def test_slider_panel_calls_update_with_slider_values():
    calls = []
    fig, _ = plt.subplots()
    slider = ipywidgets.FloatSlider(value=0.5, min=0, max=1)
    box = widgets.slider_panel(fig, lambda eta: calls.append(eta) or f"eta {eta}", eta=slider)
    slider.value = 0.75
    assert calls == [0.5, 0.75]
    assert box.children[1].value == "eta 0.75"


def test_animation_html_carries_alt_text():
    fig, ax = plt.subplots()
    (line,) = ax.plot([], [])
    anim = FuncAnimation(fig, lambda k: (line.set_data([0, k], [0, k]), line)[1:], frames=2)
    html = plotting.animation_html(anim, 'PT moves the "line"')
    assert '<img alt="PT moves the &quot;line&quot;" id=' in html
