"""Which cells of a submission are graded, and how: the lab's source decides.

A submitted notebook is matched to the instructor's source by nbgrader's ``grade_id``s.
Locked cells (text, setup, data, plots) and test cells always come from the source, in the
source's order, whatever the student did to them; only the student's answers (solution
cells) and cells the student added are taken from the submission. What was deleted comes
back, what was duplicated is used once and flagged, what was edited is restored.

The roles of the cells in :func:`plan`:

- ``locked``: source code that runs on both sides (the student's sandbox and the grader);
- ``test``: a graded code cell, evaluated by the grader only; the sandbox runs its visible
  part (as the student saw it), so the names it defines exist there too;
- ``answer``: the student's code for a solution cell, run in the sandbox only;
- ``written``: the student's text for an answer graded by hand;
- ``extra``: a code cell the student added, run in the sandbox after the cell it followed;
- ``text``: the source's markdown.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS\n?", re.S)


def visible(cell: dict) -> str:
    """A cell's source as the student version has it (hidden tests removed)."""
    return HIDDEN.sub("", text(cell))


def text(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def nbgrader(cell: dict) -> dict:
    meta = cell.get("metadata", {})
    found = meta.get("nbgrader", {}) if isinstance(meta, dict) else {}
    return found if isinstance(found, dict) else {}


def grade_id(cell: dict) -> str | None:
    gid = nbgrader(cell).get("grade_id")
    return gid if isinstance(gid, str) else None


@dataclass
class Cell:
    """One cell of the notebook as it is graded."""

    role: str  # locked, test, answer, written, extra, text
    source: str  # what the graded notebook shows (tests in full, with hidden tests)
    sandbox: str | None = None  # what the student's sandbox runs, if anything
    grade_id: str | None = None
    points: float = 0.0
    metadata: dict = field(default_factory=dict)  # the source's metadata

    @property
    def reference(self) -> list[str]:
        """Names a test runs with the instructor's version (its ``grading.reference``)."""
        return list(self.metadata.get("grading", {}).get("reference", []))


def is_test(cell: dict) -> bool:
    meta = nbgrader(cell)
    return cell["cell_type"] == "code" and bool(meta.get("grade")) and not meta.get("solution")


def is_answer(cell: dict) -> bool:
    return bool(nbgrader(cell).get("solution"))


def assigned_names(source: str) -> list[str]:
    """Names a cell binds at its top level: functions and assignments (not imports)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    names = []

    def targets(node):
        if isinstance(node, ast.Name):
            names.append(node.id)
        elif isinstance(node, ast.Tuple | ast.List):
            for element in node.elts:
                targets(element)

    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                targets(target)
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets(node.target)
    return names


def used_names(source: str) -> set[str]:
    """Every name a cell reads, at any depth."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}


def declared(source_nb: dict) -> dict[str, list[str]]:
    """The names that may cross from the student's side: those the instructor's solution
    cells define, each with the package functions it must not use ("write it yourself",
    from the cell's ``grading`` metadata, qualified: :func:`labtools.forbid.names_for`)."""
    from labtools import forbid

    names = {}
    for cell in source_nb["cells"]:
        if cell["cell_type"] == "code" and is_answer(cell):
            grading = cell.get("metadata", {}).get("grading", {})
            closed = forbid.names_for(grading) if grading else []
            for name in assigned_names(text(cell)):
                names[name] = closed
    return names


def solutions(source_nb: dict) -> dict[str, str]:
    """The instructor's code for each name a solution cell defines (markers removed): what a
    test runs in place of the student's earlier function (``grading.reference``)."""
    found = {}
    for cell in source_nb["cells"]:
        if cell["cell_type"] == "code" and is_answer(cell):
            lines = text(cell).splitlines(keepends=True)
            code = "".join(line for line in lines if "### " not in line)
            for name in assigned_names(code):
                found[name] = code
    return found


def defined_functions(source_nb: dict) -> set[str]:
    """The names the instructor's solution cells define as functions (``def``)."""
    found = set()
    for cell in source_nb["cells"]:
        if cell["cell_type"] == "code" and is_answer(cell):
            try:
                tree = ast.parse(text(cell))
            except SyntaxError:
                continue
            found |= {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    return found


def plan(source_nb: dict, student_nb: dict) -> tuple[list[Cell], list[str]]:
    """The cells to grade, in the source's order, and notes for the instructor."""
    source_cells = source_nb["cells"]
    known = {grade_id(c): c for c in source_cells if grade_id(c)}
    notes: list[str] = []
    answers: dict[str, dict] = {}  # the first submitted cell of each known id
    extras: dict[str | None, list[dict]] = {}  # added cells, by the known cell before them
    anchor = None
    for cell in student_nb.get("cells", []):
        if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", "markdown", "raw"):
            continue
        gid = grade_id(cell)
        if gid is not None and gid not in known:
            notes.append(f"a cell claims the unknown id {gid!r}: treated as the student's own")
            gid = None
        if gid is None:
            if cell["cell_type"] == "code":
                extras.setdefault(anchor, []).append(cell)
            continue
        original = known[gid]
        if gid in answers:
            notes.append(f"cell {gid} appears more than once: graded once")
            if is_answer(original) and cell["cell_type"] == "code":
                extras.setdefault(anchor, []).append(cell)  # the student's code still runs
            continue
        answers[gid] = cell
        anchor = gid
        if original["cell_type"] != cell["cell_type"]:
            notes.append(f"cell {gid} changed from {original['cell_type']} to {cell['cell_type']}")
        elif not is_answer(original) and text(cell).strip() not in (
            text(original).strip(),
            visible(original).strip(),
        ):
            notes.append(f"locked cell {gid} was edited: the original was used")
    if not answers:
        notes.append(
            "the notebook lost its nbgrader metadata: its code ran as the student's own "
            "cells and the tests used the names it defines; its written answers could not "
            "be matched: check it by hand"
        )
    cells = [_extra(c) for c in extras.get(None, [])]
    for original in source_cells:
        gid = grade_id(original)
        meta = original.get("metadata", {})
        submitted = answers.get(gid)
        if gid is not None and submitted is None and gid in known:
            if is_answer(original):
                notes.append(f"answer cell {gid} is missing")
            elif is_test(original):
                notes.append(f"test cell {gid} was missing: restored")
        points = float(nbgrader(original).get("points", 0) or 0)
        if original["cell_type"] != "code" and not is_answer(original):
            cells.append(Cell("text", text(original), grade_id=gid, metadata=meta))
        elif is_answer(original):
            same_type = submitted is not None and submitted["cell_type"] == original["cell_type"]
            answer = text(submitted) if same_type else ""
            if original["cell_type"] == "code":
                cells.append(Cell("answer", answer, answer, gid, points, meta))
            else:
                cells.append(Cell("written", answer, None, gid, points, meta))
        elif is_test(original):
            full = text(original)
            cells.append(Cell("test", full, visible(original), gid, points, meta))
        else:
            cells.append(Cell("locked", text(original), text(original), gid, 0.0, meta))
        cells += [_extra(c) for c in extras.get(gid, [])]
    return cells, notes


def _extra(cell: dict) -> Cell:
    return Cell("extra", text(cell), text(cell))
