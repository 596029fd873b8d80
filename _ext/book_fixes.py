"""Small Sphinx fixes for what a reader's browser shows; each was found by tests/test_browser.py.

- Jupyter Book 1.0.4 put sphinx-thebe's and sphinx-togglebutton's inline configuration on
  every page twice; the second `const THEBE_JS_URL = ...` is a SyntaxError in the console.
  `drop_repeated_scripts` keeps the first copy of each script.
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


def setup(app):
    app.connect("html-page-context", fix_page, priority=900)  # after the others
    return {"parallel_read_safe": True, "parallel_write_safe": True}
