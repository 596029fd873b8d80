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

from labtools import forbid
from labtools.course import open_course  # the same course set-up as grading
from labtools.layout import LABS

STUB = "raise NotImplementedError()"


def stub_message(source_cell: dict) -> str:
    """What the student must write in this cell, read from the instructor's version."""
    text = "".join(source_cell["source"])
    funcs = re.findall(r"^def (\w+)\(", text, flags=re.M)
    grading = source_cell.get("metadata", {}).get("grading", {})
    if funcs and ("allow" in grading or grading.get("forbid")):
        allow, outside = forbid.public(grading)
        if "allow" in grading:
            may = ", ".join(f"P.{n}" for n in allow)
            rule = (
                f"it may call only {may} from the package"
                if allow
                else ("it may call no function of the package")
            )
        else:
            rule = "without " + ", ".join(f"P.{n}" for n in grading.get("forbid", []))
        others = [n for n in outside if not n.startswith("perceptrons.")]
        if others and "allow" in grading:
            rule += ", nor " + ", ".join(others)
        return (
            f"Student exercise: write the body of `{funcs[-1]}` (see its docstring); {rule}: "
            "anything else that does the exercise raises an error when it is graded."
        )
    if funcs:
        return f"Student exercise: write the body of `{funcs[-1]}` (see its docstring)."
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
    for cell in release_nb["cells"]:
        text = "".join(cell["source"])
        if cell["cell_type"] == "code" and STUB in text:
            message = stub_message(by_id[cell["metadata"]["nbgrader"]["grade_id"]])
            text = text.replace(STUB, f"raise NotImplementedError({message!r})")
            cell["source"] = text.splitlines(keepends=True)
    return release_nb


def check_forbids(labs: Path = LABS) -> None:
    """Every solution cell's ``grading`` names only what can be enforced (raises
    :class:`labtools.forbid.ForbidError` otherwise): a forbid is never a silent no-op."""
    for path in sorted((labs / "source").glob("*/*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            grading = cell.get("metadata", {}).get("grading")
            if grading:
                where = f"{path.stem} {cell['metadata'].get('nbgrader', {}).get('grade_id')}"
                forbid.check(grading, where)


def generate(labs: Path = LABS, out: Path | None = None) -> Path:
    """Generate the student version of every lab into ``out`` (default: labs/release)."""
    out = labs / "release" if out is None else out
    check_forbids(labs)
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
