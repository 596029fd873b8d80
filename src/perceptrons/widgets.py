"""Slider panels for the chapters: a figure whose artists move when a slider moves.

Each ``*_demo`` function builds a figure once and returns it with an ``update(**values)``
callback that changes only the moving artists (``set_data``) and returns a one-line status
such as "converged after 12 updates" or "diverged at step 7"; ``update.artists`` lists the
artists it moves. :func:`slider_panel` wires the callback to ipywidgets sliders and shows
the figure through a :class:`FigureRenderer`, which draws the static parts (contours, data)
once and then only the moving artists. Benchmarks and tests call ``update`` directly.

With a kernel the panel computes each picture live. The book's build sets
``PERCEPTRONS_SLIDER_FRAMES=1`` (``_ext/book_fixes.py``); then :func:`slider_panel` makes a
:func:`frame_panel` instead: the same ``update`` draws one frame per slider position, and
the saved page switches frames in the browser (``jslink``), with no kernel.
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import itertools
import os
from collections.abc import Callable

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection
from PIL import Image

from . import plotting
from .datasets import rosenbrock, rosenbrock_grad
from .delta_rule import bgd, igd, lls, lms, mbgd, sq_error
from .gradient_descent import gd
from .logistic import logistic_regression
from .perceptron import pt

#: The slider ranges used in the book, (lowest, highest) value; tests and benchmarks run
#: every callback over these ranges, end points included.
RANGES = {
    "pt_eta": (1e-3, 1e2),
    "pitfalls_eta": (1e-3, 10**0.5),
    "momentum_eta": (1e-4, 1e-2),
    "momentum_alpha": (0.0, 0.99),
    "logistic_eta": (1e-4, 1.0),
    "lms_eta": (1e-3, 1.0),
    "batch_eta": (1e-4, 0.03),
}

#: Set (to anything but "") by the book's build: slider panels become frame panels.
FRAMES_ENV = "PERCEPTRONS_SLIDER_FRAMES"
#: At most this many frames in one panel (all slider combinations).
MAX_FRAMES = 200


def log_slider(description, value, low, high, step=0.05):
    """A logarithmic ipywidgets slider from ``low`` to ``high`` (both > 0)."""
    import ipywidgets as widgets

    return widgets.FloatLogSlider(
        value=value,
        base=10,
        min=np.log10(low),
        max=np.log10(high),
        step=step,
        description=description,
        readout_format=".3g",
    )


def linear_slider(description, value, low, high, step=0.01):
    """A linear ipywidgets slider from ``low`` to ``high``."""
    import ipywidgets as widgets

    return widgets.FloatSlider(value=value, min=low, max=high, step=step, description=description)


def choice_slider(description, values, value):
    """A slider over the given values (e.g. batch sizes), starting at ``value``."""
    import ipywidgets as widgets

    return widgets.SelectionSlider(
        options=[(f"{v:g}", v) for v in values], value=value, description=description
    )


class FigureRenderer:
    """Render a figure to PNG quickly, again and again, while only some artists change.

    The first call draws everything except ``artists`` and keeps that image; each later
    call pastes it back and draws just ``artists`` on top (blitting). The layout is frozen
    after the first call.
    """

    def __init__(self, fig, artists=(), dpi=80):
        self.fig, self.artists = fig, list(artists)
        fig.set_dpi(dpi)
        for artist in self.artists:
            artist.set_animated(True)  # left out of full draws, drawn by hand below
        self.canvas = fig.canvas if hasattr(fig.canvas, "copy_from_bbox") else FigureCanvasAgg(fig)
        self.background = None

    def png(self) -> bytes:
        """The figure as PNG bytes."""
        buffer = io.BytesIO()
        Image.fromarray(self.rgba()).save(buffer, "png", compress_level=1)
        return buffer.getvalue()

    def rgba(self):
        """The figure as an RGBA array of shape (height, width, 4)."""
        if self.background is None:
            self.canvas.draw()
            self.fig.set_layout_engine("none")
            self.background = self.canvas.copy_from_bbox(self.fig.bbox)
        else:
            self.canvas.restore_region(self.background)
        for artist in self.artists:
            self.fig.draw_artist(artist)
        return np.asarray(self.canvas.buffer_rgba())


def slider_panel(fig, update: Callable[..., str], **sliders):
    """An ipywidgets box with ``sliders`` (name -> widget) above the figure ``fig``.

    Moving a slider calls ``update(**values)`` and shows the redrawn figure and its status;
    the figure is an <img> whose alt text says the slider values and the status in words.
    (An ``ipywidgets.Image`` has no alt text, and its tooltip breaks its saved view.)
    When ``$PERCEPTRONS_SLIDER_FRAMES`` is set (the book's build), this is a
    :func:`frame_panel` over the sliders' positions (:func:`frame_slider`) instead.
    """
    import ipywidgets as widgets

    if os.environ.get(FRAMES_ENV):
        return frame_panel(fig, update, **{name: frame_slider(w) for name, w in sliders.items()})
    plt.close(fig)  # shown through the Image widget only, not again by the inline backend
    renderer = FigureRenderer(fig, getattr(update, "artists", ()))
    image, status = widgets.HTML(), widgets.Label()

    def redraw(_=None):
        status.value = update(**{name: shown(w) for name, w in sliders.items()})
        values = ", ".join(f"{w.description} = {w.value:.3g}" for w in sliders.values())
        alt = html.escape(f"The figure for {values}: {status.value}")
        png = base64.b64encode(renderer.png()).decode()
        image.value = f'<img alt="{alt}" src="data:image/png;base64,{png}">'

    for w in sliders.values():
        w.continuous_update = False
        w.observe(redraw, names="value")
    redraw()
    return widgets.VBox([_slider_row(sliders), status, image])


def shown(slider):
    """The value a slider's readout shows, as the number it runs with: a float slider's to
    three significant digits (a log slider's 10**-2.7 shows, and runs, as 0.002), so that
    typing what the readout says gives what the status said."""
    value = slider.value
    return float(f"{value:.3g}") if isinstance(value, float) else value


def _slider_row(sliders):
    """The sliders side by side, wrapping onto more lines on a narrow (phone) screen rather
    than squeezing each track to nothing."""
    import ipywidgets as widgets

    return widgets.HBox(list(sliders.values()), layout=widgets.Layout(flex_flow="row wrap"))


def frame_slider(slider):
    """A ``SelectionSlider`` over the positions of a float slider: min to max by step
    (``FloatLogSlider``: in powers of its base) rounded to three significant digits, its
    value snapped to the nearest one."""
    import ipywidgets as widgets

    if isinstance(slider, widgets.SelectionSlider):
        return slider
    n = round((slider.max - slider.min) / slider.step) + 1
    positions = np.linspace(slider.min, slider.max, n)
    log = isinstance(slider, widgets.FloatLogSlider)
    # three significant digits, as the readout shows them, so readout and status agree
    values = [float(f"{v:.3g}") for v in (slider.base**positions if log else positions)]
    where = np.log(slider.value) / np.log(slider.base) if log else slider.value
    return widgets.SelectionSlider(
        options=[(f"{v:.3g}", v) for v in values],
        index=int(np.argmin(np.abs(positions - where))),
        description=slider.description,
    )


def _png_small(rgba) -> bytes:
    """An RGBA image (H, W, 4) as a small PNG (at most 256 colours, transparency kept)."""
    image = Image.fromarray(np.asarray(rgba))
    palette = image.quantize(256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
    buffer = io.BytesIO()
    palette.save(buffer, "png")
    return buffer.getvalue()


def _data_url(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode()


def frame_panel(fig, update: Callable[..., str], **sliders):
    """The panel of :func:`slider_panel` that needs no kernel: every frame drawn in advance.

    ``sliders`` maps names to ``ipywidgets.SelectionSlider``; for every combination of their
    values ``update(**values)`` draws one frame: the status line and an <img> whose alt text
    names the values and the status. Frames sit in nested ``Stack``s (one level per slider)
    whose ``selected_index`` is ``jslink``-ed to the slider's ``index``, so the browser
    switches frames itself, also in a saved page.

    What does not move (axes, contours, data) is stored once, as the CSS background of
    every frame's <img>; each frame's PNG holds only the moving artists on a transparent
    ground. Frames are deterministic: the same values give the same bytes.
    """
    import ipywidgets as widgets

    names = list(sliders)
    choices = [[value for _, value in sliders[name].options] for name in names]
    count = int(np.prod([len(c) for c in choices]))
    if count > MAX_FRAMES:
        raise ValueError(f"the sliders give {count} frames; at most {MAX_FRAMES} are allowed")
    plt.close(fig)
    renderer = FigureRenderer(fig, getattr(update, "artists", ()))
    update(**{name: sliders[name].value for name in names})  # the layout makes room for it
    renderer.rgba()  # draws and keeps the background
    canvas = renderer.canvas
    canvas.restore_region(renderer.background)
    background = _png_small(np.asarray(canvas.buffer_rgba()))
    css = "frames-" + hashlib.sha256(background).hexdigest()[:12]  # from the content
    height, width = np.asarray(canvas.buffer_rgba()).shape[:2]
    style = widgets.HTML(
        f"<style>img.{css} {{background: url({_data_url(background)}) 0 0 / 100% 100%;"
        f" width: {width}px; max-width: 100%; height: auto; display: block}}</style>",
        layout=widgets.Layout(display="none"),
    )
    leaves = []
    for combination in itertools.product(*choices):
        values = dict(zip(names, combination, strict=True))
        status = update(**values)
        shown = ", ".join(f"{sliders[n].description} = {v:.3g}" for n, v in values.items())
        alt = html.escape(f"The figure for {shown}: {status}")
        canvas.get_renderer().clear()  # transparent: the frame holds only what moves
        for artist in renderer.artists:
            fig.draw_artist(artist)
        png = _data_url(_png_small(np.asarray(canvas.buffer_rgba())))
        leaves.append(
            widgets.HTML(
                f'<p class="frame-status">{html.escape(status)}</p>'
                f'<img class="{css}" alt="{alt}" src="{png}">'
            )
        )
    links = []

    def stack(level, frames):
        """Stack the frames (in product order) along slider `level`, linked to it."""
        if level == len(names):
            return frames[0]
        size = len(frames) // len(choices[level])
        children = [stack(level + 1, frames[k : k + size]) for k in range(0, len(frames), size)]
        slider = sliders[names[level]]
        box = widgets.Stack(children, selected_index=slider.index)
        links.append(widgets.jslink((slider, "index"), (box, "selected_index")))
        return box

    frames = stack(0, leaves)
    panel = widgets.VBox([_slider_row(sliders), style, frames])
    panel.add_class("frame-slider")
    panel.links = links  # the Link widgets, for tests; the saved state holds them too
    return panel


def _boundary_segments(ws, lim):
    segs = [plotting.boundary_points(w, lim) for w in ws]
    return [s for s in segs if s is not None]


def _new_ax(ax, figsize):
    if ax is None:
        _, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax


def pt_eta_demo(X, c, w0, max_epochs=50, ax=None):
    """PT from the start ``w0`` with a chosen η: the final line and the lines on the way.

    X (n, 2), c (n,), w0 (3,). Returns (fig, update) with update(eta) -> status.
    """
    ax = _new_ax(ax, (5, 4.5))
    plotting.plot_decision_boundary(X, c, w0, ax=ax, show_data=True, label="start", color="0.6")
    lim = ax.get_xlim()
    trail = LineCollection([], colors=plotting.OKABE_ITO["sky"], linewidths=0.8, alpha=0.6)
    ax.add_collection(trail)
    (final,) = ax.plot([], [], color=plotting.OKABE_ITO["black"], lw=2, label="after PT")
    ax.legend(loc="lower left", fontsize="small")

    def update(eta: float) -> str:
        """Train with this η and move the lines; return the status line."""
        res = pt(X, c, eta=eta, w0=w0, max_epochs=max_epochs, warn=False)
        trail.set_segments(_boundary_segments(res.path[1:-1], lim))
        end = plotting.boundary_points(res.w, lim)
        final.set_data(*(end.T if end is not None else ([], [])))
        if res.converged:
            status = f"η = {eta:g}: {res.mistakes} updates, {res.iterations} epochs"
        else:
            status = f"η = {eta:g}: not converged in {max_epochs} epochs"
        ax.set_title(status, fontsize="small")
        return status

    update.artists = [trail, final, ax.title]
    return ax.figure, update


def _status(res, what="steps"):
    if res.diverged:
        return f"diverged at step {res.iterations + 1}"
    if res.converged:
        return f"converged in {res.iterations} {what}"
    return f"stopped after {res.iterations} {what}"


def gd_path_demo(
    f, grad, w0, xlim=(-2, 2), ylim=(-2, 2), steps=300, levels=30, ax=None, below=None
):
    """Gradient descent (with momentum) on a 2-D function: contours once, the path on top.

    f : (..., 2) -> (...); grad : (2,) -> (2,); w0 : (2,). Returns (fig, update) with
    update(eta, alpha=0.0) -> status, e.g. "η = 0.1: converged in 57 steps, f = -0.4289".
    ``below``: a threshold; the status then also says at which step f first fell below it
    ("f < 0.0001 from step 117"), or that it never did ("f never < 0.0001").
    """
    ax = _new_ax(ax, (5, 4.5))
    plotting.plot_path(f, np.array([w0]), ax=ax, xlim=xlim, ylim=ylim, levels=levels)
    path_line = ax.get_lines()[0]
    (end,) = ax.plot([], [], "X", ms=10, color=plotting.OKABE_ITO["black"])

    def update(eta: float, alpha: float = 0.0) -> str:
        """Run gd with this η and α and move the path; return the status line."""
        res = gd(grad, w0, eta, alpha=alpha, steps=steps, tol=1e-6, warn=False)
        path_line.set_data(res.path[:, 0], res.path[:, 1])
        end.set_data([res.w[0]], [res.w[1]])
        status = f"η = {eta:g}" + (f", α = {alpha:g}" if alpha else "") + f": {_status(res)}"
        if not res.diverged:
            status += f", f = {float(f(res.w)):.4g}"
        if below is not None:
            first = np.flatnonzero(f(res.path) < below)
            reached = first.size and not res.diverged
            status += (
                f"; f < {below:g} from step {first[0]}" if reached else (f"; f never < {below:g}")
            )
        ax.set_title(status, fontsize="small")
        return status

    update.artists = [path_line, end, ax.title]
    return ax.figure, update


def rosenbrock_demo(steps=500, ax=None):
    """The momentum chapter's panel: :func:`gd_path_demo` on the Rosenbrock function from
    (-1.2, 1), over the window [-1.5, 1.5] x [-0.5, 1.5]. update(eta, alpha) -> status."""
    return gd_path_demo(
        rosenbrock,
        rosenbrock_grad,
        np.array([-1.2, 1.0]),
        xlim=(-1.5, 1.5),
        ylim=(-0.5, 1.5),
        steps=steps,
        levels=np.logspace(-1, 3, 15),
        ax=ax,
    )


def logistic_demo(X, c, steps=500, ax=None):
    """Logistic regression by gradient ascent with a chosen η: the 0.5 boundary on the data.

    X (n, 2), c (n,) in {0, 1}. Returns (fig, update) with update(eta) -> status.
    """
    ax = _new_ax(ax, (5, 4.5))
    plotting.plot_data(X, c, ax=ax)
    pad = 0.2 * (X.max() - X.min())
    lim = (X.min() - pad, X.max() + pad)
    ax.set(xlim=lim, ylim=lim, aspect="equal", xlabel="$x_1$", ylabel="$x_2$")
    (line,) = ax.plot([], [], color=plotting.OKABE_ITO["black"], lw=2, label="P(c = 1 | x) = 0.5")
    ax.legend(loc="lower left", fontsize="small")

    def update(eta: float) -> str:
        """Fit with this η and move the boundary; return the status line."""
        res = logistic_regression(X, c, eta=eta, steps=steps, tol=1e-4, warn=False)
        pts = plotting.boundary_points(res.w, lim)
        line.set_data(*(pts.T if pts is not None else ([], [])))
        status = f"η = {eta:g}: {_status(res)}, log-likelihood {-res.loss[-1]:.2f}"
        ax.set_title(status, fontsize="small")
        return status

    update.artists = [line, ax.title]
    return ax.figure, update


def lms_eta_demo(X, d, w_true, jump=None, window=300, ax=None):
    """LMS on a stream with a chosen η: how far its weights are from the system's, over time.

    X (T, p) inputs x(t); d (T,) desired outputs; w_true (T, p+1) the system's weights at
    each t (bias first); ``jump``: the t at which the system changes, if it does. The
    status gives the memory τ ≈ 1/(ηλ) for the median eigenvalue λ of R = E[x xᵀ], the mean
    distance over the ``window`` samples after the jump (how fast LMS follows) and the spread
    the noise gives the weights over the last quarter (the standard deviation, averaged over
    the weights). LMS is linear in d, so the weights the noise ν = d − xᵀw_∘ moves are those
    of LMS run on ν alone (the run minus the same run on the noiseless responses): a lag
    behind the system is not counted as noise. Returns (fig, update) with update(eta).
    """
    ax = _new_ax(ax, (7, 3.6))
    T = len(X)
    Xa = np.column_stack([np.ones(T), X])
    lam = float(np.median(np.linalg.eigvalsh(Xa.T @ Xa / T)))
    noise = d - np.sum(Xa * w_true, axis=1)  # ν(t) = d(t) − x(t)ᵀw_∘(t)
    t = np.arange(1, T + 1)
    (line,) = ax.plot([], [], color=plotting.OKABE_ITO["blue"], lw=0.8)
    if jump is not None:
        ax.axvline(jump, color="0.5", ls=":", lw=1)
    ax.set(xlim=(0, T), ylim=(1e-3, 1e2), yscale="log", xlabel="time step $t$")
    ax.set_ylabel(r"$\|\mathbf{w}(t) - \mathbf{w}_\circ(t)\|$")

    def update(eta: float) -> str:
        """Run LMS with this η and redraw the distance; return the status line."""
        try:
            run = lms(X, d, eta)
            with np.errstate(over="ignore", invalid="ignore"):
                dist = np.linalg.norm(run.path[1:] - w_true, axis=1)
            blown = not np.all(dist < 1e6)
        except ValueError:  # the weights overflowed
            blown = True
        if blown:
            line.set_data([], [])
            status = f"η = {eta:g}: the weights blow up (η too large for these inputs)"
        else:
            line.set_data(t, np.clip(dist, 1e-3, 1e2))
            status = f"η = {eta:g}: memory ≈ {1 / (eta * lam):.0f} samples"
            if jump is not None:
                status += f"; after the jump {dist[jump : jump + window].mean():.2f}"
            with np.errstate(over="ignore", invalid="ignore"):
                shaken = lms(X, noise, eta).path[1:][-(T // 4) :]  # what the noise moves
            status += f"; spread at the end {np.std(shaken, axis=0).mean():.3f}"
        ax.set_title(status, fontsize="small")
        return status

    update.artists = [line, ax.title]
    return ax.figure, update


def batch_size_demo(X, c, epochs=50, ax=None):
    """BGD, mini-batch and IGD with the same η: Err − min Err after each epoch.

    X (n, p), c (n,). The mini-batch line follows the batch size b; BGD is b = n, IGD b = 1.
    Returns (fig, update) with update(eta, batch_size) -> status.
    """
    ax = _new_ax(ax, (7, 3.6))
    n = len(X)
    err_min = sq_error(lls(X, c), X, c)
    styles = (("blue", "BGD (b = n)"), ("green", "mini-batch"), ("vermillion", "IGD (b = 1)"))
    lines = [
        ax.plot([], [], color=plotting.OKABE_ITO[color], lw=1.5, label=label)[0]
        for color, label in styles
    ]
    ax.set(xlim=(0, epochs), ylim=(1e-12, 1e4), yscale="log", xlabel="epoch")
    ax.set_ylabel(r"$\mathrm{Err}(\mathbf{w}) - \min\,\mathrm{Err}$")
    ax.legend(loc="lower left", fontsize="small")

    def update(eta: float, batch_size: int) -> str:
        """Run the three with this η and b and redraw; return the status line."""
        b = int(batch_size)
        kw = dict(eta=eta, max_epochs=epochs, tol=1e-300, stop="err", warn=False)
        runs = (bgd(X, c, **kw), mbgd(X, c, batch_size=b, **kw), igd(X, c, **kw))
        parts = []
        names = ("BGD", f"b = {b}", "IGD")
        for line, run, name, b_run in zip(lines, runs, names, (n, b, 1), strict=True):
            gap = np.maximum(run.loss - err_min, 1e-12)
            line.set_data(np.arange(len(gap)), gap)
            end = "diverges" if run.diverged else f"{gap[-1]:.0e}"
            updates = -(-n // b_run)
            parts.append(f"{name} ({updates} update{'s' * (updates > 1)} an epoch) {end}")
        status = f"η = {eta:g}, after {epochs} epochs: " + ", ".join(parts)
        ax.set_title(f"η = {eta:g}, b = {b}", fontsize="small")  # the status is too long
        return status

    update.artists = [*lines, ax.title]
    return ax.figure, update


def small_multiples(demo, name, values, ncols=3, panel=(3.2, 3.0), **kwargs):
    """The static stand-in for a slider: one panel per slider value, in one figure.

    ``demo(ax=..., **kwargs)`` must return (fig, update); each panel calls update(name=value).
    The panels share one legend, the first panel's, below them.
    """
    values = list(values)
    nrows = -(-len(values) // ncols)
    fig, axes = plt.subplots(
        nrows,
        ncols,
        figsize=(panel[0] * ncols, panel[1] * nrows),
        layout="constrained",
        squeeze=False,
    )
    for ax, value in zip(axes.flat, values, strict=False):
        _, update = demo(ax=ax, **kwargs)
        update(**{name: value})
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    for ax in axes.flat[len(values) :]:
        ax.set_visible(False)
    # one legend for all panels, below them, where it covers no data
    handles, labels = axes.flat[0].get_legend_handles_labels()
    if handles:
        fig.legend(
            handles, labels, loc="outside lower center", ncols=len(handles), fontsize="small"
        )
    return fig
