"""Helpers shared by the tests (imported as `_helpers`; pytest puts tests/ on sys.path)."""

import importlib.util
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def load_module(name, path):
    """Import a script that is not part of a package, such as tasks.py or labs/course.py."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def central_difference(f, w, h=1e-6):
    """(f(w + h e_j) - f(w - h e_j)) / 2h for every unit vector e_j: a gradient to check against."""
    return np.array([(f(w + h * e) - f(w - h * e)) / (2 * h) for e in np.eye(len(w))])
