"""Before you hand in a lab: the rules of its grading, checked on your own notebook.

    handin.check("lab1_perceptron.ipynb")            # the last cell of every lab
    python -m perceptrons.handin lab1_perceptron.ipynb  # the same from a terminal

A lab is graded in an environment that holds only what the lab may use: numpy, matplotlib,
IPython, ipywidgets, Python's standard library and this package, in which the functions the
lab asks you to write, and everything that would do them for you, are absent (the lab's
**Rules** name the package functions a graded function may call). So an answer that imports
scipy or scikit-learn, or calls a package function the lab closes, fails when it is graded,
though it runs in JupyterLab. What cannot be made absent (numpy's ``lstsq`` where an
exercise asks for the normal equations, code that reaches other code by name, a copy of the
package's own code) is not guessed at: the answer is held for the instructor, who reads it
and gives its points by hand. :func:`check` names each such thing, with its cell and line,
before you hand in; the grader applies the same rules (:func:`review`).

The rules, read from the notebook: the lab's package allow list (notebook metadata
``grading.allow``), each graded cell's ``grading.forbid`` (numpy functions the exercise asks
you not to use), and the cells that are yours (the answer cells and the cells you added).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib
import io
import json
import re
import sys
import tokenize
import types
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "perceptrons"
#: the package's modules whose functions a lab may close (the others hold data sets, test
#: functions, plots, sliders, checks and result types, which do no exercise's work)
ALGORITHMS = ("perceptron", "convergence", "delta_rule", "gradient_descent", "adaptive", "logistic")
#: what the grading environment has besides the standard library
INSTALLED = frozenset({"numpy", "matplotlib", "IPython", "ipywidgets", "traitlets", "PIL", PACKAGE})
#: the modules an answer may import (with their submodules)
IMPORTS = frozenset(
    {
        "numpy",
        "matplotlib",
        "ipywidgets",
        "IPython.display",
        PACKAGE,
        "math",
        "cmath",
        "itertools",
        "functools",
        "operator",
        "collections",
        "copy",
        "dataclasses",
        "typing",
        "enum",
        "numbers",
        "fractions",
        "decimal",
        "statistics",
        "random",
        "bisect",
        "heapq",
        "array",
        "string",
        "re",
        "textwrap",
        "time",
        "warnings",
        "contextlib",
        "abc",
        "__future__",
        "json",
        "csv",
        "datetime",
        "pprint",
        "io",
        "pathlib",
    }
)
#: built-ins that run text as code or reach objects by name
DYNAMIC = frozenset(
    {"eval", "exec", "compile", "__import__", "globals", "locals", "vars", "breakpoint",
     "get_ipython"}
)  # fmt: skip
BY_NAME = frozenset({"getattr", "setattr", "delattr", "hasattr"})
#: names that reach attributes by a name given at run time
BY_NAME_HELPERS = frozenset({"attrgetter", "methodcaller", "get_type_hints", "ForwardRef"})
#: special attributes an answer may use (the rest lead to other objects' insides)
SPECIAL_OK = frozenset({"__name__", "__doc__", "__init__", "__repr__", "__str__", "__len__"})
#: parts of numpy and matplotlib that load or build code (not needed by any exercise)
LOADERS = frozenset({"ctypeslib", "f2py", "distutils", "backends", "importstring"})
#: magics that only set up plots or show help
MAGICS_OK = frozenset({"matplotlib", "pinfo", "pinfo2", "autoreload"})
#: extensions that ``%load_ext`` may load (they run nothing of the notebook's)
EXTENSIONS_OK = frozenset({"autoreload"})
#: magics that time Python code: the code is read as the cell's own
CODE_MAGICS = frozenset({"time", "timeit"})
#: what IPython's own syntax becomes: get_ipython().<one of these>(constants...)
IPYTHON_CALLS = frozenset({"run_line_magic", "run_cell_magic", "system", "getoutput"})


@dataclass(frozen=True)
class Finding:
    """One thing the rules name in a notebook.

    cell : the cell, by its grade id ('ex2-code') or, for a cell you added, its number
        ('cell 14 (added)');
    line : the line within the cell (1 for the cell as a whole);
    what : one sentence: what was found and what happens when the lab is graded;
    held : True when the answer is held for the instructor's review (its automatic
        points wait until the instructor accepts them); False when it simply fails;
    exercise : the exercise whose points it concerns ('ex2'), or None for every exercise
        (a cell you added).
    """

    cell: str
    line: int
    what: str
    held: bool
    exercise: str | None

    def __str__(self) -> str:
        kind = "held for review" if self.held else "fails when graded"
        return f"{self.cell}, line {self.line}: {self.what} ({kind})"


@dataclass(frozen=True)
class Rules:
    """A lab's rules (see the module's docstring)."""

    allow: tuple[str, ...]  # package functions a graded function may call
    forbid: dict  # grade id -> outside functions that cell's exercise may not use
    setup: str  # the lab's own code cells, joined: the names they import


def shown(text: str, limit: int = 60) -> str:
    """The student's text (a name, a string, a grade id) as a finding quotes it: letters,
    digits and ``_.%!-`` kept, anything else a ``?``, at most ``limit`` characters; so a
    finding is one plain line wherever it goes (a table, a terminal, a feedback page)."""
    text = str(text)
    kept = "".join(c if (c.isascii() and c.isalnum()) or c in "_.%!-" else "?" for c in text)
    return kept[:limit] + ("..." if len(kept) > limit else "")


def _text(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def _nbgrader(cell: dict) -> dict:
    meta = cell.get("metadata", {})
    found = meta.get("nbgrader", {}) if isinstance(meta, dict) else {}
    return found if isinstance(found, dict) else {}


def exercise_of(grade_id: str | None) -> str | None:
    """'ex2' for 'ex2-code' (the exercise a grade id belongs to), else None."""
    match = re.match(r"(ex\d+)-", grade_id or "")
    return match[1] if match else None


def rules(nb: dict) -> Rules:
    """The rules a lab's notebook carries (instructor or student version)."""
    grading = nb.get("metadata", {}).get("grading", {})
    allow = tuple(grading.get("allow", [])) if isinstance(grading, dict) else ()
    forbid, setup = {}, []
    for cell in nb.get("cells", []):
        meta = _nbgrader(cell)
        if cell.get("cell_type") != "code" or not meta:
            continue
        cell_grading = cell.get("metadata", {}).get("grading", {})
        if isinstance(cell_grading, dict) and cell_grading.get("forbid"):
            forbid[meta.get("grade_id")] = tuple(cell_grading["forbid"])
        if meta.get("locked") or (meta.get("grade") and not meta.get("solution")):
            setup.append(_text(cell))
    return Rules(allow, forbid, "\n".join(setup))


# --- what a lab closes --------------------------------------------------------------------


def package_functions() -> dict[str, types.FunctionType]:
    """The functions (and classes that are not results) of the package's algorithm
    modules, by qualified name ('perceptrons.perceptron.pt'): what a lab may close."""
    from perceptrons._results import Result

    found = {}
    for short in ALGORITHMS:
        name = f"{PACKAGE}.{short}"
        module = importlib.import_module(name)
        for key, value in vars(module).items():
            if getattr(value, "__module__", None) != name:
                continue
            if isinstance(value, types.FunctionType):
                found[f"{name}.{key}"] = value
            elif isinstance(value, type) and not issubclass(value, Result | Warning):
                found[f"{name}.{key}"] = value
    return found


def _reached(obj, known: dict) -> set[str]:
    """The package functions that ``obj`` (a function or class of the package) names: in its
    code (globals, attributes of package modules, nested functions), defaults and methods."""
    by_id = {id(v): k for k, v in known.items()}
    names, codes, found = set(), [], set()
    if isinstance(obj, type):
        for member in vars(obj).values():
            member = getattr(member, "__func__", member)
            if isinstance(member, types.FunctionType):
                codes.append((member.__code__, member.__globals__))
    else:
        codes.append((obj.__code__, obj.__globals__))
        for default in (*(obj.__defaults__ or ()), *(obj.__kwdefaults__ or {}).values()):
            if id(default) in by_id:
                found.add(by_id[id(default)])
    while codes:
        code, space = codes.pop()
        names |= set(code.co_names)
        codes += [(c, space) for c in code.co_consts if isinstance(c, types.CodeType)]
        for name in code.co_names:
            value = space.get(name)
            if id(value) in by_id:
                found.add(by_id[id(value)])
            elif isinstance(value, types.ModuleType) and value.__name__.startswith(PACKAGE):
                for attr in code.co_names:
                    if id(getattr(value, attr, None)) in by_id:
                        found.add(by_id[id(getattr(value, attr))])
    return found


def qualified(name: str) -> str | None:
    """'perceptrons.perceptron.pt' for 'pt' (a name the package exports) or a qualified
    name; None for a function of a module that no lab closes ('separable'); ValueError for
    a name the package does not have."""
    import perceptrons

    known = package_functions()
    if name in known:
        return name
    value = getattr(perceptrons, name, None)
    for key, function in known.items():
        if function is value:
            return key
    if callable(value):
        return None
    raise ValueError(f"`allow` names {name!r}, which is not a function of {PACKAGE}")


@functools.cache
def _closure(allow: tuple[str, ...]) -> frozenset[str]:
    known = package_functions()
    todo = [q for q in map(qualified, allow) if q is not None]
    present = set()
    while todo:
        name = todo.pop()
        if name not in present:
            present.add(name)
            todo += sorted(_reached(known[name], known) - present)
    return frozenset(present)


def present_functions(allow) -> frozenset[str]:
    """The package functions a graded function of a lab may call: those its allow list
    names and what they call in turn (they are in the lab's grading environment)."""
    return _closure(tuple(sorted(allow)))


def closed_functions(allow) -> frozenset[str]:
    """The package functions a lab closes: absent from its grading environment."""
    return frozenset(package_functions()) - present_functions(allow)


# --- reading the notebook -------------------------------------------------------------------


def _cells_of(nb: dict) -> list[tuple[str, str | None, str]]:
    """The cells that are yours: (label, exercise, source) of each answer code cell and each
    code cell you added."""
    cells, labels = [], set()
    for number, cell in enumerate(nb.get("cells", []), start=1):
        if cell.get("cell_type") != "code":
            continue
        meta = _nbgrader(cell)
        gid = meta.get("grade_id")
        if meta.get("solution"):
            label = shown(gid) if gid else f"cell {number}"
            label = f"{label} (cell {number})" if label in labels else label  # twice
            labels.add(label)
            cells.append((label, exercise_of(gid), _text(cell)))
        elif not meta and "handin-check" not in cell.get("metadata", {}).get("tags", []):
            cells.append((f"cell {number} (added)", None, _text(cell)))
    return cells


def _ipython_call(node: ast.AST) -> tuple[str, list[str]] | None:
    """('run_line_magic', ['time', 'x = 1']) for ``get_ipython().run_line_magic('time',
    'x = 1')``, what IPython makes of ``%time x = 1``: a call of the shell's with constant
    text only; else None."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return None
    shell = node.func.value
    if not (
        node.func.attr in IPYTHON_CALLS
        and isinstance(shell, ast.Call)
        and isinstance(shell.func, ast.Name)
        and shell.func.id == "get_ipython"
        and not shell.args
        and not node.keywords
        and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args)
    ):
        return None
    return node.func.attr, [a.value for a in node.args]


_TIMEIT_OPTIONS = re.compile(r"^\s*(?:(?:-[nrp]\s*\S+|-[tcqo])\s+)*")


def _python(source: str, depth: int = 0) -> tuple[ast.Module, list[tuple[int, str]]]:
    """The cell as IPython runs it (its magics, shell commands and other syntax made
    Python, by IPython's own transformer), parsed, with the code that ``%time`` and
    ``%timeit`` run parsed in at its own lines; and the other magics and shell commands it
    runs: [(line, the magic's name or '!')]. SyntaxError if it is not Python."""
    from IPython.core.inputtransformer2 import TransformerManager

    tree = ast.parse(TransformerManager().transform_cell(source))
    magics, inner = [], []
    for node in ast.walk(tree):
        call = _ipython_call(node)
        if call is None:
            continue
        kind, args = call
        if kind in ("system", "getoutput"):
            magics.append((node.lineno, "!"))
        elif args[0] in CODE_MAGICS and len(args) >= 2:
            line = node.lineno
            code = [(line - 1, args[1])]  # the line's code (for %%timeit, its setup)
            if kind == "run_cell_magic" and len(args) == 3:
                code.append((line, args[2]))  # the cell's body, from the next line on
            for offset, text in code:
                text = _TIMEIT_OPTIONS.sub("", text, count=1) if args[0] == "timeit" else text
                if not text.strip():
                    continue
                if depth > 5:
                    raise RecursionError("magics nested too deeply")
                part, more = _python(text, depth + 1)
                ast.increment_lineno(part, offset)
                inner += part.body
                magics += [(at + offset, name) for at, name in more]
        elif args[0] == "load_ext" and len(args) >= 2 and args[1].strip() in EXTENSIONS_OK:
            continue
        elif args[0] not in MAGICS_OK:
            magics.append((node.lineno, args[0]))
    tree.body += inner
    return tree, magics


def _imports(tree: ast.AST) -> dict[str, str]:
    """Names that imports bind at any depth -> the module or object they name
    ('np' -> 'numpy', 'lstsq' -> 'numpy.linalg.lstsq')."""
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
                else:
                    names[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def _dotted(node: ast.AST, names: dict[str, str]) -> str | None:
    """'numpy.linalg.lstsq' for ``np.linalg.lstsq`` when ``np`` names numpy, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in names:
        return None
    return ".".join([names[node.id], *reversed(parts)])


def _top(module: str) -> str:
    return module.split(".")[0]


def _allowed_import(module: str) -> bool:
    return any(module == ok or module.startswith(ok + ".") for ok in IMPORTS)


def _installed(module: str) -> bool:
    return _top(module) in INSTALLED or _top(module) in sys.stdlib_module_names


class _Reader(ast.NodeVisitor):
    """Walks one cell and notes what the rules name (see :func:`review`)."""

    def __init__(self, names: dict[str, str]):
        self.names = names
        self.found: list[tuple[int, str, bool]] = []  # (line, what, held)

    def note(self, node, what: str, held: bool) -> None:
        self.found.append((getattr(node, "lineno", 1), what[:400], held))

    def visit_Import(self, node):
        for alias in node.names:
            self._import(node, alias.name)

    def visit_ImportFrom(self, node):
        if node.level or not node.module:
            self.note(node, "a relative import", True)
            return
        self._import(node, node.module)

    def _import(self, node, module: str) -> None:
        if any(part in LOADERS for part in module.split(".")[1:]):
            self.note(node, f"imports {shown(module)}, which loads code", True)
            return
        if _allowed_import(module):
            return
        if not _installed(module):
            self.note(
                node,
                f"imports {shown(module)}, which the grading environment does not have "
                "(the import fails there)",
                False,
            )
        else:
            self.note(
                node,
                f"imports {shown(module)}, a module the rules do not list (it can run or reach "
                "code that the review cannot read)",
                True,
            )

    def visit_Attribute(self, node):
        dotted = _dotted(node, self.names)
        attr = node.attr
        if attr.startswith("__") and attr.endswith("__") and attr not in SPECIAL_OK:
            self.note(node, f"reaches the special attribute {shown(attr)}", True)
        elif dotted is not None:
            parts = dotted.split(".")
            if any(p.startswith("_") and not p.startswith("__") for p in parts[1:]):
                self.note(
                    node, f"reaches {shown(dotted)}, a private part of {shown(parts[0])}", True
                )
            elif any(p in LOADERS for p in parts[1:]):
                self.note(node, f"reaches {shown(dotted)}, which loads code", True)
            elif parts[-1] in BY_NAME_HELPERS:
                self.note(node, f"uses {shown(dotted)}, which reaches attributes by name", True)
            return  # the whole chain was read: its inner parts name nothing more
        self.generic_visit(node)

    def visit_Name(self, node):
        ident = node.id
        if ident in DYNAMIC or ident in ("__builtins__", "__loader__", "__spec__"):
            self.note(node, f"uses {ident}, which runs text as code or reaches names", True)
        elif ident in BY_NAME_HELPERS:
            self.note(node, f"uses {ident}, which reaches attributes by name", True)
        elif ident in BY_NAME:  # not called here (a call is read in visit_Call): passed on
            self.note(node, f"uses {ident} as a value, to reach attributes by name", True)

    def visit_Call(self, node):
        if _ipython_call(node) is not None:
            return  # IPython's own syntax (a magic, a shell command): read in _python
        func = node.func
        if isinstance(func, ast.Name) and func.id in BY_NAME:
            literal = (
                len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
            )
            if not literal:
                self.note(node, f"{func.id} with a name made at run time", True)
            else:
                name = node.args[1].value
                if name.startswith("__") and name not in SPECIAL_OK:
                    self.note(node, f"reaches the special attribute {shown(name)}", True)
                elif name.startswith("_"):
                    self.note(node, f"{func.id} of the private name {shown(name)}", True)
            for arg in node.args[:1] + node.args[2:]:
                self.visit(arg)
            for keyword in node.keywords:
                self.visit(keyword)
            return
        self.generic_visit(node)


def _forbidden_uses(tree: ast.AST, names: dict[str, str], forbid: tuple[str, ...]):
    """(line, what) for each use of a forbidden function: by its dotted name through an
    import, by its own name anywhere (an alias such as ``la.lstsq``, or another library's
    function of that name), or by that name given to ``getattr``."""
    last = {name.rsplit(".", 1)[-1]: name for name in forbid}
    uses = []

    def note(line: int, dotted: str | None, short: str) -> None:
        if dotted in forbid or short in last:
            uses.append((line, dotted if dotted and dotted.endswith("." + short) else last[short]))

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            note(node.lineno, _dotted(node, names), node.attr)
        elif isinstance(node, ast.Name) and node.id in names:  # a name an import binds (a
            dotted = names[node.id]  # function of your own that is called pinv is yours)
            note(node.lineno, dotted, dotted.rsplit(".", 1)[-1])
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                note(node.lineno, f"{node.module}.{alias.name}", alias.name)
        elif isinstance(node, ast.Call) and node.args:  # getattr(np.linalg, "lstsq"), ...
            called = _called(node)
            for arg in node.args[1:2] if called in BY_NAME else node.args[:1]:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    for part in re.split(r"\W+", arg.value):
                        if part in last and called in (*BY_NAME, *BY_NAME_HELPERS):
                            uses.append((node.lineno, last[part]))
    return sorted(set(uses))


def _called(node: ast.Call) -> str | None:
    """The name a call calls ('getattr' for ``getattr(...)``, 'attrgetter' for
    ``operator.attrgetter(...)``)."""
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else None


def _functions(trees: dict[str, ast.Module]) -> dict[str, tuple[str, ast.AST]]:
    """Every function a cell of yours defines at its top level: name -> (cell, node)."""
    found = {}
    for label, tree in trees.items():
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                found[node.name] = (label, node)
    return found


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_SCOPES = (*_FUNCTIONS, ast.ClassDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _base(node: ast.AST) -> str | None:
    """'w' for ``w``, ``w.x``, ``w[0].y``, ``w.append``: the name an expression starts from."""
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _level(nodes):
    """The nodes among ``nodes`` and below them that run at their own level: the functions,
    lambdas and classes below are yielded, not their insides."""
    todo = list(nodes)
    while todo:
        node = todo.pop()
        yield node
        if node not in nodes and isinstance(node, _SCOPES):
            continue
        todo.extend(ast.iter_child_nodes(node))


def _bound_by(statements) -> set[str]:
    """The names that ``statements`` bind or change at their own level (``=``, ``def``,
    ``import``, ``for``, ``with``, ``:=``, ``except ... as``; ``w[0] = ...``, ``w.x = ...``)."""
    names = set()
    for node in _level(list(statements)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        elif isinstance(node, ast.Attribute | ast.Subscript) and isinstance(
            node.ctx, ast.Store | ast.Del
        ):
            names.add(_base(node))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {alias.asname or alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return names - {None}


def _locals(function: ast.AST) -> set[str]:
    """A function's or lambda's own names: its parameters and what its body binds (less
    what it declares global or nonlocal)."""
    args = function.args
    names = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    names |= {a.arg for a in (args.vararg, args.kwarg) if a}
    body = function.body if isinstance(function.body, list) else [function.body]
    declared = {
        name
        for node in _level(body)
        if isinstance(node, ast.Global | ast.Nonlocal)
        for name in node.names
    }
    return (names | _bound_by(body)) - declared


def _free(node: ast.AST) -> set[str]:
    """The names ``node`` reads from the module's level: every name it reads that is not a
    local of a function, lambda or comprehension around the read."""
    out, todo = set(), [(node, frozenset())]
    while todo:
        current, local = todo.pop()
        if isinstance(current, ast.Name) and current.id not in local:
            out.add(current.id)
        if isinstance(current, _FUNCTIONS):
            args = current.args
            outside = [*args.defaults, *(d for d in args.kw_defaults if d)]
            outside += getattr(current, "decorator_list", [])
            todo += [(child, local) for child in outside]
            inner = local | _locals(current)
            body = current.body if isinstance(current.body, list) else [current.body]
            todo += [(child, inner) for child in body]
            continue
        if isinstance(current, _COMPREHENSIONS):
            inner = local | {
                n.id
                for g in current.generators
                for n in ast.walk(g.target)
                if isinstance(n, ast.Name)
            }
            todo += [(child, inner) for child in ast.iter_child_nodes(current)]
            continue
        todo += [(child, local) for child in ast.iter_child_nodes(current)]
    return out


def _bindings(trees: dict[str, ast.Module]) -> dict[str, list[tuple[str, ast.AST]]]:
    """What gives each module-level name of your cells its value: name -> [(cell, top-level
    statement)] of every statement that binds or changes it (:func:`_bound_by`), and of every
    one that calls a method on a name of yours (``solvers.append(...)``)."""
    found: dict[str, list[tuple[str, ast.AST]]] = {}
    statements = [(label, node) for label, tree in trees.items() for node in tree.body]
    for label, statement in statements:
        for name in _bound_by([statement]):
            found.setdefault(name, []).append((label, statement))
    for label, statement in statements:
        for node in _level([statement]):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                name = _base(node.func)
                if name in found and (label, statement) not in found[name]:
                    found[name].append((label, statement))
    return found


def _graded(tree: ast.Module, bindings: dict) -> list[tuple[str, ast.AST]]:
    """Where an exercise's graded names get their values: the functions and classes its
    answer cell defines (else every name it binds), through every statement of yours that
    binds or changes them (a later cell that redefines one too)."""
    defs = [
        n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    ]
    names = {n.name for n in defs} if defs else _bound_by(tree.body)
    return [where for name in sorted(names) for where in bindings.get(name, [])]


def _reachable(start: list[tuple[str, ast.AST]], bindings: dict) -> list[tuple[str, ast.AST]]:
    """The nodes of ``start`` and of every statement of yours that gives a value to a name
    they read from the module's level, transitively: (cell, node) each."""
    seen, todo, out = set(), list(start), []
    while todo:
        label, node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        out.append((label, node))
        for name in _free(node):
            todo += bindings.get(name, [])
    return out


def _closed_uses(node: ast.AST, names: dict[str, str], closed: frozenset[str], exports: dict):
    """(line, 'perceptrons.x') for each closed package function that ``node`` passes on or
    calls where a graded call runs it: anywhere inside a function or lambda; at the module's
    level, where it is named but not called (``cb = P.convergence_bound``: ``cb`` then runs
    in the graded call; ``value = P.convergence_bound(...)`` runs outside it and is fine)."""

    def closed_name(expr: ast.AST) -> str | None:
        if isinstance(expr, ast.Call) and _called(expr) == "getattr" and len(expr.args) >= 2:
            of, attr = expr.args[0], expr.args[1]  # getattr(P, "convergence_bound")
            if isinstance(attr, ast.Constant) and isinstance(attr.value, str):
                module = _dotted(of, names)
                dotted = f"{module}.{attr.value}" if module else None
            else:
                return None
        elif isinstance(expr, ast.Attribute):
            dotted = _dotted(expr, names)
        elif isinstance(expr, ast.Name):
            dotted = names.get(expr.id)
        else:
            return None
        if not dotted or not dotted.startswith(PACKAGE + "."):
            return None
        dotted = exports.get(dotted, dotted)
        return dotted if dotted in closed else None

    uses = []
    todo = [(node, isinstance(node, _SCOPES), False)]  # (node, inside a function, called)
    while todo:
        current, inside, called = todo.pop()
        found = closed_name(current)
        if found and (inside or not called):
            uses.append((current.lineno, found))
        deeper = inside or isinstance(current, _SCOPES)
        for child in ast.iter_child_nodes(current):
            is_called = isinstance(current, ast.Call) and child is current.func
            todo.append((child, deeper, is_called))
    return sorted(set(uses))


# --- copies of the package's own code ------------------------------------------------------

K, WINDOW = 12, 4  # tokens per fingerprinted run; winnowing window


def fingerprints(source: str) -> set[int]:
    """Winnowed hashes of runs of K tokens of ``source`` (comments, blank lines and the
    names of local variables do not count: every name becomes one token, keywords and
    operators stay as they are)."""
    tokens = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT):
                continue
            if tok.type in (tokenize.DEDENT, tokenize.ENDMARKER):
                continue
            if tok.type == tokenize.NAME and tok.string not in _KEYWORDS:
                tokens.append("N")
            elif tok.type == tokenize.STRING:
                tokens.append("S")
            else:
                tokens.append(tok.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return set()
    runs = (" ".join(tokens[i : i + K]).encode() for i in range(len(tokens) - K + 1))
    hashes = [int.from_bytes(hashlib.blake2b(run, digest_size=8).digest()) for run in runs]
    if len(hashes) <= WINDOW:
        return set(hashes)
    return {min(hashes[i : i + WINDOW]) for i in range(len(hashes) - WINDOW + 1)}


_KEYWORDS = frozenset(
    __import__("keyword").kwlist
    + ["np", "self", "range", "len", "zip", "enumerate", "sum", "min", "max", "abs"]
)
#: a function is held as a copy when at least this many of its fingerprints are the
#: package's, and at least this share of them
COPY_SHARED, COPY_SHARE = 25, 0.6


@functools.cache
def _closed_prints(closed: frozenset[str]) -> dict[str, frozenset[int]]:
    """Each closed function's fingerprints (of its source as the package has it)."""
    import inspect

    known = package_functions()
    prints = {}
    for name in sorted(closed):
        try:
            prints[name] = frozenset(fingerprints(inspect.getsource(known[name])))
        except (OSError, TypeError):
            continue
    return prints


@functools.cache
def _package_prints(closed: frozenset[str]) -> frozenset[int]:
    return frozenset().union(*_closed_prints(closed).values())


# --- the review ------------------------------------------------------------------------------


def review(nb: dict, lab_rules: Rules | None = None) -> list[Finding]:
    """What the rules name in notebook ``nb`` (see the module's docstring)."""
    lab_rules = lab_rules or rules(nb)
    return review_cells(_cells_of(nb), lab_rules)


def review_cells(cells: list[tuple[str, str | None, str]], lab_rules: Rules) -> list[Finding]:
    """The review of the cells that are the student's: (label, exercise, source) each."""
    closed = closed_functions(lab_rules.allow)
    exports = _exports()
    try:
        setup_names = _imports(_python(lab_rules.setup)[0])
    except (SyntaxError, ValueError, RecursionError):
        setup_names = {}
    findings: list[Finding] = []
    trees: dict[str, ast.Module] = {}
    exercises = {label: exercise for label, exercise, _ in cells}
    for label, exercise, source in cells:
        try:
            tree, magics = _python(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue  # not Python, even as IPython reads it: it fails when it runs
        for line, name in magics:
            what = "a shell command" if name == "!" else f"the magic %{shown(name)}"
            findings.append(Finding(label, line, f"runs {what}", True, exercise))
        trees[label] = tree
    names = dict(setup_names)
    for tree in trees.values():
        names.update(_imports(tree))
    for label, tree in trees.items():
        reader = _Reader(names)
        try:
            reader.visit(tree)
        except RecursionError:
            findings.append(Finding(label, 1, "code nested too deeply to read", True, None))
            continue
        for line, what, held in reader.found:
            findings.append(Finding(label, line, what, held, exercises[label]))
    bindings = _bindings(trees)
    by_id = {exercise_of(gid): forbid for gid, forbid in lab_rules.forbid.items()}
    for label, exercise, _ in cells:
        if exercise is None or label not in trees:
            continue
        try:
            reached = _reachable(_graded(trees[label], bindings), bindings)
        except RecursionError:
            findings.append(Finding(label, 1, "code nested too deeply to read", True, None))
            continue
        for where, node in reached:
            for line, name in _closed_uses(node, names, closed, exports):
                short = name.rsplit(".", 1)[1]
                what = (
                    f"uses P.{short}, which this lab closes: it is not there when "
                    f"{exercise} is graded, so the graded function raises"
                )
                findings.append(Finding(where, line, what, False, exercise))
            for line, name in _forbidden_uses(node, names, by_id.get(exercise, ())):
                what = f"uses {shown(name, 100)}, which this exercise asks you not to use"
                findings.append(Finding(where, line, what, True, exercise))
    present = {exercise for _, exercise, _ in cells}
    for gid in lab_rules.forbid:  # an answer that cannot be told from the rest
        if exercise_of(gid) not in present:
            what = (
                f"has no answer cell {shown(gid)} (its nbgrader metadata is gone), so "
                "what the exercise asks you not to use cannot be told from the rest"
            )
            findings.append(Finding("the notebook", 1, what, True, exercise_of(gid)))
    findings += _copies(trees, exercises, closed)
    unique = {}
    for finding in findings:
        unique.setdefault((finding.cell, finding.line, finding.what), finding)
    return sorted(unique.values(), key=lambda f: (_order(f.cell, cells), f.line, f.what))


def _copies(trees: dict[str, ast.Module], exercises: dict, closed) -> list[Finding]:
    """The package's own code copied into the student's cells: a function (at any depth)
    whose fingerprints are mostly the package's; or a closed function of the package most
    of whose fingerprints are somewhere in the student's cells (padding a copy with code of
    one's own, or splitting it among cells, does not hide it)."""
    found = []
    package = _package_prints(closed)
    for label, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                prints = fingerprints(ast.unparse(node))
                shared = len(prints & package)
                if shared >= COPY_SHARED and shared >= COPY_SHARE * len(prints):
                    what = f"{shown(node.name)} reproduces the package's own code"
                    found.append(Finding(label, node.lineno, what, True, exercises.get(label)))
    if found or not trees:
        return found
    cells = {label: fingerprints(ast.unparse(tree)) for label, tree in trees.items()}
    every = set().union(*cells.values())
    for name, prints in _closed_prints(closed).items():
        shared = prints & every
        if len(shared) >= max(COPY_SHARED, COPY_SHARE * len(prints)):
            label = max(cells, key=lambda cell: len(cells[cell] & prints))
            short = name.rsplit(".", 1)[1]
            what = f"reproduces most of the package's own P.{short}"
            found.append(Finding(label, 1, what, True, exercises.get(label)))
    return found


def _order(label: str, cells) -> int:
    return next((k for k, (other, _, _) in enumerate(cells) if other == label), len(cells))


@functools.cache
def _exports() -> dict[str, str]:
    """'perceptrons.pt' -> 'perceptrons.perceptron.pt': the package's names for its
    functions, as an answer may write them."""
    import perceptrons

    found = {}
    known = package_functions()
    by_id = {id(v): k for k, v in known.items()}
    for key, value in vars(perceptrons).items():
        if id(value) in by_id:
            found[f"{PACKAGE}.{key}"] = by_id[id(value)]
    return found


# --- the student's check -----------------------------------------------------------------


def _saved(path, lab: str | None) -> Path | None:
    """The saved notebook to check: ``path``; else the one this kernel was started for
    (JupyterLab says which: ``JPY_SESSION_NAME``); else ``lab``.ipynb here."""
    import os

    tried = [path] if path else []
    session = os.environ.get("JPY_SESSION_NAME")
    if not path and session:
        tried += [session, Path(session).name]
    if not path and lab:
        tried.append(f"{lab}.ipynb")
    for candidate in tried:
        if Path(candidate).is_file():
            return Path(candidate)
    return None


def check(path: str | Path | None = None, *, lab: str | None = None) -> list[Finding]:
    """Print what the rules name in a saved notebook (``path``; by default the notebook this
    kernel runs, else ``lab``.ipynb in this folder); returns the findings."""
    found = _saved(path, lab)
    if found is None:
        print(
            f"No saved notebook to check ({path or (lab and lab + '.ipynb') or 'none given'}): "
            "save the notebook, or give its file name, e.g. handin.check('lab1_perceptron.ipynb')."
        )
        return []
    try:
        nb = json.loads(found.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        print(f"{found} could not be read as a notebook ({type(err).__name__}): save it again.")
        return []
    findings = review(nb)
    if not findings:
        print(f"{found.name} (as last saved): nothing the grading rules refuse or hold.")
        return findings
    print(f"{found.name} (as last saved): {len(findings)} thing(s) to look at before you hand in:")
    for finding in findings:
        print(f"- {finding}")
    print(
        "'fails when graded': that code is not in the grading environment, so the function "
        "raises there; 'held for review': its points wait until the instructor reads it."
    )
    if any(f.held and f.exercise is None for f in findings):
        print(
            "A thing held in a cell you added holds the points of every exercise: move what "
            "you need into an answer cell, or delete the cell."
        )
    return findings


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m perceptrons.handin NOTEBOOK.ipynb", file=sys.stderr)
        return 2
    return 1 if check(argv[0]) else 0


if __name__ == "__main__":
    sys.exit(main())
