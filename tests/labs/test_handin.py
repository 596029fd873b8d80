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
    """(what, held) of each finding in one answer cell (beside an empty answer to ex 2,
    whose forbid list needs its cell)."""
    cells = [(gid, handin.exercise_of(gid), source)]
    if handin.exercise_of(gid) != "ex2":
        cells.append(("ex2-code", "ex2", ""))
    found = handin.review_cells(cells, rules)
    return [(f.what, f.held) for f in found]


def test_an_exercise_whose_answer_cell_lost_its_metadata_is_held():
    """Red team, round 6: the lstsq answer in a cell without its nbgrader metadata ran as
    an added cell, and the exercise's forbid list read nothing."""
    lstsq = "def least_squares(X, d):\n    return np.linalg.lstsq(X, d)[0]\n"
    found = handin.review_cells([("cell 9 (added)", None, lstsq)], LAB6)
    assert [(f.cell, f.exercise, f.held) for f in found] == [("the notebook", "ex2", True)]
    assert "has no answer cell ex2-code" in found[0].what


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
    "a cell timed": "%%time\ndef least_squares(X, d):\n    Xa = P.augment(X)\n"
    "    return np.linalg.solve(Xa.T @ Xa, Xa.T @ d)\n",
    "help on a function": "np.linalg.lstsq?\ndef least_squares(X, d):\n    return d\n",
    "a helper of its own called pinv": "def pinv(A):\n    return np.linalg.solve(A.T @ A, A.T)\n"
    "def least_squares(X, d):\n    return pinv(X) @ d\n",
    "autoreload": "%load_ext autoreload\n%autoreload 2\ndef least_squares(X, d):\n    return d\n",
    "json, datetime and pathlib": "import json, datetime, pathlib\n"
    "def least_squares(X, d):\n    return json.loads('[1]')\n",
}

# the answer cell as above, and a cell the student added: honest when the added cell's
# lstsq only compares (its w is not the function's local w, its print runs nothing graded)
ADDED_HONEST = {
    "a comparison with lstsq": "w = np.linalg.lstsq(X, d)[0]\nprint(np.allclose(w, 1))\n",
    "a call of the answer beside lstsq": "print(least_squares(X, d), np.linalg.lstsq(X, d))\n",
    "the package's closed function, called outside": "ref = P.lls(X, d)\nprint(ref)\n",
}
SOLVE = "def least_squares(X, d):\n    w = np.linalg.solve(X.T @ X, X.T @ d)\n    return w\n"


def review_two(answer: str, added: str, rules=LAB6) -> list[tuple[str, str, bool]]:
    """(cell, what, held) of each finding in an answer cell and a cell added after it."""
    cells = [("ex2-code", "ex2", answer), ("cell 9 (added)", None, added)]
    return [(f.cell, f.what, f.held) for f in handin.review_cells(cells, rules)]


@pytest.mark.parametrize("name", sorted(ADDED_HONEST))
def test_an_added_cell_that_compares_holds_nothing(name):
    assert review_two(SOLVE, ADDED_HONEST[name]) == []


# review D (round 6): routes through another cell, a magic or getattr passed as a value
ADDED_ROUTES = {  # (answer cell, added cell, the finding's cell, a phrase of what, held)
    "an alias bound in another cell": (
        "def least_squares(X, d):\n    return solve_ls(X, d)[0]\n",
        "solve_ls = np.linalg.lstsq\n",
        "cell 9 (added)", "uses numpy.linalg.lstsq", True,
    ),
    "a redefinition in a later cell": (
        SOLVE, "least_squares = lambda X, d: np.linalg.pinv(X) @ d\n",
        "cell 9 (added)", "uses numpy.linalg.pinv", True,
    ),
    "a container filled by a method": (
        "SOLVERS = []\ndef least_squares(X, d):\n    return SOLVERS[0](X, d)[0]\n",
        "SOLVERS.append(np.linalg.lstsq)\n",
        "cell 9 (added)", "uses numpy.linalg.lstsq", True,
    ),
    "numpy patched in another cell": (
        SOLVE, "np.linalg.solve = lambda A, b: np.linalg.lstsq(A, b)[0]\n",
        "cell 9 (added)", "uses numpy.linalg.lstsq", True,
    ),
    "an alias of a closed function": (
        "def least_squares(X, d):\n    return fit(X, d)\n",
        "fit = P.lls\n",
        "cell 9 (added)", "uses P.lls, which this lab closes", False,
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(ADDED_ROUTES))
def test_a_route_through_another_cell_is_found_there(name):
    answer, added, cell, phrase, is_held = ADDED_ROUTES[name]
    found = review_two(answer, added)
    assert any(c == cell and phrase in what and h == is_held for c, what, h in found), found


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
        "uses P.lls, which this lab closes",
        False,
    ),
    "a closed function imported by name": (
        "from perceptrons import lls\ndef least_squares(X, d):\n    return lls(X, d)\n",
        "uses P.lls, which this lab closes",
        False,
    ),
    "a closed function by getattr": (
        "def least_squares(X, d):\n    return getattr(P, 'lls')(X, d)\n",
        "uses P.lls, which this lab closes",
        False,
    ),
    "a cell timed": (
        "%%time\ndef least_squares(X, d):\n    return np.linalg.lstsq(X, d)[0]\n",
        "uses numpy.linalg.lstsq",
        True,
    ),
    "a line timed": (
        "%time solve = np.linalg.lstsq\ndef least_squares(X, d):\n    return solve(X, d)[0]\n",
        "uses numpy.linalg.lstsq",
        True,
    ),
    "timeit's setup": (
        "%%timeit -n 1 solve = np.linalg.lstsq\n1 + 1\ndef least_squares(X, d):\n"
        "    return solve(X, d)[0]\n",
        "uses numpy.linalg.lstsq",
        True,
    ),
    "a shell command's output": ("x = !ls\n", "shell command", True),
    "get_ipython": (
        "def least_squares(X, d):\n    return get_ipython().ev('np.linalg.' + 'lstsq')(X, d)\n",
        "get_ipython",
        True,
    ),
    "getattr passed as a value": (
        "import functools\ndef least_squares(X, d):\n"
        "    return functools.reduce(getattr, ['linalg', 'ls' + 'tsq'], np)(X, d)[0]\n",
        "getattr as a value",
        True,
    ),
    "getattr given another name": (
        "g = getattr\ndef least_squares(X, d):\n    return g(np.linalg, 'ls' + 'tsq')(X, d)[0]\n",
        "getattr as a value",
        True,
    ),
    "a stdlib module the rules do not list": (
        "import pickle\n", "imports pickle, a module the rules do not list", True,
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(ROUTES))
def test_each_route_is_named_held_or_refused(name):
    source, phrase, is_held = ROUTES[name]
    found = review(source)
    assert any(phrase in what for what, _ in found), found
    assert held(source) == is_held


def test_a_closed_function_at_the_top_of_a_cell_is_fine():
    """Outside a graded function the package works as in JupyterLab (Lab 5 ex 3 computes a
    value with P.logistic_regression): a call at a cell's top level is not named, nor a
    helper that no graded function reaches."""
    assert review("norms = P.lls(X, d)\n") == []
    assert review("def plot_fit(X, d):\n    return P.lls(X, d)\n", gid="cell 9 (added)") == []


def test_a_forbidden_name_counts_only_for_its_own_exercise():
    """Lab 6 ex 4 may use np.linalg.svd (an honest family member does): ex 2's forbid list
    is not ex 4's."""
    rules = handin.Rules(("augment",), {"ex2-code": ("numpy.linalg.svd",)}, LAB6.setup)
    svd = "def lms_limits(X, eta):\n    return np.linalg.svd(X)[1]\n"
    assert review(svd, gid="ex4-code", rules=rules) == []
    assert held(svd.replace("lms_limits", "least_squares"), gid="ex2-code", rules=rules)


def test_a_copy_of_the_package_code_is_held_and_a_short_formula_is_not():
    import inspect
    import textwrap

    import perceptrons as P

    copy = inspect.getsource(P.pt).replace("def pt(", "def train(", 1)
    assert ("train reproduces the package's own code", True) in review(copy, gid="ex3-code")
    # red team, round 6: below a cell's top level, padded with code of its own, or split
    nested = "if True:\n" + textwrap.indent(copy, "    ")
    assert ("train reproduces the package's own code", True) in review(nested, gid="ex3-code")
    inner = "def outer():\n" + textwrap.indent(copy, "    ") + "    return train\n"
    assert held(inner, gid="ex3-code")
    padding = "".join(f"def pad{k}(a, b):\n    return a * {k} + b - {k}\n" for k in range(40))
    import ast

    body = ast.parse(copy).body[0].body[1].lineno - 1  # after the docstring
    dead = "".join(f"    pad_{k} = [{k}] * {k} + list(range({k}))\n" for k in range(60))
    lines = copy.splitlines(keepends=True)
    padded = "".join(lines[:body]) + dead + "".join(lines[body:]) + padding
    assert not review(padded.replace(dead, ""), gid="ex3-code") == []  # (the copy, found)
    assert held(padded, gid="ex3-code")
    function = ast.parse(copy).body[0]
    half = len(function.body) // 2
    first, second = ast.parse(copy).body[0], ast.parse(copy).body[0]
    pads = ast.parse(dead.replace("    ", "")).body  # each half padded: only the whole
    first.body, second.body = pads + function.body[:half], pads + function.body[half:]
    first.name, second.name = "train_start", "train_end"
    cells = [("ex3-code", "ex3", ast.unparse(first) + "\n" + padding),
             ("cell 9 (added)", None, ast.unparse(second) + "\n" + padding),
             ("ex2-code", "ex2", "")]  # fmt: skip
    found = handin.review_cells(cells, LAB6)
    assert any("reproduces most of the package's own P.pt" in f.what and f.held for f in found)
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


def test_what_a_finding_quotes_of_the_student_is_one_plain_short_line():
    """Red team, round 6: a name given to getattr stopped the whole class's recording (a
    lone surrogate), put live markup into the feedback page and escape sequences into the
    instructor's terminal, and 3 MB into every answer's comment."""
    hostile = "_\ud800<img src=x onerror=alert(1)>[a](javascript:x)\x1b[2K" + "y" * 3_000_000
    source = f"getattr(np, {hostile!r}, None)\n%{'m' * 500}\n"
    found = handin.review_cells([("cell 9 (added)", None, source), ("ex2-code", "ex2", "")], LAB6)
    assert len(found) == 2
    for finding in found:
        assert finding.what.isascii() and finding.what.isprintable() and len(finding.what) < 200
        assert not set("<>[]()\x1b") & set(finding.what.split("name", 1)[-1]), finding.what
        finding.what.encode("utf-8")  # strict: no surrogate left


def test_the_check_says_what_it_found_and_where(tmp_path, monkeypatch, capsys):
    lab = "lab6_lms_filter"
    route = (
        "from scipy.linalg import lstsq\n\ndef least_squares(X, d):\n"
        "    return P.lls(X, d) + lstsq(X, d)[0]\n"
    )
    (tmp_path / f"{lab}.ipynb").write_text(json.dumps(answered(lab, {"ex2-code": route})))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    found = handin.check(lab=lab)
    said = capsys.readouterr().out
    assert len(found) == 4 and "4 thing(s) to look at" in said
    assert "- ex2-code, line 1: imports scipy.linalg" in said and "fails when graded" in said
    assert "- ex2-code, line 1: uses scipy.linalg.lstsq" in said and "held for review" in said
    assert "- ex2-code, line 4: uses scipy.linalg.lstsq" in said
    assert "- ex2-code, line 4: uses P.lls, which this lab closes" in said
    handin.check(lab="lab9_missing")
    assert "No saved notebook to check (lab9_missing.ipynb)" in capsys.readouterr().out
    cli = subprocess.run(
        [sys.executable, "-m", "perceptrons.handin", f"{lab}.ipynb"], capture_output=True, text=True
    )
    assert cli.returncode == 1 and "uses P.lls" in cli.stdout


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
