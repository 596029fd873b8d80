"""What a reader finds at the end of every chapter: 5 to 7 exercises, each labelled by
kind and difficulty, at least one proof and at least one harder (★★★) exercise in the
book, and a solution for each that folds away."""

import json
import re
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
