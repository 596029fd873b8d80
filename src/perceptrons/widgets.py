"""Slider panels for the chapters: a figure whose artists move when a slider moves.

Each ``*_demo`` function builds a figure once and returns it with an ``update(**values)``
callback that changes only the artists (``set_data``) and returns a one-line status such as
"converged after 12 updates" or "diverged at step 7". :func:`slider_panel` wires the
callback to ipywidgets sliders; benchmarks and tests call ``update`` directly.
"""

from __future__ import annotations

from collections.abc import Callable

import matplotlib.pyplot as plt
from matplotlib.collections import LineCollection

from . import plotting
from .perceptron import pt


def slider_panel(fig, update: Callable[..., str], **sliders):
    """An ipywidgets box with ``sliders`` (name -> widget) above the figure ``fig``.

    Moving a slider calls ``update(**values)`` and shows the redrawn figure and its status.
    """
    import ipywidgets as widgets
    from IPython.display import display

    out, status = widgets.Output(), widgets.Label()
    plt.close(fig)  # shown through `out` only, not again by the inline backend

    def redraw(_=None):
        status.value = update(**{name: w.value for name, w in sliders.items()})
        with out:
            out.clear_output(wait=True)
            display(fig)

    for w in sliders.values():
        w.continuous_update = False
        w.observe(redraw, names="value")
    redraw()
    return widgets.VBox([widgets.HBox(list(sliders.values())), status, out])


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
        trail.set_segments(_boundary_segments(res.ws[1:-1], lim))
        end = plotting.boundary_points(res.w, lim)
        final.set_data(*(end.T if end is not None else ([], [])))
        if res.converged:
            status = f"η = {eta:g}: {res.mistakes} updates, {res.epochs} epochs"
        else:
            status = f"η = {eta:g}: not converged in {max_epochs} epochs"
        ax.set_title(status, fontsize="small")
        return status

    return ax.figure, update


def small_multiples(demo, name, values, ncols=3, panel=(3.2, 3.0), **kwargs):
    """The static stand-in for a slider: one panel per slider value, in one figure.

    ``demo(ax=..., **kwargs)`` must return (fig, update); each panel calls update(name=value).
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
        if ax.get_legend() is not None and ax is not axes.flat[0]:
            ax.get_legend().remove()
    for ax in axes.flat[len(values) :]:
        ax.set_visible(False)
    return fig
