"""A tuned answer passes exactly when the slider's status says it does, at every slider
position (issue 29, item 3): the sliders run with the values their readouts show
(``widgets.shown``), and the lab's test of the answer is the criterion the status reports.

For each lab exercise whose answer is read off a slider: the lab's cells run up to the
slider cell (the instructor's answers in the solution cells), the panel's ``update`` is
kept, and for every position of the sliders (``widgets.frame_slider``: the values the
readouts show) the status's claim is compared with the verdict of the exercise's test cell
(hidden tests included) on that value, typed as shown.
"""

from __future__ import annotations

import itertools
import json
import re

import matplotlib.pyplot as plt
import numpy as np
import pytest
from _helpers import ROOT
from labtools.grader import notebook

from perceptrons import widgets

LABS = ROOT / "labs" / "source"


def with_real_momentum(status: str) -> bool:
    """Lab 4 ex 3 (review B, L1): f below 1e-4 within 250 steps, with α >= 0.5, as the text
    asks (the status shows α, and leaves it out when it is 0)."""
    alpha = re.search(r"α = ([-+0-9.e]+)", status)
    return "f < 0.0001 from step" in status and alpha is not None and float(alpha[1]) >= 0.5


# lab, slider cell, test cell, the names the answer sets, whether a status claims a pass,
# the text cell that quotes how many positions pass ("15 of the 4100 positions"), if any
SLIDERS = [
    (
        "lab1_perceptron",
        "ex5-slider",
        "ex5-tests",
        ["eta_choice"],
        lambda status: "updates" in status and int(status.split(": ")[1].split()[0]) <= 20,
        None,
    ),
    (
        "lab4_learning_rate",
        "ex3-slider",
        "ex3-tests",
        ["eta_choice", "alpha_choice"],
        with_real_momentum,
        "ex3-text",
    ),
    (
        "lab5_logistic",
        "ex4-slider",
        "ex4-tests",
        ["eta_choice"],
        lambda status: "converged in" in status,
        None,
    ),
]


def remembered(func):
    """``func`` that answers a call it has seen (same arguments) from memory: the status
    and the test run the same descent, which is the cost of this test."""
    import inspect

    seen, signature = {}, inspect.signature(func)

    def again(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()  # tol=1e-6 written out or left to its default: one call
        key = repr(bound.arguments)
        if key not in seen:
            seen[key] = func(*args, **kwargs)
        return seen[key]

    return again


def panel(lab: str, slider_id: str, monkeypatch):
    """The lab's namespace and (update, sliders) of the panel its slider cell makes."""
    import perceptrons

    nb = json.loads((LABS / lab / f"{lab}.ipynb").read_text())
    gd = remembered(perceptrons.gd)
    for module in (perceptrons, widgets):
        monkeypatch.setattr(module, "gd", gd)
    made = {}
    monkeypatch.setattr(
        widgets, "slider_panel", lambda fig, update, **s: made.update(s=s, u=update)
    )
    ns: dict = {"__name__": "__main__"}
    for cell in nb["cells"]:
        if cell["cell_type"] != "code" or notebook.is_test(cell):
            continue
        code = "".join(line for line in notebook.text(cell).splitlines(True) if "### " not in line)
        exec(compile(code, f"<{lab} {notebook.grade_id(cell)}>", "exec"), ns)
        plt.close("all")
        if notebook.grade_id(cell) == slider_id:
            return nb, ns, made["u"], made["s"]
    raise AssertionError(f"{lab} has no cell {slider_id}")


@pytest.mark.parametrize(
    "lab, slider_id, test_id, names, claims, quoted", SLIDERS, ids=[s[0] for s in SLIDERS]
)
def test_the_value_a_slider_shows_passes_when_its_status_says_so(
    monkeypatch, lab, slider_id, test_id, names, claims, quoted
):
    nb, ns, update, sliders = panel(lab, slider_id, monkeypatch)
    test = next(notebook.text(c) for c in nb["cells"] if notebook.grade_id(c) == test_id)
    test = "".join(line for line in test.splitlines(True) if "### " not in line)
    options = [[v for _, v in widgets.frame_slider(w).options] for w in sliders.values()]
    code = compile(test, f"<{lab} {test_id}>", "exec")
    claimed, disagree, passing = [], [], []
    for values in itertools.product(*options):
        status = update(**dict(zip(sliders, values, strict=True)))
        scratch = dict(ns)
        scratch.update(dict(zip(names, (f"{v:.3g}" for v in values), strict=True)))
        try:
            exec(code, scratch)
            passed = True
        except AssertionError:
            passed = False
        passing += [values] if passed else []
        says = claims(status)
        if lab == "lab1_perceptron":  # the smallest η that needs at most 20 updates
            says = says and not claimed
        claimed += [values] if claims(status) else []
        if says != passed:
            disagree.append((values, status, passed))
    plt.close("all")
    assert claimed, f"{lab}: no slider position passes"
    assert not disagree, disagree[:5]
    if quoted:
        text = next(notebook.text(c) for c in nb["cells"] if notebook.grade_id(c) == quoted)
        positions = np.prod([len(o) for o in options])
        assert f"{len(passing)} of the {positions} positions" in " ".join(text.split())
        answer = next(
            notebook.text(c)
            for c in nb["cells"]
            if notebook.grade_id(c) == test_id.replace("tests", "code")
        )
        model = {}
        exec("".join(line for line in answer.splitlines(True) if "### " not in line), model)
        assert tuple(model[n] for n in names) in passing, "the model answer passes"
