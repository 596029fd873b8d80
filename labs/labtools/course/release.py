"""Releasing the labs: the student versions, generated from the sources by nbgrader.

    python -m labtools release     # (or python3 tasks.py labs) regenerate labs/release

The instructor sources in ``labs/source/<lab>/<lab>.ipynb`` hold the solutions between
``### BEGIN SOLUTION`` / ``### END SOLUTION`` and hidden tests between
``### BEGIN HIDDEN TESTS`` / ``### END HIDDEN TESTS``. nbgrader strips both; this module
then gives every stub a message that says what to write, and writes the student versions
to ``labs/release/<lab>/<lab>.ipynb`` (committed, opened by Binder).
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

from labtools.course.folder import open_course  # the same course set-up as grading
from labtools.door.layout import LABS
from perceptrons import handin

STUB = "raise NotImplementedError()"


def stub_message(source_cell: dict, allow: tuple[str, ...] = ()) -> str:
    """What the student must write in this cell, read from the instructor's version; for a
    graded function, what it may call (the lab's allow list, ``allow``) and not use (the
    cell's ``grading.forbid``)."""
    text = "".join(source_cell["source"])
    funcs = re.findall(r"^def (\w+)\(", text, flags=re.M)
    grading = source_cell.get("metadata", {}).get("grading", {})
    if funcs:
        may = " and ".join(", ".join(f"P.{n}" for n in allow).rsplit(", ", 1))
        rule = (
            f"of the package's algorithms it may call only {may}"
            if allow
            else "it may call none of the package's algorithms"
        )
        rule += " (the Rules above); scipy and scikit-learn are not there when it is graded"
        forbid = grading.get("forbid", [])
        if forbid:
            named = " or ".join(forbid)
            rule += f"; if it uses {named}, its points wait for the instructor's review"
        return f"Student exercise: write the body of `{funcs[-1]}` (see its docstring); {rule}."
    solution = text.split("### BEGIN SOLUTION")[1].split("### END SOLUTION")[0]
    # `a = ...` and `a, b = ...` (each name of a tuple), not `a == b`
    targets = re.findall(r"^(\w+(?:\s*,\s*\w+)*)\s*,?\s*=(?!=)", solution, flags=re.M)
    names = [name.strip() for target in targets for name in target.split(",")]
    if names:
        return "Student exercise: set " + ", ".join(f"`{n}`" for n in names) + "."
    return "Student exercise: replace this line with your code."


def add_stub_messages(release_nb: dict, source_nb: dict) -> dict:
    """Give each `raise NotImplementedError()` left by nbgrader its message."""
    by_id = {c["metadata"].get("nbgrader", {}).get("grade_id"): c for c in source_nb["cells"]}
    allow = handin.rules(source_nb).allow
    for cell in release_nb["cells"]:
        text = "".join(cell["source"])
        if cell["cell_type"] == "code" and STUB in text:
            message = stub_message(by_id[cell["metadata"]["nbgrader"]["grade_id"]], allow)
            text = text.replace(STUB, f"raise NotImplementedError({message!r})")
            cell["source"] = text.splitlines(keepends=True)
    return release_nb


class RulesError(ValueError):
    """A lab's ``grading`` metadata that cannot be applied."""


def check_rules(labs: Path = LABS) -> None:
    """Every lab's rules can be applied (raises :class:`RulesError` otherwise): its allow
    list (notebook metadata ``grading.allow``) names functions of the package; a cell's
    ``grading`` says only ``forbid`` (names that can be found) and ``reference`` (names the
    lab's solutions define)."""
    import importlib

    for path in sorted((labs / "source").glob("*/*.ipynb")):
        nb = json.loads(path.read_text())
        try:
            handin.present_functions(handin.rules(nb).allow)
        except ValueError as err:
            raise RulesError(f"{path.stem}: {err}") from None
        for cell in nb["cells"]:
            grading = cell.get("metadata", {}).get("grading")
            if not grading:
                continue
            where = f"{path.stem} {cell['metadata'].get('nbgrader', {}).get('grade_id')}"
            unknown = set(grading) - {"forbid", "reference"}
            if unknown:
                raise RulesError(
                    f"{where}: unknown grading metadata {sorted(unknown)} (a lab's package "
                    "functions are allowed once, in the notebook's metadata grading.allow)"
                )
            for name in grading.get("forbid", []):
                module, _, attr = name.rpartition(".")
                try:
                    getattr(importlib.import_module(module), attr)
                except (ImportError, AttributeError, ValueError):
                    raise RulesError(f"{where}: forbid names {name}, which is not found") from None


def generate(labs: Path = LABS, out: Path | None = None) -> Path:
    """Generate the student version of every lab into ``out`` (default: labs/release)."""
    out = labs / "release" if out is None else out
    check_rules(labs)
    with tempfile.TemporaryDirectory() as tmp:
        course = Path(tmp) / "course"
        for lab in open_course(course, labs):
            name = f"{lab}/{lab}.ipynb"
            release = json.loads((course / "release" / name).read_text())
            source = json.loads((labs / "source" / name).read_text())
            release["metadata"]["mystnb"] = {"execution_mode": "off"}  # the book shows, not runs
            target = out / name
            target.parent.mkdir(parents=True, exist_ok=True)
            text = json.dumps(add_stub_messages(release, source), indent=1, ensure_ascii=False)
            target.write_text(text + "\n")
    return out
