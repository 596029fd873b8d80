"""The book builds from scratch with warnings as errors, and every notebook is stored clean."""

import json
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "book").glob("*.ipynb")) + sorted((ROOT / "labs").rglob("*.ipynb"))


class ImageAlts(HTMLParser):
    def __init__(self):
        super().__init__()
        self.alts = []

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.alts.append(dict(attrs).get("alt") or "")


def figure_cells(path):
    nb = json.loads(path.read_text())
    return [c for c in nb["cells"] if "figure" in c.get("metadata", {}).get("mystnb", {})]


def toc_files():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc["parts"]:
        files += [ch["file"] for ch in part["chapters"]]
    return files


def test_notebooks_are_committed_without_outputs():
    assert NOTEBOOKS, "no notebooks found"
    for path in NOTEBOOKS:
        nb = json.loads(path.read_text())
        for cell in nb["cells"]:
            if cell["cell_type"] == "code":
                assert cell["outputs"] == [], f"{path.name} has stored outputs"
                assert cell["execution_count"] is None, f"{path.name} has execution counts"


def test_every_chapter_is_in_the_table_of_contents():
    listed = set(toc_files())
    on_disk = {f"book/{p.stem}" for p in (ROOT / "book").glob("*.ipynb")}
    on_disk |= {f"book/{p.stem}" for p in (ROOT / "book").glob("*.md")}
    assert on_disk == listed


def test_book_builds_from_clean_with_warnings_as_errors(tmp_path):
    proc = subprocess.run(
        [
            str(Path(sys.executable).with_name("jupyter-book")),
            "build",
            str(ROOT),
            "--path-output",
            str(tmp_path),
            "--warningiserror",
            "--nitpick",
            "--keep-going",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    html = tmp_path / "_build" / "html"
    for doc in toc_files():
        page = html / f"{doc}.html"
        assert page.exists(), f"{doc} was not built"
        text = page.read_text()
        assert "Traceback (most recent call last)" not in text, f"{doc} shows a traceback"
        images = ImageAlts()
        images.feed(text)
        assert all(alt.strip() for alt in images.alts), f"{doc} has an image without alt text"
        source = ROOT / f"{doc}.ipynb"
        if source.exists():  # every figure cell of the notebook shows up as an image
            assert len(images.alts) >= len(figure_cells(source)), f"{doc} lost a figure"
    executed = list((tmp_path / "_build" / "jupyter_execute").rglob("*.ipynb"))
    assert len(executed) == len([p for p in NOTEBOOKS if p.parent.name == "book"])
    for nb_path in executed:
        nb = json.loads(nb_path.read_text())
        for cell in nb["cells"]:
            for out in cell.get("outputs", []):
                assert out["output_type"] != "error", f"{nb_path.name} raised an error"
