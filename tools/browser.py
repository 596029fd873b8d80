"""Look at the built website the way a reader does: in a headless Chromium, offline.

Used by tests/book/test_browser.py and by `python3 tasks.py screenshots` / `python3 tasks.py pdf`.
Only the standard library: tasks.py imports this before the virtual environment exists.
`playwright_chromium` (pointer, keyboard, live DOM) imports Playwright when it is called.

    with Site(Path("_build/html")) as site:
        page = load(site.url("index.html"))      # the DOM after scripts ran, console messages
        screenshot(site.url("index.html"), Path("index.png"), width=390)
        with playwright_chromium() as chromium:  # many pages in one browser, axe-core on each
            pages = visit(chromium, {"index": site.url("index.html")}, axe_core_script)
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

CHROMIUM = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CONSOLE = re.compile(
    r':CONSOLE[^\]]*\] "(?P<message>.*)", source: (?P<source>\S*) \((?P<line>\d+)\)'
)


def find_chromium() -> str | None:
    """The Chromium executable ($CHROMIUM, else the first on PATH), or None."""
    names = [os.environ["CHROMIUM"]] if os.environ.get("CHROMIUM") else CHROMIUM
    return next((found for name in names if (found := shutil.which(name))), None)


class Site:
    """Serve `root` on 127.0.0.1 (a free port) and record every request's path and status."""

    def __init__(self, root: Path):
        self.root = root
        self.requests: list[tuple[str, int]] = []

    def __enter__(self) -> Site:
        site = self

        class Handler(SimpleHTTPRequestHandler):
            def log_request(self, code="-", size="-"):
                site.requests.append((self.path, int(code)))

            def log_message(self, *args):  # quiet
                pass

        handler = functools.partial(Handler, directory=str(self.root))
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/{path}"

    def failures(self) -> list[tuple[str, int]]:
        """Requests answered with an error (404 for a missing asset, ...)."""
        return [(path, code) for path, code in self.requests if code >= 400]


# Flags for every run: quiet, and offline: every host but the local server fails to
# resolve, like behind a firewall, so a page that needs a CDN shows it.
OFFLINE = (
    "--disable-gpu",
    "--disable-dev-shm-usage",  # containers often have a small /dev/shm
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
)


def _executable() -> str:
    executable = find_chromium()
    if executable is None:
        raise FileNotFoundError("Chromium is not installed (Debian: apt-get install chromium)")
    return executable


def chromium(url: str, *options: str, budget_ms: int = 10_000) -> subprocess.CompletedProcess:
    """Run headless Chromium on `url` with no network but 127.0.0.1; scripts get `budget_ms`
    of virtual time. Console messages go to stderr (see `console`)."""
    executable = _executable()
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        return subprocess.run(
            [
                executable,
                "--headless",
                "--no-sandbox",
                *OFFLINE,
                "--hide-scrollbars",
                f"--user-data-dir={profile}",
                "--enable-logging=stderr",
                "--v=0",
                f"--virtual-time-budget={budget_ms}",
                *options,
                url,
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )


def console(stderr: str) -> list[str]:
    """The page's console messages (all levels) in Chromium's log."""
    return [f"{m['message']} ({m['source']}:{m['line']})" for m in CONSOLE.finditer(stderr)]


@contextlib.contextmanager
def playwright_chromium(**launch):
    """A Playwright `Browser` on the system's Chromium, headless and offline but for
    127.0.0.1, to click, drag, type and read the DOM:

        with playwright_chromium() as chromium:
            page = chromium.new_page()
            page.goto(site.url("index.html"))

    Playwright for Python (requirements-test.txt) drives the Chromium that `find_chromium`
    finds; its own browser download (`playwright install`) is never used. `launch` goes to
    `BrowserType.launch` (e.g. `slow_mo=100`).
    """
    from playwright.sync_api import sync_playwright  # not needed by the rest of this module

    executable = _executable()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable, args=list(OFFLINE), **launch
        )
        try:
            yield browser
        finally:
            browser.close()


# axe-core's tags for the success criteria of WCAG 2.0 and 2.1, levels A and AA
WCAG21_AA = ("wcag2a", "wcag2aa", "wcag21a", "wcag21aa")

# A page is ready to check when MathJax has typeset it and every saved widget is drawn.
_READY = """async () => {
    if (window.MathJax?.startup?.promise) await window.MathJax.startup.promise;
    const views = 'script[type="application/vnd.jupyter.widget-view+json"]';
    return document.querySelectorAll(".widget-slider").length
        >= document.querySelectorAll(views).length;
}"""
# Every display equation, inline formula, table and block of code in the page's article,
# measured against what holds it: "fits" (its box is as wide as what it shows), "scrolls"
# (wider, inside a box that scrolls sideways and that itself fits), "clipped" (an ancestor
# cuts it off and does not scroll), "off the page" (it sticks out of the window) or, for an
# inline formula, "sticks out" (wider than the line it stands in: MathJax 3 does not break
# it, and whatever holds the line cuts it or lets it run off). Closed dropdowns and
# solutions are opened first, so that what they hold has a width; the page is not reloaded
# afterwards.
_BOXES = """() => {
    document.querySelectorAll("details").forEach(d => { d.open = true; });
    document.querySelectorAll(".toggle-hidden").forEach(e => e.classList.remove("toggle-hidden"));
    const article = document.querySelector("article.bd-article") || document.querySelector("main");
    const items = [];
    for (const box of article.querySelectorAll("mjx-container")) {
        if (box.getAttribute("display") === "true") {
            items.push(["equation", box, box.querySelector("mjx-math")]);
        } else {
            items.push(["inline", box, box]);
        }
    }
    for (const box of article.querySelectorAll("table")) items.push(["table", box, box]);
    for (const box of article.querySelectorAll("pre")) items.push(["code", box, box]);
    const window_width = document.documentElement.clientWidth;
    const inner = (a) => {  // the left and right edges of what a box holds
        const r = a.getBoundingClientRect(), style = getComputedStyle(a);
        const left = r.left + a.clientLeft + parseFloat(style.paddingLeft);
        return [left, r.left + a.clientLeft + a.clientWidth - parseFloat(style.paddingRight)];
    };
    const text = (box) => (box.getAttribute("aria-label") || box.textContent || "").trim();
    return items.map(([kind, box, content]) => {
        const shown = content.getBoundingClientRect();
        if (kind === "inline") {  // against the block that holds its line
            let block = box.parentElement;
            const in_line = (a) => /^inline|^contents$/.test(getComputedStyle(a).display);
            while (in_line(block)) block = block.parentElement;
            const [left, right] = inner(block);
            const state = shown.width === 0 || (shown.right <= right + 1 && shown.left >= left - 1)
                ? "fits" : "sticks out";
            return {kind, state, scroller: null, width: Math.round(shown.width),
                    room: Math.round(right - left), text: text(box).slice(0, 80)};
        }
        // a <pre> is its own scroll box: what it holds is scrollWidth wide
        let left = shown.left, right = kind === "code"
            ? shown.left + content.scrollWidth : shown.right;
        let state = "fits", scroller = null;
        for (let a = kind === "code" ? content : content.parentElement; a; a = a.parentElement) {
            const overflow = getComputedStyle(a).overflowX;
            if (overflow === "visible") continue;
            const r = a.getBoundingClientRect();
            const inner_left = r.left + a.clientLeft, inner_right = inner_left + a.clientWidth;
            if (right <= inner_right + 1 && left >= inner_left - 1) continue;
            if ((overflow === "auto" || overflow === "scroll") && state === "fits") {
                state = "scrolls";
                scroller = a.tagName.toLowerCase() + (a.className ? "." + a.className : "");
                left = r.left; right = r.right;  // the scroll box itself must show in full
            } else {
                state = "clipped";
                break;
            }
        }
        if (state !== "clipped" && (right > window_width + 1 || left < -1)) state = "off the page";
        return {
            kind, state, scroller,
            width: Math.round(kind === "code" ? content.scrollWidth : shown.width),
            room: Math.round(box.parentElement.clientWidth),
            text: text(box).slice(0, 80),
        };
    });
}"""
_AXE_RUN = """tags => axe.run(document, {
    runOnly: {type: "tag", values: tags}, resultTypes: ["violations"]
})"""


@dataclass
class Violation:
    rule: str  # axe-core's rule id, e.g. "color-contrast"
    page: str
    target: str  # a CSS selector of the element
    summary: str  # the rule's help text, then axe-core's explanation for this element

    def __str__(self) -> str:
        return f"{self.rule} on {self.page} at `{self.target}`: {self.summary}"


@dataclass
class Visit:
    """A page as a reader with scripts sees it, once its math is typeset and its widgets
    are drawn."""

    dom: str  # the document then
    console: list[str]  # console messages (all levels) and uncaught errors, "text (url:line)"
    violations: list[Violation]  # axe-core's, one per element (empty when axe did not run)
    # with `boxes`: {window width: every display equation, inline formula, table and code
    # block of the article}, measured last (dropdowns opened), each as {kind, state,
    # scroller, width, room, text}; see _BOXES
    boxes: dict[int, list[dict]] | None = None
    # with `dark_too`: axe-core's violations once the reader's preference turned dark
    dark_violations: list[Violation] | None = None


def _axe(page, name: str, tags) -> list[Violation]:
    """axe-core's violations of the rules tagged `tags` on the page as it is now."""
    result = _within(page, _AXE_RUN, list(tags))
    return [
        Violation(
            rule["id"],
            name,
            " >>> ".join(" ".join(t) if isinstance(t, list) else t for t in node["target"]),
            " ".join(f"{rule['help']}. {node.get('failureSummary', '')}".split()),
        )
        for rule in result["violations"]
        for node in rule["nodes"]
    ]


_BACKGROUND = "getComputedStyle(document.body).backgroundColor"
# the theme's CSS transitions (colours that fade into the new scheme) jumped to their end at
# once: waiting for them to finish hangs where the browser's timeline does not advance (a
# clean-clone CI run waited 600 s on one page)
_TRANSITIONS_END = """() => { for (const a of document.getAnimations()) {
    if (a instanceof CSSTransition) try { a.finish(); } catch (e) {}
} }"""


def _within(page, function: str, arg=None, seconds: float = 60):
    """`page.evaluate(function, arg)` that fails after `seconds` instead of waiting for
    ever on a promise that never settles (Playwright's evaluate has no timeout)."""
    bounded = f"""async arg => {{
        let timer;
        const late = new Promise((_, no) => {{
            const said = new Error("no answer within {seconds} s");
            timer = setTimeout(() => no(said), {seconds * 1000});
        }});
        try {{ return await Promise.race([({function})(arg), late]); }}
        finally {{ clearTimeout(timer); }}
    }}"""
    return page.evaluate(bounded, arg)


def _turn(page, name: str, scheme: str) -> None:
    """The reader's colour preference turned to `scheme` on the loaded page; returns once
    the theme shows it (its attribute set, its colour transitions jumped to their end);
    RuntimeError if it does not, or if the page's background stays as it was."""
    before = page.evaluate(_BACKGROUND)
    page.emulate_media(color_scheme=scheme)
    try:
        shown = f"document.documentElement.dataset.theme === {scheme!r}"
        page.wait_for_function(shown, timeout=10_000)
        page.evaluate(_TRANSITIONS_END)  # colours fade: read them where they arrive
        after = page.evaluate(_BACKGROUND)
    except Exception as err:  # playwright's TimeoutError: say what did not happen
        raise RuntimeError(f"{name} did not turn {scheme} with the reader's preference") from err
    if after == before:
        raise RuntimeError(f"{name} turned {scheme} but its background stayed {before}")


def visit(
    chromium,
    urls: dict[str, str],
    axe_script: Path | None = None,
    tags=WCAG21_AA,
    color_scheme: str = "light",
    width: int = 1280,
    boxes: tuple[int, ...] = (),
    dark_too: bool = False,
) -> dict[str, Visit]:
    """Load each page of `urls` ({name: url}) in one tab of `chromium` (a Playwright
    `Browser`, see `playwright_chromium`) for a reader who prefers `color_scheme` ("light"
    or "dark"; the theme follows it), at window `width`; once its math and widgets are
    drawn, read its DOM and console and, given `axe_script` (e.g.
    vendor_assets.axe_core()), run axe-core's rules tagged `tags` on it; then, at each
    window width of `boxes` in turn (the same page, its window resized), measure every
    display equation, inline formula, table and code block against what holds it (_BOXES).
    With `dark_too` (and `axe_script`, from the light scheme), after axe-core's run the
    reader's preference turns dark on the loaded page, as when a reader's system changes it
    or the theme's button is pressed (the theme follows it at once), and axe-core runs
    again; the preference turns back before the boxes are measured."""
    found = {}
    page = chromium.new_page(viewport={"width": width, "height": 900}, color_scheme=color_scheme)
    messages: list[str] = []

    def said(message) -> None:
        where = message.location
        messages.append(f"{message.text} ({where['url']}:{where['lineNumber'] + 1})")

    page.on("console", said)
    page.on(
        "pageerror",
        lambda error: messages.append(f"Uncaught {error.name}: {error.message} ({page.url})"),
    )
    try:
        for name, url in urls.items():
            messages.clear()
            page.goto(url, wait_until="load")
            page.wait_for_function(_READY, timeout=60_000)
            shown = page.evaluate("document.documentElement.dataset.theme")
            if shown != color_scheme:  # the theme no longer follows the reader's preference
                raise RuntimeError(f"{name} is shown in the {shown} theme, not {color_scheme}")
            dom = page.content()
            violations, dark = [], None
            if axe_script is not None:
                page.add_script_tag(path=str(axe_script))
                violations = _axe(page, name, tags)
                if dark_too:
                    _turn(page, name, "dark")
                    dark = _axe(page, name, tags)
                    _turn(page, name, color_scheme)
            measured = None
            if boxes:
                measured = {}
                for box_width in boxes:  # math and tables keep their size; the column changes
                    page.set_viewport_size({"width": box_width, "height": 900})
                    measured[box_width] = page.evaluate(_BOXES)
                page.set_viewport_size({"width": width, "height": 900})
            found[name] = Visit(
                dom=dom,
                console=list(messages),
                violations=violations,
                boxes=measured,
                dark_violations=dark,
            )
    finally:
        page.close()
    return found


@dataclass
class Page:
    dom: str  # the document after its scripts ran
    console: list[str]


def load(url: str, *options: str, budget_ms: int = 10_000) -> Page:
    """The page after its scripts ran (DOM and console); ``options`` go to Chromium too
    (e.g. ``--print-to-pdf``, done in the same load)."""
    done = chromium(url, "--dump-dom", *options, budget_ms=budget_ms)
    return Page(dom=done.stdout, console=console(done.stderr))


def screenshot(url: str, png: Path, width: int, height: int = 2400) -> Path:
    """Save the top `height` CSS pixels of the page at window `width` as a PNG."""
    png.parent.mkdir(parents=True, exist_ok=True)
    chromium(url, f"--window-size={width},{height}", f"--screenshot={png}")
    return png


def print_pdf(url: str, pdf: Path) -> Page:
    """Print the page to `pdf` (A4-ish default paper, backgrounds, no header or footer);
    returns the page as it was printed (its DOM and console), read in the same load."""
    pdf.parent.mkdir(parents=True, exist_ok=True)
    return load(url, f"--print-to-pdf={pdf}", "--no-pdf-header-footer", budget_ms=30_000)
