"""Seconds per step of the package's descent loop, the cost behind Labs 4, 5 and 7, the
chapters on pitfalls, momentum and logistic regression, and their sliders.

    .venv/bin/python benchmarks/bench_gd.py [--repeat 5]

Two loops, each the best of ``--repeat`` runs:

- ``P.gd`` on the Rosenbrock function from (-1.5, 2) with η = 0.001, α = 0.95, 250 steps
  (Lab 4 ex 3, one slider position), 40 runs;
- ``P.logistic_regression`` on separable data (50 points, Lab 5 ex 3), η = 0.1, 5 000
  steps: no maximum exists there, so every step is taken.

Prints microseconds per step. The loop's bookkeeping (the checks of ‖∇E‖, of a finite w
and of η at each step) is most of a step for these two-dimensional problems.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import perceptrons as P


def best(run, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    w0 = np.array([-1.5, 2.0])

    def rosenbrock():
        for _ in range(40):
            P.gd(P.rosenbrock_grad, w0, 0.001, alpha=0.95, steps=250, warn=False)

    X, c, _ = P.separable(50, rng=1)
    fit = P.logistic_regression(X, c, eta=0.1, steps=5000, warn=False)
    assert fit.iterations == 5000, "the logistic run stopped early"

    def logistic():
        P.logistic_regression(X, c, eta=0.1, steps=5000, warn=False)

    gd_us = best(rosenbrock, args.repeat) / (40 * 250) * 1e6
    lr_us = best(logistic, args.repeat) / 5000 * 1e6
    print(f"P.gd on Rosenbrock:           {gd_us:6.1f} µs per step")
    print(f"P.logistic_regression:        {lr_us:6.1f} µs per step")


if __name__ == "__main__":
    main()
