"""Mini-batch gradient descent: seconds per epoch against the batch size (not a test).

    .venv/bin/python benchmarks/bench_minibatch.py [--n 10000] [--p 20]

Every batch size computes the same n corrections per epoch; the time differs with how they
are grouped: ceil(n/b) updates, each one matrix-vector product over b rows. Prints the
median time of one epoch of ``P.mbgd`` for each b, over rounds in which the sizes take
turns (so that a change in load hits all alike), and its ratio to BGD's (b = n).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import perceptrons as P


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--p", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(args.n, args.p))
    c = X @ rng.normal(size=args.p) + 0.1 * rng.normal(size=args.n)
    sizes = [1, 10, 100, 1000, args.n]
    eta = 0.1 / np.linalg.eigvalsh(P.augment(X).T @ P.augment(X)).max()
    times = {b: [] for b in sizes}
    for _ in range(args.rounds):
        for b in sizes:
            start = time.perf_counter()
            P.mbgd(X, c, eta=eta, batch_size=b, max_epochs=1, warn=False)
            times[b].append(time.perf_counter() - start)
    full = statistics.median(times[args.n])
    print(f"n = {args.n}, p = {args.p}: median seconds per epoch over {args.rounds} rounds")
    for b in sizes:
        median, updates = statistics.median(times[b]), -(-args.n // b)
        print(f"b = {b:6d}: {median:.4f} s ({updates:6d} updates; {median / full:6.1f} × BGD)")


if __name__ == "__main__":
    main()
