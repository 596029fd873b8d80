"""What a reader finds at the end of every chapter: 5 to 7 exercises, each labelled by
kind and difficulty, at least one proof and at least one harder (★★★) exercise in the
book, and a solution for each that folds away."""

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _helpers import ROOT

CHAPTERS = [p for p in sorted((ROOT / "book").glob("[0-9][0-9]_*.ipynb")) if p.stem != "00_tour"]
KINDS = ("by hand", "proof", "code", "experiment")
EXERCISE = re.compile(r"^:::\{exercise\} *(.*)\n:label: *(\S+)", re.M)
SOLUTION = re.compile(r"^:::\{solution\} *(\S+)\n:class: *dropdown", re.M)


def markdown(path: Path) -> str:
    cells = json.loads(path.read_text())["cells"]
    return "\n\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


def exercises(path: Path) -> list[tuple[str, str]]:
    return EXERCISE.findall(markdown(path))


def test_there_are_eight_chapters():
    assert len(CHAPTERS) == 8


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_five_to_seven_exercises_labelled_by_kind_and_difficulty(path):
    found = exercises(path)
    assert 5 <= len(found) <= 7, f"{path.name}: {len(found)} exercises"
    kinds = []
    for heading, label in found:
        kind, _, stars = heading.rpartition(", ")
        assert kind in KINDS and stars in ("★", "★★", "★★★"), f"{label}: {heading!r}"
        kinds.append(kind)
    assert "proof" in kinds, f"{path.name} has no proof exercise"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_exercise_has_one_solution_that_folds_away(path):
    labels = [label for _, label in exercises(path)]
    solved = SOLUTION.findall(markdown(path))
    assert sorted(solved) == sorted(labels) and len(set(labels)) == len(labels)


def test_the_book_uses_every_level_of_difficulty():
    stars = {heading.rpartition(", ")[2] for path in CHAPTERS for heading, _ in exercises(path)}
    assert stars == {"★", "★★", "★★★"}


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_references_to_exercises_do_not_double_the_word(path):
    # {ref} already renders "Exercise 5.1"
    assert not re.search(r"[Ee]xercises? \{ref\}`ex-", markdown(path))


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_no_formula_inside_a_paragraph_has_a_line_that_reads_as_a_list_item(path):
    # MyST ends a paragraph, and the formula in it, at a line that starts like a list item
    # ("+ ", "- ", "* "); a $$ block on lines of its own is safe
    text = markdown(path)
    for span in re.finditer(r"\$\$.+?\$\$|(?<![\\$])\$[^$]+\$", text, re.S):
        line_start = text.rfind("\n", 0, span.start()) + 1
        if span.group().startswith("$$") and not text[line_start : span.start()].strip():
            continue
        for line in span.group().splitlines()[1:]:
            assert not re.match(r"\s*[-+*] ", line), f"{path.name}: {line!r}"


# The numbers the prose quotes: {eval} roles, evaluated in the chapter's kernel where the
# reader reaches them (myst-nb's inline execution on the website, jupyterlab-myst in
# JupyterLab), so each must name what an earlier cell computed.
EVAL = re.compile(r"\{eval\}`([^`]+)`")
NOTEBOOKS = sorted((ROOT / "book").glob("*.ipynb"))


def eval_pattern() -> re.Pattern:
    config = (ROOT / "_config.yml").read_text()
    return re.compile(re.search(r"nb_eval_name_regex: '(.+)'", config).group(1))


def bound_names(source: str) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def read_names(expression: str) -> set[str]:
    if expression.startswith('f"'):
        expression = re.match(r'f"\{(.*?)(:[^"{}]*)?\}"$', expression).group(1)
    return {n.id for n in ast.walk(ast.parse(expression)) if isinstance(n, ast.Name)}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_quoted_numbers_come_from_cells_above_them(path):
    pattern, bound, quoted = eval_pattern(), set(), 0
    for i, cell in enumerate(json.loads(path.read_text())["cells"]):
        source = "".join(cell["source"])
        if cell["cell_type"] == "code":
            assert "glue" not in source, f"{path.name} cell {i}: glue needs myst-nb; use {{eval}}"
            bound |= bound_names(source)
            continue
        assert "{glue" not in source, f"{path.name} cell {i}: a glue role"
        for expression in EVAL.findall(source):
            assert pattern.fullmatch(expression), f"{path.name}: {expression!r}"
            unbound = read_names(expression) - bound
            assert not unbound, f"{path.name} cell {i} quotes {unbound} before a cell computes it"
            quoted += 1
    assert quoted or path.stem == "00_tour", f"{path.name} quotes no computed number"


def test_the_pattern_refuses_what_is_not_a_name_or_one_formatted_field():
    pattern = eval_pattern()
    for good in ("k", "run.steps", 'jump_63["slow"]', 'f"{slope:.2f}"', 'f"{fast[100]:.3f}"'):
        assert pattern.fullmatch(good), good
    for bad in ("__import__('os').system('x')", "k + 1", 'f"{a}{b}"', "f(x)", ""):
        assert not pattern.fullmatch(bad), bad


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_hidden_cells_are_folded_in_jupyterlab_too(path):
    # the website hides by tag (myst-nb), JupyterLab by jupyter.source_hidden/outputs_hidden;
    # remove-cell would skip the cell in the website's inline run, before the prose reads it
    for i, cell in enumerate(json.loads(path.read_text())["cells"]):
        if cell["cell_type"] != "code":
            continue
        tags, folded = cell["metadata"].get("tags", []), cell["metadata"].get("jupyter", {})
        assert "remove-cell" not in tags, f"{path.name} cell {i}: use remove-input, remove-output"
        if "remove-input" in tags or "hide-input" in tags:
            assert folded.get("source_hidden") is True, f"{path.name} cell {i}"
        assert ("remove-output" in tags) == bool(folded.get("outputs_hidden")), f"{path.name} {i}"


def test_every_chapter_and_lab_starts_with_the_set_up_check():
    out = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "setup_cell.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout


def test_the_set_up_check_names_the_fix_instead_of_a_traceback():
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    nb = json.loads((ROOT / "book" / "08_logistic.ipynb").read_text())
    check = next("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert '"sklearn": "scikit-learn",' in check  # chapter 8 compares with scikit-learn
    shell = InteractiveShell.instance()
    assert shell.run_cell(check).success  # this environment has everything
    lacking = check.replace('"sklearn":', '"sklearn_not_installed":')
    with capture_output() as shown:
        result = shell.run_cell(lacking)
    assert type(result.error_in_exec).__name__ == "SetupNeeded"
    text = shown.stdout + shown.stderr
    assert "This page needs scikit-learn" in text and "`python3 tasks.py lab`" in text
    assert "Traceback" not in text and "raise SetupNeeded" not in text


def test_the_jupyterlab_test_recognises_the_chapters_note():
    import jupyterlab  # tools/: the harness of tests/book/test_jupyterlab.py
    import setup_cell

    assert jupyterlab.NOTE_TITLE in setup_cell.NOTE
