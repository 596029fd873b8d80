"""The website as a reader sees it: every page of the book loaded in headless Chromium with no
network but the local server, after its scripts ran (tools/browser.py).

Chromium is a system package (Debian: `apt-get install chromium`); `.ci/run` installs it.
Without it these tests fail in CI (CI set) and are skipped, visibly, elsewhere.
"""

import json
import os
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from html.parser import HTMLParser

import pytest
from _helpers import ROOT, STAND_IN_REPOSITORY, figure_names, load_module, toc_files

sys.path.insert(0, str(ROOT / "tools"))
import browser  # noqa: E402

DOCS = toc_files()

# What the theme and libraries print on every page; anything else in the console fails.
ALLOWED_CONSOLE = (
    "[PST]: ",  # pydata-sphinx-theme: mode changes and sidebar scrolling (console.log)
    "[togglebutton]: ",  # sphinx-togglebutton counts its buttons (console.log)
    # the widget manager's own JSON-schema compiler (ajv) warns about its schema (console.warn)
    "strict mode: use allowUnionTypes",
)


class Dom(HTMLParser):
    """Elements (tag, attributes) and the visible text of a document."""

    HIDDEN = {"script", "style", "pre", "code", "textarea", "mjx-assistive-mml"}

    def __init__(self, html):
        super().__init__()
        self.elements, self.text, self._hidden = [], [], 0
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, {k: v or "" for k, v in attrs}))
        self._hidden += tag in self.HIDDEN

    def handle_endtag(self, tag):
        self._hidden -= tag in self.HIDDEN and self._hidden > 0

    def handle_data(self, data):
        if not self._hidden:
            self.text.append(data)

    def find(self, tag=None, cls=None, **attrs):
        """Elements with this tag, all these classes (space-separated) and attribute values."""
        want = set(cls.split()) if cls else set()
        return [
            a
            for t, a in self.elements
            if (tag is None or t == tag)
            and want <= set(a.get("class", "").split())
            and all(a.get(k.replace("_", "-")) == v for k, v in attrs.items())
        ]


@pytest.fixture(scope="module")
def site(built_books):
    """Every page of the first build (Binder buttons for the stand-in repository) as loaded
    by Chromium, and the requests the local server saw."""
    if browser.find_chromium() is None:
        if os.environ.get("CI"):
            pytest.fail("Chromium is missing: .ci/run installs it (apt-get install chromium)")
        pytest.skip("Chromium is not installed (apt-get install chromium); CI runs these tests")
    html = built_books[0] / "_build" / "html"
    with browser.Site(html) as server, ThreadPoolExecutor(2) as pool:
        loaded = pool.map(lambda doc: browser.load(server.url(f"{doc}.html")), DOCS)
        pages = dict(zip(DOCS, loaded, strict=True))
    missing = [(p, c) for p, c in server.requests if p.endswith(".html") and c != 200]
    assert not missing, f"pages that did not load: {missing}"
    return {
        "html": html,
        "pages": pages,
        "doms": {doc: Dom(page.dom) for doc, page in pages.items()},
        "requests": server.requests,
        "failures": server.failures(),
    }


def source_text(doc):
    """The markdown of a page's source (all markdown cells of a notebook)."""
    path = ROOT / f"{doc}.md"
    if path.exists():
        return path.read_text()
    cells = json.loads((ROOT / f"{doc}.ipynb").read_text())["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


def directives(doc, name):
    """How many ```{name} / :::{name} blocks (name may be a prefix such as 'prf:') a page has."""
    return len(re.findall(rf"^\s*(?:`{{3,}}|:{{3,}})\{{{re.escape(name)}", source_text(doc), re.M))


@pytest.mark.parametrize("doc", DOCS)
def test_console_is_clean(site, doc):
    unexpected = [m for m in site["pages"][doc].console if not m.startswith(ALLOWED_CONSOLE)]
    assert unexpected == [], f"{doc}: console messages {unexpected}"


def test_every_requested_local_file_exists(site):
    assert site["failures"] == []
    assert len(site["requests"]) > 10 * len(DOCS)  # pages, styles, scripts, fonts, images


@pytest.mark.parametrize("doc", DOCS)
def test_nothing_is_loaded_from_another_host(site, doc):
    dom = site["doms"][doc]
    sources = [a.get("src", "") for t, a in dom.elements if t in ("script", "img", "iframe")]
    sources += [a.get("href", "") for t, a in dom.elements if t == "link"]
    remote = [s for s in sources if re.match(r"(https?:)?//", s) and "127.0.0.1" not in s]
    assert remote == [], f"{doc} loads {remote}"


@pytest.mark.parametrize("doc", DOCS)
def test_math_is_typeset(site, doc):
    dom, served = site["doms"][doc], (site["html"] / f"{doc}.html").read_text()
    text = "".join(dom.text)
    for raw in ("$$", "\\[", "\\(", "\\begin{"):
        assert raw not in text, f"{doc} shows raw TeX {raw!r}"
    if 'class="math' in served:
        assert dom.find("mjx-container"), f"{doc} has math but MathJax did not typeset it"
    assert not dom.find("mjx-merror"), f"{doc} has a TeX error"


@pytest.mark.parametrize("doc", DOCS)
def test_figures_and_animations_have_alt_text(site, doc):
    dom = site["doms"][doc]
    images = dom.find("img")
    assert all(a.get("alt", "").strip() for a in images), f"{doc}: an image without alt text"
    for name in figure_names(doc):
        assert dom.find("figure", id=name), f"{doc} lost {name}"
    source = ROOT / f"{doc}.ipynb"
    if source.exists() and "animation_html(" in source.read_text():
        frames = [a for a in images if a.get("id", "").startswith("_anim_img")]
        assert frames and all(a["src"].startswith("data:image/png") for a in frames), doc


@pytest.mark.parametrize("doc", DOCS)
def test_proof_and_exercise_blocks_render(site, doc):
    dom = site["doms"][doc]
    assert len(dom.find("div", cls="proof admonition")) == directives(doc, "prf:"), doc
    assert len(dom.find("div", cls="exercise admonition")) == directives(doc, "exercise"), doc
    assert len(dom.find("div", cls="solution admonition")) == directives(doc, "solution"), doc


@pytest.mark.parametrize("doc", DOCS)
def test_solutions_and_hidden_cells_start_closed(site, doc):
    dom = site["doms"][doc]
    for solution in dom.find("div", cls="solution"):
        assert "toggle-hidden" in solution["class"].split(), f"{doc}: {solution['id']} is open"
    assert not [a for a in dom.find("details") if "open" in a], f"{doc}: a block is open"


@pytest.mark.parametrize("doc", DOCS)
def test_saved_widgets_render_without_a_kernel(site, doc):
    served = (site["html"] / f"{doc}.html").read_text()
    views = served.count('type="application/vnd.jupyter.widget-view+json"')
    dom = site["doms"][doc]
    assert len(dom.find(cls="widget-slider")) >= views, f"{doc}: a saved widget did not render"


@pytest.mark.parametrize("doc", DOCS)
def test_launch_button_opens_this_pages_notebook(site, doc):
    links = [a["href"] for a in site["doms"][doc].find("a") if "mybinder.org" in a.get("href", "")]
    if (ROOT / f"{doc}.ipynb").exists():
        owner_repo = STAND_IN_REPOSITORY.removeprefix("https://github.com/")
        want = f"https://mybinder.org/v2/gh/{owner_repo}/main?urlpath=lab/tree/{doc}.ipynb"
        assert links == [want], doc
    else:
        assert links == [], doc


def test_vendored_scripts_are_all_used_and_small(site):
    vendor = ROOT / "_assets" / "vendor"
    files = json.loads((vendor / "manifest.json").read_text())["files"]
    requested = {path.split("?")[0] for path, _ in site["requests"]}
    for script in (f for f in files if f.endswith(".js")):
        assert f"/_static/vendor/{script}" in requested, f"{script} is vendored but never loaded"
    assert sum((vendor / f).stat().st_size for f in files) < 8e6


@pytest.mark.parametrize("width", [1280, 390])
def test_screenshots_show_the_page(site, tmp_path, width):
    import matplotlib.image

    with browser.Site(site["html"]) as server:
        png = browser.screenshot(server.url("book/03_convergence.html"), tmp_path / "p.png", width)
    pixels = matplotlib.image.imread(png)
    assert pixels.shape[:2] == (2400, width)
    assert pixels.std() > 0.05, "the screenshot is blank"


def test_pdf_of_the_whole_book(site, built_books, tmp_path):
    """`python3 tasks.py pdf`: the book on one page, typeset, printed by Chromium."""
    tasks = load_module("tasks", ROOT / "tasks.py")
    index = tasks.build_book(built_books[0], builder="singlehtml")
    with browser.Site(index.parent) as server:
        page = browser.load(server.url("index.html"))
    dom = Dom(page.dom)
    assert len(dom.find("mjx-container")) > 500 and not dom.find("mjx-merror")
    for doc in DOCS:  # every chapter and lab is on the page, with its figures
        for name in figure_names(doc):
            assert dom.find("figure", id=name), f"the PDF lacks {name}"
    pdf = tasks.pdf(index.parent, tmp_path / "book.pdf").read_bytes()
    assert pdf.startswith(b"%PDF-")
    assert len(re.findall(rb"/Type\s*/Page\b", pdf)) > 3 * len(DOCS)  # ~90 A4 pages
