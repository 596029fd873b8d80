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
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from labtools.layout import LABS

STUB = "raise NotImplementedError()"


def nbgrader_command(*args, env=None) -> tuple[list[str], dict]:
    """The nbgrader command line of this Python environment, and an environment in which
    its helpers (alembic) are found: (argv, env). ``env`` defaults to os.environ."""
    bin_dir = Path(sys.executable).parent
    env = dict(os.environ if env is None else env)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    return [str(bin_dir / "nbgrader"), *args], env


def nbgrader(*args, cwd: Path) -> subprocess.CompletedProcess:
    """Run nbgrader in the course folder ``cwd`` and capture what it prints."""
    argv, env = nbgrader_command(*args)
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)


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
    from labtools.grade import open_course  # the same course set-up as grading

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


def answered(lab: str, replace: dict[str, str] | None = None, labs: Path = LABS) -> dict:
    """The student version of ``lab`` with the instructor's answers filled in, as a student
    who solved everything would hand it in; ``replace`` gives other answers by grade id."""
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
