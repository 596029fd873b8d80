"""Small Sphinx fixes for what a reader's browser shows; each was found by tests/test_browser.py.

- Jupyter Book 1.0.4 put sphinx-thebe's and sphinx-togglebutton's inline configuration on
  every page twice; the second `const THEBE_JS_URL = ...` is a SyntaxError in the console.
  `drop_repeated_scripts` keeps the first copy of each script.
- myst-nb and sphinx-proof register how to draw their blocks for the `html` builder only;
  the one-page `singlehtml` build (for the PDF, tasks.py pdf) failed on them. It now uses
  the `html` visitors for every node that has no `singlehtml` ones.
- The kernel may send one `print` in several chunks (it flushes on a timer). myst-nb's
  stream merging (`nb_merge_streams`) ends every chunk with a newline, so the same cell
  could show `XOR: [0 1 1 0]` in one build and `XOR:` / `[0 1 1 0]` on two lines in the
  next (and it edited the executed notebook in place). `merge_streams_exactly` joins the
  chunks as they came, the way Jupyter shows them, on copies.
- Without a `default_mode` in the page context the theme logs "Got invalid theme mode" on
  every first visit; "auto" follows the reader's light or dark preference.
- Slider panels (`perceptrons.widgets.slider_panel`) compute live with a kernel; in the
  build they draw every frame in advance so the saved page can move them with no kernel.
  `sliders_as_frames` sets the variable that asks for that; kernels inherit it.
"""

import os


def fix_page(app, pagename, templatename, context, doctree):
    seen, kept = set(), []
    for script in context.get("script_files", []):
        attributes = getattr(script, "attributes", {})
        filename = getattr(script, "filename", script) or None  # "" and None both mean inline
        key = (filename, tuple(sorted(attributes.items())))
        if key not in seen:
            seen.add(key)
            kept.append(script)
    context["script_files"][:] = kept
    context.setdefault("default_mode", "auto")


def html_visitors_for_singlehtml(app):
    handlers = app.registry.translation_handlers
    single = handlers.setdefault("singlehtml", {})
    for node, visitors in handlers.get("html", {}).items():
        single.setdefault(node, visitors)


def merge_streams_exactly(outputs):
    """Join each stream's chunks (stdout, stderr) into its first output, then let myst-nb
    tidy the merged text; the outputs given are not modified."""
    from myst_nb.core import utils

    merged, streams = [], {}
    for output in outputs:
        if output["output_type"] != "stream":
            merged.append(output)
            continue
        text = "".join(output["text"]) if isinstance(output["text"], list) else output["text"]
        if output["name"] in streams:
            streams[output["name"]]["text"] += text
        else:
            first = type(output)(output, text=text)  # a shallow copy
            streams[output["name"]] = first
            merged.append(first)
    return utils.coalesce_streams(merged)


def sliders_as_frames(app, config):
    os.environ["PERCEPTRONS_SLIDER_FRAMES"] = "1"  # perceptrons.widgets.FRAMES_ENV


def setup(app):
    from myst_nb.core import render

    render.coalesce_streams = merge_streams_exactly  # the one name render.py calls
    app.connect("builder-inited", html_visitors_for_singlehtml)
    app.connect("html-page-context", fix_page, priority=900)  # after the others
    app.connect("config-inited", sliders_as_frames)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
