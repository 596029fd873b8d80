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

from labtools.course import open_course  # the same course set-up as grading
from labtools.layout import LABS

STUB = "raise NotImplementedError()"


def stub_message(source_cell: dict) -> str:
    """What the student must write in this cell, read from the instructor's version."""
    text = "".join(source_cell["source"])
    funcs = re.findall(r"^def (\w+)\(", text, flags=re.M)
    forbid = source_cell.get("metadata", {}).get("grading", {}).get("forbid", [])
    if funcs and forbid:
        names = ", ".join(f"P.{name}" for name in forbid if "." not in name)  # (public ones)
        return (
            f"Student exercise: write the body of `{funcs[-1]}` (see its docstring) "
            f"without {names}: when it is graded, those raise an error."
        )
    if funcs:
        return f"Student exercise: write the body of `{funcs[-1]}` (see its docstring)."
    solution = text.split("### BEGIN SOLUTION")[1].split("### END SOLUTION")[0]
    names = re.findall(r"^(\w+)\s*=", solution, flags=re.M)
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


def generate(labs: Path = LABS, out: Path | None = None) -> Path:
    """Generate the student version of every lab into ``out`` (default: labs/release)."""
    out = labs / "release" if out is None else out
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
