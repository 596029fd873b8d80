"""The instructor tools' shape: every module imports, no module imports another that
imports it back (lazy imports inside functions count too), and the commands' options are
declared once, so that ``tasks.py`` and ``python -m labtools`` accept the same ones."""

import argparse
import ast
import importlib
import re
import sys

import pytest
from _helpers import ROOT

import tasks

PACKAGE = ROOT / "labs" / "labtools"
# every module, by its dotted name under labtools ("grade", "inside.agent"); a package's
# __init__.py holds its docstring only
MODULES = sorted(
    ".".join(p.relative_to(PACKAGE).with_suffix("").parts)
    for p in PACKAGE.rglob("*.py")
    if p.stem != "__init__"
)
NAMED = re.compile(r"labtools(\.\w+)+(:\w+)?")  # a module named in a string: "-m labtools.x"


def path_of(module: str):
    return PACKAGE.joinpath(*module.split(".")).with_suffix(".py")


def module_of(dotted: str) -> str | None:
    """The labtools module that ``dotted`` (labtools.a.b.name) names or is in, or None."""
    parts = dotted.split(".")
    if parts[0] != "labtools":
        return None
    for end in range(len(parts), 1, -1):
        if (name := ".".join(parts[1:end])) in MODULES:
            return name
    return None


def imports_of(module: str) -> set[str]:
    """The labtools modules that ``module`` imports, anywhere in its source (and those a
    string names whole, as ``python -m labtools.x`` or a task "labtools.x:function")."""
    tree = ast.parse(path_of(module).read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # from labtools.a import b: the module labtools.a.b if there is one, else labtools.a
            names = [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names = [node.value.partition(":")[0]] if NAMED.fullmatch(node.value) else []
        else:
            continue
        found |= {name for name in map(module_of, names) if name}
    return found - {module}


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` as a path [a, b, ..., a], or None."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(node):
        state[node] = "open"
        path.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == "open":
                return path[path.index(target) :] + [target]
            if target not in state and (found := visit(target)):
                return found
        state[node] = "done"
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_cycle_finder_finds_a_cycle():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) is None


def test_no_labtools_module_imports_itself_back():
    graph = {module: imports_of(module) for module in MODULES}
    assert graph["course.release"] == {"course.folder", "door.layout"}  # release and grade did
    assert cycle(graph) is None, " -> ".join(cycle(graph))


# --- the rooms (issue 42): labtools in the order of a submission's path -------------------

# A module imports only modules of its own room and of the rooms before it (lazy imports and
# modules a string names count too). The top level holds two: "shared", what every room
# uses, and "run", which goes through them all. docs/architecture.md has a table per room.
ORDER = ("inside", "shared", "door", "grader", "course", "out", "run")
TOP = {"wire": "shared", "options": "shared", "children": "shared"}
TOP |= {"grade": "run", "schedule": "run", "__main__": "run"}


def room_of(module: str) -> str:
    """The room of a module: its folder, or at the top level its word in :data:`TOP`."""
    folder, _, rest = module.partition(".")
    return folder if rest else TOP[module]


def backward(graph: dict[str, set[str]]) -> list[str]:
    """Each import in ``graph`` of a module of a later room, as "a -> b"."""

    def rank(module):
        return ORDER.index(room_of(module))

    return sorted(f"{a} -> {b}" for a in graph for b in graph[a] if rank(b) > rank(a))


def test_the_order_check_finds_an_import_of_a_later_room():
    graph = {"door.intake": {"course.late", "door.layout"}, "door.layout": {"wire"}}
    graph |= {"course.late": {"door.timestamps"}, "door.timestamps": set(), "wire": set()}
    assert backward(graph) == ["door.intake -> course.late"]
    assert backward({"grade": {"out.export"}, "out.export": {"course.record"}}) == []


def test_every_module_is_in_a_room_whose_package_says_what_it_does():
    assert {p.parent.name for p in PACKAGE.glob("*/*.py")} == set(ORDER) - {"shared", "run"}
    assert {m for m in MODULES if "." not in m} == set(TOP), "a new top-level module: a room"
    for init in [PACKAGE / "__init__.py", *PACKAGE.glob("*/__init__.py")]:
        (body,) = ast.parse(init.read_text()).body  # its docstring only: tasks.py imports
        assert isinstance(body.value.value, str), init  # labtools and labtools.door


def test_no_module_imports_a_later_room_and_inside_nothing_outside_itself():
    graph = {module: imports_of(module) for module in MODULES}
    assert backward(graph) == []
    assert graph["door.intake"] >= {"door.parse", "door.timestamps", "door.layout", "wire"}
    outside = {m: graph[m] for m in MODULES if m.startswith("inside.")}
    assert all(t.startswith("inside.") for targets in outside.values() for t in targets), outside


def test_the_architecture_page_has_a_table_per_room_of_exactly_its_modules():
    """docs/architecture.md follows the folders: a table headed by each room's folder
    (### `labs/labtools/door/`: ...) lists its modules, one a row, and no other."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    tables = {}
    for section in re.split(r"^### ", text, flags=re.M)[1:]:
        if heading := re.match(r"`labs/labtools/(\w*)/?`", section):
            rows = re.findall(r"^\| `(\w+\.py)` \|", section, re.M)
            tables[heading[1] or "top"] = sorted(rows)
    on_disk = {}
    for room in ("top", *set(ORDER) - {"shared", "run"}):
        folder = PACKAGE if room == "top" else PACKAGE / room
        on_disk[room] = sorted(p.name for p in folder.glob("*.py") if p.stem != "__init__")
    assert tables == on_disk


@pytest.mark.parametrize("module", MODULES)
def test_every_labtools_module_imports(module):
    importlib.import_module(f"labtools.{module}")


def test_the_options_tasks_py_needs_first_are_standard_library():
    for module in ("door.layout", "options"):
        assert imports_of(module) == set(), module  # tasks.py reads them before any install


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return action.choices


def declared(parser: argparse.ArgumentParser) -> dict:
    return {
        tuple(a.option_strings) or a.dest: (a.dest, a.default, a.nargs, a.type, a.help)
        for a in parser._actions
        if not isinstance(a, argparse._HelpAction)
    }


@pytest.mark.parametrize("job", ["grade", "formgrader", "export", "feedback", "report"])
def test_both_entry_points_accept_the_same_options(job):
    from labtools.__main__ import parser

    ours, theirs = subcommands(tasks.command_line())[job], subcommands(parser())[job]
    assert declared(ours) == declared(theirs)
    assert declared(ours), job


def test_a_grade_command_line_means_the_same_to_both():
    from labtools.__main__ import parser

    argv = ["grade", "in.zip", "--course", "c", "--labs", "lab1_perceptron", "--jobs", "3"]
    argv += ["--regrade", "--unsafe", "--no-feedback", "--cell-timeout", "5", "--memory-gb", "1.5"]
    argv += ["--limit", "notebook_seconds=900", "--limit", "keys=50", "--scheduler", "tcp://s:1"]
    ours, theirs = vars(tasks.command_line().parse_args(argv)), vars(parser().parse_args(argv))
    theirs.pop("run")
    assert ours == theirs
    assert theirs["limit"] == ["notebook_seconds=900", "keys=50"]
    assert theirs["feedback"] is False
    assert parser().parse_args(["grade", "in.zip"]).feedback is True


def test_tasks_py_hands_labtools_the_arguments_as_given(monkeypatch, tmp_path):
    given = []
    monkeypatch.setattr(tasks, "labtools", lambda *args: given.append(args))
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "x").write_text("")
    argv = ["grade", str(tmp_path / "in"), "--course", str(tmp_path / "c"), "--memory-gb", "3"]
    tasks.main(argv)
    tasks.main(["formgrader", "--port", "9999"])
    assert given == [tuple(argv), ("formgrader", "--port", "9999")]


@pytest.mark.parametrize(
    "url, shown",
    [
        ("postgresql://grader:s3cret@db:5432/gb", "postgresql://grader:***@db:5432/gb"),
        ("postgresql://grader@/gb?host=/run/pg&password=s3cret", "postgresql://grader@/gb?host=/run/pg&password=***"),
        ("postgresql://grader@/gb?host=/run/pg", "postgresql://grader@/gb?host=/run/pg"),
        ("postgresql:///gb", "postgresql:///gb"),
    ],
)  # fmt: skip
def test_a_database_password_is_never_shown(url, shown):
    from labtools import options
    from labtools.__main__ import parser

    assert options.masked(url) == shown
    argv = ["x", "export", "--db", url]
    assert options.shown(argv) == ["x", "export", "--db", shown]
    assert options.shown(["--db=" + url]) == ["--db=" + shown]
    for job in options.DB_JOBS:
        args = [job, "in.zip"] if job == "grade" else [job]
        assert parser().parse_args([*args, "--db", url]).db == url
        assert parser().parse_args(args).db is None


def test_a_db_that_is_not_postgresql_and_a_server_that_fails_are_one_line():
    from labtools.course import folder
    from labtools.door.layout import UsageError

    with pytest.raises(UsageError, match="SQLite is the default"):
        folder.check_db_url("sqlite:///gradebook.db")
    with pytest.raises(UsageError, match=r"PostgreSQL URL.*mysql://u:\*\*\*@h/d"):
        folder.check_db_url("mysql://u:pw@h/d")
    folder.check_db_url("postgresql://u@h/d")
    url = "postgresql://grader:s3cret@db/gb"
    said = {
        'FATAL:  database "gb" does not exist': "does not exist: create it",
        'FATAL:  password authentication failed for user "grader"': "refused the login",
        "Connection refused\n\tIs the server running": "no PostgreSQL server answers",
    }
    for text, expected in said.items():
        line = folder.server_problem(url, RuntimeError(text + " (s3cret)"))
        assert expected in line and "grader:***@db/gb" in line and "s3cret" not in line
        assert "\n" not in line


# --- every file of the course folder is written whole (round 5, finding 14) ---------------

# the modules of the sandbox's side: what they write is their own scratch (a sandbox's /tmp,
# matplotlib's cache), never a path of the course folder, which no worker or sandbox is given
SANDBOX_SIDE = {m for m in MODULES if m.startswith("inside.")} | {
    "grader.sandbox",  # and the modules it is made of:
    "grader.bwrap",
    "grader.memory",
    "grader.start",
    "grader.judge",
    "grader.verdicts",
}
# (module, function, call) -> why it may write directly; anything else goes through
# labtools.door.layout.whole (a temporary file beside the target, renamed over it once complete)
WRITES_ALLOWED = {
    ("door.layout", "whole", "os.open"): "the one writer: a temporary file beside the target",
    ("door.layout", "whole", "os.fdopen"): "the same file, then renamed over the target",
    ("course.folder", "locked", "os.open"): "the lock file, which holds the holder's pid only",
    ("course.folder", "copy_folder", "shutil.copytree"): (
        "a folder copied beside its place, renamed"
    ),
    ("out.platforms", "_moodle", "zipfile.ZipFile"): "the zip written into layout.whole's file",
    ("out.platforms", "canvas_feedback", "zipfile.ZipFile"): (
        "the zip written into layout.whole's file"
    ),
    ("course.formgrader", "start", "open"): "formgrader's log, appended by the server it starts",
    ("door.intake", "extract", "open"): "a zip's notebooks, into the run's scratch folder",
    ("course.release", "generate", "write_text"): (
        "labs/release of the repository, no course folder"
    ),
    ("grader.closed", "build", "write_text"): "a lab's copy of the package, in a folder of its own",
}
WRITE_MODES = set("wax+")
WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT")


def writes_of(module: str) -> set[tuple[str, str, str]]:
    """(module, function, call) of each call in ``module`` that opens a file for writing
    (``open`` or ``os.open`` with a writing mode or flag, ``write_text``, ``write_bytes``,
    a zip opened to write, ``shutil`` copies, temporary files)."""
    found = set()

    def visit(node, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            inside = where
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                inside = child.name if not where or isinstance(node, ast.ClassDef) else where
            if isinstance(child, ast.Call):
                func = child.func
                name = getattr(func, "attr", None) or getattr(func, "id", "")
                owner = getattr(getattr(func, "value", None), "id", "")
                call = f"{owner}.{name}" if owner in ("os", "shutil", "zipfile") else name
                modes = [a.value for a in child.args[1:2] if isinstance(a, ast.Constant)]
                modes += [k.value.value for k in child.keywords
                          if k.arg == "mode" and isinstance(k.value, ast.Constant)]  # fmt: skip
                flags = ast.unparse(child.args[1]) if len(child.args) > 1 else ""
                if (
                    name in ("write_text", "write_bytes", "NamedTemporaryFile", "mkstemp")
                    or (owner == "shutil" and name in ("copy", "copy2", "copyfile", "copytree",
                                                        "move"))  # fmt: skip
                    or (name in ("open", "fdopen", "ZipFile")
                        and any(isinstance(m, str) and set(m) & WRITE_MODES for m in modes))
                    or (call == "os.open" and any(f in flags for f in WRITE_FLAGS))
                ):  # fmt: skip
                    found.add((module, inside, call))
            visit(child, inside)

    visit(ast.parse(path_of(module).read_text()), "")
    return found


def test_the_write_finder_finds_each_kind_of_write(tmp_path, monkeypatch):
    source = (
        "import os, shutil, zipfile\n"
        "def a(p):\n    p.write_text('x')\n"
        "def b(p):\n    with open(p, 'a') as f: f.write('x')\n"
        "def c(p):\n    os.open(p, os.O_WRONLY | os.O_CREAT)\n"
        "def d(p):\n    zipfile.ZipFile(p, 'w')\n"
        "def e(p, q):\n    shutil.copy(p, q)\n"
        "def f(p):\n    open(p).read(); open(p, 'rb').read(); os.open(p, os.O_RDONLY)\n"
    )
    (tmp_path / "m.py").write_text(source)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path)
    assert writes_of("m") == {
        ("m", "a", "write_text"), ("m", "b", "open"), ("m", "c", "os.open"),
        ("m", "d", "zipfile.ZipFile"), ("m", "e", "shutil.copy"),
    }  # fmt: skip


def test_no_module_writes_a_course_folders_file_but_through_layout_whole():
    """Round 5, finding 14: ``grades.csv`` was written with ``open(path, "w")`` and a full
    disk left half of it. Every write of the instructor's tools is listed here with why it
    may be direct; every other goes through ``labtools.door.layout.whole``."""
    found = set().union(*(writes_of(m) for m in MODULES if m not in SANDBOX_SIDE))
    assert found == set(WRITES_ALLOWED), found ^ set(WRITES_ALLOWED)


def test_a_command_the_tools_advise_names_the_course_folder_unless_it_is_the_default(
    monkeypatch, tmp_path
):
    """The next command a message gives (feedback, Moodle's export, a changed submission)
    works on the same course folder: `--course` unless it is `grading` (instructor's trial,
    round 5: the Moodle export's advice left out `--course`)."""
    from labtools import options

    monkeypatch.chdir(tmp_path)
    assert options.course_args("grading") == []
    assert options.course_args(tmp_path / "grading") == []
    assert options.course_args("week1") == ["--course", "week1"]
    assert options.course_args(tmp_path / "other" / "grading") == [
        "--course",
        str(tmp_path / "other" / "grading"),
    ]
