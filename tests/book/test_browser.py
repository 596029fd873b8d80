"""The website as a reader sees it: every page of the book loaded in headless Chromium with no
network but the local server, after its scripts ran (tools/browser.py).

Chromium is a system package (Debian: `apt-get install chromium`); `.ci/run` installs it.
Without it these tests fail in CI (CI set) and are skipped, visibly, elsewhere.
"""

import contextlib
import json
import os
import re

import browser
import pytest
import vendor_assets
from _helpers import ROOT, STAND_IN_REPOSITORY, figure_names, toc_files
from bs4 import BeautifulSoup

import tasks

DOCS = toc_files()

# What the theme and libraries print on every page; anything else in the console fails.
ALLOWED_CONSOLE = (
    "[PST]: ",  # pydata-sphinx-theme: mode changes and sidebar scrolling (console.log)
    "[togglebutton]: ",  # sphinx-togglebutton counts its buttons (console.log)
    # the widget manager's own JSON-schema compiler (ajv) warns about its schema (console.warn)
    "strict mode: use allowUnionTypes",
)


class Dom:
    """Elements (tag, attributes) and the visible text of a document, read by BeautifulSoup.
    Attribute values are strings (`class` too, space-separated, as in the document)."""

    HIDDEN = ["script", "style", "pre", "code", "textarea", "mjx-assistive-mml"]

    def __init__(self, html):
        soup = BeautifulSoup(html, "html.parser", multi_valued_attributes=None)
        self.elements = [(e.name, dict(e.attrs)) for e in soup.find_all(True)]
        for hidden in soup.find_all(self.HIDDEN):
            hidden.decompose()
        self.text = [soup.get_text()]

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


# Widths at which no display equation, inline formula, table or code line may be cut: a
# desktop window and a phone (the screenshots of `tasks.py screenshots` use the same two).
DESKTOP, PHONE = 1280, 390


@pytest.fixture(scope="module")
def site(built_books, chromium):
    """Every page of the first build (Binder buttons for the stand-in repository) as loaded
    by Chromium for a reader who prefers the light colour scheme, once its math is typeset
    and its widgets drawn (DOM, console, axe-core's findings, and its equations, tables and
    code measured at desktop and at phone width, in the same visit), and the requests the
    local server saw."""
    html = built_books[0] / "_build" / "html"
    with browser.Site(html) as server:
        urls = {doc: server.url(f"{doc}.html") for doc in DOCS}
        pages = browser.visit(
            chromium,
            urls,
            vendor_assets.axe_core(),
            color_scheme="light",
            boxes=(DESKTOP, PHONE),
            dark_too=True,
        )
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


@pytest.fixture(scope="module")
def accessibility(site):
    """axe-core's WCAG 2.1 A and AA violations on every page, as loaded by Chromium (with its
    scripts run, math typeset and widgets drawn), for a reader who prefers the light colour
    scheme and, on the same page, once that preference turned dark (the theme follows it;
    `site`): {page: ["(scheme) rule on page at `selector`: what is wrong"]}."""
    return {
        doc: [f"(light) {v}" for v in page.violations]
        + [f"(dark) {v}" for v in page.dark_violations]
        for doc, page in site["pages"].items()
    }


def test_a_violation_of_the_dark_scheme_alone_is_found_once_the_preference_turns(
    chromium, tmp_path
):
    """browser.visit(dark_too=True) on a made-up page that follows the reader's preference
    as the theme does: grey on near-black text fails contrast in the dark scheme only, and
    is reported for it alone. The background fades over an hour, as the theme's colours fade
    over a moment: axe-core reads the colours the fade ends with (near white, on its way,
    the grey would pass), and the visit does not wait for the fade."""
    (tmp_path / "page.html").write_text(
        '<!doctype html><html lang="en"><head><title>t</title><style>'
        "body { background: #fff; color: #000; transition: background-color 3600s linear }"
        'html[data-theme="dark"] body { background: #111; color: #eee }'
        'html[data-theme="dark"] p.faint { color: #333 }'
        "</style><script>"
        'const m = matchMedia("(prefers-color-scheme: dark)");'
        "const follow = () => {"
        ' document.documentElement.dataset.theme = m.matches ? "dark" : "light"; };'
        'follow(); m.addEventListener("change", follow);'
        '</script></head><body><main><p class="faint">Hard to read in the dark.</p></main>'
        "</body></html>"
    )
    with browser.Site(tmp_path) as server:
        (page,) = browser.visit(
            chromium, {"p": server.url("page.html")}, vendor_assets.axe_core(), dark_too=True
        ).values()
    assert page.violations == []
    assert [(v.rule, v.target) for v in page.dark_violations] == [("color-contrast", "p")]


@pytest.mark.parametrize("doc", DOCS)
def test_every_page_is_accessible(accessibility, doc):
    """No WCAG 2.1 A/AA violation that axe-core finds (tags wcag2a, wcag2aa, wcag21a,
    wcag21aa): universities must publish accessible course material. Fix a violation where
    it comes from (the chapter, _assets/, _ext/book_fixes.py for the theme or Sphinx), not by
    leaving its rule out."""
    found = accessibility[doc]
    listed = "\n".join(f"  {v}" for v in found)
    assert found == [], f"{doc}: {len(found)} WCAG 2.1 A/AA violations (axe-core)\n{listed}"


def test_every_requested_local_file_exists(site):
    assert site["failures"] == []
    # one tab loads the pages, so each file is requested once, whichever page needs it first
    paths = {path.split("?")[0] for path, _ in site["requests"]}
    assert {f"/{doc}.html" for doc in DOCS} <= paths
    kinds = {os.path.splitext(path)[1] for path in paths}  # and styles, scripts, fonts, images
    assert {".css", ".js", ".woff2", ".png"} <= kinds, kinds


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


def cut(boxes, width):
    """What a reader at this window width cannot read in full, as text for a failure message:
    anything clipped by an ancestor that does not scroll or sticking out of the window, every
    inline formula wider than its line, and every display equation that needs sideways
    scrolling (a scroll bar shows only with classic scroll bars and never in print, so a
    reader sees such an equation cut, with no cue that more follows: it must be broken into
    lines instead, since MathJax 3 does not break lines); at desktop width tables too, where
    the column has room. Code blocks may scroll inside their own box at both widths, and
    tables at phone width (the theme's box for each)."""
    strict = ("equation", "table") if width == DESKTOP else ("equation",)
    return [
        f"{b['kind']} {b['state']} ({b['width']} px in {b['room']} px): {b['text']!r}"
        for b in boxes
        if b["state"] in ("clipped", "off the page", "sticks out")
        or (b["state"] == "scrolls" and b["kind"] in strict)
    ]


def test_the_measure_of_boxes_tells_fitting_scrolling_and_cut_apart(chromium, tmp_path):
    """browser.visit(boxes=...) on a made-up page with a column of at most 600 px: a box too
    wide for its column scrolls only where its own box scrolls, and is cut where an ancestor
    hides what overflows; an inline formula wider than its line sticks out. Measured at two
    widths in one visit, as the site is: an equation of 500 px fits the column at 1280 px and
    must scroll, so is cut, at 390 px."""
    wide = '<mjx-math style="display:inline-block;width:{}px">w</mjx-math>'
    boxes = {
        "narrow": ("auto", 300),
        "medium": ("auto", 500),
        "scrolling": ("auto", 900),
        "hidden": ("hidden", 900),
        "spilling": ("visible", 2000),  # wider than the window
    }
    body = "".join(
        f'<mjx-container display="true" aria-label="{name}" style="display:block;'
        f'overflow-x:{overflow}">{wide.format(width)}</mjx-container>'
        for name, (overflow, width) in boxes.items()
    )
    body += "".join(
        f'<p>Some text <mjx-container aria-label="{name}" style="display:inline-block;'
        f'width:{width}px">x</mjx-container> and more.</p>'
        for name, width in (("short", 200), ("long", 700))
    )
    body += '<div style="overflow:hidden"><pre style="overflow:auto">' + "x" * 400 + "</pre></div>"
    body += (
        '<div style="overflow-x:auto"><table style="width:900px"><tr><td>t</td></tr></table></div>'
    )
    (tmp_path / "page.html").write_text(
        '<html data-theme="light"><body style="margin:0"><main>'
        f'<article class="bd-article" style="max-width:600px">{body}</article></main></body></html>'
    )
    with browser.Site(tmp_path) as server:
        (page,) = browser.visit(
            chromium, {"p": server.url("page.html")}, boxes=(DESKTOP, PHONE)
        ).values()

    def states(width):
        """{the text of a formula, or the kind of a table or code block: its state}"""
        math = ("equation", "inline")
        return {
            b["text"] if b["kind"] in math else b["kind"]: b["state"] for b in page.boxes[width]
        }

    def found(width):
        """What `cut` reports, without sizes and texts"""
        return [line.split(" (")[0] for line in cut(page.boxes[width], width)]

    assert states(DESKTOP) == {
        "narrow": "fits",
        "medium": "fits",
        "scrolling": "scrolls",
        "hidden": "clipped",
        "spilling": "off the page",
        "short": "fits",
        "long": "sticks out",
        "code": "scrolls",
        "table": "scrolls",
    }, states(DESKTOP)
    assert states(PHONE) == {**states(DESKTOP), "medium": "scrolls"}, states(PHONE)
    cut_at_both = ["equation clipped", "equation off the page", "inline sticks out"]
    # a scrolling equation is cut at both widths, a scrolling table at desktop width only
    assert found(DESKTOP) == ["equation scrolls", *cut_at_both, "table scrolls"]
    assert found(PHONE) == ["equation scrolls", "equation scrolls", *cut_at_both]


def _cut_equations(site, doc, width):
    """The failure message's lines for what is cut at this width on the page, after checking
    that every display equation was measured and laid out."""
    boxes = site["pages"][doc].boxes[width]
    equations = [b for b in boxes if b["kind"] == "equation"]
    # every display equation was measured, those in closed dropdowns and solutions too
    assert len(equations) == len(site["doms"][doc].find("mjx-container", display="true")), doc
    assert all(b["width"] > 0 for b in equations), f"{doc}: an equation was not laid out"
    return cut(boxes, width)


@pytest.mark.parametrize("doc", DOCS)
def test_no_equation_table_or_code_is_cut_at_desktop_width(site, doc):
    found = _cut_equations(site, doc, DESKTOP)
    assert found == [], f"{doc} at {DESKTOP} px:\n" + "\n".join(found)


@pytest.mark.parametrize("doc", DOCS)
def test_no_equation_table_or_code_is_cut_at_phone_width(site, doc):
    """At 390 px every display equation and every inline formula fits its box (no sideways
    scrolling: issue 41); tables and code may scroll in their own boxes."""
    found = _cut_equations(site, doc, PHONE)
    assert found == [], f"{doc} at {PHONE} px:\n" + "\n".join(found)


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


def test_citations_read_as_the_reference_list_labels_them(site):
    """A reader who scrolls to the list instead of following a citation's link finds the
    source under the words the text used ("Rosenblatt, 1958"; _ext/book_bibliography.py)."""
    pages = {doc: BeautifulSoup((site["html"] / f"{doc}.html").read_text(), "html.parser")
             for doc in DOCS}  # fmt: skip
    listed = {
        entry["id"]: entry.find(class_="label").get_text().strip("[]")
        for entry in pages["book/intro"].find_all("div", class_="citation")
    }
    assert len(listed) > 20
    cited = [
        (doc, link.get_text(), link["href"].split("#")[1])
        for doc, page in pages.items()
        for link in page.find_all("a", class_="reference internal", href=True)
        if re.search(r"(^|intro\.html)#id\d+$", link["href"])
        and link["href"].split("#")[1] in listed
    ]
    assert len(cited) > 20
    wrong = [(doc, text, listed[target]) for doc, text, target in cited if text != listed[target]]
    assert wrong == [], f"citations whose text is not the list's label: {wrong}"


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
    """`python3 tasks.py pdf`: the book on one page, typeset, printed by Chromium. Built
    where the second book was built, which has the same configuration (no repository, as
    `tasks.py pdf` builds): Sphinx reuses the chapters it read and executed there and only
    writes the one page."""
    index = tasks.build_book(built_books[1], builder="singlehtml")
    page = tasks.pdf(index.parent, tmp_path / "book.pdf")  # the page as printed
    dom = Dom(page.dom)
    assert len(dom.find("mjx-container")) > 500 and not dom.find("mjx-merror")
    for doc in DOCS:  # every chapter and lab is on the page, with its figures
        for name in figure_names(doc):
            assert dom.find("figure", id=name), f"the PDF lacks {name}"
    pdf = (tmp_path / "book.pdf").read_bytes()
    assert pdf.startswith(b"%PDF-")
    assert len(re.findall(rb"/Type\s*/Page\b", pdf)) > 3 * len(DOCS)  # ~90 A4 pages


# Sliders on the static site (issue 15): each panel made by perceptrons.widgets.frame_panel
# holds one frame per slider position, and the browser switches between them with no kernel.
# The executed notebooks of the book (labs/release is shown unexecuted) that make a panel.
NOTEBOOKS = [d for d in DOCS if (ROOT / f"{d}.ipynb").exists() and not d.startswith("labs/")]
SLIDER_DOCS = [d for d in NOTEBOOKS if "slider_panel(" in (ROOT / f"{d}.ipynb").read_text()]
FRAME_BUDGET, SITE_BUDGET = 1.5e6, 25e6  # bytes of frames per slider panel, in all pages


def saved_frames(html_file):
    """The frames saved in a page's widget state: {css class of a panel: {alt: (status, src)}}
    and {css class: bytes of its frames and background}."""
    page = BeautifulSoup(html_file.read_text(), "html.parser")
    frames, sizes = {}, {}
    for script in page.find_all("script", type="application/vnd.jupyter.widget-state+json"):
        for model in json.loads(script.string)["state"].values():
            value = model["state"].get("value")
            if model["model_name"] != "HTMLModel" or "frames-" not in value:
                continue
            html = BeautifulSoup(value, "html.parser")
            img = html.find("img")
            if img is None:  # the panel's background, a CSS rule
                css = re.search(r"img\.(frames-\w+)", value)[1]
            else:
                css = img["class"][0]
                status = html.find(class_="frame-status").get_text()
                frames.setdefault(css, {})[img["alt"]] = (status, img["src"])
            sizes[css] = sizes.get(css, 0) + len(value.encode())
    return frames, sizes


def test_every_slider_panel_is_saved_with_its_frames(site):
    for doc in SLIDER_DOCS:
        frames, _ = saved_frames(site["html"] / f"{doc}.html")
        assert len(frames) == 1 and len(next(iter(frames.values()))) >= 10, doc
    # perceptron, delta rule (LMS), BGD/IGD (mini-batch), pitfalls, momentum, logistic: every
    # gradient-descent chapter has its η slider
    assert SLIDER_DOCS == [f"book/{name}" for name in (
        "02_perceptron", "04_delta_rule", "05_bgd_igd", "06_pitfalls", "07_momentum", "08_logistic"
    )]  # fmt: skip


def test_slider_frames_fit_the_budget(site):
    total = 0
    for doc in SLIDER_DOCS:
        _, sizes = saved_frames(site["html"] / f"{doc}.html")
        for css, size in sizes.items():
            assert size <= FRAME_BUDGET, f"{doc}: {css} has {size / 1e6:.2f} MB of frames"
            total += size
    assert 0 < total <= SITE_BUDGET


def test_slider_frames_are_the_same_in_both_builds(built_books):
    for doc in SLIDER_DOCS:
        first, second = (saved_frames(r / "_build" / "html" / f"{doc}.html") for r in built_books)
        assert first == second, f"{doc}: the frames differ between two builds"


def _shown(page, panel):
    """What a frame panel shows now: readouts, status line, the image's alt text and src,
    and the aria-valuetext of each handle."""
    return {
        "readouts": panel.locator(".widget-readout").all_inner_texts(),
        "labels": panel.locator(".widget-slider .widget-label").all_inner_texts(),
        "status": panel.locator(".frame-status").inner_text(),
        "alt": panel.locator("img").get_attribute("alt"),
        "src": panel.locator("img").get_attribute("src"),
        "aria": [h.get_attribute("aria-valuetext") for h in panel.locator(".noUi-handle").all()],
    }


def _check_frame(doc, shown, frames):
    """The frame shown is the saved frame of the values the sliders show."""
    pairs = zip(shown["labels"], shown["readouts"], strict=True)
    values = ", ".join(f"{name} = {value}" for name, value in pairs)
    assert shown["alt"].startswith(f"The figure for {values}: "), (doc, shown["alt"])
    assert frames.get(shown["alt"]) == (shown["status"], shown["src"]), (doc, shown["alt"])
    for name, readout, aria in zip(
        *(shown[k] for k in ("labels", "readouts", "aria")), strict=True
    ):
        assert aria == f"{name} = {readout}; {shown['status']}", (doc, aria)


@pytest.mark.parametrize("doc", SLIDER_DOCS)
def test_sliders_move_the_picture_without_a_kernel(site, chromium, doc):
    """Every slider on the page, dragged with the pointer and moved with the arrow keys: the
    picture, its alt text, the status line and what the handle announces follow."""
    (panel_frames,) = saved_frames(site["html"] / f"{doc}.html")[0].values()
    messages = []
    with (
        browser.Site(site["html"]) as server,
        contextlib.closing(chromium.new_page(viewport={"width": 1280, "height": 900})) as page,
    ):
        page.on("console", lambda m: messages.append(m.text))
        page.on("pageerror", lambda e: messages.append(f"page error: {e}"))
        page.goto(server.url(f"{doc}.html"))
        page.wait_for_selector(".frame-slider .noUi-handle", timeout=30_000)
        panel = page.locator(".frame-slider")
        assert panel.count() == 1, doc
        shown = _shown(page, panel)
        _check_frame(doc, shown, panel_frames)
        seen = {shown["src"]}
        for k, slider in enumerate(panel.locator(".widget-slider").all()):
            handle, track = slider.locator(".noUi-handle"), slider.locator(".noUi-base")
            assert handle.get_attribute("role") == "slider", doc
            assert handle.get_attribute("aria-label") == shown["labels"][k], doc
            # keyboard: the handle is in the tab order (Shift+Tab from the readout reaches it)
            slider.locator(".widget-readout").focus()
            page.keyboard.press("Shift+Tab")
            assert handle.evaluate("h => h === document.activeElement"), f"{doc}: no Tab stop"
            moves = [("drag", 0.15), ("drag", 0.85), ("key", "ArrowLeft"), ("key", "ArrowLeft")]
            for how, where in moves:
                before = _shown(page, panel)
                if how == "drag":
                    grip, box = handle.bounding_box(), track.bounding_box()
                    page.mouse.move(grip["x"] + grip["width"] / 2, grip["y"] + grip["height"] / 2)
                    page.mouse.down()
                    x, y = box["x"] + where * box["width"], box["y"] + box["height"] / 2
                    page.mouse.move(x, y, steps=8)
                    page.mouse.up()
                else:
                    handle.focus()
                    page.keyboard.press(where)
                page.wait_for_function(
                    "([el, alt]) => el.querySelector('img').alt !== alt",
                    arg=[panel.element_handle(), before["alt"]],
                    timeout=5_000,
                )
                after = _shown(page, panel)
                assert after["readouts"][k] != before["readouts"][k], (doc, how, where)
                _check_frame(doc, after, panel_frames)
                assert after["src"] != before["src"] and after["status"], (doc, how, where)
                seen.add(after["src"])
        assert len(seen) >= 1 + 3 * len(shown["labels"]), f"{doc}: too few different pictures"
        # on a phone the sliders wrap onto lines of their own instead of losing their tracks
        page.set_viewport_size({"width": 390, "height": 844})
        tracks = [
            box["width"] for box in (t.bounding_box() for t in panel.locator(".noUi-base").all())
        ]
        assert min(tracks) > 100, f"{doc}: slider tracks {tracks} px wide at phone width"
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, doc
    unexpected = [m for m in messages if not m.startswith(ALLOWED_CONSOLE)]
    assert unexpected == [], f"{doc}: console messages {unexpected}"
