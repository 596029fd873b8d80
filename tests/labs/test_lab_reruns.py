"""Re-running any cell of any lab, in any order, changes no answer a test checks (issue 41).

A student runs cells again, out of order, after editing one above; the grader runs each
cell once, top to bottom. A data cell that draws from a generator another cell made (Lab 1's
``X40`` once came from the set-up cell's ``rng``) gives new data on every run, so the slider
answer a student reads off them fails the grader's hidden test.

Each lab's instructor source runs here, in this process, with the sliders not drawn (as
``test_answer_families.lab_namespace`` runs it), hidden tests included. The first run, in
order, is the reference: after each test cell, what it checked is recorded, namely every
value ``assert_same`` compared (actual, expected and the message) and every name the cell
reads or binds that holds data (numbers, strings, arrays, the package's results and
generators, and containers of these; functions, modules and figures are left out: what a
function returns is what ``assert_same`` records). Then, in the same namespace:

- every code cell again, in order, each twice in a row (a student's second Shift+Enter);
- the non-test cells (set-up, data, plots, answers) in a seeded random order, then the
  reversed order, each followed by every test cell in order.

After each, every test cell must pass and record exactly what it recorded the first time.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import warnings

import numpy as np
import pytest
from labtools.door import layout
from labtools.grader import notebook
from test_null_answers import LABS, instructor_code, source_nb

import perceptrons.testing


def frozen(value, depth: int = 0):
    """A comparable copy of ``value``, bit for bit, or None where it holds no data to
    compare (a function, a module, a figure)."""
    if depth > 6:
        return None
    if value is None or isinstance(value, bool | int | str | bytes):
        return (type(value).__name__, value)
    if isinstance(value, float | complex | np.generic):
        return (type(value).__name__, np.asarray(value).tobytes())
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return ("objects", value.shape, tuple(frozen(v, depth + 1) for v in value.ravel()))
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, tuple | list | range):
        return (type(value).__name__, tuple(frozen(v, depth + 1) for v in value))
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: repr(kv[0]))
        return ("dict", tuple((repr(k), frozen(v, depth + 1)) for k, v in items))
    if isinstance(value, np.random.Generator):
        return ("generator", frozen(value.bit_generator.state, depth + 1))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__name__, frozen(vars(value), depth + 1))
    return None


class Lab:
    """One lab's code cells, run in one namespace, with what each test cell checked."""

    def __init__(self, lab: str):
        self.lab = lab
        self.cells = []  # (grade id, is test, code object, names a test checks)
        for cell in source_nb(lab)["cells"]:
            if cell["cell_type"] != "code":
                continue
            code = instructor_code(cell)
            gid = notebook.grade_id(cell)
            compiled = compile(code, f"<{lab} {gid}>", "exec")
            test = notebook.is_test(cell)
            self.cells.append((gid, test, compiled, notebook.used_names(code) if test else set()))
        self.ns: dict = {"__name__": "__main__"}
        self.compared: list = []  # what assert_same compared in the cell running now

    def recording(self, real):
        def assert_same(actual, expected, **kwargs):
            self.compared.append((frozen(actual), frozen(expected), kwargs.get("what")))
            return real(actual, expected, **kwargs)

        return assert_same

    def run(self, index: int) -> tuple | None:
        """Run cell ``index``; for a test cell, what it checked."""
        import matplotlib.pyplot as plt

        gid, test, code, names = self.cells[index]
        self.compared = []
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(code, self.ns)
        plt.close("all")
        if not test:
            return None
        data = {n: frozen(self.ns[n]) for n in sorted(names) if n in self.ns}
        return tuple(self.compared), {n: v for n, v in data.items() if v is not None}


def rerun_orders(lab: Lab) -> dict[str, list[int]]:
    """The orders in which the cells run again after the first run, by name."""
    everything = range(len(lab.cells))
    tests = [i for i in everything if lab.cells[i][1]]
    others = [i for i in everything if not lab.cells[i][1]]
    shuffled = [int(i) for i in np.random.default_rng(41).permutation(others)]
    return {
        "every cell twice in a row": [i for i in everything for _ in (0, 1)],
        "the other cells shuffled, then the tests": shuffled + tests,
        "the other cells reversed, then the tests": others[::-1] + tests,
    }


def differences(lab: Lab, reference: dict, order: list[int]) -> list[str]:
    """Run ``order``; what each test cell did that it did not the first time."""
    found, seen = [], {}
    for index in order:
        gid = lab.cells[index][0]
        try:
            checked = lab.run(index)
        except Exception as err:  # noqa: BLE001 - a test that fails, or a cell that breaks
            found.append(f"{gid} raised {type(err).__name__}: {str(err)[:200]}")
            continue
        if checked is not None:
            seen[gid] = checked
    for gid, (compared, data) in reference.items():
        if gid not in seen:
            continue  # it raised: said above
        again_compared, again_data = seen[gid]
        changed = sorted(
            n for n in data.keys() | again_data.keys() if data.get(n) != again_data.get(n)
        )
        if changed:
            found.append(f"{gid}: {', '.join(changed)} changed")
        for k, (before, after) in enumerate(zip(compared, again_compared, strict=False)):
            if before != after:
                found.append(f"{gid}: what assert_same compared in its check {k + 1} ({before[2]})")
        if len(compared) != len(again_compared):
            found.append(f"{gid}: {len(compared)} comparisons, then {len(again_compared)}")
    return found


@pytest.mark.slow  # every lab four times over in this process: about 20 s
@pytest.mark.parametrize("lab", layout.lab_names(LABS))
def test_rerunning_cells_in_any_order_changes_nothing_a_test_checks(monkeypatch, lab):
    from perceptrons import widgets

    monkeypatch.setattr(widgets, "slider_panel", lambda *args, **kwargs: None)
    runner = Lab(lab)
    monkeypatch.setattr(
        perceptrons.testing, "assert_same", runner.recording(perceptrons.testing.assert_same)
    )
    reference = {}
    for index, (gid, *_) in enumerate(runner.cells):
        checked = runner.run(index)  # the first run must pass as it stands
        if checked is not None:
            reference[gid] = checked
    assert reference, f"{lab} has no test cell"
    assert any(compared for compared, _ in reference.values()), "assert_same was not recorded"
    wrong = []
    for name, order in rerun_orders(runner).items():
        wrong += [f"{name}: {problem}" for problem in differences(runner, reference, order)]
    assert not wrong, "\n".join(wrong)


def test_a_value_that_changes_is_seen_and_one_that_stays_is_not():
    """The comparison itself: bit for bit, through containers and the package's results,
    functions left out."""
    import perceptrons as P

    X, c, _ = P.separable(10, rng=0)
    run = P.pt(X, c)
    assert frozen(run) == frozen(P.pt(X, c))
    assert frozen(run) != frozen(P.pt(X, c, eta=0.5))
    assert frozen((1.0, [np.zeros(2)])) != frozen((1.0, [np.array([0.0, 5e-324])]))
    assert frozen(np.float64(0.1)) != frozen(0.1)  # kind first, as assert_same
    assert frozen(np.random.default_rng(0)) != frozen(np.random.default_rng(1))
    assert frozen(print) is None and frozen(np) is None
