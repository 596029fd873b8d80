"""The first code cell of every chapter and lab: a check that this Python has what the page
imports, which names the command that installs it instead of failing with a traceback; and
at the top of every chapter a note that only JupyterLab shows, on how to read it there.

    python3 tools/setup_cell.py          # write the cell into every chapter and lab source
    python3 tools/setup_cell.py --check  # exit 1 if a notebook's cell is missing or stale

The packages a page needs are read from its own imports; the cell is hidden on the website
(``remove-input``) and folded in JupyterLab (``jupyter.source_hidden``).
Standard library only (tasks.py and the tests call it before any environment exists).
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: module imported -> the name pip installs it by, for what the student environment provides
PACKAGES = {
    "numpy": "numpy",
    "matplotlib": "matplotlib",
    "ipywidgets": "ipywidgets",
    "sklearn": "scikit-learn",
    "perceptrons": "perceptrons (this course's package)",
}
MARK = "# Set-up check"
TEMPLATE = """\
# Set-up check: if this Python lacks a package the page needs, say how to get it.
import importlib.util

needs = {{
{needs}
}}
missing = [name for module, name in needs.items() if importlib.util.find_spec(module) is None]
if missing:

    class SetupNeeded(Exception):
        def _render_traceback_(self):  # IPython shows this message instead of a traceback
            return [str(self)]

    raise SetupNeeded(
        f"This page needs {{', '.join(missing)}}, which this Python environment lacks. "
        "On your own machine, run `python3 tasks.py lab` in the course's folder: it installs "
        "everything the course needs and opens it in JupyterLab. Online, use the Binder "
        "button on the course's website."
    )"""


#: Chapters only: a note that JupyterLab shows and the website leaves out (myst-nb drops
#: cells tagged remove-cell), on what reads differently there.
NOTE_ID = "jupyterlab-note"
NOTE = """\
:::{note} Reading this chapter in JupyterLab
Run it first (**Run ▸ Run All Cells**): the numbers in the text are computed by the cells
and appear as they run, and the sliders compute as you move them. References to other
chapters, to figures and to the bibliography show here as their labels (such as
`chap-perceptron` or `rosenblatt1958`); the course's website links them. The folded
cells (•••) are the checks behind the text: click one to unfold it.
:::"""


def note_cell() -> dict:
    """The JupyterLab-only note at the top of a chapter."""
    return {
        "cell_type": "markdown",
        "id": NOTE_ID,
        "metadata": {"tags": ["remove-cell"]},
        "source": NOTE.splitlines(keepends=True),
    }


def is_chapter(path: Path) -> bool:
    return path.parent.name == "book"


def notebooks() -> list[Path]:
    """Every chapter and every lab source (the labs' student versions are generated)."""
    return sorted((ROOT / "book").glob("*.ipynb")) + sorted(
        (ROOT / "labs" / "source").glob("*/*.ipynb")
    )


def needs(nb: dict) -> list[tuple[str, str]]:
    """The (module, pip name) pairs of PACKAGES that the notebook's code cells import."""
    imported = set()
    for cell in nb["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] != "code" or source.startswith(MARK):
            continue
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                imported.add(node.module.split(".")[0])
                if node.module == "perceptrons" and "widgets" in {a.name for a in node.names}:
                    imported.add("ipywidgets")  # the slider panels
    return [(module, name) for module, name in PACKAGES.items() if module in imported]


def cell_for(nb: dict) -> dict:
    """The set-up cell this notebook should start with (in a lab, a locked nbgrader cell,
    like the lab's other given code)."""
    entries = "\n".join(f"    {json.dumps(m)}: {json.dumps(n)}," for m, n in needs(nb))
    source = TEMPLATE.format(needs=entries)
    lines = source.splitlines(keepends=True)
    metadata = {
        "jupyter": {"source_hidden": True},
        "tags": ["remove-input"],  # its message, if any, must show
    }
    if "nbgrader" in nb["metadata"] or any("nbgrader" in c["metadata"] for c in nb["cells"]):
        metadata["nbgrader"] = {
            "grade": False,
            "grade_id": "setup-check",
            "locked": True,
            "schema_version": 3,
            "solution": False,
            "task": False,
        }
    return {
        "cell_type": "code",
        "execution_count": None,
        "id": "setup-check",
        "metadata": metadata,
        "outputs": [],
        "source": lines,
    }


def first_code(nb: dict) -> int | None:
    return next((i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"), None)


def stale(path: Path) -> str | None:
    """Why the notebook's set-up cell (or a chapter's note) is not what it should be, or None."""
    nb = json.loads(path.read_text())
    notes = [c for c in nb["cells"] if c.get("id") == NOTE_ID]
    if is_chapter(path) and notes != [note_cell()]:
        return "its JupyterLab note is missing or not the one tools/setup_cell.py writes"
    if not is_chapter(path) and notes:
        return "a lab has the chapters' JupyterLab note"
    i = first_code(nb)
    if i is None or not "".join(nb["cells"][i]["source"]).startswith(MARK):
        return "its first code cell is not the set-up check"
    want, have = cell_for(nb), nb["cells"][i]
    if have["source"] != want["source"] or have["metadata"] != want["metadata"]:
        return "its set-up check is not the one tools/setup_cell.py writes"
    return None


def write(path: Path) -> None:
    nb = json.loads(path.read_text())
    nb["cells"] = [c for c in nb["cells"] if c.get("id") != NOTE_ID]
    if is_chapter(path):  # after the title and goals, before any code
        nb["cells"].insert(1, note_cell())
    i = first_code(nb)
    if i is not None and "".join(nb["cells"][i]["source"]).startswith(MARK):
        nb["cells"][i] = cell_for(nb)
    else:
        # before the first code cell, so that the check runs before any import
        nb["cells"].insert(len(nb["cells"]) if i is None else i, cell_for(nb))
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report, change nothing")
    parser.add_argument("paths", nargs="*", type=Path, help="notebooks (default: all)")
    args = parser.parse_args(argv)
    paths = args.paths or notebooks()
    if args.check:
        problems = [f"{p.relative_to(ROOT)}: {why}" for p in paths if (why := stale(p))]
        print("\n".join(problems) or f"{len(paths)} notebooks start with the set-up check")
        return 1 if problems else 0
    for path in paths:
        write(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
