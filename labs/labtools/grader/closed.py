"""What a lab closes: the package functions it asks students to write (or that would write them),
absent from the lab's grading sandbox, and the grader's side of their stand-ins.

A lab's notebook metadata ``grading.allow`` names the package functions its graded functions
may call; :func:`perceptrons.handin.closed_functions` gives every other function of the
package's algorithm modules (the lab's Rules say so, and the student's own check names a
use of one). :func:`package_for` writes, once per allow list, the copy of the package that
the lab's sandbox binds: each closed function (and class) of an algorithm module is replaced,
where it is defined, by a stand-in with its name and docstring and no code of its own; data
sets, test functions, plots, sliders, checks and result types stay as they are. So the
package's own solution of an exercise is not in the sandbox's file system: nothing a
student's code does there can run it, copy it or reach it.

A stand-in asks the grader (:func:`labtools.inside.agent.closed_call`), and :func:`answer`
replies on the grader's side: outside a graded call (the lab's own cells, which draw with
``P.pt``; a student's cell that computes a value with the package) it runs the package's own
function on the plain-data arguments and sends the value back, as in JupyterLab; inside a
graded call (a test calling the student's function) it refuses, and the student's function
raises.
"""

from __future__ import annotations

import ast
import compileall
import functools
import hashlib
import importlib
import json
import os
import shutil
import tempfile
import warnings
from pathlib import Path

import perceptrons
from labtools import wire
from perceptrons import handin

SOURCE = Path(perceptrons.__file__).resolve().parent
STAND_IN = '''"""A function the lab being graded closes: its code is not in this copy of the
package. Outside a graded call the grader runs the package's own function and sends its
value back; inside one it refuses (labtools.grader.closed)."""


def closed(qualified, doc):
    def function(*args, **kwargs):
        from labtools.inside.agent import closed_call

        return closed_call(qualified, args, kwargs)

    module, _, name = qualified.rpartition(".")
    function.__name__ = function.__qualname__ = name
    function.__module__ = module
    function.__doc__ = doc
    function.__qualified__ = qualified
    return function
'''


def lab_allow(source_nb: dict) -> tuple[str, ...]:
    """The package functions a lab's graded functions may call (its notebook metadata)."""
    return tuple(sorted(handin.rules(source_nb).allow))


def _stripped(path: Path, module: str, closed: frozenset[str]) -> str:
    """The source of ``module`` with each closed top-level function or class replaced by
    its stand-in, every other line as it is."""
    text = path.read_text()
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    replaced = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef | ast.ClassDef):
            continue
        qualified = f"{module}.{node.name}"
        if qualified not in closed:
            continue
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
        doc = ast.get_docstring(node)
        stand_in = f"{node.name} = _closed({qualified!r}, {doc!r})\n"
        replaced.append((first, node.end_lineno, stand_in))
    if not replaced:
        return text
    for first, last, stand_in in reversed(replaced):
        lines[first:last] = [stand_in]
    preamble = [n.end_lineno for n in tree.body[:2] if _is_preamble(n)]
    lines.insert(max(preamble, default=0), "from ._closed import closed as _closed\n")
    return "".join(lines)


def _is_preamble(node: ast.AST) -> bool:
    """The module's docstring and ``from __future__`` imports, which must come first."""
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return isinstance(node.value.value, str)
    return isinstance(node, ast.ImportFrom) and node.module == "__future__"


def build(allow, dest: Path) -> Path:
    """Write the package as a lab with this allow list sees it to ``dest/perceptrons``,
    compiled; returns that folder."""
    closed = handin.closed_functions(allow)
    target = dest / "perceptrons"
    target.mkdir(parents=True)
    for path in sorted(SOURCE.glob("*.py")):
        module = f"perceptrons.{path.stem}" if path.stem != "__init__" else "perceptrons"
        (target / path.name).write_text(_stripped(path, module, closed))
    (target / "_closed.py").write_text(STAND_IN)
    (target / "CLOSED.json").write_text(json.dumps(sorted(closed), indent=1) + "\n")
    compileall.compile_dir(
        target,
        quiet=1,
        invalidation_mode=compileall.py_compile.PycInvalidationMode.UNCHECKED_HASH,
    )
    for path in target.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return target


_CACHE: dict[str, Path] = {}


def key(allow) -> str:
    """A name for the copy of the package one allow list gives (and this package's code)."""
    digest = hashlib.sha256(json.dumps(sorted(allow)).encode())
    for path in sorted(SOURCE.glob("*.py")):
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()[:16]


def package_for(allow) -> Path:
    """The copy of the package for this allow list, built once per process (and shared with
    the processes it forks), in a folder of its own that only this process writes."""
    name = key(allow)
    if name not in _CACHE or not _CACHE[name].is_dir():
        top = Path(tempfile.mkdtemp(prefix=f"labtools-package-{name}-"))
        os.chmod(top, 0o755)
        _CACHE[name] = build(allow, top)
        import atexit

        atexit.register(shutil.rmtree, top, True)
    return _CACHE[name]


# --- the grader's side of a stand-in ---------------------------------------------------------


# the modules whose functions a stand-in's call may name among its arguments (a gradient,
# a data set): the algorithms and the data sets, never the check, the tests or the plots
NAMED = (*handin.ALGORITHMS, "datasets")


def _functions() -> dict[str, object]:
    """The functions and classes of the package's algorithms and data sets, by qualified
    name: what may be named among a stand-in's arguments (and, of them, what a lab closes
    is what a stand-in may ask for: :func:`answer`)."""
    found = {}
    for stem in NAMED:
        module = importlib.import_module(f"perceptrons.{stem}")
        for attr, value in vars(module).items():
            if getattr(value, "__module__", None) == module.__name__ and callable(value):
                found[f"{module.__name__}.{attr}"] = value
    return found


_FUNCTIONS: dict[str, object] = {}


def functions() -> dict[str, object]:
    if not _FUNCTIONS:
        _FUNCTIONS.update(_functions())
    return _FUNCTIONS


def _resolve(ref: str):
    found = functions().get(str(ref))
    if found is None:
        raise wire.NotPlainData(f"{str(ref)[:80]!r}, which is not a function of the package")
    return found


def is_package(name: str) -> bool:
    return name.startswith("perceptrons.")


def refusal(name: str) -> str:
    short = name.rsplit(".", 1)[-1]
    return (
        f"RuntimeError: P.{short} is closed in this lab: a graded function may not call it "
        "(the lab's Rules name the package functions it may use); write it yourself"
    )


@functools.cache
def closed_in(package: Path) -> frozenset[str]:
    """The functions the lab whose copy of the package is ``package`` closes (what its
    stand-ins stand for: ``CLOSED.json``, written by :func:`build`)."""
    return frozenset(json.loads((Path(package) / "CLOSED.json").read_text()))


def answer(call: tuple, budget: wire.Budget, *, graded: bool, closed: frozenset[str]) -> wire.Reply:
    """The grader's reply to a stand-in's call ``(name, args, kwargs)`` as sent: only for a
    function the lab ``closed`` (a stand-in stands for nothing else); refused inside a
    graded call; else the package's own function run here on the arguments."""
    name = call[0]
    if name not in closed or name not in functions():
        return wire.Reply(raised="RuntimeError: not a function this lab closes")
    if graded:
        return wire.Reply(raised=refusal(name))
    try:
        args, kwargs = wire.decode_arguments(call, budget, package=_resolve)
    except wire.NotPlainData as err:
        return wire.Reply(raised=f"TypeError: an argument of {name} could not be sent: {err}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = functions()[name](*args, **kwargs)
        except Exception as err:  # noqa: BLE001 - the caller's arguments made it fail
            return wire.Reply(raised=f"{type(err).__name__}: {str(err)[:1000]}")
    said = [[w.category.__name__, str(w.message)[:1000]] for w in caught[:20]]
    try:
        return wire.Reply(value=wire.to_plain(value, results=True), warnings=said)
    except wire.NotPlainData as err:
        return wire.Reply(raised=f"TypeError: {name} gave {err}, which cannot be sent back")


def warm_review(allow) -> None:
    """Compute, once, what the review of each notebook of this lab reads about the package
    (its closed functions' fingerprints, together and one by one, and the names the
    package exports: :mod:`perceptrons.handin`)."""
    closed = handin.closed_functions(allow)
    handin._package_prints(closed)
    handin._closed_prints(closed)
    handin._exports()
