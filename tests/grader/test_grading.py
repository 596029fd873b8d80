"""The labs: student versions up to date, and grading that a hostile class cannot fool.

The end-to-end test plants one submission for every trick we could think of, by a student
who wants marks without the work or who wants to harm the grader, grades them all in one
course folder, and checks each exact score. Lab 1 has 7 automatic points: ex1 pt_step 1+2,
ex2 prediction 0 (a check for the student), ex3 train 1+2, ex5 slider 1 (and 4 points graded
by hand: the ex2 trace table 2, ex4 2).
"""

import dataclasses
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import numpy as np
import pytest
from _helpers import (
    ROOT,
    answered,
    course_made,
    decode,
    encode,
    graded_cold,
    need_sandbox,
    sandbox_lock,
    scores,
)
from labtools import grade, schedule, wire
from labtools.course import folder as courses
from labtools.course import release
from labtools.door import layout
from labtools.grader import bwrap, notebook, render, sandbox, verdicts
from labtools.grader.limits import Limits

LABS = ROOT / "labs"
LAB = "lab1_perceptron"
# The planted class's cell limit: the loops plant runs into it four times a path (a busy
# loop: 4 x 6 CPU-s warm, as much cold). Its slowest honest cell, the cold start's first
# (numpy, matplotlib and IPython imported: about 1 CPU-s), stays well inside it on a
# machine as loaded as the test run makes it (about 2.5 s measured at worst).
CELL_SECONDS = 6.0
LIMITS = Limits(cell_seconds=CELL_SECONDS, output=8 * 2**20)
# The planted class's memory for a notebook's processes together: 768 MiB, not a lab's
# 2 GiB, so the memhog plant goes over it with four processes of 256 MiB: little work
# for its 6 s on a busy machine (with 600 MB each, its cell once ran out of time in CI)
PLANTED = dataclasses.replace(LIMITS, notebook_memory=768 * 2**20)


def hand_in(folder: Path, student: str, nb, lab=LAB) -> Path:
    """Write ``nb`` (a notebook as a dict, or any text) as ``student``'s submission of
    ``lab`` in ``folder``, laid out as grade reads it; return its path."""
    path = folder / student / lab / f"{lab}.ipynb"
    path.parent.mkdir(parents=True)
    path.write_text(nb if isinstance(nb, str) else json.dumps(nb))
    return path


def nb_of(kind, lab=LAB):
    return json.loads((LABS / kind / lab / f"{lab}.ipynb").read_text())


# ---------------------------------------------------------------------------------------
# Releasing


def test_the_queue_measures_each_new_lab_once_then_gives_the_longest_first():
    def item(student, lab):
        return (layout.Submission(student=student, lab=lab, path=Path(lab)), "", b"")

    todo = [item(s, lab) for s in ("ann", "bob") for lab in ("short", "long", "new")]

    def order(queue, measure=None):
        popped = []
        while queue:
            sub = queue.pop()[0]
            popped.append(f"{sub.lab}/{sub.student}")
            if measure and sub.lab in measure:
                queue.measured(sub.lab, measure[sub.lab])
        return popped

    earlier = {"short": [1.0, 3.0], "long": [9.0]}
    assert order(schedule.Queue(todo, earlier)) == [
        "new/ann",  # never measured: first, once
        "long/ann",
        "long/bob",
        "short/ann",
        "short/bob",
        "new/bob",  # started but not measured yet: last
    ]
    assert order(schedule.Queue(todo, earlier), {"new": 20.0})[:2] == ["new/ann", "new/bob"]
    assert len(schedule.Queue(todo, {})) == 6


def test_there_are_at_least_four_labs_with_four_to_eight_exercises():
    labs = layout.lab_names()
    assert len(labs) >= 4
    for lab in labs:
        cells = nb_of("source", lab)["cells"]
        ids = [c["metadata"]["nbgrader"]["grade_id"] for c in cells if "nbgrader" in c["metadata"]]
        assert len(ids) == len(set(ids)), f"{lab}: grade ids repeat"
        exercises = {i.split("-")[0] for i in ids if i.startswith("ex")}
        assert 4 <= len(exercises) <= 8, f"{lab} has {len(exercises)} exercises"


@pytest.mark.slow
def test_student_versions_are_up_to_date(tmp_path):
    release.generate(out=tmp_path)
    for lab in layout.lab_names():
        fresh = json.loads((tmp_path / lab / f"{lab}.ipynb").read_text())
        assert fresh == nb_of("release", lab), f"labs/release/{lab} is stale: run tasks.py labs"


@pytest.mark.slow
def test_a_lab_that_nbgrader_refuses_is_named_and_nothing_is_marked_done(tmp_path):
    """Every lab is generated in one nbgrader process; when one cannot be, the error names
    it with nbgrader's reason, the course records no lab as generated, and the same course
    folder is taken again once the lab is mended."""
    labs = tmp_path / "labs"
    for lab in ("lab1_perceptron", "lab2_convergence"):
        shutil.copytree(LABS / "source" / lab, labs / "source" / lab)
    shutil.copy(LABS / "nbgrader_config.py", labs / "nbgrader_config.py")
    broken = labs / "source" / "lab2_convergence" / "lab2_convergence.ipynb"
    nb = json.loads(broken.read_text())
    graded = [c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id")]
    graded[1]["metadata"]["nbgrader"]["grade_id"] = graded[0]["metadata"]["nbgrader"]["grade_id"]
    broken.write_text(json.dumps(nb))
    course = tmp_path / "course"
    with pytest.raises(
        RuntimeError, match="nbgrader could not generate lab2_convergence:\n(.|\n)*corrupted"
    ):
        courses.open_course(course, labs)
    assert json.loads((course / layout.MARK).read_text())["sources"] == {}
    broken.write_text((LABS / "source" / "lab2_convergence" / "lab2_convergence.ipynb").read_text())
    assert courses.open_course(course, labs) == ["lab1_perceptron", "lab2_convergence"]  # mended
    assert sorted(json.loads((course / layout.MARK).read_text())["sources"]) == [
        "lab1_perceptron",
        "lab2_convergence",
    ]


def test_student_versions_hold_no_solutions_and_say_what_to_write():
    for lab in layout.lab_names():
        nb = nb_of("release", lab)
        text = json.dumps(nb)
        assert "BEGIN SOLUTION" not in text and "BEGIN HIDDEN TESTS" not in text
        code = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
        stubs = code.count("raise NotImplementedError(")
        said = sum(code.count(f"raise NotImplementedError({q}Student exercise: ") for q in "'\"")
        assert stubs >= 3 and stubs == said


def test_every_lab_rule_can_be_applied_and_every_reference_exists():
    """Each lab's allow list names package functions (what they call comes with them), a
    forbid names a function that exists, and a reference names a solution of the lab."""
    from labtools.course import release

    from perceptrons import handin

    release.check_rules(LABS)
    for lab in layout.lab_names():
        rules = handin.rules(nb_of("source", lab))
        present = handin.present_functions(rules.allow)
        assert present | handin.closed_functions(rules.allow) == set(handin.package_functions())
        cells, _ = notebook.plan(nb_of("source", lab), nb_of("release", lab))
        instructor = notebook.solutions(nb_of("source", lab))
        for cell in cells:
            assert set(cell.reference) <= set(instructor), f"{lab} {cell.grade_id}"


# ---------------------------------------------------------------------------------------
# What may cross: plain data only


class Sneaky(float):
    def __eq__(self, other):
        return True

    __hash__ = float.__hash__


def test_a_subclass_of_plain_data_crosses_as_its_plain_value():
    """Only data crosses, never an object's behaviour: a namedtuple is a tuple, a float that
    says it equals everything is the number it holds, an array subclass an array, and an
    object array of numbers (what np.frompyfunc returns) an array of numbers."""
    from collections import OrderedDict, namedtuple

    pair = namedtuple("Pair", "a b")(1.5, 2)
    assert decode(encode(pair)) == (1.5, 2) and type(decode(encode(pair))) is tuple
    back = decode(encode(Sneaky(1.0)))
    assert type(back) is float and back == 1.0 and back != 2.0
    assert decode(encode({0: Sneaky(3.0)})) == {0: 3.0}
    assert type(decode(encode(OrderedDict(a=1)))) is dict
    view = decode(encode(np.arange(3.0).view(type("Arr", (np.ndarray,), {}))))
    assert type(view) is np.ndarray and np.array_equal(view, np.arange(3.0))
    made = np.frompyfunc(lambda z: 1.0 / (1.0 + np.exp(-z)), 1, 1)(np.array([0.0, 1.0]))
    assert made.dtype == object
    back = decode(encode(made))
    assert back.dtype == float and np.allclose(back, [0.5, 1 / (1 + np.exp(-1))])


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        3,
        -2.5,
        float("nan"),
        float("inf"),
        "text",
        [1, [2.0, "x"]],
        (1, 2),
        {0.005: False, "a": [1], (1, 2): None},
        range(2, 9, 3),
        np.arange(6.0).reshape(2, 3),
        np.array([True, False]),
        np.int64(7),
        np.float32(1.5),
        np.zeros((0, 3), dtype=np.int16),
        np.array(2 + 1j),
    ],
)
def test_plain_data_crosses_unchanged(value):
    back = decode(encode(value))
    assert type(back) is type(value)
    if isinstance(value, np.ndarray | np.generic):
        assert back.dtype == value.dtype and np.array_equal(back, value, equal_nan=True)
    elif isinstance(value, float) and value != value:
        assert back != back
    else:
        assert back == value


@pytest.mark.parametrize(
    "value, named",
    [
        (np.array([object()]), "dtype object"),
        (np.array([1.0, "a"], dtype=object), "dtype object"),
        (lambda: 1, "function"),
        (np, "module"),
        ([1, {2}], "set"),
        ({frozenset(): 1}, "frozenset"),
        (np.zeros(2, dtype=[("a", float)]), "dtype"),
    ],
)
def test_anything_else_is_refused_with_its_name(value, named):
    with pytest.raises(wire.NotPlainData, match=named):
        encode(value)


@pytest.mark.parametrize(
    "text",
    [
        '{"$evil": 1}',
        '{"$ndarray": {"dtype": "|O", "shape": [1], "data": ""}}',
        '{"$ndarray": {"dtype": "<f8", "shape": [5], "data": "AAAAAAAAAAA="}}',
        '{"$dict": [[[1], 2]]}',
        '{"a": 1}',
        "not json",
        "[" * 100_000,
        '{"$range": [0, 5, 0]}',
        '{"$range": [0, 100000000000000000000, 1]}',  # a cheap message, a huge list later
        '{"$range": [0, 20000004, 2]}',  # 10 000 002 items
    ],
)
def test_malformed_messages_are_refused(text):
    with pytest.raises(wire.NotPlainData):
        decode(text)


def as_formgrader_shows(stored: str):
    """The page element that formgrader makes of a stored markdown cell: it renders it as
    markdown again, raw HTML and javascript: links included (nbconvert's markdown2html)."""
    from bs4 import BeautifulSoup
    from nbconvert.filters.markdown import markdown2html

    return BeautifulSoup(markdown2html(stored), "html.parser")


def runnable(page) -> list:
    """The elements of ``page`` that could run script: tags, handlers, javascript: URLs."""
    found = []
    for tag in page.find_all(True):
        if tag.name in ("script", "svg", "iframe", "style", "object", "embed"):
            found.append(tag)
        for name, value in tag.attrs.items():
            if name.lower().startswith("on") or "javascript" in str(value).lower():
                found.append(tag)
    return found


def test_written_answers_reach_formgrader_without_anything_that_runs():
    xss = plant_cells("xss")["ex4-answer"]  # would run in the instructor's browser as it is
    assert runnable(as_formgrader_shows(xss))  # the attack, as formgrader would show it
    page = as_formgrader_shows(render.written_html(xss))
    assert not runnable(page)
    assert "My answer." in page.get_text() and "code" in page.get_text()
    honest = "Since *w* grows, $a < b$ and `x < 0`; see [the docs](https://numpy.org)."
    page = as_formgrader_shows(render.written_html(honest))
    assert page.find("em").get_text() == "w" and page.find("code").get_text() == "x < 0"
    assert page.find("a")["href"] == "https://numpy.org" and "$a < b$" in page.get_text()


def test_a_range_counts_as_its_items():
    # a range crosses as three numbers, but a test may turn it into a list or an array:
    # its length counts against the same budget as the items of lists and arrays
    assert decode(encode(range(-5, wire.MAX_ITEMS - 5))) == range(-5, wire.MAX_ITEMS - 5)
    big = range(wire.MAX_ITEMS * 6 // 10)
    for value in (range(wire.MAX_ITEMS + 1), range(10**30), [big] * 2):
        with pytest.raises(wire.NotPlainData, match="more than"):
            encode(value)


# ---------------------------------------------------------------------------------------
# Which cells are graded


def solved(replace=None, lab=LAB):
    """The student version of a lab with the instructor's answers filled in."""
    return answered(lab, replace)


def cell_index(nb, grade_id):
    return next(
        i
        for i, c in enumerate(nb["cells"])
        if c["metadata"].get("nbgrader", {}).get("grade_id") == grade_id
    )


def test_plan_restores_tests_uses_copies_once_and_keeps_added_cells():
    nb = solved()
    copy = json.loads(json.dumps(nb["cells"][cell_index(nb, "ex1-visible")]))
    nb["cells"].insert(cell_index(nb, "ex1-visible"), copy)  # a copied test cell
    del nb["cells"][cell_index(nb, "ex3-hidden")]  # a deleted one
    nb["cells"][cell_index(nb, "ex2-tests")]["source"] = "pass"  # an edited one
    nb["cells"].insert(
        cell_index(nb, "ex1-code") + 1,
        {
            "cell_type": "code",
            "metadata": {},
            "source": "helper = 1",
            "outputs": [],
            "execution_count": None,
        },
    )
    nb["cells"].reverse()  # and everything in another order
    cells, notes = notebook.plan(nb_of("source"), nb)
    source_ids = [notebook.grade_id(c) for c in nb_of("source")["cells"]]
    assert [c.grade_id for c in cells if c.role != "extra"] == source_ids
    tests = {c.grade_id: c for c in cells if c.role == "test"}
    assert "BEGIN HIDDEN TESTS" in tests["ex3-hidden"].source and tests["ex3-hidden"].sandbox == ""
    original = next(c for c in nb_of("source")["cells"] if notebook.grade_id(c) == "ex2-tests")
    assert tests["ex2-tests"].source == notebook.text(original)
    assert [c.source for c in cells if c.role == "extra"] == ["helper = 1"]
    assert any("ex1-visible appears more than once" in n for n in notes)
    assert any("ex3-hidden was missing" in n for n in notes)
    assert any("ex2-tests was edited" in n for n in notes)


def test_an_untouched_student_version_gives_no_notes():
    for lab in layout.lab_names():
        cells, notes = notebook.plan(nb_of("source", lab), nb_of("release", lab))
        assert notes == [], lab
        assert [c.grade_id for c in cells] == [
            notebook.grade_id(c) for c in nb_of("source", lab)["cells"]
        ]


def test_only_the_solution_cells_names_cross():
    names = notebook.declared(nb_of("source"))
    assert names == {"pt_step", "predicted_updates", "predicted_w", "train", "eta_choice"}


# ---------------------------------------------------------------------------------------
# The sandbox on its own


def test_the_private_tmp_is_mounted_before_the_environment_is_bound(monkeypatch):
    """A checkout (and its .venv) under /tmp must stay visible in the sandbox: its /tmp is
    mounted first and the binds go on top (a clean clone in /tmp found this)."""
    monkeypatch.setattr(bwrap, "_python_paths", lambda: [Path("/tmp/clone/.venv")])
    argv = bwrap.zygote_command(Path("/tmp/clone/package"))
    assert argv.index("--tmpfs") < argv.index("/tmp/clone/.venv")


@pytest.mark.parametrize("privileged", [True, False])
def test_sandbox_isolates_and_limits(privileged, monkeypatch):
    need_sandbox()
    if not privileged:
        if os.geteuid() != 0:
            pytest.skip("the unprivileged mode is the only one here, tested by the other case")
        # the command line an ordinary user gets: a user namespace, uid 65534 inside
        monkeypatch.setattr(bwrap.os, "geteuid", lambda: 1000)
    probe = f"""
import os, socket, pathlib
report = {{"uid": os.getuid(), "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit())}}
report["seen"] = sorted(os.listdir("/"))
report["repo"] = os.path.exists({str(ROOT / "labs" / "source")!r})
try:
    socket.create_connection(("127.0.0.1", 22), timeout=1); report["net"] = True
except OSError:
    report["net"] = False
try:
    pathlib.Path("/usr/evil").write_text("x"); report["wrote"] = True
except OSError:
    report["wrote"] = False
pathlib.Path("scipy.py").write_text("WRITTEN = True")  # a module of its own, in /tmp
try:
    import scipy; report["own module"] = scipy.WRITTEN
except ImportError:
    report["own module"] = False
"""
    from labtools.grader import closed

    package = closed.package_for(("augment", "heaviside"))
    with sandbox.Sandbox(LIMITS, package=package) as box:
        assert box.request(wire.Run(probe)).error is None
        report = box.request(wire.Get("report")).value
        if not privileged:  # memory is watched: the /tmp it counts is the notebook's own
            watched = box.watch._processes()
            inside = box.watch.inside(watched)
            assert inside is not None and inside != str(box.process.pid), watched
    assert report["uid"] == (bwrap.NOBODY if not privileged else bwrap.sandbox_uid())
    assert report["uid"] != os.getuid()
    assert report["pids"] == [1]  # it sees itself only
    assert not report["repo"] and not report["net"] and not report["wrote"]
    assert report["own module"] is False  # what the notebook writes is never imported
    system = {"bin", "sbin", "lib", "lib32", "lib64", "libx32"} & set(os.listdir("/"))
    bound = {p.parts[1] for p in bwrap._python_paths()} | {"usr", "etc", "opt"}
    assert set(report["seen"]) == system | bound | {"proc", "dev", "tmp"}  # nothing else


# ---------------------------------------------------------------------------------------
# End to end: a course folder graded from planted submissions

# The planted submissions: tests/plants/<lab>/<name>.py, one file per plant, and their
# scores, each with why, in tests/plants/<lab>/expected.toml (see tests/plants/README.md).
PLANTS = ROOT / "tests" / "plants" / LAB
MARK = 4242  # sleep times that mark the processes a submission leaves behind (daemon, flood)
SLEEPER_CELL = "import time\ntime.sleep(1000)\n"
CELL = re.compile(r"# %% (?:\[(?P<kind>[\w-]+)\] ?)?(?P<arg>\S*)")
KINDS = {"code", "markdown", "added", "edit", "hand-in"}
PLACEHOLDER = re.compile(r"__[A-Z][A-Z_]*__")


def expected_scores() -> dict[str, dict]:
    """{plant: {"score": ..., "why": ...}} from the plants' table."""
    return tomllib.loads((PLANTS / "expected.toml").read_text())


def plant_sections(name: str) -> list[tuple[str, str, str]]:
    """(kind, argument, text) of each cell of plant ``name``: kind is code (argument: the
    grade id), markdown (the grade id), added (how many times), edit or hand-in."""
    sections = []
    for line in (PLANTS / f"{name}.py").read_text().splitlines():
        found = CELL.fullmatch(line)
        if found:
            sections.append((found["kind"] or "code", found["arg"], []))
        elif sections:  # lines before the first cell say what the plant is
            sections[-1][2].append(line)
    cells = []
    for kind, arg, body in sections:
        assert kind in KINDS, f"{name}: unknown cell kind [{kind}]"
        while body and not body[-1].strip():
            body.pop()
        if kind == "markdown":
            assert all(line == "#" or line.startswith("# ") for line in body), name
            body = [line[2:] for line in body]
        cells.append((kind, arg, "\n".join(body) + "\n"))
    return cells


def plant_cells(name: str) -> dict[str, str]:
    """The student's answers in plant ``name``, by grade id."""
    return {arg: text for kind, arg, text in plant_sections(name) if kind in ("code", "markdown")}


def fill(text: str, values: dict) -> str:
    """``text`` with each ``__NAME__`` replaced by ``values["NAME"]``."""

    def value(found):
        name = found[0].strip("_")
        assert name in values, f"no value for {found[0]}"
        return str(values[name])

    return PLACEHOLDER.sub(value, text)


def hand_in_plant(name: str, submitted: Path, others: Path, values: dict) -> None:
    """Write plant ``name`` as the student ``name``'s submission in ``submitted``."""
    sections = [(kind, arg, fill(text, values)) for kind, arg, text in plant_sections(name)]
    answers = {arg: text for kind, arg, text in sections if kind in ("code", "markdown")}
    solution_ids = {notebook.grade_id(c) for c in nb_of("source")["cells"] if notebook.is_answer(c)}
    assert set(answers) <= solution_ids, f"{name}: {set(answers) - solution_ids} are no answers"
    nb = solved(answers)
    for kind, arg, text in sections:
        if kind == "added":
            nb["cells"] += [
                {"cell_type": "code", "metadata": {}, "source": text, "outputs": [],
                 "execution_count": None}
                for _ in range(int(arg))
            ]  # fmt: skip
    for kind, _, text in sections:
        if kind == "edit":
            scope = {"nb": nb, "cell_index": cell_index, "json": json, "nb_of": nb_of}
            exec(text, scope)
            nb = scope["nb"]
    handers = [text for kind, _, text in sections if kind == "hand-in"]
    for text in handers:
        scope = {"student_dir": submitted / name, "others": others, "LABS": LABS, "LAB": LAB}
        exec(text, scope | {"solved": solved, "json": json})
    if not handers:
        hand_in(submitted, name, nb)


def plant(submitted: Path, others: Path, course: Path, port: int) -> dict:
    """Write one submission per plant; return {student: expected automatic score}."""
    values = {
        "SECRETS": [  # what the sandbox must not read
            str(LABS / "source" / LAB / f"{LAB}.ipynb"),
            str(course / "source" / LAB / f"{LAB}.ipynb"),
            str(course / "gradebook.db"),
            str(submitted / "correct" / LAB / f"{LAB}.ipynb"),
            str(others / "secret.txt"),
        ],
        "WRITABLE": [str(ROOT / "src" / "perceptrons" / "__init__.py"), str(course / "grades.csv")],
        "PORT": port,
        "PROCESS_LIMIT": Limits().processes,
    }
    expected = {}
    for name, entry in expected_scores().items():
        hand_in_plant(name, submitted, others, values)
        expected[name] = (entry["score"], entry.get("held", 0))
    return expected


def test_every_plant_has_its_score_and_every_score_its_plant():
    table = expected_scores()
    files = {path.stem for path in PLANTS.glob("*.py")}
    assert set(table) == files, set(table) ^ files
    assert len(files) >= 36
    known = {"SECRETS", "WRITABLE", "PORT", "PROCESS_LIMIT"}
    for name, entry in table.items():
        assert set(entry) - {"held"} == {"score", "why"} and entry["why"].strip(), name
        assert type(entry["score"]) is int and 0 <= entry["score"] <= 7, name  # 7 automatic
        assert 0 <= entry.get("held", 0) <= entry["score"], name  # held: of those earned
        assert set(plant_cells(name)) <= {"ex1-code", "ex2-code", "ex3-code", "ex4-answer",
                                          "ex5-code"}, name  # fmt: skip
        for _, _, text in plant_sections(name):
            assert {p.strip("_") for p in PLACEHOLDER.findall(text)} <= known, name
    # the processes the daemon and the flood leave behind carry these marks
    leftovers = plant_cells("daemon")["ex5-code"] + plant_cells("flood")["ex5-code"]
    assert all(str(MARK + k) in leftovers for k in range(3))


def snapshot(*folders):
    digest = {}
    for folder in folders:
        for path in sorted(Path(folder).rglob("*")):
            if path.is_file() and ".venv" not in path.parts and "__pycache__" not in path.parts:
                digest[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digest


def leftover_processes():
    """Processes of a sandbox's user, or marked by a planted submission, still running."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            uid = entry.stat().st_uid
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        # a mark is a whole argument (sleep 4242): Chromium's random handles contain 4242
        if uid >= bwrap.FIRST_UID or any(str(MARK + k) in argv for k in range(3)):
            found.append((entry.name, uid, " ".join(argv)))
    return found


KEYRING_SECRET = b"hunter2-instructor-token"


def keep_secret_in_session_keyring() -> None:
    """A fresh session keyring for this test process (and the graders it starts), holding
    a secret, as a login keeps Kerberos tickets or tokens there; the sandbox must not read
    it (the plant keyprobe, and no file of the course folder holds it)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(250, 1, b"perceptrons-tests") < 0:  # KEYCTL_JOIN_SESSION_KEYRING
        return  # keyrings refused to this process too (a container): there is none to leak
    key = libc.syscall(248, b"user", b"grader-token", KEYRING_SECRET, len(KEYRING_SECRET), -3)
    assert key >= 0, ctypes.get_errno()  # add_key(user, ..., KEY_SPEC_SESSION_KEYRING)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Every planted submission graded once into one course folder."""
    need_sandbox()
    tmp = tmp_path_factory.mktemp("grading")
    submissions, course, others = tmp / "download", tmp / "grading", tmp / "others"
    others.mkdir()
    (others / "secret.txt").write_text("another course's gradebook")
    listener = socket.create_server(("127.0.0.1", 0))  # a service the sandbox must not reach
    keep_secret_in_session_keyring()  # as a login's pam_keyinit and a token tool would
    schedule.end_kept()  # graders started before this process joined the keyring hold none
    expected = plant(submissions / "submitted", others, course, listener.getsockname()[1])
    before = snapshot(ROOT / "labs", ROOT / "src", submissions, others)
    start = time.monotonic()
    with sandbox_lock():  # a module fixture: made before the test's own hold of the lock
        summary = grade.grade(
            submissions, course_made(course), jobs=2, limits=PLANTED, progress=False
        )
        elapsed = time.monotonic() - start
        # the reference path: a fresh sandbox per notebook (scores only)
        cold = graded_cold(submissions, tmp / "cold", PLANTED)
    listener.close()
    with sandbox_lock(alone=True):  # no sandbox of another test runs while we count
        leftover = leftover_processes()
    return {
        "expected": expected,
        "summary": summary,
        "cold": cold,
        "course": course,
        "before": before,
        "after": snapshot(ROOT / "labs", ROOT / "src", submissions, others),
        "elapsed": elapsed,
        "submissions": submissions,
        "others": others,
        "leftover": leftover,
    }


def rows_of(course):
    import csv

    with open(course / "grades.csv") as f:
        return list(csv.DictReader(f))


def test_every_planted_submission_gets_its_exact_score(graded):
    """Each plant earns its exact automatic score, and holds its exact part of it for the
    instructor's review: grades.csv gives what is not held (and says what is)."""
    rows = {r["student"]: r for r in rows_of(graded["course"]) if r["lab"] == LAB}
    results = {row.student: row for row in graded["summary"]["graded"]}
    found = {}
    for student, row in results.items():
        tests = row.tests or {}
        earned = sum(v["score"] for v in tests.values())
        held = sum(v["score"] for v in tests.values() if v.get("held"))
        found[student] = (earned, held)
    wrong = {
        s: (found.get(s), e, rows.get(s, {}).get("status"), rows.get(s, {}).get("review"))
        for s, e in graded["expected"].items()
        if found.get(s, (0, 0)) != (float(e[0]), float(e[1]))
        or float(rows.get(s, {}).get("automatic", 0)) != e[0] - e[1]
    }
    assert not wrong, wrong


def test_a_held_answer_says_why_and_what_its_tests_earned_in_formgrader(graded):
    """The comment formgrader shows on a held answer gives each reason and what the
    exercise's tests earned (what `review --accept` gives; Full credit would give all)."""
    from nbgrader.api import Gradebook

    from perceptrons.handin import exercise_of

    row = next(r for r in graded["summary"]["graded"] if r.student == "chatter")
    (finding,) = [f for f in row.review if f["held"]]
    exercise = finding["exercise"]
    tests = {g: v for g, v in row.tests.items() if exercise_of(g) == exercise}
    earned, points = (sum(v[k] for v in tests.values()) for k in ("score", "points"))
    with Gradebook(courses.db_url(graded["course"])) as gb:
        comment = gb.find_comment(finding["cell"], LAB, LAB, "chatter").auto_comment
    assert comment == (
        f"Held for the instructor's review: {finding['cell']}, line {finding['line']}: "
        f"{finding['what']}. Its tests earned {earned:g} of {points:g} points."
    )


def test_no_hidden_test_input_reaches_what_the_student_sees(graded):
    """The plant hidden_leak records the size of every x its pt_step is given and prints them
    in a cell added at the end: the hidden test's calls (x of 4 numbers) come after the last
    cell, on a copy of the notebook, so the graded notebook and the feedback page show only
    the visible calls' (3). Round-5 red team, finding 5."""
    course = graded["course"]
    autograded = (course / "autograded" / "hidden_leak" / LAB / f"{LAB}.ipynb").read_text()
    feedback = (course / "feedback" / "hidden_leak" / LAB / f"{LAB}.html").read_text()
    for shown in (autograded, feedback):
        assert "SIZES SEEN: [3]" in shown
        assert "SIZES SEEN: [3, 4]" not in shown


def test_the_warm_and_the_cold_start_give_every_planted_submission_the_same_scores(graded):
    warm, cold = scores(graded["summary"]), scores(graded["cold"])
    assert set(warm) == set(cold) == {(s, LAB) for s in graded["expected"]}
    assert {k: v for k, v in warm.items() if cold[k] != v} == {}
    notes = [r.text for r in graded["summary"]["graded"] if "warm start" in r.text]
    assert notes == []  # every notebook of the warm run did start warm


def test_grades_csv_is_complete_with_a_row_per_student_and_lab_that_is_set(graded):
    """A row per student and lab that is set: only Lab 1 was handed in and no policy gives
    another lab a due date, so the others have no rows (issue 40, item 11)."""
    rows = rows_of(graded["course"])
    students = set(graded["expected"])
    assert {(r["student"], r["lab"]) for r in rows} == {(s, LAB) for s in students}
    assert len(rows) == len(students)
    assert {float(row["max_score"]) for row in rows} == {11}
    wide = (graded["course"] / "grades-wide.csv").read_text().splitlines()
    assert len(wide) == len(students) + 1


def test_statuses_tell_the_instructor_what_happened(graded):
    status = {r["student"]: r["status"] for r in rows_of(graded["course"]) if r["lab"] == LAB}
    assert status["correct"] == "graded; 4 points wait for manual grading"
    assert status["truncated"].startswith("unreadable notebook")
    assert "lost its nbgrader metadata" in status["stripped"]
    assert status["linker"] == "refused: the notebook is a symbolic link"
    assert status["linkdir"] == "refused: the student folder is a symbolic link"
    assert "ex1-visible appears more than once: graded once" in status["copied"]
    assert "unknown id 'bonus'" in status["inflated"]
    assert "more than 8 MB of output" in status["outflood"]
    assert "not an answer to the grader's channel" in status["forger"]
    tests = json.loads((graded["course"] / "results" / "always" / f"{LAB}.json").read_text())
    # only the values cross, not the subclasses' ==: a 0 that claims to equal everything is 0
    assert (
        "predicted_updates (count every update) is 0.0; expected 10.0"
        in (tests["tests"]["ex2-tests"]["message"])
    )
    assert "compared with P.pt on AND differs" in tests["tests"]["ex3-visible"]["message"]

    def message(student, test):
        results = graded["course"] / "results" / student / f"{LAB}.json"
        return json.loads(results.read_text())["tests"][test]["message"]

    assert "train changed its argument 1 in place" in message("rewriter", "ex3-visible")
    assert "pt_step changed its argument 1 in place" in message("mutator", "ex1-visible")
    assert "range of more than" in message("ranger", "ex2-tests")
    # round 3: what would cost the grader time or memory is refused, and the status says so
    refused = "the notebook's process was stopped: it sent an answer the grader refused"
    assert "a dict of more than 1000 keys, not plain data" in message("collider", "ex5-tests")
    assert f"{refused}: not readable as data (RecursionError)" in status["deep"]
    assert f"{refused}: more than {Limits().items} items" in status["bomb"]
    assert f"{refused}: not readable as data (UnicodeDecodeError)" in status["notutf8"]
    assert "larger than the limit (message = 16777216 bytes)" in status["hugeframe"]
    assert "output cut, at least" in status["chatter"]
    xss = json.loads((graded["course"] / "autograded" / "xss" / LAB / f"{LAB}.ipynb").read_text())
    (answer,) = [
        c for c in xss["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == "ex4-answer"
    ]
    assert "My answer." in "".join(answer["source"])
    assert not runnable(as_formgrader_shows("".join(answer["source"])))
    package = json.loads((graded["course"] / "results" / "package" / f"{LAB}.json").read_text())
    assert "P.pt is closed in this lab" in package["tests"]["ex3-visible"]["message"]
    loops = json.loads((graded["course"] / "results" / "loops" / f"{LAB}.json").read_text())
    assert "interrupted" in loops["tests"]["ex1-visible"]["message"]


def test_no_file_in_the_course_folder_grows_with_what_a_submission_prints(graded):
    """The chatter printed about 63 MB, past the agent's own cut (which it removed): what
    the course folder keeps of it is cut on the grader's side to the documented caps."""
    course, limits = graded["course"], PLANTED
    where = f"chatter/{LAB}/{LAB}.ipynb"
    autograded = json.loads((course / "autograded" / where).read_text())
    kept = sum(
        len("".join(o.get("text", "")))
        for cell in autograded["cells"]
        for o in cell.get("outputs", [])
    )
    assert 0 < kept <= limits.notebook_output + 100  # and one note that says it was cut
    submitted = (course / "submitted" / where).stat().st_size
    source = (LABS / "source" / LAB / f"{LAB}.ipynb").stat().st_size
    cap = submitted + source + 2 * limits.notebook_output  # outputs, escaped in JSON
    for path in course.rglob("*"):
        if path.is_file() and path.suffix in (".ipynb", ".json", ".log"):
            assert path.stat().st_size <= cap, path
    feedback = course / "feedback" / "chatter" / LAB / f"{LAB}.html"
    assert feedback.stat().st_size <= cap + 2**20  # nbconvert's page and styles


def test_no_secret_reached_a_students_feedback(graded):
    """The grader's keyring secret and the instructor's reference code stayed out of the
    sandbox: what the probes printed, in the feedback handed back, is that they found
    nothing (round-4 red team, findings 1 and 7)."""
    feedback = graded["course"] / "feedback"
    keyprobe = (feedback / "keyprobe" / LAB / f"{LAB}.html").read_text()
    assert "KEYRING PROBE: []" in keyprobe
    leaker = (feedback / "leaker" / LAB / f"{LAB}.html").read_text()
    assert "FOUND: []" in leaker
    for path in (graded["course"] / "feedback").rglob("*.html"):
        assert KEYRING_SECRET.decode() not in path.read_text(), path


def test_nothing_outside_the_course_folder_changed_and_nothing_is_left_running(graded):
    assert graded["after"] == graded["before"]
    assert not Path("/tmp/snoop-was-here").exists()
    assert not list(Path("/tmp").glob("fill-4244-*"))
    assert graded["leftover"] == []


def test_gradebook_feedback_and_autograded_notebooks_agree(graded):
    from nbgrader import utils
    from nbgrader.api import Gradebook

    course = graded["course"]
    with Gradebook(courses.db_url(course)) as gb:
        for student in ("correct", "wrong", "hog"):
            expected = graded["expected"][student][0]  # (none of these is held)
            submission = gb.find_submission(LAB, student)
            assert submission.score == expected
            autograded = json.loads(
                (course / "autograded" / student / LAB / f"{LAB}.ipynb").read_text()
            )
            import nbformat

            nb = nbformat.from_dict(autograded)
            auto = sum(utils.determine_grade(c)[0] or 0 for c in nb.cells if utils.is_grade(c))
            assert auto == expected
            html = (course / "feedback" / student / LAB / f"{LAB}.html").read_text()
            assert f"{expected:g} / 11" in html.replace(".0 /", " /")


def test_a_second_run_grades_only_what_is_new_and_regrade_keeps_manual_scores(graded, tmp_path):
    from nbgrader.api import Gradebook

    course, submissions = graded["course"], graded["submissions"]
    with Gradebook(courses.db_url(course)) as gb:
        answer = gb.find_grade("ex4-answer", LAB, LAB, "correct")
        answer.manual_score = 2.0
        gb.db.commit()
    again = grade.grade(submissions, course, jobs=2, limits=PLANTED, progress=False)
    assert again["graded"] == [] and len(again["already graded"]) == len(graded["expected"])
    row = next(r for r in rows_of(course) if r["student"] == "correct" and r["lab"] == LAB)
    assert (row["automatic"], row["manual"], row["total"]) == ("7.0", "2.0", "9.0")
    # a new version of one notebook is not graded silently...
    path = submissions / "submitted" / "wrong" / LAB / f"{LAB}.ipynb"
    path.write_text(json.dumps(solved()))
    again = grade.grade(submissions, course, jobs=1, limits=PLANTED, progress=False)
    assert again["graded"] == []
    status = next(
        r["status"] for r in rows_of(course) if r["student"] == "wrong" and r["lab"] == LAB
    )
    assert "changed since" in status
    # ...but on request, and the manual score entered above stays
    # (a lab source that changed after grading does not reach this course folder)
    source = course / "source" / LAB / f"{LAB}.ipynb"
    kept = source.read_text()
    mark = json.loads((course / layout.MARK).read_text())
    mark["sources"][LAB] = "the digest of another version"
    (course / layout.MARK).write_text(json.dumps(mark))
    regraded = grade.grade(
        submissions,
        course,
        labs=[LAB],
        students=["wrong", "correct"],
        jobs=2,
        regrade=True,
        limits=PLANTED,
        progress=False,
    )
    assert source.read_text() == kept
    assert sorted(r.student for r in regraded["graded"]) == ["correct", "wrong"]
    rows = {r["student"]: r for r in rows_of(course) if r["lab"] == LAB}
    assert rows["wrong"]["automatic"] == "7.0"
    assert rows["correct"]["total"] == "9.0"


@pytest.mark.slow
def test_a_run_leaves_its_workers_to_the_next_and_a_lost_worker_ends_them(tmp_path):
    """The local pool of a run is kept for the next run of the same process, whose
    workers keep their servers and warm parents; a pool that lost a worker (killed while it
    waited) is replaced, and the run after grades as before."""
    need_sandbox()
    submissions, course = tmp_path / "in", tmp_path / "course"
    hand_in(submissions, "ada", solved())
    options = dict(jobs=2, limits=LIMITS, progress=False, feedback=False, regrade=True)
    with sandbox_lock():
        schedule.end_kept()
        grade.grade(submissions, course_made(course), **options)
        pool = schedule._KEPT[2]
        workers = sorted(pool._processes)
        assert workers  # (one notebook: one worker started)
        again = grade.grade(submissions, course, **options)
        assert schedule._KEPT[2] is pool and sorted(pool._processes) == workers
        os.kill(workers[0], signal.SIGKILL)
        deadline = time.monotonic() + 30
        while not pool._broken and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pool._broken
        after = grade.grade(submissions, course, **options)
    assert schedule._KEPT[2] is not pool
    assert not set(schedule._KEPT[2]._processes) & set(workers)
    for summary in (again, after):
        (row,) = summary["graded"]
        assert row.status is wire.Status.GRADED, row.text
        assert sum(t["score"] for t in row.tests.values()) == 7.0, row.tests


@pytest.mark.slow
def test_a_thousand_sleeping_cells_cost_the_notebook_limit_and_no_more(tmp_path):
    """Each cell has its own limit; the notebook has one for all of them together. A
    notebook that sleeps in a thousand added cells (about 17 hours at 60 s each) is stopped
    at its limit, graded up to there, and the rest of the class is graded beside it."""
    need_sandbox()
    limits = Limits(cell_seconds=4.0, notebook_seconds=20.0)
    sleeper = solved()
    sleeper["cells"] += [
        {"cell_type": "code", "metadata": {}, "source": SLEEPER_CELL, "outputs": [],
         "execution_count": None}
        for _ in range(1000)
    ]  # fmt: skip
    submissions, course = tmp_path / "in", tmp_path / "course"
    for student, nb in (("sleeper", sleeper), ("ada", solved()), ("bo", solved())):
        hand_in(submissions, student, nb)
    course_made(course)  # made beforehand, as after a first run
    start = time.monotonic()
    grade.grade(submissions, course, jobs=2, limits=limits, progress=False)
    elapsed = time.monotonic() - start
    rows = {r["student"]: r for r in rows_of(course) if r["lab"] == LAB}
    assert {s: float(r["automatic"]) for s, r in rows.items()} == {"sleeper": 7, "ada": 7, "bo": 7}
    status = rows["sleeper"]["status"]
    assert (
        "stopped: the notebook ran longer than its time limit (notebook_seconds = 20 s)" in status
    )
    assert "interrupted at the time limit (cell_seconds = 4 s)" in status
    # the other worker graded ada and bo meanwhile; starting workers and feedback cost a few s
    assert elapsed < limits.notebook_seconds + 25, elapsed


@pytest.mark.slow
def test_a_run_that_is_killed_resumes_where_it_stopped(tmp_path):
    need_sandbox()
    submissions, course = tmp_path / "in", tmp_path / "course"
    for k in range(4):
        hand_in(submissions, f"s{k}", solved())
    env = dict(os.environ, PYTHONPATH=str(LABS))
    argv = [
        sys.executable,
        "-m",
        "labtools",
        "grade",
        str(submissions),
        "--course",
        str(course),
        "--jobs",
        "1",
        "--cell-timeout",
        str(CELL_SECONDS),
    ]
    run = subprocess.Popen(
        argv, env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 300
    while len(list(course.glob("results/*/*.json"))) < 1 and time.monotonic() < deadline:
        time.sleep(0.2)
    os.killpg(run.pid, signal.SIGKILL)
    run.wait()
    done = len(list(course.glob("results/*/*.json")))
    assert 1 <= done < 4
    finished = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    assert finished.returncode == 0, finished.stderr[-2000:]
    assert f"{4 - done} notebooks graded now, {done} already graded" in finished.stdout
    rows = [r for r in rows_of(course) if r["lab"] == LAB]
    assert [r["automatic"] for r in rows] == ["7.0"] * 4


def test_clear_errors_before_anything_is_graded(tmp_path):
    with pytest.raises(layout.UsageError, match="does not exist"):
        grade.grade(tmp_path / "nothing", tmp_path / "c")
    (tmp_path / "empty").mkdir()
    with pytest.raises(layout.UsageError, match="is empty"):
        grade.grade(tmp_path / "empty", tmp_path / "c")
    (tmp_path / "s" / "a").mkdir(parents=True)
    with pytest.raises(layout.UsageError, match="unknown lab"):
        grade.grade(tmp_path / "s", tmp_path / "c", labs=["lab9"])
    other = tmp_path / "other"
    other.mkdir()
    (other / "gradebook.db").write_text("someone else's")
    with pytest.raises(layout.UsageError, match="not made by"):
        grade.grade(tmp_path / "s", other)
    assert (other / "gradebook.db").read_text() == "someone else's"


def test_grading_refuses_to_run_without_the_sandbox_unless_told(tmp_path, monkeypatch):
    monkeypatch.setattr(bwrap, "available", lambda: "bubblewrap is not installed")
    hand_in(tmp_path / "s", "a", solved())
    with pytest.raises(layout.UsageError, match="--unsafe"):
        grade.grade(tmp_path / "s", tmp_path / "c")
    assert not (tmp_path / "c").exists()


def test_unsafe_mode_still_computes_verdicts_outside(tmp_path):
    """Without the sandbox, student code runs with the grader's rights, but the verdicts
    are still the grader's: the patcher earns nothing more."""
    source = nb_of("source")
    patched = solved({"ex1-code": plant_cells("patcher")["ex1-code"]})
    result = verdicts.evaluate(source, patched, LIMITS, unsafe=True)
    score = sum(c.get("score", 0) for c in result["cells"])
    # ex5 only (ex2 is worth no points): ex1 is wrong, and the patched np.array_equal stops
    # its own train after one epoch (even with the instructor's pt_step in place)
    assert score == 1


@pytest.mark.slow
def test_grading_runs_on_a_dask_cluster(tmp_path, monkeypatch):
    """The grading loop takes any Executor: here a dask LocalCluster's, as a class that
    outgrows one machine would use a real cluster's."""
    need_sandbox()
    from distributed import Client, LocalCluster

    monkeypatch.setenv("PYTHONPATH", str(LABS))  # the workers import labtools
    submissions, course = tmp_path / "in", tmp_path / "course"
    expected = {"correct": 7, "wrong": 4, "blank": 0}
    notebooks = {
        "correct": solved(),
        "wrong": solved(plant_cells("wrong")),
        "blank": nb_of("release"),
    }
    for student, nb in notebooks.items():
        hand_in(submissions, student, nb)
    with LocalCluster(
        n_workers=2, threads_per_worker=1, dashboard_address="127.0.0.1:0"
    ) as cluster:
        with Client(cluster) as client:
            summary = grade.grade(
                submissions, course, executor=client.get_executor(), limits=LIMITS, progress=False
            )
    assert len(summary["graded"]) == 3
    scores = {r["student"]: float(r["automatic"]) for r in rows_of(course) if r["lab"] == LAB}
    assert scores == expected


def test_a_hidden_tests_failure_says_no_kind_the_students_code_chose():
    """Red team, round 6: which exception a student's function raised in a hidden test is
    the student's choice (about 4 bits of the test's inputs); the feedback says only that
    it raised one."""
    for kind in ("IndexError", "ZeroDivisionError", "MyOwnError"):
        failure = verdicts.StudentCodeError(f"taps raised {kind}: 20 samples, p = 6")
        said = verdicts.hidden_message(failure)
        assert said == "taps raised an exception in a hidden test"
