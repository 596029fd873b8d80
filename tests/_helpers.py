"""Helpers shared by the tests (imported as `_helpers`; pytest puts tests/ on sys.path)."""

import contextlib
import fcntl
import json
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
# The tests build the book as if it lived here, to check the Binder buttons it then gets.
STAND_IN_REPOSITORY = "https://github.com/example-org/example-course"


def toc_files():
    """The documents of the table of contents, as paths without suffix ('book/01_neuron'):
    read by tools/toc.py in this interpreter, so that collecting the tests starts no
    process and needs no particular virtual environment (test_repo checks that tasks.py
    reads _toc.yml the same way)."""
    import yaml
    from toc import TOC, documents  # tools/ (pytest's pythonpath, pyproject.toml)

    return documents(yaml.safe_load(TOC.read_text()))


def figure_names(doc):
    """The names of the figure cells (mystnb figure metadata) of notebook `doc`; [] for a
    page that is not a notebook."""
    source = ROOT / f"{doc}.ipynb"
    if not source.exists():
        return []
    cells = json.loads(source.read_text())["cells"]
    figures = (c.get("metadata", {}).get("mystnb", {}).get("figure") for c in cells)
    return [figure["name"] for figure in figures if figure]


def central_difference(f, w, h=1e-6):
    """(f(w + h e_j) - f(w - h e_j)) / 2h for every unit vector e_j: a gradient to check against."""
    return np.array([(f(w + h * e) - f(w - h * e)) / (2 * h) for e in np.eye(len(w))])


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def need_chromium():
    """Skip a test that needs Chromium where it is not installed; in CI, which installs it
    (.ci/run), fail instead."""
    import os

    import browser
    import pytest

    if browser.find_chromium() is None:
        if os.environ.get("CI"):
            pytest.fail("Chromium is missing: .ci/run installs it (apt-get install chromium)")
        pytest.skip("Chromium is not installed (apt-get install chromium); CI runs these tests")


def need_sandbox():
    """Skip a test that needs the grading sandbox where bubblewrap cannot run it; in CI,
    which must provide it, fail instead."""
    import os

    import pytest
    from labtools import sandbox

    missing = sandbox.available()
    if missing and os.environ.get("CI"):
        pytest.fail(f"CI must provide the sandbox: {missing}")
    if missing:
        pytest.skip(f"no sandbox here: {missing}")


# --- moved here from the instructor tools, which used them only in tests -----------------


def answered(lab, replace=None, labs=None):
    """The student version of ``lab`` with the instructor's answers filled in, as a student
    who solved everything would hand it in; ``replace`` gives other answers by grade id.
    (Was labtools.release.answered; the grading benchmark uses it too.)"""
    labs = ROOT / "labs" if labs is None else labs
    release_nb = json.loads((labs / "release" / lab / f"{lab}.ipynb").read_text())
    source = json.loads((labs / "source" / lab / f"{lab}.ipynb").read_text())
    answers = {
        c["metadata"]["nbgrader"]["grade_id"]: c
        for c in source["cells"]
        if c["metadata"].get("nbgrader", {}).get("solution")
    }
    for cell in release_nb["cells"]:
        meta = cell["metadata"].get("nbgrader", {})
        if meta.get("solution"):
            lines = "".join(answers[meta["grade_id"]]["source"]).splitlines()
            cell["source"] = "\n".join(line for line in lines if "### " not in line)
            if replace and meta["grade_id"] in replace:
                cell["source"] = replace[meta["grade_id"]]
    return release_nb


def encode(value) -> str:
    """``value`` as the JSON text of its plain form (labtools.wire.to_plain). (Was
    labtools.wire.encode.)"""
    from labtools import wire

    return json.dumps(wire.to_plain(value), allow_nan=False)


def decode(text, budget=None):
    """The plain data in JSON ``text``, parsed and rebuilt within ``budget`` as the grader
    does an answer's value; NotPlainData if it is anything else or costs more. (Was
    labtools.wire.decode.)"""
    from labtools import wire

    budget = budget or wire.Budget()
    return wire.from_plain(wire._parse(text, budget), budget)


# --- one rule between the pytest-xdist workers -------------------------------------------

# Every test that starts a grading sandbox holds this lock shared; the planted class's
# count of leftover processes holds it alone (a sandbox of the other worker's test, still
# running, would count). A second lock, the turnstile, lets the count in once it asks: a
# test that starts after it waits, so the count waits for the tests under way, no more.
SANDBOX_LOCK = Path(tempfile.gettempdir()) / "perceptrons-tests-sandbox.lock"


@contextlib.contextmanager
def sandbox_lock(alone: bool = False, path: Path = SANDBOX_LOCK):
    """Hold the sandbox lock: shared (any number of tests at once) or ``alone``."""
    with open(path.with_suffix(".turnstile"), "a") as gate, open(path, "a") as lock:
        fcntl.flock(gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            if not alone:
                fcntl.flock(gate, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
            if alone:
                fcntl.flock(gate, fcntl.LOCK_UN)


def class_folder(course, results, labs=None):
    """A course folder as ``grade`` leaves it, written without grading (for the report):
    each lab's source and student version copied from ``labs`` (labs/), and for each
    ``results[student][lab]``, a dict with ``answers`` ({grade id: text}, else the
    instructor's, as :func:`answered` hands them in), ``tests`` ({grade id: (score,
    message)}, else full points and no message), ``seconds``, or ``status`` (a status text
    other than graded: then no notebook is kept, as labtools.record does): its submitted
    notebook and its row (labtools.wire.Row.to_json) in ``results/``."""
    import hashlib
    import shutil

    from labtools import layout
    from labtools import notebook as nbcells
    from labtools.wire import Row, Status

    labs = ROOT / "labs" if labs is None else labs
    course = Path(course)
    used = sorted({lab for mine in results.values() for lab in mine})
    for lab in used:
        for kind in ("source", "release"):
            shutil.copytree(labs / kind / lab, course / kind / lab, dirs_exist_ok=True)
    mark = {"course": layout.COURSE, "sources": {lab: "" for lab in used}}
    (course / layout.MARK).write_text(json.dumps(mark))
    points = {}
    for lab in used:
        cells = json.loads((labs / "source" / lab / f"{lab}.ipynb").read_text())["cells"]
        points[lab] = {
            nbcells.grade_id(c): float(nbcells.nbgrader(c).get("points", 0))
            for c in cells
            if nbcells.is_test(c)
        }
    for student, mine in results.items():
        for lab, given in mine.items():
            if "status" in given:
                row = Row.of(student, lab, "", given["status"])
            else:
                data = json.dumps(answered(lab, given.get("answers"), labs), indent=1)
                where = course / "submitted" / student / lab / f"{lab}.ipynb"
                where.parent.mkdir(parents=True, exist_ok=True)
                where.write_text(data)
                row = Row(student, lab, hashlib.sha256(data.encode()).hexdigest(), Status.GRADED)
                scores = given.get("tests", {})
                row.tests = {
                    gid: {
                        "score": scores.get(gid, (most, ""))[0],
                        "points": most,
                        "message": scores.get(gid, (most, ""))[1],
                    }
                    for gid, most in points[lab].items()
                }
                row.seconds = given.get("seconds", 1.0)
            path = course / "results" / student / f"{lab}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(row.to_json(), indent=1))
    return course


def random_answer(rng, lines=12):
    """A made-up answer cell of ``lines`` statements, each drawn at random (names, numpy
    functions, operators, numbers): two of them are about as alike as two students' own
    answers, far less than a copy."""
    functions = ["np.sum", "np.dot", "np.maximum", "np.where", "len", "abs", "np.exp", "min"]
    operators = ["+", "-", "*", "/", "@"]
    names = ["w", "x", "c", "eta"]
    out = [f"def answer({', '.join(names)}):"]
    for k in range(lines):
        shape = int(rng.integers(0, 4))
        a, b = rng.choice(names), rng.choice(names)
        f, op, n = rng.choice(functions), rng.choice(operators), int(rng.integers(0, 10))
        if shape == 0:
            out.append(f"    v{k} = {f}({a}) {op} {n}")
        elif shape == 1:
            out.append(f"    for i in range({n}):\n        {a} = {a} {op} {f}({b}, {n})")
        elif shape == 2:
            out.append(f"    if {f}({a}) > {n}:\n        {b} = {b} {op} {a}")
        else:
            out.append(f"    {a} = [{f}(t) {op} {n} for t in {b}]")
        names.append(f"v{k}") if shape == 0 else None
    out.append(f"    return {rng.choice(names)}")
    return "\n".join(out) + "\n"


def renamed(code, names):
    """``code`` with each name of ``names`` ({old: new}) renamed, as a student who copies
    would rename them (whole words only)."""
    import re

    return re.sub(r"\b\w+\b", lambda m: names.get(m[0], m[0]), code)


def scores(summary) -> dict:
    """{(student, lab): (status, {test: score})} of a grading run."""
    return {
        (row.student, row.lab): (
            row.status,
            {test: verdict["score"] for test, verdict in (row.tests or {}).items()},
        )
        for row in summary["graded"]
    }
