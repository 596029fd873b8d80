"""Slider callbacks never raise over their whole range and report what happened."""

import io

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
    for eta in np.geomspace(*widgets.RANGES["pt_eta"], 26):
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
    slider = ipywidgets.FloatSlider(value=0.5, min=0, max=1, description="η")
    box = widgets.slider_panel(fig, lambda eta: calls.append(eta) or f"eta {eta}", eta=slider)
    slider.value = 0.75
    assert calls == [0.5, 0.75]
    assert box.children[1].value == "eta 0.75"
    figure = box.children[2].value
    assert figure.startswith('<img alt="The figure for η = 0.75: eta 0.75" src="data:image/png;')


def test_animation_html_carries_alt_text():
    fig, ax = plt.subplots()
    (line,) = ax.plot([], [])
    anim = FuncAnimation(fig, lambda k: (line.set_data([0, k], [0, k]), line)[1:], frames=2)
    html = plotting.animation_html(anim, 'PT moves the "line"')
    assert '<img alt="PT moves the &quot;line&quot;" id=' in html


def test_animation_player_needs_no_icon_font_from_a_cdn():
    fig, ax = plt.subplots()
    (line,) = ax.plot([], [])
    anim = FuncAnimation(fig, lambda k: (line.set_data([0, k], [0, k]), line)[1:], frames=2)
    html = plotting.animation_html(anim, "a line")
    assert "https://" not in html and 'class="fa' not in html
    assert html.count('<span aria-hidden="true">') == 9  # one symbol per button
    assert 'aria-label="Play backwards"' in html  # the buttons keep their names


def test_gd_path_demo_over_both_sliders_including_end_points():
    fig, update = widgets.rosenbrock_demo()  # the momentum chapter's panel, 500 steps
    path_line = fig.axes[0].get_lines()[0]
    seen = set()
    for eta in np.geomspace(*widgets.RANGES["momentum_eta"], 9):
        for alpha in np.linspace(*widgets.RANGES["momentum_alpha"], 4):
            status = update(eta=float(eta), alpha=alpha)
            seen.add(status.split(": ")[1].split(" ")[0])
            xy = path_line.get_xydata()
            assert np.all(np.isfinite(xy)), status
            res = P.gd(
                P.rosenbrock_grad, [-1.2, 1.0], float(eta), alpha=alpha, steps=500, warn=False
            )
            np.testing.assert_array_equal(xy, res.path)
            if res.diverged:
                assert f"diverged at step {res.steps + 1}" in status
    assert "diverged" in seen and "stopped" in seen


def test_gd_path_demo_pitfalls_slider_range():
    _, update = widgets.gd_path_demo(P.hill_valley, P.hill_valley_grad, np.array([0.5, -1.3]))
    for eta in np.geomspace(*widgets.RANGES["pitfalls_eta"], 15):
        status = update(eta=float(eta))
        assert status.startswith(f"η = {eta:g}:")
    assert "converged in" in update(eta=0.1)


def test_logistic_demo_over_the_slider_range():
    X, y = P.blobs(60, rng=2)
    fig, update = widgets.logistic_demo(X, y, steps=300)
    line = fig.axes[0].get_lines()[0]
    for eta in np.geomspace(*widgets.RANGES["logistic_eta"], 9):
        status = update(eta=float(eta))
        assert "log-likelihood" in status
        assert np.all(np.isfinite(line.get_xydata()))


def test_figure_renderer_redraws_only_what_moves():
    from PIL import Image as PILImage

    fig, update = widgets.gd_path_demo(P.hill_valley, P.hill_valley_grad, np.array([0.5, -1.3]))
    renderer = widgets.FigureRenderer(fig, update.artists, dpi=50)
    update(eta=0.1)
    first = renderer.png()
    update(eta=1.0)
    second = renderer.png()
    update(eta=0.1)
    third = renderer.png()
    assert first == third != second  # the same state gives the same picture
    width, height = fig.get_size_inches() * 50
    assert PILImage.open(io.BytesIO(first)).size == (round(width), round(height))
    assert all(artist.get_animated() for artist in update.artists)


def test_animation_html_is_the_same_twice():
    def make():
        fig, ax = plt.subplots()
        (line,) = ax.plot([], [])
        anim = FuncAnimation(fig, lambda k: (line.set_data([0, k], [0, k]),), frames=3)
        return plotting.animation_html(anim, "same")

    first, second = make(), make()
    assert first == second
    assert "_anim_img" in first


def test_log_slider_spans_the_range_exactly():
    slider = widgets.log_slider("η", 0.2, *widgets.RANGES["pt_eta"])
    assert 10**slider.min == pytest.approx(1e-3) and 10**slider.max == pytest.approx(1e2)
    alpha = widgets.linear_slider("α", 0.9, *widgets.RANGES["momentum_alpha"])
    assert (alpha.min, alpha.max) == (0.0, 0.99)
