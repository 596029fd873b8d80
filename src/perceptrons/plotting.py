"""Plot helpers for the chapters. Each takes ``ax=None`` and returns the Axes it drew on.

Colours come from the Okabe–Ito palette, which stays distinct for colour-blind readers;
the two classes also differ in marker shape.
"""

from __future__ import annotations

import hashlib
import re

import matplotlib.pyplot as plt
import numpy as np

from . import _checks

#: Okabe–Ito colours by name.
OKABE_ITO = {
    "orange": "#E69F00",
    "sky": "#56B4E9",
    "green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "purple": "#CC79A7",
    "black": "#000000",
}
CLASS_STYLE = {
    0: dict(color=OKABE_ITO["vermillion"], marker="o", label="class 0"),
    1: dict(color=OKABE_ITO["blue"], marker="^", label="class 1"),
}


def _ax(ax):
    return plt.gca() if ax is None else ax


def plot_data(X, c, ax=None, **kwargs):
    """Scatter 2-D examples X (n, 2) by class c (n,) in {0, 1} or {-1, +1}."""
    X = _checks.points_2d(X)
    c = _checks.as_vector(c, "c", size=len(X))
    ax = _ax(ax)
    for k, positive in ((0, False), (1, True)):
        mask = (c > 0) if positive else (c <= 0)
        style = dict(CLASS_STYLE[k], **kwargs)
        ax.scatter(X[mask, 0], X[mask, 1], edgecolor="white", linewidth=0.5, **style)
    return ax


def boundary_points(w, xlim, ylim=None):
    """Two points (2, 2) of the line w0 + w1·x1 + w2·x2 = 0; None if w1 = w2 = 0.

    A line closer to horizontal is cut at x1 = xlim, a steeper one at x2 = ylim
    (ylim defaults to xlim), so that it spans the plot.
    """
    w0, w1, w2 = _checks.as_vector(w, "w", size=3)
    ylim = xlim if ylim is None else ylim
    if abs(w2) >= abs(w1) and w2 != 0:
        x1 = np.asarray(xlim, dtype=float)
        return np.column_stack([x1, -(w0 + w1 * x1) / w2])
    if w1 != 0:
        x2 = np.asarray(ylim, dtype=float)
        return np.column_stack([-(w0 + w2 * x2) / w1, x2])
    return None


def plot_decision_boundary(X, c, w, ax=None, label="wᵀx = 0", color=None, show_data=True):
    """Draw the examples and the line wᵀx = 0 of w = (w0, w1, w2), with its normal vector."""
    X = _checks.points_2d(X)
    ax = _ax(ax)
    if show_data:
        plot_data(X, c, ax=ax)
    pad = 0.2 * (X.max() - X.min() + 1e-9)
    lim = (X.min() - pad, X.max() + pad)
    pts = boundary_points(w, lim)
    color = OKABE_ITO["black"] if color is None else color
    if pts is not None:
        ax.plot(pts[:, 0], pts[:, 1], color=color, label=label)
    ax.set(xlim=lim, ylim=lim, xlabel="$x_1$", ylabel="$x_2$", aspect="equal")
    return ax


def plot_path(f, path, ax=None, xlim=(-2, 2), ylim=(-2, 2), levels=30, label=None, color=None):
    """Contours of f (takes (..., 2), returns (...)) and a path (t+1, 2) of iterates on them,
    in the plane of the weights (w1, w2)."""
    path = _checks.points_2d(path, "path")
    ax = _ax(ax)
    gx, gy = np.meshgrid(np.linspace(*xlim, 200), np.linspace(*ylim, 200))
    ax.contour(
        gx, gy, f(np.stack([gx, gy], axis=-1)), levels=levels, cmap="cividis", linewidths=0.7
    )
    color = OKABE_ITO["vermillion"] if color is None else color
    ax.plot(path[:, 0], path[:, 1], "-o", ms=2.5, lw=1, color=color, label=label)
    ax.plot(*path[0], "s", color=color, ms=6)
    ax.set(xlim=xlim, ylim=ylim, xlabel="$w_1$", ylabel="$w_2$")
    return ax


def plot_loss(values, ax=None, label=None, log=True, xlabel="epoch", ylabel="Err(w)", color=None):
    """Line plot of a loss per epoch or step; logarithmic y axis when every value is > 0."""
    values = _checks.as_vector(values, "values")
    ax = _ax(ax)
    ax.plot(np.arange(len(values)), values, label=label, color=color)
    if log and np.all(values > 0):
        ax.set_yscale("log")
    ax.set(xlabel=xlabel, ylabel=ylabel)
    return ax


def animation_html(anim, alt: str) -> str:
    """HTML of a matplotlib animation that plays without a kernel, with ``alt`` on its frames.

    ``FuncAnimation.to_jshtml()`` embeds every frame as a PNG; its <img> carries no alt text,
    so it is added here for screen readers. The element ids are derived from the content,
    so the same animation gives the same HTML every time.
    """
    html = anim.to_jshtml(default_mode="once")
    # matplotlib names the player's elements with a random uuid; a hash of the content
    # keeps them unique per animation and makes two builds of the book byte-identical
    random_id = re.search(r"_anim_img([0-9a-f]{32})", html).group(1)
    stable_id = hashlib.sha1(html.replace(random_id, "").encode()).hexdigest()[:32]
    html = html.replace(random_id, stable_id)
    alt = alt.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
    html = html.replace("<img id=", f'<img alt="{alt}" id=', 1)
    # the frame slider has no label (WCAG 4.1.2); name it like the buttons beside it
    slider = 'class="anim-slider"'
    if html.count(slider) != 1:  # a matplotlib with another player: label its slider too
        raise RuntimeError("the animation player has no single anim-slider to label")
    html = html.replace(slider, f'{slider} aria-label="Animation frame"')
    # the player's buttons draw Font Awesome icons from a CDN stylesheet, blank offline;
    # plain characters serve (each button already has a title and an aria-label)
    html = re.sub(r'<link rel="stylesheet"\s+href="https://[^"]*font-awesome[^"]*">', "", html)
    return re.sub(r'<i class="fa ([^"]+)"></i>', _player_symbol, html)


_PLAYER_SYMBOLS = {
    "fa-minus": "\u2212",  # slower
    "fa-fast-backward": "\u23ee",
    "fa-step-backward": "\u25c1",
    "fa-play fa-flip-horizontal": "\u25c0",  # play backwards
    "fa-pause": "\u23f8",
    "fa-play": "\u25b6",
    "fa-step-forward": "\u25b7",
    "fa-fast-forward": "\u23ed",
    "fa-plus": "+",  # faster
}


def _player_symbol(match: re.Match) -> str:
    symbol = _PLAYER_SYMBOLS.get(match[1])
    if symbol is None:  # a matplotlib with other buttons: add them above
        raise RuntimeError(f"unknown animation button icon {match[1]!r}")
    return f'<span aria-hidden="true">{symbol}</span>'
