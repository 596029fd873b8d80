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
- ``text``: the source's markdown;
- ``skipped``: the lab's last cell, the student's own check before hand-in
  (:func:`perceptrons.handin.check`, tagged ``handin-check``): shown, not run.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS\n?", re.S)
HANDIN_CHECK = "handin-check"  # the tag of a lab's last cell (perceptrons.handin.check)


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


def _bound(source: str) -> set[str]:
    """Every name a cell binds, at any depth (assignments, loop and ``with`` targets,
    functions, classes, imports)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, ast.Global | ast.Nonlocal):
            bound.update(node.names)
    return bound


def loaded_names(node: ast.AST) -> set[str]:
    """The names an expression or statement reads, leaving out the variables of its
    comprehensions (they read what they bind)."""
    names = {
        n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    }
    local = set()
    for n in ast.walk(node):
        if isinstance(n, ast.comprehension):
            local |= {t.id for t in ast.walk(n.target) if isinstance(t, ast.Name)}
    return names - local


def free_names(source: str) -> set[str]:
    """The names a cell may read before it binds them: what it takes from the cells before
    it. A top-level assignment, ``for`` target, import or ``def`` binds a name for the
    statements after it; anything else read anywhere counts (more than it reads, never
    less)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    bound: set[str] = set()
    free: set[str] = set()

    def simple_targets(target) -> set[str]:
        if isinstance(target, ast.Name):
            return {target.id}
        if isinstance(target, ast.Tuple | ast.List):
            return set().union(*(simple_targets(e) for e in target.elts))
        return set()

    for st in tree.body:
        if isinstance(st, ast.Assign):
            free |= loaded_names(st.value) - bound
            for target in st.targets:  # a[i] = ..., a.x = ...: reads a
                free |= loaded_names(target) - bound
            bound |= set().union(*(simple_targets(t) for t in st.targets))
        elif isinstance(st, ast.For):
            free |= loaded_names(st.iter) - bound
            inner = bound | simple_targets(st.target)
            for part in (*st.body, *st.orelse):
                free |= loaded_names(part) - inner
        elif isinstance(st, ast.Import | ast.ImportFrom):
            bound |= {(a.asname or a.name).split(".")[0] for a in st.names}
        elif isinstance(st, ast.FunctionDef | ast.ClassDef):
            free |= loaded_names(st) - bound  # what its body reads when it runs (and more)
            bound.add(st.name)
        else:
            free |= loaded_names(st) - bound
    return free


def shown_only(cells: list[Cell], declared: set[str]) -> set[int]:
    """The indices of the locked cells whose run on the grader's side no later verdict can
    need: they only show something (a figure, a slider, a printed check). The sandbox runs
    them as the student's kernel does; the grader's side leaves them out, and the graded
    notebook shows them without output.

    A locked cell is left out when no grader-side cell run after it takes from the cells
    before it (:func:`free_names`) a name that this cell binds, or that it reads and a
    test cell made (a test's values are the grader's own; the data that locked cells make,
    what imports bind and the student's names, which each cell fetches again from the
    sandbox, are read only: ``test_a_left_out_cell_changes_nothing_it_reads`` checks that
    for every lab). Decided from the lab's own cells, which the student cannot change.
    """
    grader_side = [k for k, c in enumerate(cells) if c.role in ("locked", "test")]
    made_by_tests = set().union(
        *(_bound(cells[k].source) for k in grader_side if cells[k].role == "test")
    )
    later: set[str] = set()  # what the cells after this one that run take from before them
    skipped = set()
    for k in reversed(grader_side):
        cell = cells[k]
        if cell.role == "locked":
            touched = _bound(cell.source) | (used_names(cell.source) & made_by_tests)
            if not touched & later:
                skipped.add(k)
                continue
        later |= free_names(cell.source) - set(declared)
    return skipped


def declared(source_nb: dict) -> set[str]:
    """The names that may cross from the student's side: those the instructor's solution
    cells define."""
    names = set()
    for cell in source_nb["cells"]:
        if cell["cell_type"] == "code" and is_answer(cell):
            names.update(assigned_names(text(cell)))
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
    unknown: list[str] = []  # grade ids the lab does not have (the student's text)
    answers: dict[str, dict] = {}  # the first submitted cell of each known id
    extras: dict[str | None, list[dict]] = {}  # added cells, by the known cell before them
    anchor = None
    for cell in student_nb.get("cells", []):
        if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", "markdown", "raw"):
            continue
        gid = grade_id(cell)
        if gid is not None and gid not in known:
            unknown.append(gid)
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
    if unknown:  # one note, however many (a row's status cuts it, the log keeps it whole)
        ids = ", ".join(map(repr, unknown))
        claim = "cells claim the unknown ids" if unknown[1:] else "a cell claims the unknown id"
        notes.append(f"{claim} {ids}: treated as the student's own")
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
        elif HANDIN_CHECK in meta.get("tags", []):  # the student's own check: not graded
            cells.append(Cell("skipped", text(original), None, gid, 0.0, meta))
        else:
            cells.append(Cell("locked", text(original), text(original), gid, 0.0, meta))
        cells += [_extra(c) for c in extras.get(gid, [])]
    return cells, notes


def _extra(cell: dict) -> Cell:
    return Cell("extra", text(cell), text(cell))
