"""Slider callbacks never raise over their whole range and report what happened."""

import io
import itertools

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
    # one legend for the figure, outside every panel, so that it hides no data
    assert all(ax.get_legend() is None for ax in visible) and len(fig.legends) == 1
    fig.canvas.draw()
    legend = fig.legends[0].get_window_extent()
    assert not any(legend.overlaps(ax.get_window_extent()) for ax in visible)


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
    assert 'class="anim-slider" aria-label="Animation frame"' in html


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
                assert f"diverged at step {res.iterations + 1}" in status
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


# Frame panels: what the book's build saves so that the sliders move on the static site.


def _leaves(widget):
    """The frames of a frame panel's stack, in product order of the sliders' values."""
    if isinstance(widget, ipywidgets.HTML):
        return [widget]
    return [leaf for child in widget.children for leaf in _leaves(child)]


def _frame_png(value):
    import base64
    import re

    return base64.b64decode(re.search(r'src="data:image/png;base64,([^"]+)"', value)[1])


def test_frame_slider_steps_through_the_sliders_positions():
    eta = widgets.frame_slider(widgets.log_slider("η", 0.2, *widgets.RANGES["pt_eta"], step=0.5))
    values = [v for _, v in eta.options]
    assert values == [0.001, 0.00316, 0.01, 0.0316, 0.1, 0.316, 1.0, 3.16, 10.0, 31.6, 100.0]
    assert [label for label, _ in eta.options][:2] == ["0.001", "0.00316"]
    assert eta.value == 0.316 and eta.description == "η"  # 0.2 snapped in log scale
    alpha = widgets.frame_slider(
        widgets.linear_slider("α", 0.9, *widgets.RANGES["momentum_alpha"], step=0.09)
    )
    assert len(alpha.options) == 12 and alpha.options[-1][1] == 0.99 and alpha.value == 0.9


def test_frame_panel_holds_the_frame_of_every_combination():
    def sliders():
        return {
            "eta": widgets.frame_slider(widgets.log_slider("η", 1e-3, 1e-4, 1e-2, step=1)),
            "alpha": widgets.frame_slider(widgets.linear_slider("α", 0.5, 0.0, 0.9, step=0.45)),
        }

    fig, update = widgets.rosenbrock_demo()
    knobs = sliders()
    panel = widgets.frame_panel(fig, update, **knobs)
    assert "frame-slider" in panel._dom_classes
    outer = panel.children[2]
    assert isinstance(outer, ipywidgets.Stack) and len(outer.children) == 3
    assert all(isinstance(inner, ipywidgets.Stack) for inner in outer.children)
    assert outer.selected_index == knobs["eta"].index == 1
    assert all(inner.selected_index == knobs["alpha"].index == 1 for inner in outer.children)
    # one Link per stack, from the slider's index to the stack's selected_index
    assert [(link.source, link.target) for link in panel.links] == [
        ((knobs["alpha"], "index"), (inner, "selected_index")) for inner in outer.children
    ] + [((knobs["eta"], "index"), (outer, "selected_index"))]
    _, reference = widgets.rosenbrock_demo()  # a second demo: the status of each run
    leaves = _leaves(outer)
    assert len(leaves) == 9
    values = itertools.product([1e-4, 1e-3, 1e-2], [0, 0.45, 0.9])
    for leaf, (eta, alpha) in zip(leaves, values, strict=True):
        status = reference(eta=eta, alpha=alpha)
        assert f'<p class="frame-status">{status}</p>' in leaf.value
        assert f'alt="The figure for η = {eta:.3g}, α = {alpha:.3g}: {status}"' in leaf.value
    # deterministic: a second panel has the same bytes; different runs differ
    again = widgets.frame_panel(*widgets.rosenbrock_demo(), **sliders())
    assert [leaf.value for leaf in _leaves(again.children[2])] == [leaf.value for leaf in leaves]
    assert again.children[1].value == panel.children[1].value
    assert len({_frame_png(leaf.value) for leaf in leaves}) == 9


def test_a_frame_over_its_background_is_the_live_picture():
    from PIL import Image as PILImage

    fig, update = widgets.gd_path_demo(P.hill_valley, P.hill_valley_grad, np.array([0.5, -1.3]))
    eta = widgets.frame_slider(widgets.log_slider("η", 0.1, 0.01, 1.0, step=1))
    panel = widgets.frame_panel(fig, update, eta=eta)
    background = panel.children[1].value
    import base64
    import re

    ground = base64.b64decode(re.search(r"base64,([^)]+)\)", background)[1])
    ground = PILImage.open(io.BytesIO(ground)).convert("RGBA")
    composed = []
    for leaf in _leaves(panel.children[2]):
        frame = PILImage.open(io.BytesIO(_frame_png(leaf.value))).convert("RGBA")
        composed.append(np.asarray(PILImage.alpha_composite(ground, frame), dtype=float))
    for k, value in enumerate([0.01, 0.1, 1.0]):  # the live panel's picture of each value
        fig2, update2 = widgets.gd_path_demo(
            P.hill_valley, P.hill_valley_grad, np.array([0.5, -1.3])
        )
        renderer = widgets.FigureRenderer(fig2, update2.artists)
        update2(eta=0.1)  # the panel's first value, as frame_panel lays the figure out
        renderer.rgba()
        update2(eta=value)
        live = np.asarray(renderer.rgba(), dtype=float)
        # share of pixels that differ clearly (more than a quarter of the range)
        errors = [(np.abs(c - live).max(axis=-1) > 64).mean() for c in composed]
        assert errors[k] < 1e-3 < min(e for j, e in enumerate(errors) if j != k), errors
        plt.close(fig2)


def test_slider_panel_draws_frames_in_the_build(monkeypatch):
    fig, update = widgets.logistic_demo(*P.blobs(40, rng=3), steps=50)
    slider = widgets.log_slider("η", 0.01, 1e-3, 1.0, step=1)
    monkeypatch.setenv(widgets.FRAMES_ENV, "1")
    panel = widgets.slider_panel(fig, update, eta=slider)
    assert "frame-slider" in panel._dom_classes
    assert len(_leaves(panel.children[2])) == 4
    monkeypatch.delenv(widgets.FRAMES_ENV)
    fig, update = widgets.logistic_demo(*P.blobs(40, rng=3), steps=50)
    live = widgets.slider_panel(fig, update, eta=widgets.log_slider("η", 0.01, 1e-3, 1.0))
    assert "frame-slider" not in live._dom_classes and live.children[2].value.startswith("<img")


def test_frame_panel_refuses_too_many_frames():
    fig, update = widgets.rosenbrock_demo()
    eta = widgets.frame_slider(widgets.log_slider("η", 1e-3, 1e-4, 1e-2, step=0.05))  # 41
    alpha = widgets.frame_slider(widgets.linear_slider("α", 0.5, 0.0, 0.99, step=0.11))  # 10
    with pytest.raises(ValueError, match="410 frames; at most 200"):
        widgets.frame_panel(fig, update, eta=eta, alpha=alpha)


def jump_stream(T=1200, seed=1):
    """White inputs, a system whose two gains jump at T/2, and the noisy responses."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(T, 2))
    gains = np.where(np.arange(T)[:, None] < T // 2, [1.0, -1.0], [-0.5, 1.5])
    d = np.sum(X * gains, axis=1) + 0.3 * rng.normal(size=T)
    return X, d, np.column_stack([np.zeros(T), gains])


def test_lms_eta_demo_over_the_slider_range_draws_the_distance_it_reports():
    X, d, w_true = jump_stream()
    fig, update = widgets.lms_eta_demo(X, d, w_true, jump=600, window=100)
    line = fig.axes[0].get_lines()[0]
    seen = []
    for eta in np.geomspace(*widgets.RANGES["lms_eta"], 13):
        status = update(eta=float(eta))
        assert status.startswith(f"η = {eta:g}:")
        seen.append("blow up" in status)
        if "blow up" not in status:
            dist = np.linalg.norm(P.lms(X, d, float(eta)).path[1:] - w_true, axis=1)
            np.testing.assert_allclose(line.get_ydata(), np.clip(dist, 1e-3, 1e2))
            # what the noise moves: the run minus the same run on the noiseless responses
            noiseless = np.sum(P.augment(X) * w_true, axis=1)
            shaken = P.lms(X, d, float(eta)).path - P.lms(X, noiseless, float(eta)).path
            spread = np.std(shaken[1:][-300:], axis=0).mean()
            assert f"spread at the end {spread:.3f}" in status
    assert not seen[0] and seen[-1]  # the range shows a stable and a diverging η


def test_lms_eta_demo_counts_no_lag_as_noise():
    """A small η still catching up with the jump at the end of the stream shakes little: the
    spread rises with η at every position of the slider below the blow-up (measured as the
    spread of the weights about the system's, the smallest η would shake the most)."""
    X, d, w_true = jump_stream()
    _, update = widgets.lms_eta_demo(X, d, w_true, jump=600, window=100)
    etas = 10 ** np.arange(-3, np.log10(0.3), 0.125)
    spreads = [float(update(eta=float(e)).split("spread at the end ")[1]) for e in etas]
    assert np.all(np.diff(spreads) > 0), dict(zip(etas.round(4), spreads, strict=True))
    lagging = P.lms(X, d, 1e-3).path[1:][-300:] - w_true[-300:]
    assert np.std(lagging, axis=0).mean() > spreads[12] > 10 * spreads[0]  # η = 0.0316, 0.001


def test_lms_eta_demo_trades_tracking_against_noise():
    X, d, w_true = jump_stream()
    _, update = widgets.lms_eta_demo(X, d, w_true, jump=600, window=100)

    def numbers(status):
        after = float(status.split("after the jump ")[1].split(";")[0])
        return after, float(status.split("spread at the end ")[1])

    slow, fast = numbers(update(eta=0.02)), numbers(update(eta=0.1))
    assert fast[0] < slow[0]  # a short memory follows the jump sooner
    assert slow[1] < fast[1]  # a long memory averages the noise away


def test_batch_size_demo_over_both_sliders():
    X, c = P.blobs(n=60, p=2, distance=2.5, rng=0)
    fig, update = widgets.batch_size_demo(X, c, epochs=20)
    lines = fig.axes[0].get_lines()
    err_min = P.sq_error(P.lls(X, c), X, c)
    for eta in np.geomspace(*widgets.RANGES["batch_eta"], 5):
        for b in (1, 7, 60):
            status = update(eta=float(eta), batch_size=b)
            assert status.startswith(f"η = {eta:g}, after 20 epochs:") and f"b = {b} (" in status
            run = P.mbgd(X, c, eta=float(eta), batch_size=b, max_epochs=20, tol=1e-300,
                         stop="err", warn=False)  # fmt: skip
            np.testing.assert_allclose(lines[1].get_ydata(), np.maximum(run.loss - err_min, 1e-12))
    assert "BGD (1 update an epoch) diverges" in update(eta=0.03, batch_size=1)
    assert "IGD (60 updates an epoch) diverges" not in update(eta=0.03, batch_size=1)
