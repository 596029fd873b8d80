"""Time one callback of every slider in the book: train, move the artists, render the PNG.

    .venv/bin/python benchmarks/bench_sliders.py

A slider callback trains, moves the artists and renders the PNG that the panel shows,
through the same `FigureRenderer` with the non-interactive Agg backend. Prints the
median and the worst time over the slider's values. Target: <= 100 ms per callback.

Then the frame panels that the book's build saves (`widgets.frame_panel`) over the grids
the chapters give their sliders: frames, time to draw them all, and their size in the
page. Budget: <= 1.5 MB per panel, <= 25 MB for the site.
"""

import time

import ipywidgets
import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402

import perceptrons as P  # noqa: E402
from perceptrons import widgets  # noqa: E402


def callback_times(fig, update, values, repeat=3):
    """Median and worst time of update + render, as `widgets.slider_panel` does it."""
    renderer = widgets.FigureRenderer(fig, update.artists)
    renderer.png()  # the first render draws the static background; the panel does it once
    times = []
    for _ in range(repeat):
        for kwargs in values:
            start = time.perf_counter()
            update(**kwargs)
            renderer.png()
            times.append(time.perf_counter() - start)
    return 1e3 * np.median(times), 1e3 * np.max(times)


def main():
    rng = np.random.default_rng(0)
    X40, c40, _ = P.separable(n=40, p=2, margin=0.05, rng=rng)
    Xb, yb = P.blobs(n=100, p=2, distance=2.5, rng=rng)
    sliders = {
        "02 perceptron, η": (
            widgets.pt_eta_demo(X40, c40, w0=np.array([0.5, -1.0, 0.3])),
            [dict(eta=e) for e in np.geomspace(*widgets.RANGES["pt_eta"], 11)],
        ),
        "06 pitfalls, η": (
            widgets.gd_path_demo(P.hill_valley, P.hill_valley_grad, np.array([0.5, -1.3])),
            [dict(eta=e) for e in np.geomspace(*widgets.RANGES["pitfalls_eta"], 11)],
        ),
        "07 momentum, η and α": (
            widgets.rosenbrock_demo(),
            [
                dict(eta=e, alpha=a)
                for e in np.geomspace(*widgets.RANGES["momentum_eta"], 5)
                for a in np.linspace(*widgets.RANGES["momentum_alpha"], 4)
            ],
        ),
        "08 logistic, η": (
            widgets.logistic_demo(Xb, yb),
            [dict(eta=e) for e in np.geomspace(*widgets.RANGES["logistic_eta"], 9)],
        ),
    }
    print(f"{'slider':24}{'median [ms]':>12}{'max [ms]':>10}")
    for name, ((fig, update), values) in sliders.items():
        median, worst = callback_times(fig, update, values)
        print(f"{name:24}{median:12.1f}{worst:10.1f}")

    # the chapters' slider cells: the same demos, each slider's step is its frame grid
    log, linear, R = widgets.log_slider, widgets.linear_slider, widgets.RANGES
    panels = {
        "02 perceptron, η": (
            lambda: widgets.pt_eta_demo(X40, c40, w0=np.array([0.5, -1.0, 0.3])),
            dict(eta=log("η", 0.1, *R["pt_eta"], step=0.2)),
        ),
        "06 pitfalls, η": (
            lambda: widgets.gd_path_demo(P.hill_valley, P.hill_valley_grad, np.array([0.5, -1.3])),
            dict(eta=log("η", 0.1, *R["pitfalls_eta"], step=0.125)),
        ),
        "07 momentum, η and α": (
            widgets.rosenbrock_demo,
            dict(
                eta=log("η", 0.001, *R["momentum_eta"], step=0.5),
                alpha=linear("α", 0.9, *R["momentum_alpha"], step=0.09),
            ),
        ),
        "08 logistic, η": (
            lambda: widgets.logistic_demo(Xb, yb),
            dict(eta=log("η", 0.01, *R["logistic_eta"], step=0.25)),
        ),
    }
    print(f"\n{'frame panel':24}{'frames':>8}{'draw [s]':>10}{'size [MB]':>11}")
    total = 0
    for name, (demo, sliders) in panels.items():
        start = time.perf_counter()
        panel = widgets.frame_panel(
            *demo(), **{key: widgets.frame_slider(s) for key, s in sliders.items()}
        )
        seconds = time.perf_counter() - start
        frames = html_widgets(panel.children[2])
        size = sum(len(w.value.encode()) for w in [panel.children[1], *frames])
        total += size
        print(f"{name:24}{len(frames):8d}{seconds:10.1f}{size / 1e6:11.2f}")
    print(f"{'all':24}{'':8}{'':10}{total / 1e6:11.2f}")


def html_widgets(widget):
    """The frames (HTML widgets) inside a frame panel's nested stacks."""
    if isinstance(widget, ipywidgets.HTML):
        return [widget]
    return [leaf for child in widget.children for leaf in html_widgets(child)]


if __name__ == "__main__":
    main()
