"""Time the chapters' sliders where students use them: in JupyterLab, with a kernel.

    .venv/bin/python benchmarks/bench_jupyterlab.py [--moves 10] [CHAPTER ...]

In the Binder-faithful environment (tools/binder_env.py, built or reused), for every chapter
with a slider panel: the time from opening the notebook to its first live slider (JupyterLab
loaded, Run ▸ Run All Cells, the cells up to the panel run and the slider and its picture
shown), then, once the kernel is idle, the redraw time of that slider over `--moves` key
presses (from the key press on the slider to the change of the picture's src: the kernel
trains, draws and sends the PNG, the browser shows it). Goal: redraw <= 200 ms median.
Needs Chromium. Not a test: it prints a table.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import binder_env  # noqa: E402
import browser  # noqa: E402
import jupyterlab  # noqa: E402

GOAL_MS = 200
_SLIDER_SHOWN = """() => {
    const slider = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .widget-slider');
    return !!slider?.closest('.widget-vbox')?.querySelector('img[src^="data:image/png"]');
}"""


def chapters_with_sliders() -> list[str]:
    import json

    found = []
    for path in sorted((ROOT / "book").glob("*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        if any("slider_panel(" in "".join(c["source"]) for c in cells if c["cell_type"] == "code"):
            found.append(path.relative_to(ROOT).as_posix())
    return found


def measure(page, lab, notebook: str, moves: int) -> dict:
    start = time.perf_counter()
    jupyterlab.open_notebook(page, lab, notebook)
    opened = time.perf_counter() - start
    jupyterlab.run_all(page)
    page.wait_for_function(_SLIDER_SHOWN, timeout=240_000, polling=20)
    live = time.perf_counter() - start
    jupyterlab.wait_idle(page)  # the cells after the panel, before the slider is timed
    redraws = [jupyterlab.move_first_slider(page) for _ in range(moves)]
    lab.shut_down_kernels()
    return {
        "opened": opened,
        "live": live,
        "median": statistics.median(redraws),
        "worst": max(redraws),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moves", type=int, default=10, help="slider moves per chapter")
    parser.add_argument("chapters", nargs="*", help="e.g. book/07_momentum.ipynb (default: all)")
    args = parser.parse_args(argv)
    chapters = args.chapters or chapters_with_sliders()
    env = binder_env.build()
    print(env.report(), "\n", flush=True)
    rows = {}
    with jupyterlab.JupyterLab(env.bin) as lab, browser.playwright_chromium() as chromium:
        page = chromium.new_page(viewport={"width": 1280, "height": 900})
        measure(page, lab, chapters[0], 1)  # warm up: JupyterLab's assets, the kernel's imports
        for notebook in chapters:
            rows[notebook] = measure(page, lab, notebook, args.moves)
    print(
        f"{'chapter':<28} {'opened':>8} {'1st slider live':>16} {'redraw median':>14} "
        f"{'worst':>8}   ({args.moves} moves; goal: median <= {GOAL_MS} ms)"
    )
    for notebook, r in rows.items():
        print(
            f"{Path(notebook).stem:<28} {r['opened']:>7.1f}s {r['live']:>15.1f}s "
            f"{r['median']:>11.0f} ms {r['worst']:>5.0f} ms"
        )
    slow = [n for n, r in rows.items() if r["median"] > GOAL_MS]
    print(f"\nover the goal: {', '.join(slow)}" if slow else "\nevery median within the goal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
