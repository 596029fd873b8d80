"""What a graded function reaches: numpy, Python and the package, nothing else.

The third layer of "write it yourself" (decision record ``forbid-allow-list``), run by the
agent in the sandbox just before the grader's call of a function whose cell has
``grading`` metadata. Forbidding names (:mod:`labtools.forbid`) closes the functions an
instructor lists; a library holds many more that do the same work (a least-squares driver
of LAPACK, scikit-learn's SGD regressor or loss gradients, scipy's ``expit`` kept as a
default argument or under scikit-learn's name). So this check reads what the function
can reach, and refuses the call if any of it is outside:

- the function's code and the code of every function of the student's it reaches (by
  global name, default argument, closure, a helper's helper, a class's methods), read
  instruction by instruction: every global name is looked up and checked; an ``import``
  must name an allowed module; an attribute chain from a global name is followed and
  what it ends at is checked; a special attribute that leads to other objects
  (:data:`SPECIAL`: ``__dict__``, ``__globals__``, ``__self__``, ...) and the names that
  build names (``getattr``, ``eval``, ``__import__``, ``globals``, ...) are refused;
- every object reached, by what it is: a module, a function, a class or an instance
  must come from :data:`ALLOWED` (numpy, math, Python's built-ins, standard modules no
  exercise is done by, matplotlib, the package, whose functions the allow list governs
  as the call runs); a numpy ufunc must be one of numpy's own public ones; a compiled
  object that a module outside :data:`ALLOWED` holds (``scipy.linalg.lapack.dgelss``) is
  refused by identity, and one of unknown origin by default.

Like every layer inside the sandbox, the student could undo it (their code runs in the
same process before the call); the tests of the idea, on the grader's side, are the
verdict. A function compiled under a library's file name is taken for the library's.
"""

from __future__ import annotations

import builtins
import dis
import functools
import os
import sys
import types

import numpy

#: the top-level modules a graded function may use
ALLOWED = frozenset(
    {
        "numpy",
        "math",
        "cmath",
        "builtins",
        "itertools",
        "functools",
        "operator",
        "collections",
        "copy",  # standard modules an honest answer may use and no exercise is done by
        "random",
        "warnings",
        "numbers",
        "typing",
        "fractions",
        "decimal",
        "abc",
        "time",
        "enum",
        "types",
        "logging",
        "statistics",
        "matplotlib",  # a graded function may draw (no exercise is done by drawing)
        "dataclasses",
        "_thread",
        "_functools",  # what these are written in
        "_collections",
        "_operator",
        "_warnings",
        "_abc",
        "perceptrons",
        "__main__",
    }
)
#: built-ins that reach objects by a name built at run time, or run text as code
REFUSED_BUILTINS = frozenset(
    {
        "__import__",
        "eval",
        "exec",
        "compile",
        "getattr",
        "setattr",
        "delattr",
        "globals",
        "locals",
        "vars",
        "open",
        "breakpoint",
        "input",
    }
)
#: special attributes that lead from an object to others (a function's globals and code, a
#: class's subclasses and bases, a namespace): a graded function may not name them
SPECIAL = frozenset(
    {
        "__dict__",
        "__globals__",
        "__code__",
        "__closure__",
        "__defaults__",
        "__kwdefaults__",
        "__self__",
        "__func__",
        "__wrapped__",
        "__objclass__",
        "__bases__",
        "__base__",
        "__mro__",
        "__subclasses__",
        "__builtins__",
        "__import__",
        "__getattribute__",
        "__loader__",
        "__spec__",
        "__reduce__",
        "__reduce_ex__",
        "__get__",
    }
)
_HEAP = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made by Python code
_MAX_ITEMS = 200  # items of one list, tuple, set or dict looked at
_ATTRS = {"LOAD_ATTR", "LOAD_METHOD", "STORE_ATTR", "DELETE_ATTR"}
_CYTHON = {"cython_function_or_method", "fused_cython_function"}
_REFUSED_BUILTIN_IDS = frozenset(
    id(getattr(builtins, name)) for name in REFUSED_BUILTINS if hasattr(builtins, name)
)
#: compiled callables judged by what they are bound to, or by their type's module
_KNOWN_CALLABLES = (
    type,
    types.BuiltinFunctionType,
    types.MethodWrapperType,
    types.WrapperDescriptorType,
    types.MethodDescriptorType,
    types.ClassMethodDescriptorType,
    type(numpy.concatenate),  # numpy's C-level array-function dispatcher
)


class Refused(RuntimeError):
    """The graded function reaches something outside what it may use."""


def _root(name) -> str:
    return str(name or "").split(".")[0]


@functools.cache
def _homes() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the folders of numpy, the package and the standard library; the folders packages
    are installed in): a function whose code's file is below one of them is a library's."""
    import perceptrons

    allowed = (
        os.path.dirname(numpy.__file__) + os.sep,
        os.path.dirname(perceptrons.__file__) + os.sep,
        os.path.dirname(functools.__file__) + os.sep,  # the standard library
    )
    return allowed, tuple(p + os.sep for p in sys.path if p and "-packages" in p)


def _library_function(func: types.FunctionType) -> bool:
    """Whether ``func`` is a library's (its code's file is installed, or in the standard
    library or the package), not the student's; a library's says its module truly."""
    allowed, installed = _homes()
    return func.__code__.co_filename.startswith(allowed + installed)


def _generated(key: str, value) -> bool:
    """A special method that a decorator wrote (dataclass, namedtuple: code compiled from
    a string), which runs no code of the student's own."""
    code = getattr(value, "__code__", None) if isinstance(value, types.FunctionType) else None
    return key.startswith("__") and code is not None and code.co_filename == "<string>"


# What the modules hold, read once per module: ids of what a module of ALLOWED holds
# ("inside"), what only others hold ("outside": id -> name), the modules read, and
# numpy's own ufuncs. Read before any student code runs (:func:`snapshot`: the warm
# parent, or the cold agent after :func:`preload`), then module by module as imports add
# them, so a student who puts scipy's function into numpy's namespace does not make it
# numpy's.
_STATE: dict = {}


def preload() -> None:
    """Import what every notebook needs (numpy, matplotlib with Agg, IPython, ipywidgets,
    the package): the warm parent does it once (:func:`labtools.zygote.prepare`), a cold
    agent before its snapshot, so that both read the same modules."""
    import IPython.core.completer  # noqa: F401 - what a notebook's shell imports first
    import IPython.core.interactiveshell  # noqa: F401
    import ipywidgets  # noqa: F401
    import matplotlib.backends.backend_agg  # noqa: F401 - what the first figure imports
    import matplotlib.font_manager  # noqa: F401 - the font list, read once
    import matplotlib.pyplot  # noqa: F401
    import traitlets.config  # noqa: F401

    import perceptrons  # noqa: F401
    import perceptrons.plotting  # noqa: F401
    import perceptrons.testing  # noqa: F401
    import perceptrons.widgets  # noqa: F401


def snapshot() -> None:
    """Read every loaded module (once: later calls read only modules loaded since)."""
    if not _STATE:
        ufuncs = {id(v) for v in vars(numpy).values() if isinstance(v, numpy.ufunc)}
        _STATE.update(inside=set(), outside={}, read=set(), ufuncs=ufuncs)
    inside, outside, read = _STATE["inside"], _STATE["outside"], _STATE["read"]
    for name, module in list(sys.modules.items()):
        if name in read or module is None or _root(name) in ("labtools", "__main__"):
            continue
        if getattr(module, "__name__", None) in ("__main__", "__mp_main__"):
            continue  # the student's namespace under another name (multiprocessing's)
        read.add(name)
        try:
            items = list(vars(module).items())
        except TypeError:
            continue
        for key, value in items:
            if isinstance(value, int | float | str | bytes | bool | type(None)):
                continue
            if _root(name) in ALLOWED:
                inside.add(id(value))
                outside.pop(id(value), None)
            elif id(value) not in inside:
                outside.setdefault(id(value), f"{name}.{key}")


def check(func, name: str, trusted: frozenset[int] = frozenset()) -> None:
    """Raise :class:`Refused` if ``func`` (the student's function called ``name``) reaches
    anything outside :data:`ALLOWED` (see the module's docstring). ``trusted``: ids of
    objects the grader put in the student's namespace (the instructor's stand-ins)."""
    snapshot()
    outside, ufuncs = _STATE["outside"], _STATE["ufuncs"]
    seen: set[int] = set()
    todo: list[tuple[str, object]] = [(name, func)]

    def refuse(where: str, what: str) -> None:
        raise Refused(
            f"{name} reaches {what} ({where}): a graded function may use numpy, math, "
            "Python's built-ins and the package functions its stub names, nothing else"
        )

    def read_code(where: str, code: types.CodeType, globals_: dict):
        chain: list[str] | None = None
        base: object = None
        for ins in dis.get_instructions(code):
            op, arg = ins.opname, ins.argval
            if op in ("LOAD_GLOBAL", "LOAD_NAME"):
                if arg in REFUSED_BUILTINS:
                    refuse(where, f"the built-in {arg}")
                if arg in SPECIAL:
                    refuse(where, f"the name {arg}")
                if arg in globals_:
                    base = globals_[arg]
                    todo.append((f"{where}: global {arg}", base))
                else:
                    base = getattr(builtins, arg, None)
                    if base is not None:
                        todo.append((f"{where}: built-in {arg}", base))
                chain = [arg]
            elif op in _ATTRS:
                if arg in SPECIAL:
                    refuse(where, f"the attribute .{arg}")
                if op in ("LOAD_ATTR", "LOAD_METHOD") and chain is not None:
                    chain.append(arg)
                    if isinstance(base, types.ModuleType):
                        held = vars(base)
                        base = held[arg] if arg in held else getattr(base, arg, None)
                        if base is not None:
                            todo.append((f"{where}: {'.'.join(chain)}", base))
                    else:
                        chain = None
                else:
                    chain = None
            elif op in ("IMPORT_NAME", "IMPORT_FROM"):
                module = str(arg)
                if op == "IMPORT_NAME" and _root(module) not in ALLOWED:
                    refuse(where, f"an import of {module}")
                if any(p.startswith("_") for p in module.split(".")[1:] if p):
                    refuse(where, f"an import of {module}")
                if op == "IMPORT_FROM" and module.startswith("_"):
                    refuse(where, f"an import of {module}")
                chain = None
            else:
                chain = None
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                read_code(f"{where}: {const.co_name}", const, globals_)

    while todo:
        where, obj = todo.pop()
        if id(obj) in seen or id(obj) in trusted:
            continue
        seen.add(id(obj))
        if type(obj) in (list, tuple, set, frozenset, dict):  # by what they hold (one
            items = obj.values() if isinstance(obj, dict) else obj  # empty tuple is shared)
            todo.extend((f"{where}[]", item) for item in list(items)[:_MAX_ITEMS])
            continue
        if isinstance(obj, types.ModuleType):  # by its name (what holds it does not matter)
            if _root(obj.__name__) not in ALLOWED:
                refuse(where, f"the module {obj.__name__}")
            continue
        if id(obj) in _REFUSED_BUILTIN_IDS:
            refuse(where, f"the built-in {getattr(obj, '__name__', obj)}")
        if obj is None or isinstance(obj, int | float | complex | str | bytes | bool | range):
            continue
        if isinstance(obj, numpy.ndarray | numpy.generic | numpy.dtype):
            continue
        if isinstance(obj, functools.partial):
            todo.extend([(where, obj.func), (where, obj.args), (where, obj.keywords)])
            continue
        if isinstance(obj, types.MethodType):
            todo.extend([(where, obj.__func__), (where, obj.__self__)])
            continue
        if isinstance(obj, staticmethod | classmethod):
            todo.append((where, obj.__func__))
            continue
        if isinstance(obj, property):
            todo.extend((where, f) for f in (obj.fget, obj.fset, obj.fdel) if f is not None)
            continue
        if isinstance(obj, types.FunctionType):
            if _library_function(obj):
                if _root(obj.__module__) not in ALLOWED:
                    refuse(where, f"{obj.__module__}.{obj.__qualname__}")
                continue
            read_code(where, obj.__code__, obj.__globals__)
            todo.extend((f"{where}: default", d) for d in obj.__defaults__ or ())
            todo.extend((f"{where}: default", d) for d in (obj.__kwdefaults__ or {}).values())
            for cell in obj.__closure__ or ():
                try:
                    todo.append((f"{where}: closure", cell.cell_contents))
                except ValueError:  # an empty cell
                    pass
            continue
        if isinstance(obj, types.BuiltinFunctionType | types.MethodWrapperType):
            owner = obj.__self__
            if owner is None or isinstance(owner, types.ModuleType):
                module = getattr(owner, "__name__", None) or getattr(obj, "__module__", None)
                if _root(module or "builtins") not in ALLOWED:
                    refuse(where, f"{module}.{obj.__name__}")
            else:
                todo.append((where, owner))
            continue
        if isinstance(obj, numpy.ufunc):
            if id(obj) not in ufuncs:
                refuse(where, f"the ufunc {obj.__name__}, not one of numpy's own")
            continue
        if isinstance(obj, type):
            if _root(obj.__module__) not in ALLOWED:
                refuse(where, f"the class {obj.__module__}.{obj.__qualname__}")
            if obj.__flags__ & _HEAP:
                todo.extend(
                    (f"{where}.{k}", v)
                    for k, v in list(vars(obj).items())[:_MAX_ITEMS]
                    if k != "__annotations__" and not _generated(k, v)
                )
            continue
        kind = type(obj)
        if kind.__name__ in _CYTHON:  # a compiled function: its module is the one it says
            if _root(getattr(obj, "__module__", None)) not in ALLOWED:
                refuse(where, f"{getattr(obj, '__module__', '?')}.{obj.__name__}")
            continue
        if kind.__flags__ & _HEAP:  # an instance of a class made by Python code
            if _root(kind.__module__) not in ALLOWED:
                refuse(where, f"an object of {kind.__module__}.{kind.__qualname__}")
            todo.append((where, kind))
            state = getattr(obj, "__dict__", None)
            if isinstance(state, dict):
                todo.extend((f"{where}.{k}", v) for k, v in list(state.items())[:_MAX_ITEMS])
        elif id(obj) in outside:  # compiled, and held by a module outside ALLOWED only
            refuse(where, outside[id(obj)])
        elif callable(obj) and kind not in _KNOWN_CALLABLES:
            module = getattr(obj, "__module__", None)  # a Cython function says its module
            if not isinstance(module, str) or _root(module) not in ALLOWED:
                refuse(where, f"a compiled function from {module or 'nowhere known'}")
        elif _root(kind.__module__) not in ALLOWED:
            refuse(where, f"an object of {kind.__module__}.{kind.__qualname__}")
