"""The notebook as graded, for formgrader and the feedback: the plan's cells with the
grader's outputs, and each written answer rendered and cleaned so that nothing in it runs
in the instructor's browser."""

from __future__ import annotations

import json

# what a written answer may contain once rendered: text formatting, lists, tables, code,
# links to http(s) or mailto, images by http(s); no scripts, styles, frames or event handlers
WRITTEN_TAGS = {
    "p", "br", "hr", "em", "strong", "b", "i", "del", "sub", "sup", "code", "pre",
    "blockquote", "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6", "a", "img",
    "table", "thead", "tbody", "tr", "th", "td", "span", "div",
}  # fmt: skip
WRITTEN_ATTRIBUTES = {"a": ["href", "title"], "img": ["src", "alt", "title"], "th": ["align"],
                      "td": ["align"]}  # fmt: skip


def written_html(answer: str) -> str:
    """A student's written answer as formgrader and the feedback may show it.

    Both put a markdown cell into the page as Jupyter renders it, raw HTML and
    ``javascript:`` links included, and formgrader's page can change the gradebook: an
    ``<img onerror=...>`` in an answer would run in the instructor's browser. So the
    answer is rendered here, cleaned to :data:`WRITTEN_TAGS` and
    :data:`WRITTEN_ATTRIBUTES` (links and images to http, https or mailto only), and
    stored as that HTML. "[" becomes an entity, so that no markdown link can form when
    the page renders the cell again.
    """
    import bleach
    from nbconvert.filters.markdown import markdown2html

    cleaned = bleach.clean(
        markdown2html(answer),
        tags=WRITTEN_TAGS,
        attributes=WRITTEN_ATTRIBUTES,
        protocols={"http", "https", "mailto"},
        strip=True,
    )
    return cleaned.replace("[", "&#91;")


def autograded_notebook(source_nb: dict, result: dict) -> dict:
    """The notebook as graded, for formgrader and feedback: the plan's cells with the
    grader's outputs (a failed test shows its error, as nbgrader's autograde does). A test
    cell shows its visible part only (:func:`labtools.grader.notebook.visible`, as the student
    version has it): the feedback is rendered from this notebook, and nbgrader's would show
    the hidden tests. ``result``: what :func:`labtools.grader.verdicts.evaluate` returned."""
    import nbformat

    from labtools.grader import notebook

    cells = []
    for entry in result["cells"]:
        meta = entry["metadata"] if entry["grade_id"] else {}
        if entry["role"] == "text":  # the lab's own text
            cells.append(nbformat.v4.new_markdown_cell(entry["source"], metadata=meta))
        elif entry["role"] == "written":  # the student's: rendered and cleaned
            source = entry["html"] if "html" in entry else written_html(entry["source"])
            cells.append(nbformat.v4.new_markdown_cell(source, metadata=meta))
        else:
            source = entry["source"]
            if entry["role"] == "test":  # graded in full; shown as the student saw it
                source = notebook.visible({"source": source})
            cell = nbformat.v4.new_code_cell(source, metadata=meta)
            cell.outputs = [nbformat.from_dict(o) for o in entry["outputs"]]
            cells.append(cell)
    nb = nbformat.v4.new_notebook(cells=cells, metadata=source_nb.get("metadata", {}))
    nbformat.validate(nb)
    return json.loads(nbformat.writes(nb))
