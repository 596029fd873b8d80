"""labtools.reach: a graded function may use numpy, math, Python's built-ins, the package
and functions of its own, and nothing else, however it holds the rest (decision record
``forbid-allow-list``). In-process here; through the real grader, the answer families
(tests/families.py) and the planted class."""

import numpy as np
import pytest
from labtools import reach

import perceptrons as P

reach.snapshot()  # as the agent does before any student code runs


def student(source: str, name: str):
    """The function ``name`` that ``source`` defines, as a notebook cell defines it."""
    namespace = {"__name__": "__main__", "np": np, "P": P}
    exec(compile(source, "<ipython-input-1-0>", "exec"), namespace)
    return namespace[name]


# (label, source, the function's name, what the refusal names)
REFUSED = [
    (
        "a default argument",
        "import scipy.special\ndef sigmoid(z, _f=scipy.special.expit):\n    return _f(z)\n",
        "sigmoid",
        "the ufunc expit, not one of numpy's own (sigmoid: default)",
    ),
    (
        "a method-wrapper of a ufunc",
        "import scipy.special\n_call = scipy.special.expit.__call__\n"
        "def sigmoid(z):\n    return _call(z)\n",
        "sigmoid",
        "expit",
    ),
    (
        "scipy's ufunc under scikit-learn's name",
        "import sklearn.neural_network._base as b\n"
        "def sigmoid(z):\n    return b.logistic_sigmoid(z)\n",
        "sigmoid",
        "expit",
    ),
    (
        "a closure",
        "import scipy.special\ndef make():\n    g = scipy.special.expit\n"
        "    def sigmoid(z):\n        return g(z)\n    return sigmoid\nsigmoid = make()\n",
        "sigmoid",
        "expit",
    ),
    (
        "numpy's vectorize around it",
        "import scipy.special\n_v = np.vectorize(scipy.special.expit)\n"
        "def sigmoid(z):\n    return _v(z)\n",
        "sigmoid",
        "expit",
    ),
    (
        "a partial",
        "import functools, scipy.special\n_p = functools.partial(scipy.special.expit)\n"
        "def sigmoid(z):\n    return _p(z)\n",
        "sigmoid",
        "expit",
    ),
    (
        "a class attribute",
        "import scipy.special\nclass H:\n    f = scipy.special.expit\n"
        "def sigmoid(z):\n    return H.f(z)\n",
        "sigmoid",
        "expit",
    ),
    (
        "a helper of a helper",
        "from scipy.special import softmax\ndef _two(z):\n    return softmax(z, axis=0)\n"
        "def sigmoid(z):\n    return _two(np.stack([0 * z, z]))[1]\n",
        "sigmoid",
        "softmax",
    ),
    (
        "LAPACK through scipy",
        "from scipy.linalg import lapack\n"
        "def least_squares(X, d):\n    return lapack.dgelss(P.augment(X), d)[1][:3]\n",
        "least_squares",
        "dgelss",
    ),
    (
        "numpy's private gufunc",
        "from numpy.linalg import _umath_linalg\n"
        "def least_squares(X, d):\n    return _umath_linalg.lstsq(X, d, 1e-15)\n",
        "least_squares",
        "the ufunc lstsq",
    ),
    (
        "a private numpy module by attribute",
        "def least_squares(X, d):\n    return np.linalg._umath_linalg.lstsq(X, d, 1e-15)\n",
        "least_squares",
        "._umath_linalg",
    ),
    (
        "an import inside",
        "def least_squares(X, d):\n    from sklearn.linear_model import Ridge\n"
        "    return Ridge(alpha=0).fit(X, d).coef_\n",
        "least_squares",
        "an import of sklearn.linear_model",
    ),
    (
        "a scikit-learn class",
        "from sklearn.linear_model import SGDRegressor\n"
        "def lms_filter(X, d, eta):\n    return SGDRegressor(eta0=eta)\n",
        "lms_filter",
        "SGDRegressor",
    ),
    (
        "a name built at run time",
        "def least_squares(X, d):\n    return getattr(np.linalg, 'lst' + 'sq')(X, d)[0]\n",
        "least_squares",
        "the built-in getattr",
    ),
    (
        "a namespace by its special attribute",
        "def sigmoid(z):\n    return np.__dict__['exp'](z)\n",
        "sigmoid",
        ".__dict__",
    ),
    (
        "eval",
        "def sigmoid(z):\n    return eval('1 / (1 + np.exp(-z))')\n",
        "sigmoid",
        "the built-in eval",
    ),
    (
        "a ufunc made from Python",
        "import math\n_u = np.frompyfunc(lambda t: 1 / (1 + math.exp(-t)), 1, 1)\n"
        "def sigmoid(z):\n    return _u(z)\n",
        "sigmoid",
        "not one of numpy's own",
    ),
    (
        "sys, the door to every module",
        "import sys\n"
        "def least_squares(X, d):\n    return sys.modules['scipy.linalg'].lstsq(X, d)[0]\n",
        "least_squares",
        "sys.modules",
    ),
]


@pytest.mark.parametrize(
    ("label", "source", "name", "reached"), REFUSED, ids=[r[0] for r in REFUSED]
)
def test_what_a_graded_function_may_not_use_is_refused_however_it_is_held(
    label, source, name, reached
):
    with pytest.raises(reach.Refused, match="may use numpy, math") as refused:
        reach.check(student(source, name), name)
    assert reached in str(refused.value), str(refused.value)
    assert str(refused.value).startswith(f"{name} reaches ")


ALLOWED = [
    (
        "math and a loop",
        "import math\ndef sigmoid(z):\n    return [1 / (1 + math.exp(-t)) for t in z]\n",
    ),
    (
        "a helper",
        "def _h(z):\n    return np.exp(-np.logaddexp(0, -z))\ndef sigmoid(z):\n    return _h(z)\n",
    ),
    (
        "a class of one's own with a private attribute",
        "class S:\n    def __init__(self):\n        self._k = 1.0\n"
        "    def __call__(self, z):\n        return 1 / (1 + np.exp(-self._k * z))\n"
        "_s = S()\ndef sigmoid(z):\n    return _s(z)\n",
    ),
    (
        "numpy's public functions, a copy and a generator",
        "def sigmoid(z):\n    w = np.asarray(z, dtype=float).copy()\n"
        "    rng = np.random.default_rng(0)\n    A = np.linalg.solve(np.eye(2), np.ones(2))\n"
        "    return 1 / (1 + np.exp(-w)) + 0 * rng.normal() + 0 * A.sum()\n",
    ),
    (
        "functools, itertools and a lambda",
        "import functools, itertools\ndef sigmoid(z):\n"
        "    f = lambda t: 1 / (1 + np.exp(-t))\n"
        "    return functools.reduce(lambda a, b: a + b, itertools.repeat(f(z), 1))\n",
    ),
    (
        "numpy's sliding windows",
        "from numpy.lib.stride_tricks import sliding_window_view\n"
        "def sigmoid(z):\n    return sliding_window_view(np.asarray(z), 1)[:, 0]\n",
    ),
    (
        "recursion",
        "def sigmoid(z):\n"
        "    return 1 / (1 + np.exp(-z)) if np.ndim(z) else sigmoid(np.atleast_1d(z))\n",
    ),
    (
        "a copy, warnings, numbers, random and aliases of numpy and math",
        "import copy, numbers, random, warnings\nimport numpy.linalg as la\nfrom math import exp\n"
        "def sigmoid(z):\n    z = copy.deepcopy(z)\n    if not isinstance(z, numbers.Number):\n"
        "        warnings.warn('an array')\n    random.Random(0).random()\n"
        "    return 1 / (1 + np.exp(-z)) + 0 * la.norm(z) + 0 * exp(0)\n",
    ),
    (
        "private attributes, one's own and a namedtuple's",
        "import collections\nclass C:\n    def __init__(self):\n"
        "        self._n, self._w = 0, [1.0]\n"
        "    def tick(self):\n        self._n += 1\n"
        "        return sum(self._w[i] for i in range(1)) + (lambda: self._n)()\n"
        "    def __add__(self, other):\n        return self._n + other._n\n"
        "T = collections.namedtuple('T', 'w')\n"
        "def sigmoid(z):\n    c = C()\n    t = T(0)._replace(w=1)\n"
        "    return 1 / (1 + np.exp(-z)) + 0 * (c.tick() + (c + c) + t.w)\n",
    ),
    (
        "dataclasses, annotations and names with two underscores",
        "from dataclasses import dataclass, field\n__EPS = 1e-300\n"
        "@dataclass\nclass Step:\n    eta: float | None = None\n"
        "    path: list = field(default_factory=list)\n"
        "def __f(z):\n    return 1 / (1 + np.exp(-z))\n"
        "def sigmoid(z):\n    s = Step(1.0)\n    assert s == Step(1.0)\n"
        "    return __f(z) + 0 * __EPS + 0 * s.eta\n",
    ),
    (
        "a plot, which does not run",
        "import matplotlib.pyplot as plt\ndef sigmoid(z, show=False):\n"
        "    if show:\n        plt.plot(z)\n    return 1 / (1 + np.exp(-z))\n",
    ),
    ("the package", "def sigmoid(z):\n    return P.sigmoid(z)\n"),  # the allow list decides
]


@pytest.mark.parametrize(("label", "source"), ALLOWED, ids=[a[0] for a in ALLOWED])
def test_numpy_math_builtins_the_package_and_ones_own_code_pass(label, source):
    reach.check(student(source, "sigmoid"), "sigmoid")


def test_a_library_object_put_into_numpy_after_the_snapshot_stays_outside():
    """Modules are read before any student code runs, so a student who puts scipy's
    function into numpy's namespace does not make it numpy's."""
    import scipy.special

    np.expit_of_scipy = scipy.special.expit
    try:
        reach.snapshot()
        with pytest.raises(reach.Refused, match="expit"):
            reach.check(student("def f(z):\n    return np.expit_of_scipy(z)\n", "f"), "f")
    finally:
        del np.expit_of_scipy


def test_the_students_namespace_under_another_modules_name_is_still_the_students():
    """Importing multiprocessing (scikit-learn and joblib do) registers the notebook's
    namespace as the module __mp_main__: its functions stay the student's, read as such."""
    import sys
    import types

    module = types.ModuleType("__main__")
    module.np = np
    exec(compile("def sigmoid(z):\n    return 1 / (1 + np.exp(-z))\n", "<ipython-input-2-0>",
                 "exec"), vars(module))  # fmt: skip
    sys.modules["__mp_main__"] = module
    try:
        reach.snapshot()
        reach.check(module.sigmoid, "sigmoid")
    finally:
        del sys.modules["__mp_main__"]


def test_the_instructors_stand_ins_are_trusted():
    """What the grader puts into the namespace (a stand-in that calls back) is not read."""
    import os

    def stand_in(*args):
        return os.getpid()  # reaches os, which a student's function may not

    helper = student("def train(X):\n    return pt_step(X)\n", "train")
    helper.__globals__["pt_step"] = stand_in
    with pytest.raises(reach.Refused, match="os"):
        reach.check(helper, "train")
    reach.check(helper, "train", trusted=frozenset({id(stand_in)}))
