"""The rules of grading a student can check before handing in (perceptrons.handin), and the
lab's copy of the package built from them (labtools.grader.closed): what a lab closes, what an
answer is held for, what the last cell of a lab says. The grader applies the same review
(tests/labs/test_answer_families.py grades the families through it)."""

import json
import subprocess
import sys

import pytest
from _helpers import ROOT, answered
from labtools.door import layout
from labtools.grader import closed

from perceptrons import handin

LAB6 = handin.Rules(
    allow=("augment",),
    forbid={"ex2-code": ("numpy.linalg.lstsq", "numpy.linalg.pinv")},
    setup="import numpy as np\nimport perceptrons as P\n",
)


def review(source: str, gid: str = "ex2-code", rules=LAB6) -> list[tuple[str, bool]]:
    """(what, held) of each finding in one answer cell."""
    found = handin.review_cells([(gid, handin.exercise_of(gid), source)], rules)
    return [(f.what, f.held) for f in found]


def held(source: str, **kw) -> bool:
    return any(h for _, h in review(source, **kw))


HONEST = {
    "normal equations": "def least_squares(X, d):\n    Xa = P.augment(X)\n"
    "    return np.linalg.solve(Xa.T @ Xa, Xa.T @ d)\n",
    "a namedtuple": "from collections import namedtuple\nPair = namedtuple('Pair', 'a b')\n"
    "def least_squares(X, d):\n    return Pair(1, 2)\n",
    "functools and math": "import functools, math, itertools\ndef least_squares(X, d):\n"
    "    return functools.reduce(lambda a, b: a + b, [math.sqrt(2)])\n",
    "a class of its own": "class Fit:\n    def __init__(self):\n        self._w = None\n"
    "    def __repr__(self):\n        return 'Fit'\n"
    "def least_squares(X, d):\n    return Fit()._w\n",
    "a frompyfunc of its own": "_f = np.frompyfunc(lambda z: z * 2, 1, 1)\n"
    "def least_squares(X, d):\n    return _f(X)\n",
    "if __name__": "if __name__ == '__main__':\n    print(1)\n",
    "a magic that times": "%timeit 1 + 1\ndef least_squares(X, d):\n    return d\n",
}


@pytest.mark.parametrize("name", sorted(HONEST))
def test_honest_answers_are_neither_held_nor_refused(name):
    assert review(HONEST[name]) == []


ROUTES = {  # (answer cell, a phrase of what must be found, held)
    "lstsq": ("def least_squares(X, d):\n    return np.linalg.lstsq(X, d)[0]\n", "lstsq", True),
    "an alias of the module": (
        "la = np.linalg\ndef least_squares(X, d):\n    return la.lstsq(X, d)[0]\n",
        "numpy.linalg.lstsq",
        True,
    ),
    "imported under another name": (
        "from numpy.linalg import lstsq as solve\ndef least_squares(X, d):\n"
        "    return solve(X, d)[0]\n",
        "numpy.linalg.lstsq",
        True,
    ),
    "getattr of the literal name": (
        "def least_squares(X, d):\n    return getattr(np.linalg, 'lstsq')(X, d)[0]\n",
        "numpy.linalg.lstsq",
        True,
    ),
    "getattr of a made-up name": (
        "def least_squares(X, d):\n    return getattr(np.linalg, 'ls' + 'tsq')(X, d)[0]\n",
        "name made at run time",
        True,
    ),
    "in a helper it calls": (
        "def _h(A, b):\n    return np.linalg.pinv(A) @ b\ndef least_squares(X, d):\n"
        "    return _h(X, d)\n",
        "numpy.linalg.pinv",
        True,
    ),
    "numpy's private gufunc": (
        "def least_squares(X, d):\n    return np.linalg._umath_linalg.lstsq(X, d)\n",
        "private part of numpy",
        True,
    ),
    "a namespace's dict": (
        "def least_squares(X, d):\n    return np.linalg.__dict__['lst' + 'sq'](X, d)\n",
        "__dict__",
        True,
    ),
    "exec": ("exec('def least_squares(X, d): return d')\n", "exec", True),
    "sys.modules": (
        "import sys\ndef least_squares(X, d):\n    return sys.modules['numpy']\n",
        "imports sys",
        True,
    ),
    "logging's importer": (
        "import logging.config\ndef least_squares(X, d):\n"
        "    return logging.config._resolve('scipy.linalg.lapack.dgelss')\n",
        "imports logging.config",
        True,
    ),
    "matplotlib's loader": (
        "from matplotlib.backends.registry import backend_registry\n",
        "loads code",
        True,
    ),
    "the package's code compiled": (
        "import types\n_f = types.FunctionType(P.lls.__code__, P.lls.__globals__)\n",
        "__code__",
        True,
    ),
    "a shell command": ("!pip install scipy\n", "shell command", True),
    "scipy": (
        "from scipy.linalg import toeplitz\n",
        "imports scipy.linalg, which the grading environment does not have",
        False,
    ),
    "a closed function": (
        "def least_squares(X, d):\n    return P.lls(X, d)\n",
        "calls P.lls, which this lab closes",
        False,
    ),
    "a closed function imported by name": (
        "from perceptrons import lls\ndef least_squares(X, d):\n    return lls(X, d)\n",
        "calls P.lls, which this lab closes",
        False,
    ),
}


@pytest.mark.parametrize("name", sorted(ROUTES))
def test_each_route_is_named_held_or_refused(name):
    source, phrase, is_held = ROUTES[name]
    found = review(source)
    assert any(phrase in what for what, _ in found), found
    assert held(source) == is_held


def test_a_closed_function_at_the_top_of_a_cell_is_fine():
    """Outside a graded function the package works as in JupyterLab (Lab 5 ex 3 computes a
    value with P.logistic_regression): only a call inside a function is named."""
    assert review("norms = P.lls(X, d)\n") == []


def test_a_forbidden_name_counts_only_for_its_own_exercise():
    """Lab 6 ex 4 may use np.linalg.svd (an honest family member does): ex 2's forbid list
    is not ex 4's."""
    rules = handin.Rules(("augment",), {"ex2-code": ("numpy.linalg.svd",)}, LAB6.setup)
    svd = "def lms_limits(X, eta):\n    return np.linalg.svd(X)[1]\n"
    assert review(svd, gid="ex4-code", rules=rules) == []
    assert held(svd.replace("lms_limits", "least_squares"), gid="ex2-code", rules=rules)


def test_a_copy_of_the_package_code_is_held_and_a_short_formula_is_not():
    import inspect

    import perceptrons as P

    copy = inspect.getsource(P.pt).replace("def pt(", "def train(", 1)
    assert ("train reproduces the package's own code", True) in review(copy, gid="ex3-code")
    sigmoid = inspect.getsource(P.sigmoid)  # the chapter's listing: the formula, not held
    assert review(sigmoid, gid="ex1-code") == []


@pytest.mark.parametrize(
    "allow, present, absent",
    [
        ((), set(), {"perceptron.augment", "perceptron.pt", "delta_rule.lls"}),
        (
            ("augment", "heaviside"),
            {"perceptron.augment", "perceptron.heaviside"},
            {"perceptron.pt"},
        ),
        (
            ("augment", "pt"),  # PT with what it calls, never the convergence bound
            {"perceptron.pt", "perceptron._pt_skipping", "perceptron.pt_error"},
            {"convergence.convergence_bound", "delta_rule.bgd"},
        ),
    ],
)
def test_a_lab_closes_every_algorithm_but_what_it_allows_and_what_that_calls(
    allow, present, absent
):
    found = {name.split(".", 1)[1] for name in handin.present_functions(allow)}
    assert present <= found and not (absent & found)
    closed_ = {name.split(".", 1)[1] for name in handin.closed_functions(allow)}
    assert absent <= closed_ and not (present & closed_)


def test_the_labs_copy_of_the_package_has_no_code_of_what_it_closes(tmp_path):
    package = closed.build(("augment",), tmp_path)
    perceptron = (package / "perceptron.py").read_text()
    assert "def augment(" in perceptron  # allowed: its code is there
    assert "def pt(" not in perceptron and "_pt_skipping(" not in perceptron
    assert "pt = _closed('perceptrons.perceptron.pt'" in perceptron
    assert "def lls(" not in (package / "delta_rule.py").read_text()
    assert "def separable(" in (package / "datasets.py").read_text()  # data sets stay
    assert json.loads((package / "CLOSED.json").read_text()) == sorted(
        handin.closed_functions(("augment",))
    )
    code = subprocess.run(
        [
            sys.executable,
            "-c",
            "import perceptrons as P; print(P.pt.__qualified__, P.augment([[1.0]]))",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert code.stdout.split()[0] == "perceptrons.perceptron.pt", code.stderr


def test_every_lab_and_its_solution_pass_their_own_check(capsys):
    for lab in layout.lab_names():
        nb = json.loads((ROOT / "labs" / "source" / lab / f"{lab}.ipynb").read_text())
        assert handin.review(nb) == [], lab
        student = answered(lab)  # the student version with the instructor's answers
        assert handin.review(student) == [], lab
        last = student["cells"][-1]
        assert "handin-check" in last["metadata"].get("tags", []), lab
        assert f'handin.check(lab="{lab}")' in "".join(last["source"]), lab


def test_the_check_says_what_it_found_and_where(tmp_path, monkeypatch, capsys):
    lab = "lab6_lms_filter"
    route = "from scipy.linalg import lstsq\n\ndef least_squares(X, d):\n    return P.lls(X, d)\n"
    (tmp_path / f"{lab}.ipynb").write_text(json.dumps(answered(lab, {"ex2-code": route})))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    found = handin.check(lab=lab)
    said = capsys.readouterr().out
    assert len(found) == 3 and "3 thing(s) to look at" in said
    assert "- ex2-code, line 1: imports scipy.linalg" in said and "fails when graded" in said
    assert "- ex2-code, line 1: uses scipy.linalg.lstsq" in said and "held for review" in said
    assert "- ex2-code, line 4: calls P.lls, which this lab closes" in said
    handin.check(lab="lab9_missing")
    assert "No saved notebook to check (lab9_missing.ipynb)" in capsys.readouterr().out
    cli = subprocess.run(
        [sys.executable, "-m", "perceptrons.handin", f"{lab}.ipynb"], capture_output=True, text=True
    )
    assert cli.returncode == 1 and "calls P.lls" in cli.stdout


def test_what_the_check_calls_installed_is_what_the_sandbox_has():
    """The check says an import 'fails when graded' for what the sandbox's environment
    lacks: its list of what is there must be the environment's."""
    from labtools.grader import bwrap

    venv = bwrap.sandbox_python().parent.parent
    if not venv.exists():
        pytest.skip("no .venv-sandbox here (tasks.py makes it)")
    site = next(venv.glob("lib/python3*/site-packages"))
    tops = set()
    for record in site.glob("*.dist-info/top_level.txt"):
        tops |= set(record.read_text().split())
    tops |= {p.name for p in site.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert {"numpy", "matplotlib", "IPython", "ipywidgets"} <= tops
    assert not {"scipy", "sklearn", "nbgrader", "pip", "perceptrons", "labtools"} & tops
    assert handin.INSTALLED - {"perceptrons"} <= tops | {"PIL"}
