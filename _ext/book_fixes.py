"""Small Sphinx fixes for what a reader's browser shows; each was found by
tests/book/test_browser.py.

Every fix names the upstream version it was written against and the upstream issue (or says
that none was found), and ``setup`` checks those versions: after an upgrade the build stops
with a message naming the fix to re-check, instead of patching code that has changed.
Remove a fix whose problem is gone upstream; otherwise update its version.

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

- A plain `jb build .` (without `python3 tasks.py book`) would build a site whose math and
  widgets load files that tasks.py fetches first: `vendored_assets_are_there` stops it with
  a message that names `python3 tasks.py book`.

Accessibility (WCAG 2.1 A/AA as axe-core checks it in tests/book/test_browser.py):

- docutils marks each entry of the bibliography `role="doc-biblioentry"`, a role DPUB-ARIA
  1.1 deprecated (it is no list item, so the `role="list"` around the entries also "lacks
  its required children"). `citations_as_list_items` writes `role="listitem"` instead.
- Label in name (WCAG 2.5.3): a control's accessible name must contain the text it shows.
  myst-nb names every "Show code cell source" summary "Toggle hidden content";
  `label_in_name` drops that aria-label, so the summary is named by what it shows. The
  theme's search button ("Search Ctrl+K", named "Search") and colour-mode button (showing an
  icon titled "Light", named "Color mode") come from the templates in `_ext/templates/`,
  the theme's own with the one change each names at its top.
"""

import os
from importlib.metadata import version
from pathlib import Path

from sphinx.errors import ExtensionError

TEMPLATES = Path(__file__).resolve().parent / "templates"

#: fix -> (the packages and versions it was written for, the upstream issue)
TARGETS = {
    "drop_repeated_scripts": (
        {"jupyter-book": "1.0.4.post1", "sphinx-thebe": "0.3.1", "sphinx-togglebutton": "0.4.5"},
        "no upstream issue found (searched jupyter-book, sphinx-thebe, sphinx-togglebutton)",
    ),
    "default_mode": (
        {"sphinx-book-theme": "1.3.0", "pydata-sphinx-theme": "0.17.1"},
        "https://github.com/pydata/pydata-sphinx-theme/issues/1635 (closed as fixed by "
        "#1683, still logged with the versions here)",
    ),
    "html_visitors_for_singlehtml": (
        {"sphinx": "7.4.7", "myst-nb": "1.4.0", "sphinx-proof": "0.4.0"},
        "https://github.com/sphinx-doc/sphinx/issues/9160 (open; from "
        "https://github.com/jupyter-book/jupyter-book/issues/1308)",
    ),
    "merge_streams_exactly": (
        {"myst-nb": "1.4.0"},
        "https://github.com/executablebooks/MyST-NB/issues/690 (open); the newline per chunk "
        "came with https://github.com/executablebooks/MyST-NB/pull/604",
    ),
    "citations_as_list_items": (
        {"docutils": "0.21.2"},
        "no upstream issue found (docutils 0.23 still writes doc-biblioentry); the role's "
        "deprecation: https://github.com/w3c/dpub-aria/pull/22",
    ),
    "label_in_name": (
        {"myst-nb": "1.4.0", "pydata-sphinx-theme": "0.17.1"},
        "no upstream issue found (searched myst-nb, pydata-sphinx-theme); the theme's icon "
        "titles came with https://github.com/pydata/pydata-sphinx-theme/pull/1924",
    ),
}


def check_targets(installed=version):
    """Raise ExtensionError, naming the fix and its issue, if a package that a fix targets is
    installed in another version than the one the fix was written for."""
    for fix, (packages, issue) in TARGETS.items():
        for package, target in packages.items():
            found = installed(package)
            if found != target:
                raise ExtensionError(
                    f"_ext/book_fixes.py: `{fix}` was written for {package} {target}, but "
                    f"{found} is installed. Check whether it is still needed ({issue}); then "
                    "remove the fix or update its version in TARGETS."
                )


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


def replace_in_visit(handlers, node, old, new, fix):
    """Make the html visitor of `node` (a node class name) write `new` where it wrote `old`:
    the visitor an extension registered in `handlers`, else the translator's own method. The
    build stops, naming `fix`, if the visitor did not write `old` exactly once."""
    registered = handlers.get(node)

    def visit(self, element):
        start = len(self.body)
        if registered:
            registered[0](self, element)
        else:
            getattr(type(self), f"visit_{node}")(self, element)
        written = "".join(self.body[start:])
        if written.count(old) != 1:
            raise ExtensionError(
                f"_ext/book_fixes.py: `{fix}` expected the `{node}` visitor to write {old!r} "
                f"once; it wrote {written!r}. Check the fix against the new version."
            )
        self.body[start:] = [written.replace(old, new)]

    handlers[node] = (visit, registered[1] if registered else None)


def accessible_html(app):
    handlers = app.registry.translation_handlers.setdefault("html", {})
    replace_in_visit(
        handlers,
        "citation",
        'role="doc-biblioentry"',
        'role="listitem"',
        "citations_as_list_items",
    )
    replace_in_visit(
        handlers,
        "HideCodeCellNode",
        '<summary aria-label="Toggle hidden content">',
        "<summary>",
        "label_in_name",
    )


def theme_templates(app, config):
    """Our templates first, before the themes' components (label_in_name)."""
    config.templates_path.insert(0, str(TEMPLATES))


def vendored_assets_are_there(app, config) -> None:
    """A plain `jb build .` would make a site whose math and widgets load from files that
    only `python3 tasks.py book` fetches (tools/vendor_assets.py): stop with that command
    instead of building a site with broken math and no warning."""
    static = Path(app.confdir) / "_assets"
    wanted = [config.mathjax_path, *config.nb_ipywidgets_js]
    missing = [name for name in wanted if not (static / name).is_file()]
    if missing:
        raise ExtensionError(
            f"the site's browser libraries are missing ({', '.join(missing)} in _assets/); "
            "build the book with `python3 tasks.py book`, which fetches them first"
        )


def setup(app):
    check_targets()
    from myst_nb.core import render

    if not hasattr(render, "coalesce_streams"):  # the one name render.py calls
        raise ExtensionError("_ext/book_fixes.py: myst_nb.core.render has no coalesce_streams")

    render.coalesce_streams = merge_streams_exactly  # the one name render.py calls
    app.connect("builder-inited", accessible_html)  # first: singlehtml copies html's visitors
    app.connect("builder-inited", html_visitors_for_singlehtml)
    app.connect("config-inited", theme_templates)
    app.connect("html-page-context", fix_page, priority=900)  # after the others
    app.connect("config-inited", sliders_as_frames)
    app.connect("config-inited", vendored_assets_are_there)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
