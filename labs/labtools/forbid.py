"""What a graded function may not call ("write it yourself"), named and checked.

A solution cell's ``grading`` metadata says it, in two lists (decision record
``forbid-allow-list``):

- ``allow``: the package functions the answer may call (public names, ``augment``). Its
  presence closes the package: every other function of ``perceptrons``, public or private,
  module-level or a class's, raises while the answer runs, unless the package itself calls
  it (``P.pt`` may use its engine; the student may not).
- ``forbid``: functions outside the package that compute the answer, named in full
  (``numpy.linalg.lstsq``, ``scipy.special.expit``,
  ``sklearn.linear_model.LinearRegression.fit``); a bare name means ``perceptrons.<name>``.
  These raise whoever calls them.

:func:`names_for` turns the metadata into the list of qualified names that the grader sends
with each call (:class:`labtools.wire.Call`); :func:`how` says how the agent enforces one
(``code``: the function's code is swapped, so every reference to it raises; ``attribute``:
an object without Python code, such as a ufunc, is replaced wherever a module or the
student's namespace names it). :func:`check` raises for a name that cannot be enforced, and
``python3 tasks.py labs`` runs it on every cell: a forbid is never a silent no-op.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import types

PACKAGE = "perceptrons"


class ForbidError(ValueError):
    """A name in ``grading.allow`` or ``grading.forbid`` that cannot be enforced."""


def qualified(name: str) -> str:
    return name if "." in name else f"{PACKAGE}.{name}"


@functools.cache
def resolve(name: str):
    """The object that ``name`` ('module.attr' or 'module.Class.method') names, walked from
    the top-level package (submodules imported on the way); raises ForbidError if there is
    none. Cached: the grader and the agent look the same names up at every call."""
    parts = name.split(".")
    try:
        obj = importlib.import_module(parts[0])
    except ImportError:
        raise ForbidError(f"{name}: no module {parts[0]} can be imported") from None
    for k, attr in enumerate(parts[1:], start=2):
        if isinstance(obj, types.ModuleType) and not hasattr(obj, attr):
            try:
                importlib.import_module(".".join(parts[:k]))
            except ImportError:
                pass
        if isinstance(obj, type) and attr in vars(obj):
            obj = vars(obj)[attr]  # a staticmethod stays one (target unwraps it)
        elif hasattr(obj, attr):
            obj = getattr(obj, attr)
        else:
            raise ForbidError(f"{name}: {'.'.join(parts[: k - 1])} has no {attr}")
    return obj


def target(obj):
    """The Python function behind ``obj`` whose code can be swapped, or None: the function
    itself, a static or class method's, a numpy dispatcher's implementation, or what a
    decorator wraps (a function with free variables cannot take another's code)."""
    if isinstance(obj, staticmethod | classmethod):
        obj = obj.__func__
    inner = getattr(obj, "_implementation", None)  # numpy 2's _ArrayFunctionDispatcher
    if not isinstance(obj, types.FunctionType) and isinstance(inner, types.FunctionType):
        obj = inner
    while isinstance(obj, types.FunctionType) and obj.__code__.co_freevars:
        obj = getattr(obj, "__wrapped__", None)  # a decorator's wrapper: the function inside
    return obj if isinstance(obj, types.FunctionType) else None


def how(name: str) -> str:
    """'code' or 'attribute' (see the module's docstring); raises ForbidError otherwise."""
    obj = resolve(name)
    if target(obj) is not None:
        return "code"
    if callable(obj) and not isinstance(obj, type) and "." in name:
        return "attribute"
    raise ForbidError(f"{name} is a {type(obj).__name__}: name its methods (e.g. {name}.fit)")


@functools.cache
def package_functions() -> tuple[str, ...]:
    """Every function of the package, public or private, module-level or a class's, by
    the name of the module that defines it ('perceptrons.perceptron._pt_skipping')."""
    package = importlib.import_module(PACKAGE)
    found = set()
    for info in pkgutil.walk_packages(package.__path__, f"{PACKAGE}."):
        module = importlib.import_module(info.name)
        for key, value in vars(module).items():
            if isinstance(value, type) and value.__module__ == info.name:
                for attr, member in vars(value).items():
                    func = target(member)
                    if func is not None and func.__code__.co_filename == module.__file__:
                        found.add(f"{info.name}.{key}.{attr}")
            elif isinstance(value, types.FunctionType) and value.__module__ == info.name:
                found.add(f"{info.name}.{key}")
    return tuple(sorted(found))


def names_for(grading: dict) -> list[str]:
    """The qualified names that raise while a cell's function runs (see the docstring)."""
    forbid = [qualified(n) for n in grading.get("forbid", [])]
    if "allow" not in grading:
        return forbid
    allowed = {id(resolve(qualified(n))) for n in grading["allow"]}
    closed = [n for n in package_functions() if id(resolve(n)) not in allowed]
    return closed + [n for n in forbid if n not in closed]


def check(grading: dict, where: str = "") -> None:
    """Raise ForbidError if a name in ``grading`` cannot be enforced or is misplaced."""
    for name in grading.get("allow", []):
        if "." in name and not name.startswith(f"{PACKAGE}."):
            raise ForbidError(f"{where}: allow names package functions only, not {name}")
        if target(resolve(qualified(name))) is None:
            raise ForbidError(f"{where}: {name} is not a function of the package")
    for name in grading.get("forbid", []):
        try:
            how(qualified(name))
        except ForbidError as err:
            raise ForbidError(f"{where}: {err}") from None
    unknown = set(grading) - {"allow", "forbid", "reference"}
    if unknown:
        raise ForbidError(f"{where}: unknown grading metadata {sorted(unknown)}")


def public(grading: dict) -> tuple[list[str], list[str]]:
    """For the stub message: (the allowed package functions, the forbidden outside ones)."""
    return list(grading.get("allow", [])), [qualified(n) for n in grading.get("forbid", [])]
