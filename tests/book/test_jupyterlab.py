"""What a student does: in the environment Binder builds (tools/binder_env.py), JupyterLab
opens every chapter and every student lab in Chromium, Run ▸ Run All Cells runs it, and the
page shows no error (a lab stops only at its first exercise stub), no MyST markup, every
quoted number ({eval}), and the first slider of a chapter redraws its picture with the
kernel. One JupyterLab, one browser, the pages in turn, each kernel shut down after its page.

Chromium is a system package (Debian: `apt-get install chromium`); without it these tests
fail in CI and are skipped elsewhere, like tests/book/test_browser.py.
"""

import json
import re

import binder_env  # tools/ (pytest's pythonpath)
import jupyterlab
import pytest
import setup_cell
from _helpers import ROOT, answered, figure_names

pytestmark = pytest.mark.slow

CHAPTERS = sorted((ROOT / "book").glob("*.ipynb"))
LABS = sorted((ROOT / "labs" / "release").glob("*/*.ipynb"))
PAGES = [p.relative_to(ROOT).as_posix() for p in CHAPTERS + LABS]
#: packages of the book build and the instructors that must stay out of Binder's image
BUILD_ONLY = ("myst-nb", "sphinx", "jupyter-book", "nbgrader")


def website_labels() -> frozenset[str]:
    """Every label the website resolves: targets `(name)=`, `:label:` options, figure names
    (myst-nb cell metadata) and the bibliography's keys."""
    labels = set(re.findall(r"^@\w+\{([^,\s]+),", (ROOT / "references.bib").read_text(), re.M))
    for path in CHAPTERS + LABS:
        labels |= set(figure_names(path.relative_to(ROOT).with_suffix("").as_posix()))
        for cell in json.loads(path.read_text())["cells"]:
            source = "".join(cell["source"])
            labels |= set(re.findall(r"^\(([\w-]+)\)=", source, re.M))
            labels |= set(re.findall(r"^:label: *(\S+)", source, re.M))
    return frozenset(labels)


def has_slider_panel(notebook: str) -> bool:
    """Whether the chapter shows a slider panel (widgets.slider_panel) in a code cell."""
    cells = json.loads((ROOT / notebook).read_text())["cells"]
    return any(c["cell_type"] == "code" and "slider_panel(" in "".join(c["source"]) for c in cells)


@pytest.fixture(scope="module")
def binder():
    """The Binder-faithful environment (built once, then reused from .venv-binder/)."""
    env = binder_env.build()
    print("\n" + env.report())
    return env


@pytest.fixture(scope="module")
def lab(binder, chromium):
    """JupyterLab of the Binder environment in the repository's root, and one browser page."""
    with jupyterlab.JupyterLab(binder.bin) as server:
        page = chromium.new_page(viewport={"width": 1280, "height": 900})
        yield server, page
        page.close()


def test_binder_environment_is_the_lock_plus_requirements(binder):
    """The base is the lock's (its JupyterLab), requirements.txt added what the course needs,
    and nothing of the build or the grading came along."""
    versions = binder_env.installed(binder.python)
    lock = binder_env.read_lock()
    assert versions["jupyterlab"] == lock.pins["jupyterlab"]
    assert versions["notebook"] == lock.pins["notebook"]
    for needed in ("perceptrons", "jupyterlab-myst", "ipykernel", "ipywidgets", "scikit-learn"):
        assert needed in versions, f"requirements.txt no longer brings {needed}"
    leaked = [name for name in BUILD_ONLY if name in versions]
    assert not leaked, f"the student environment carries build or grading tools: {leaked}"


@pytest.mark.parametrize("notebook", PAGES)
def test_page_runs_and_reads_well_in_jupyterlab(lab, notebook):
    server, page = lab
    try:
        seen = jupyterlab.check_page(page, server, notebook)
        print(f"{notebook}: opened and ran in {seen.seconds:.1f} s")
        is_lab = notebook.startswith("labs/")
        # a chapter's references show as labels in JupyterLab, and its note says so; each
        # must still be a label the website links (a typo is a problem here too)
        problems = seen.problems(explained=frozenset() if is_lab else website_labels())
        if not is_lab and not seen.note_shown:
            problems.append(f"the page does not show its note {jupyterlab.NOTE_TITLE!r}")
        if is_lab and not seen.stopped_at_stub:
            problems.append("Run All did not stop at the lab's first 'Student exercise' stub")
        if not is_lab and seen.stopped_at_stub:
            problems.append("a chapter stopped at an exercise stub")
        if not is_lab and has_slider_panel(notebook):
            if not jupyterlab.has_slider(page):
                problems.append("its slider panel is not shown")
            else:
                ms = [round(jupyterlab.move_first_slider(page)) for _ in range(2)]
                print(f"{notebook}: the first slider redrew its picture in {ms} ms")
        assert not problems, f"{notebook} in JupyterLab:\n" + "\n".join(problems)
    finally:
        jupyterlab.close_notebooks(page)
        server.shut_down_kernels()


def planted(folder, name, *cells):
    """Write a notebook of `cells` ((kind, source) pairs) into `folder`."""
    nb = {
        "cells": [
            {"id": f"c{k}", "cell_type": kind, "metadata": {}, "source": source}
            | ({"outputs": [], "execution_count": None} if kind == "code" else {})
            for k, (kind, source) in enumerate(cells)
        ],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (folder / name).write_text(json.dumps(nb))
    return name


def test_harness_sees_errors_markup_and_unevaluated_numbers(chromium, binder, tmp_path):
    """Planted notebooks with one of each problem: the checks above find each, where it is.
    (An error stops Run All, and the {eval} roles queued behind it: one notebook for each.)"""
    text = planted(
        tmp_path,
        "text.ipynb",
        ("code", "x = 2"),
        ("markdown", "Twice x is {eval}`2 * x`."),  # fine
        ("markdown", "Not defined: {eval}`no_such_name`."),
        ("markdown", "See {numref}`fig-none` and :label: left."),
    )
    # Run All sends every cell at once; ipykernel aborts the requests queued when a cell
    # fails, but runs one that reaches it later (stop_on_error_timeout = 0), which a loaded
    # machine makes happen: the failing cell waits until all are queued
    error = planted(
        tmp_path,
        "error.ipynb",
        ("code", "x = 1"),
        ("code", "import time\ntime.sleep(1.5)\n1 / 0"),
        ("code", "y = 2"),
    )
    stub = planted(
        tmp_path,
        "stub.ipynb",
        ("code", "x = 1"),
        ("code", "raise NotImplementedError('Student exercise: write f')"),
        ("code", "1 / 0"),  # the student's part: not run, not checked
    )
    noted = planted(
        tmp_path,
        "noted.ipynb",
        ("markdown", setup_cell.NOTE),  # the chapters' JupyterLab note
        ("markdown", "See {numref}`fig-known`."),
    )
    with jupyterlab.JupyterLab(binder.bin, root=tmp_path) as server:
        page = chromium.new_page(viewport={"width": 1280, "height": 900})
        seen = {
            name: jupyterlab.check_page(page, server, name) for name in (text, error, stub, noted)
        }
        page.close()
    # a label shown as such is explained only by the note, and only if the website has it
    assert seen[noted].note_shown and not seen[text].note_shown
    assert seen[noted].problems(explained=frozenset({"fig-known"})) == []
    assert seen[noted].problems() == [
        "unresolved reference: cell 1: Cross Reference Not Found: fig-known"
    ]
    assert "fig-none" in " ".join(seen[text].problems(explained=frozenset({"fig-none"})))
    assert seen[text].errors == [] and seen[text].not_run == []
    assert [u.split(" (")[0] for u in seen[text].unevaluated] == ["cell 2: no_such_name"]
    assert "NameError" in seen[text].unevaluated[0]
    assert [r.split(" in ")[0] for r in seen[text].raw_myst] == ["cell 3: ':label:'"]
    assert seen[text].unresolved == ["cell 3: Cross Reference Not Found: fig-none"]
    assert seen[error].errors == ["cell 1: ZeroDivisionError: division by zero"]
    assert seen[error].not_run == ["cell 2: y = 2"] and not seen[error].stopped_at_stub
    assert seen[stub].stopped_at_stub and seen[stub].problems() == []


def test_lab_command_opens_the_course_offline_settings(binder, monkeypatch, tmp_path):
    """`python3 tasks.py lab ARGS`: .venv-lab set up (stamped: no network once done), the
    overrides file turns off what JupyterLab fetches from the network, valid for JupyterLab's
    own schema, and ARGS reach `jupyter lab`, which prints and opens the first page."""
    import tasks

    calls = []
    monkeypatch.setattr(tasks, "setup", lambda reqs, env: calls.append((reqs, env)) or "py")
    monkeypatch.setattr(tasks, "run", lambda *cmd, **kw: calls.append(cmd))
    monkeypatch.setattr(tasks, "LAB_VENV", tmp_path)
    tasks.main(["lab", "--no-browser", "--port", "8890"])
    assert calls[0] == ("requirements-lab.txt", tmp_path)
    command = calls[1]
    assert command[:4] == ("py", "-m", "jupyter", "lab")
    assert command[-3:] == ("--no-browser", "--port", "8890")
    assert f"--LabApp.default_url=/lab/tree/{tasks.FIRST_PAGE}" in command
    assert (ROOT / tasks.FIRST_PAGE).exists()
    written = json.loads((tmp_path / "share/jupyter/lab/settings/overrides.json").read_text())
    notification = written["@jupyterlab/apputils-extension:notification"]
    assert notification == {"checkForUpdates": False, "fetchNews": "false"}
    schema = json.loads(
        (
            binder.path
            / "share/jupyter/lab/schemas/@jupyterlab/apputils-extension"
            / "notification.json"
        ).read_text()
    )["properties"]
    assert {"const": "false", "title": "Never"} in schema["fetchNews"]["oneOf"]
    assert schema["checkForUpdates"]["type"] == "boolean"
    with pytest.raises(SystemExit):  # the other jobs still refuse options they do not know
        tasks.main(["book", "--no-browser"])


def test_a_labs_last_cell_names_what_grading_refuses_or_holds(chromium, binder, tmp_path):
    """The student's own check before hand-in (perceptrons.handin, the last cell of every
    lab), in JupyterLab as a student runs it: Lab 6 with every answer written, but
    least_squares through scipy and the package's own P.lls; saved, Run All. scikit-learn
    and scipy are in the student's environment, so every visible check passes here; the
    last cell names both routes, with their cell, before the notebook is handed in."""
    route = "from scipy.linalg import lstsq\n\ndef least_squares(X, d):\n    return P.lls(X, d)\n"
    nb = answered("lab6_lms_filter", {"ex2-code": route})
    (tmp_path / "lab6_lms_filter.ipynb").write_text(json.dumps(nb))
    with jupyterlab.JupyterLab(binder.bin, root=tmp_path) as server:
        page = chromium.new_page(viewport={"width": 1280, "height": 900})
        try:
            jupyterlab.open_notebook(page, server, "lab6_lms_filter.ipynb")
            jupyterlab.run_all(page)
            jupyterlab.wait_idle(page)
            cells = page.evaluate(jupyterlab._CELLS)
        finally:
            page.close()
    errors = [o for c in cells for o in c["outputs"] if o["type"] == "error"]
    assert errors == []  # every visible check passes in the student's own kernel
    said = "".join(o["text"] or "" for o in cells[-1]["outputs"] if o["type"] == "stream")
    assert "ex2-code, line 1: imports scipy.linalg" in said, said
    assert "ex2-code, line 4: uses P.lls, which this lab closes" in said, said
