"""Time `perceptrons.pt` against scikit-learn's Perceptron on separable data.

    .venv/bin/python benchmarks/bench_pt.py

Both do the same work: scikit-learn runs exactly the number of epochs that PT needed
(PT's last epoch is the one without a mistake), in the same order, from w = 0 with η = 1,
and both end with the same weights. Prints the median of several runs and the ratio.
"""

import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Perceptron

import perceptrons as P


def median_time(fn, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main():
    header = ("n", "p", "epochs", "updates", "pt [ms]", "sklearn [ms]", "ratio")
    print("".join(f"{h:>13}" for h in header))
    for n, repeat in ((10_000, 15), (100_000, 5)):
        X, c, _ = P.separable(n, p=20, margin=0.05, rng=0, labels="pm1")
        res = P.pt(X, c, max_epochs=10_000)
        skl = Perceptron(eta0=1.0, alpha=0.0, shuffle=False, tol=None, max_iter=res.epochs)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            skl.fit(X, c)
            assert np.allclose(np.r_[skl.intercept_, skl.coef_[0]], res.w), "different weights"
            t_pt = median_time(lambda X=X, c=c: P.pt(X, c, max_epochs=10_000), repeat)
            t_skl = median_time(lambda X=X, c=c, skl=skl: skl.fit(X, c), repeat)
        row = (n, 20, res.epochs, res.mistakes, f"{1e3 * t_pt:.1f}", f"{1e3 * t_skl:.1f}")
        print("".join(f"{v:>13}" for v in row) + f"{t_pt / t_skl:>13.2f}")


if __name__ == "__main__":
    main()
