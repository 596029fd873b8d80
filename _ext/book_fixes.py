"""Small Sphinx fixes for what a reader's browser shows; each was found by tests/test_browser.py.

- Jupyter Book 1.0.4 put sphinx-thebe's and sphinx-togglebutton's inline configuration on
  every page twice; the second `const THEBE_JS_URL = ...` is a SyntaxError in the console.
  `drop_repeated_scripts` keeps the first copy of each script.
- myst-nb and sphinx-proof register how to draw their blocks for the `html` builder only;
  the one-page `singlehtml` build (for the PDF, tasks.py pdf) failed on them. It now uses
  the `html` visitors for every node that has no `singlehtml` ones.
- Without a `default_mode` in the page context the theme logs "Got invalid theme mode" on
  every first visit; "auto" follows the reader's light or dark preference.
"""


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


def setup(app):
    app.connect("builder-inited", html_visitors_for_singlehtml)
    app.connect("html-page-context", fix_page, priority=900)  # after the others
    return {"parallel_read_safe": True, "parallel_write_safe": True}
