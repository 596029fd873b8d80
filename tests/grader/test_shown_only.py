"""The locked cells that the grader's side leaves out (labtools.grader.notebook.shown_only): the
static rule on small plans, and, for every lab, the promise it rests on, checked by running
the instructor's notebook: a left-out cell changes nothing it reads."""

import copy
import json
import pickle

import matplotlib.pyplot as plt
import numpy as np
import pytest
from _helpers import ROOT
from labtools.door import layout
from labtools.grader import notebook
from labtools.grader.notebook import Cell

LABS = ROOT / "labs"


def plan(*cells):
    """A plan from (role, source) pairs."""
    return [Cell(role, source, source) for role, source in cells]


def test_a_cell_whose_results_no_later_cell_reads_is_left_out():
    cells = plan(
        ("locked", "import numpy as np\nX = np.ones(3)"),
        ("locked", "fig = show(X)\nprint(X.sum())"),  # shows X: nothing later reads fig
        ("test", "assert answer(X) == 3"),
    )
    assert notebook.shown_only(cells, {"answer"}) == {1}


@pytest.mark.parametrize(
    "shown, test",
    [
        ("w_far = make()\nslider(w_far)", "assert answer(w_far)"),  # binds what a test reads
        ("for eta in (1, 2):\n    run = make(eta)", "assert answer(run)"),  # loop bodies too
        ("import math as m", "assert m.pi"),  # an import a test uses
        ("t.append(1)", "assert answer(t)"),  # changes what a test cell made
    ],
)
def test_a_cell_that_makes_what_a_later_cell_reads_runs(shown, test):
    cells = plan(("test", "t = []"), ("locked", shown), ("test", test))
    assert 1 not in notebook.shown_only(cells, {"answer"})


def test_a_later_cell_that_binds_a_name_before_reading_it_does_not_need_it():
    cells = plan(
        ("locked", "run = make()\nshow(run)"),
        ("test", "run = answer()\nfor eta in (1, 2):\n    assert run(eta)"),
        ("locked", "eta = 3\nshow(eta)"),
    )
    assert notebook.shown_only(cells, {"answer"}) == {0, 2}
    assert notebook.free_names("run = f(x)\ny = run + z") == {"f", "x", "z"}
    assert notebook.free_names("for a in b:\n    c = a + d") == {"b", "d"}
    assert notebook.free_names("def f(v):\n    return v + w") >= {"w"}  # (and more)
    assert notebook.free_names("xs = [v * k for v in ys]") == {"ys", "k"}


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b, True)
    if isinstance(a, np.random.Generator):
        return a.bit_generator.state == b.bit_generator.state
    if isinstance(a, list | tuple):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, int | float | str | bool | complex | np.generic | type(None)):
        return bool(a == b) or (a != a and b != b)  # NaN is NaN
    return pickle.dumps(a) == pickle.dumps(b)  # anything else: byte for byte


def test_a_left_out_cell_changes_nothing_it_reads():
    """Each lab's instructor notebook, run as the grader's side runs it (locked cells, the
    model answers, the tests in full), its left-out cells too, on copies taken before them:
    every value a left-out cell takes from the cells before it that is not a module or a
    function is unchanged after it."""
    checked = []
    for lab in layout.lab_names(LABS):
        source = json.loads((LABS / "source" / lab / f"{lab}.ipynb").read_text())
        cells, _ = notebook.plan(source, source)
        left_out = notebook.shown_only(cells, set(notebook.declared(source)))
        assert left_out, f"{lab}: no locked cell is left out (its setup-check, at least)"
        ns: dict = {"__name__": "__main__"}
        for k, cell in enumerate(cells):
            if cell.role not in ("locked", "test", "answer"):
                continue
            code = "".join(line for line in cell.source.splitlines(True) if "### " not in line)
            before = {}
            if k in left_out:
                for name in sorted(notebook.free_names(code) & ns.keys()):
                    value = ns[name]
                    if not (callable(value) or type(value).__name__ == "module"):
                        before[name] = copy.deepcopy(value)
            exec(compile(code, f"<{lab} {cell.grade_id}>", "exec"), ns)
            for name, value in before.items():
                assert _same(value, ns[name]), f"{lab}: {cell.grade_id} changes {name}"
                checked.append((lab, cell.grade_id, name))
        plt.close("all")
    assert ("lab6_lms_filter", "ex5-plot", "X") in checked  # the check reaches the data
