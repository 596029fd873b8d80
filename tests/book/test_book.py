"""The book builds from scratch with warnings as errors, twice the same, from clean notebooks."""

import json

import book_fixes
from _helpers import ROOT, STAND_IN_REPOSITORY, figure_names, toc_files
from bs4 import BeautifulSoup

import tasks

NOTEBOOKS = sorted((ROOT / "book").glob("*.ipynb")) + sorted((ROOT / "labs").rglob("*.ipynb"))


def image_alts(html: str) -> list[str]:
    """The alt text of every image of a page ("" where there is none)."""
    return [img.get("alt") or "" for img in BeautifulSoup(html, "html.parser").find_all("img")]


def test_notebooks_are_committed_without_outputs():
    assert NOTEBOOKS, "no notebooks found"
    for path in NOTEBOOKS:
        nb = json.loads(path.read_text())
        for cell in nb["cells"]:
            if cell["cell_type"] == "code":
                assert cell["outputs"] == [], f"{path.name} has stored outputs"
                assert cell["execution_count"] is None, f"{path.name} has execution counts"


def test_every_chapter_and_student_lab_is_in_the_table_of_contents():
    listed = set(toc_files())
    on_disk = {f"book/{p.stem}" for p in (ROOT / "book").glob("*.ipynb")}
    on_disk |= {f"book/{p.stem}" for p in (ROOT / "book").glob("*.md")}
    on_disk |= {
        str(p.relative_to(ROOT).with_suffix(""))
        for p in (ROOT / "labs" / "release").glob("*/*.ipynb")
    }
    assert on_disk == listed


def test_student_labs_are_shown_but_never_executed_by_the_build():
    for path in (ROOT / "labs" / "release").glob("*/*.ipynb"):
        assert json.loads(path.read_text())["metadata"]["mystnb"] == {"execution_mode": "off"}


def outputs(path):
    """The text, HTML and image outputs of an executed notebook, cell by cell, as the page
    shows them: a stream's chunks joined (the kernel splits a print at random points)."""
    nb = json.loads(path.read_text())
    found = []
    for cell in nb["cells"]:
        streams = {}
        for out in cell.get("outputs", []):
            if out["output_type"] == "stream":
                if out["name"] not in streams:
                    streams[out["name"]] = len(found)
                    found.append(("stream", ""))
                index = streams[out["name"]]
                found[index] = ("stream", found[index][1] + "".join(out["text"]))
            for mime, data in sorted(out.get("data", {}).items()):
                if mime != "application/vnd.jupyter.widget-view+json":  # holds a random model id
                    found.append((mime, "".join(data) if isinstance(data, list) else str(data)))
    return found


def test_stream_chunks_are_joined_as_they_came():
    import nbformat

    whole = [nbformat.v4.new_output("stream", name="stdout", text="XOR: [0. 1. 1. 0.]\n")]
    chunks = [
        nbformat.v4.new_output("stream", name="stdout", text=part)
        for part in ("XOR:", " [0. 1.", " 1. 0.]\n")
    ]
    assert book_fixes.merge_streams_exactly(chunks) == book_fixes.merge_streams_exactly(whole)
    assert chunks[0]["text"] == "XOR:"  # the executed notebook is left as it was


def test_book_builds_from_clean_with_warnings_as_errors(built_books):
    html = built_books[0] / "_build" / "html"
    for doc in toc_files():
        page = html / f"{doc}.html"
        assert page.exists(), f"{doc} was not built"
        text = page.read_text()
        assert "Traceback (most recent call last)" not in text, f"{doc} shows a traceback"
        alts = image_alts(text)
        assert all(alt.strip() for alt in alts), f"{doc} has an image without alt text"
        # every figure cell of the notebook shows up as an image
        assert len(alts) >= len(figure_names(doc)), f"{doc} lost a figure"
    executed = built_books[0] / "_build" / "jupyter_execute"
    chapters = list((executed / "book").glob("*.ipynb"))
    assert len(chapters) == len([p for p in NOTEBOOKS if p.parent.name == "book"])
    for nb_path in chapters:
        assert outputs(nb_path), f"{nb_path.name} was not executed"
        for kind, _ in outputs(nb_path):
            assert kind != "error", f"{nb_path.name} raised an error"
    for nb_path in (executed / "labs").rglob("*.ipynb"):  # shown, not run
        assert outputs(nb_path) == [], f"the student lab {nb_path.name} was executed"


def test_two_builds_give_identical_outputs(built_books):
    first, second = (root / "_build" / "jupyter_execute" for root in built_books)
    names = sorted(p.relative_to(first) for p in first.rglob("*.ipynb"))
    assert names == sorted(p.relative_to(second) for p in second.rglob("*.ipynb"))
    for name in names:
        a, b = outputs(first / name), outputs(second / name)
        assert len(a) == len(b), name
        for (kind, x), (_, y) in zip(a, b, strict=True):
            assert x == y, f"{name}: a {kind} output differs between two builds"


def test_build_records_the_package_digest(built_books):
    stamp = built_books[0] / "_build" / ".src-digest"
    assert stamp.read_text() == tasks.digest(ROOT / "src")


def test_binder_buttons_only_for_a_known_repository(built_books):
    with_repository, without = (root / "_build" / "html" for root in built_books)
    for doc in toc_files():
        has_notebook = (ROOT / f"{doc}.ipynb").exists()
        link = (
            f'href="https://mybinder.org/v2/gh/{STAND_IN_REPOSITORY.removeprefix("https://github.com/")}'
            f'/main?urlpath=lab/tree/{doc}.ipynb"'
        )
        assert (link in (with_repository / f"{doc}.html").read_text()) == has_notebook, doc
        # without a repository, no button (Jupyter Book's default would open its own repo)
        assert "mybinder.org" not in (without / f"{doc}.html").read_text(), doc


def test_the_folders_the_tools_make_in_the_repository_are_not_read_as_pages():
    # a .venv holds packages' README files, which the build would read (and fail on, -W)
    import binder_env  # tools/

    config = (ROOT / "_config.yml").read_text()
    excluded = {line.strip()[2:].split("  #")[0] for line in config.splitlines() if "  - " in line}
    made = {tasks.VENV, tasks.LAB_VENV, binder_env.CACHE, tasks.BUILD, ROOT / "build"}
    assert {folder.relative_to(ROOT).as_posix() for folder in made} <= excluded
