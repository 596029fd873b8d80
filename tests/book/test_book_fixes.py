"""The workarounds in _ext/book_fixes.py name their versions and stop the build when stale."""

import re
from importlib.metadata import distribution, version
from pathlib import Path

import book_fixes as fixes
import pytest
from sphinx.errors import ExtensionError


def test_every_fix_targets_the_installed_versions_and_names_an_issue():
    fixes.check_targets()  # raises when an installed version differs from a target
    for packages, issue in fixes.TARGETS.values():
        assert packages and issue.strip()


@pytest.mark.parametrize("stale", ["myst-nb", "jupyter-book", "pydata-sphinx-theme"])
def test_an_upgrade_stops_the_build_naming_the_fix(stale):
    def upgraded(package):
        return "99.0" if package == stale else version(package)

    with pytest.raises(ExtensionError, match=f"written for {stale} .* but 99.0 is installed"):
        fixes.check_targets(installed=upgraded)


class FakeTranslator:
    """What a Sphinx HTML translator offers the visitors: a list of written strings."""

    def __init__(self):
        self.body = []

    def visit_citation(self, node):
        self.body += ['<div role="list" class="citation-list">\n', f'<div role="{node}">']


def test_a_visitor_writes_the_replacement_and_stops_the_build_when_it_changed():
    handlers = {"note": (lambda self, node: self.body.append(f"<p {node}>"), None)}
    fixes.replace_in_visit(handlers, "note", 'a="1"', 'a="2"', "some_fix")
    fixes.replace_in_visit(handlers, "citation", 'role="old"', 'role="new"', "other_fix")
    translator = FakeTranslator()
    handlers["note"][0](translator, 'a="1"')
    handlers["citation"][0](translator, "old")  # the translator's own method, wrapped
    assert (
        "".join(translator.body)
        == '<p a="2"><div role="list" class="citation-list">\n<div role="new">'
    )
    with pytest.raises(ExtensionError, match="`other_fix` expected the `citation` visitor"):
        handlers["citation"][0](translator, "doc-biblioentry")


@pytest.mark.parametrize("name", ["search-button-field.html", "theme-switcher.html"])
def test_theme_templates_are_the_themes_own_but_for_the_label(name):
    """_ext/templates/NAME is pydata-sphinx-theme's component with the one change its header
    names (label_in_name); anything else the theme changes must be copied over."""
    component = f"pydata_sphinx_theme/theme/pydata_sphinx_theme/components/{name}"
    upstream = Path(distribution("pydata-sphinx-theme").locate_file(component)).read_text()
    ours = (fixes.TEMPLATES / name).read_text()
    ours = ours[ours.index("-#}\n") + 4 :]  # without our header
    ours = ours.replace("  <span class=\"visually-hidden\">{{ _('Color mode') }}</span>\n", "")
    upstream = re.sub(r' aria-label="\{\{ _\(\'(Search|Color mode)\'\) \}\}"', "", upstream)
    assert ours == upstream


def test_a_plain_jupyter_book_build_without_the_vendored_files_names_tasks_py(tmp_path):
    """`jb build .` without `tasks.py book` would give a site with broken math: it stops."""

    class App:
        confdir = str(tmp_path)

    class Config:
        mathjax_path = "vendor/mathjax/tex-mml-chtml.js"
        nb_ipywidgets_js = {"vendor/requirejs/require.js": {}}

    with pytest.raises(ExtensionError, match=r"python3 tasks.py book"):
        fixes.vendored_assets_are_there(App(), Config())
    for name in (Config.mathjax_path, *Config.nb_ipywidgets_js):
        (tmp_path / "_assets" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "_assets" / name).write_text("//")
    fixes.vendored_assets_are_there(App(), Config())  # all there: the build goes on
