"""Time `perceptrons.pt`, as the book shows it and with `fast=True`, against scikit-learn's
Perceptron and against the plain loop.

    .venv/bin/python benchmarks/bench_pt.py

Two kinds of data, p = 20, n = 10⁴ and 10⁵, in one run:

- separable (margin 0.05): PT runs to convergence. scikit-learn runs exactly the number of
  epochs that PT needed (PT's last epoch is the one without a mistake), in the same order,
  from w = 0 with η = 1; the weights must be identical.
- noisy (10 % of the labels flipped): PT never converges; both run 5 epochs.
- noisier (30 % flipped, n = 10⁴ only): nearly every other visit is a mistake, where
  skipping cannot pay for itself; shown so that the cost of that case is on record.

"plain loop" is PT written from the pseudocode one example at a time with plain numpy (no
result object, no checks), the way Lab 1 writes it; `pt` and `pt(fast=True)` must give the
same weights, bit for bit. PT runs with history=False, as neither reference records a
history. The four run in turn, several rounds, so that a change in the machine's load hits
all alike; prints the median times and the median of each round's ratios (below 1: the
first is faster).
"""

import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Perceptron

import perceptrons as P


def plain_pt(X, c, epochs):
    """PT one example at a time with labels ±1 and η = 1, for `epochs` epochs or until one
    without a mistake; the same expressions as the body of `perceptrons.pt`."""
    Xa = P.augment(X)
    w = np.zeros(Xa.shape[1])
    for t in range(epochs):
        mistakes = 0
        for x, c_x in zip(Xa, c, strict=True):
            error = c_x if c_x * (w @ x) <= 0 else 0.0  # 5. the ±1 form of the error
            if error != 0:
                w = w + 1.0 * error * x  # 6-7
                mistakes += 1
        if mistakes == 0:
            break
    return w


def seconds(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def row(data, n, repeat):
    if data == "separable":
        X, c, _ = P.separable(n, p=20, margin=0.05, rng=0, labels="pm1")
        budget = 10_000
    else:
        X, c = P.noisy(n, p=20, flip=0.1 if data == "noisy" else 0.3, rng=0, labels="pm1")
        budget = 5
    res = P.pt(X, c, max_epochs=budget, history=False, warn=False)
    fast = P.pt(X, c, max_epochs=budget, history=False, warn=False, fast=True)
    assert np.array_equal(fast.w, res.w), "fast=True found different weights"
    skl = Perceptron(eta0=1.0, alpha=0.0, shuffle=False, tol=None, max_iter=res.iterations)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        skl.fit(X, c)
        w_skl = np.r_[skl.intercept_, skl.coef_[0]]
        if data == "separable":
            assert np.array_equal(w_skl, res.w), "scikit-learn found different weights"
        assert np.array_equal(plain_pt(X, c, res.iterations), res.w), "the plain loop differs"
        times = np.array(
            [
                (
                    seconds(lambda: P.pt(X, c, max_epochs=budget, history=False, warn=False)),
                    seconds(
                        lambda: P.pt(X, c, max_epochs=budget, history=False, warn=False, fast=True)
                    ),
                    seconds(lambda: skl.fit(X, c)),
                    seconds(lambda: plain_pt(X, c, res.iterations)),
                )
                for _ in range(repeat)
            ]
        )  # (repeat, 4): pt, pt fast, scikit-learn, plain loop
    t_pt, t_fast, t_skl, t_plain = np.median(times, axis=0)
    millis = 1e3 * np.array([t_pt, t_fast, t_skl, t_plain])
    cells = (data, n, res.iterations, res.mistakes, *millis)
    ratios = (
        np.median(times[:, 0] / times[:, 2]),  # pt / scikit-learn
        np.median(times[:, 1] / times[:, 2]),  # fast / scikit-learn
        np.median(times[:, 0] / times[:, 3]),  # pt / plain loop
        np.median(times[:, 1] / times[:, 3]),  # fast / plain loop
    )
    return cells + tuple(float(r) for r in ratios)


def main():
    header = ("data", "n", "epochs", "updates", "pt [ms]", "fast [ms]", "sklearn [ms]")
    header += ("plain [ms]", "pt/sklearn", "fast/sklearn", "pt/plain", "fast/plain")
    print("".join(f"{h:>13}" for h in header))
    sizes = ((10_000, 7), (100_000, 5))
    for data, n, repeat in [(d, n, r) for d in ("separable", "noisy") for n, r in sizes] + [
        ("noisier", 10_000, 7)
    ]:
        cells = row(data, n, repeat)
        text = [f"{v:>13}" if not isinstance(v, float) else f"{v:>13.1f}" for v in cells[:8]]
        print("".join(text) + "".join(f"{v:>13.2f}" for v in cells[8:]), flush=True)


if __name__ == "__main__":
    main()
