"""Drive JupyterLab the way a student does: start it, open a notebook in Chromium, Run All,
read what the page shows, move a slider. Used by tests/book/test_jupyterlab.py and
benchmarks/bench_jupyterlab.py (Playwright is imported by the functions that use it).

    with JupyterLab(binder_env.build().bin) as lab, browser.playwright_chromium() as chromium:
        page = chromium.new_page()
        seen = run_all(page, lab, "book/07_momentum.ipynb")
        seen.errors, seen.raw_myst, seen.unevaluated
"""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: MyST that must not be left in the text JupyterLab renders (jupyterlab-myst shows what it
#: does not know as it is written)
RAW_MYST = (
    "{eval}",
    "{glue",
    "{numref}",
    "{ref}",
    "{cite}",
    "{prf:",
    ":::",
    "```{",
    ":label:",
    ":class:",
)
#: The only error a student's lab may stop at: its first exercise stub
STUB = "Student exercise:"
#: User settings of the test's JupyterLab (its own settings folder, nothing else changed):
#: no news or update checks (no network) and no toasts over the page; every cell attached to
#: the page ("none"), so that the whole notebook's rendered text can be read at once
SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
        "doNotDisturbMode": True,
    },
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    # never write the notebooks it runs (they are the repository's, stored without outputs)
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
}
#: the title of the note that chapters show only in JupyterLab (tools/setup_cell.py), which
#: says that references to other chapters, figures and the bibliography show as labels there
NOTE_TITLE = "Reading this chapter in JupyterLab"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class JupyterLab:
    """`jupyter lab` of the environment whose scripts are in `bin`, serving the repository's
    root on 127.0.0.1 with a known token, its Jupyter folders (config, data, runtime,
    settings, workspaces) in a temporary folder, so nothing of this machine's user leaks in."""

    def __init__(self, bin: Path, root: Path = ROOT, timeout: float = 60):
        self.bin, self.root, self.timeout = bin, root, timeout
        self.token = secrets.token_hex(16)
        self.port = free_port()

    def __enter__(self) -> JupyterLab:
        self._tmp = tempfile.TemporaryDirectory(prefix="jupyterlab-")
        tmp = Path(self._tmp.name)
        settings = tmp / "settings"
        for name, values in SETTINGS.items():
            (settings / name).parent.mkdir(parents=True, exist_ok=True)
            (settings / name).write_text(json.dumps(values))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "PYTHON"))}
        env.update(
            JUPYTER_CONFIG_DIR=str(tmp / "config"),
            JUPYTER_DATA_DIR=str(tmp / "data"),
            JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
            JUPYTERLAB_SETTINGS_DIR=str(settings),
            JUPYTERLAB_WORKSPACES_DIR=str(tmp / "workspaces"),
            JUPYTER_PLATFORM_DIRS="1",
            PYTHONHASHSEED="0",
            PATH=os.pathsep.join([str(self.bin), env.get("PATH", "")]),
            VIRTUAL_ENV=str(self.bin.parent),
        )
        self.log = tmp / "jupyterlab.log"
        self._log = self.log.open("w")
        self.process = subprocess.Popen(
            [
                str(self.bin / "jupyter-lab"),
                "--no-browser",
                "--ServerApp.ip=127.0.0.1",
                f"--ServerApp.port={self.port}",
                "--ServerApp.port_retries=0",
                f"--IdentityProvider.token={self.token}",
                f"--ServerApp.root_dir={self.root}",
                # window.jupyterapp: the cells' models (outputs, evaluated roles) to read
                "--LabApp.expose_app_in_browser=True",
                # containers and CI run as root, which JupyterLab refuses unless told
                *(["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []),
            ],
            cwd=self.root,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                self.api("status")
                return self
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    log = self.log.read_text()
                    self.__exit__()
                    raise RuntimeError(f"JupyterLab did not start:\n{log}") from None
                time.sleep(0.2)

    def __exit__(self, *exc) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._log.close()
        self._tmp.cleanup()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}/{path}"

    def api(self, path: str, method: str = "GET"):
        request = urllib.request.Request(
            self.url(f"api/{path}"),
            method=method,
            headers={"Authorization": f"token {self.token}"},
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            body = answer.read()
        return json.loads(body) if body else None

    def open_url(self, notebook: str) -> str:
        """The address that opens `notebook` (relative to the root) in a fresh workspace."""
        return self.url(f"lab/tree/{notebook}?reset&token={self.token}")

    def shut_down_kernels(self) -> None:
        for session in self.api("sessions"):
            self.api(f"sessions/{session['id']}", method="DELETE")


# ---------------------------------------------------------------- in the page (Playwright)

#: what the student sees of each cell of the open notebook (windowingMode "none": all of
#: them are in the page), and what its model holds: outputs and evaluated {eval} roles
_CELLS = """() => {
    const panel = window.jupyterapp.shell.currentWidget;
    return panel.content.widgets.map(cell => {
        const model = cell.model.toJSON();
        const md = model.cell_type === 'markdown';
        const shown = md ? cell.node.querySelector('.myst') : null;
        return {
            kind: model.cell_type,
            source: model.source,
            execution_count: model.execution_count ?? null,
            outputs: (model.outputs || []).map(o => ({
                type: o.output_type, name: o.name || null, ename: o.ename || null,
                evalue: o.evalue || null, text: o.text || null,
            })),
            expressions: (model.metadata?.user_expressions || []).map(e => ({
                expression: e.expression, status: e.result?.status,
                error: e.result?.ename ? `${e.result.ename}: ${e.result.evalue}` : null,
            })),
            text: shown ? shown.innerText : null,
            codes: shown ? [...shown.querySelectorAll('code')].map(c => c.textContent) : [],
            unresolved: shown ? [...shown.querySelectorAll(
                '[title="Cross Reference Not Found"], [title="Citation Not Found"]')]
                .map(e => `${e.title}: ${e.textContent.trim()}`) : [],
        };
    });
}"""


@dataclass
class Seen:
    """A notebook after Run All, as a student sees it."""

    notebook: str
    seconds: float = 0.0  # from opening it to the end of Run All
    errors: list[str] = field(default_factory=list)  # error outputs not allowed
    stopped_at_stub: bool = False  # a lab's Run All stopped at its first exercise stub
    raw_myst: list[str] = field(default_factory=list)  # MyST left in the rendered text
    unevaluated: list[str] = field(default_factory=list)  # {eval} roles without a value
    unresolved: list[str] = field(default_factory=list)  # references shown as labels
    not_run: list[str] = field(default_factory=list)  # code cells Run All did not reach
    note_shown: bool = False  # the page shows the JupyterLab note (NOTE_TITLE)

    def problems(self, explained: frozenset[str] = frozenset()) -> list[str]:
        """What is wrong with the page; a reference shown as its label is not, if the page
        shows the JupyterLab note and the label is one of `explained` (the website's)."""
        unresolved = [
            u for u in self.unresolved if not (self.note_shown and label_of(u) in explained)
        ]
        return [
            *(f"error output: {e}" for e in self.errors),
            *(f"raw MyST in the text: {r}" for r in self.raw_myst),
            *(f"{{eval}} role with no value: {u}" for u in self.unevaluated),
            *(f"unresolved reference: {u}" for u in unresolved),
            *(f"code cell not run: {n}" for n in self.not_run),
        ]


def label_of(unresolved: str) -> str:
    """The label of an unresolved reference as `read` records it ("cell 3: ...: fig-x")."""
    return unresolved.rsplit(": ", 1)[-1]


EVAL = re.compile(r"\{eval\}`([^`]*)`")


#: open the notebook `path` in the JupyterLab of the page (returning nothing: the widget it
#: opens is a large object, which Playwright would serialize)
_OPEN = """async path => {
    await window.jupyterapp.commands.execute('docmanager:open', {path});
}"""

#: the notebook `path` is the current document, its `n` cells in the page, its kernel idle
_OPENED = """([path, n]) => {
    const panel = window.jupyterapp?.shell.currentWidget;
    return panel?.context?.path === path
        && panel.content?.widgets?.length === n
        && panel.sessionContext?.session?.kernel?.status === 'idle'
        && panel.content.node.querySelectorAll('.jp-Cell').length === n;
}"""


def open_notebook(page, lab: JupyterLab, notebook: str, timeout: float = 60) -> None:
    """Open `notebook` (a path relative to the root) in JupyterLab, every cell in the page,
    its kernel started and idle; accept a "Select Kernel" dialog if one comes up. The first
    notebook loads JupyterLab in the page; later ones open in it, as a student opens one
    from the file browser (JupyterLab is not loaded again)."""
    from playwright.sync_api import TimeoutError as Timeout

    cells = len(json.loads((lab.root / notebook).read_text())["cells"])
    if page.url.startswith(lab.url("lab")) and page.evaluate("!!window.jupyterapp"):
        page.evaluate(_OPEN, notebook)
    else:
        page.goto(lab.open_url(notebook))
    deadline = time.monotonic() + timeout
    while True:
        if page.locator(".jp-Dialog").count():  # e.g. "Select Kernel": take the default
            page.locator(".jp-Dialog .jp-mod-accept").first.click()
        try:  # polled in the page; a dialog is looked for each second
            page.wait_for_function(_OPENED, arg=[notebook, cells], polling=100, timeout=1000)
            return
        except Timeout:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{notebook} did not open with an idle kernel in {timeout} s"
                ) from None


def close_notebooks(page) -> None:
    """Close every open document without saving (the repository's notebooks stay as they
    are) and dismiss any dialog left open, so that the next notebook opens alone."""
    page.evaluate(
        """() => {
        const app = window.jupyterapp;
        if (!app) return;
        for (const widget of [...app.shell.widgets('main')]) widget.dispose();
    }"""
    )
    for _ in range(50):
        if not page.locator(".jp-Dialog").count():
            return
        page.keyboard.press("Escape")
        page.wait_for_timeout(100)
    raise RuntimeError(
        "a JupyterLab dialog does not close: " + page.locator(".jp-Dialog").inner_text()
    )


def run_all(page) -> None:
    """Run ▸ Run All Cells, from the menu bar, as a student does."""
    page.locator("li.lm-MenuBar-item", has_text="Run").first.click()
    page.locator("li.lm-Menu-item[data-command='runmenu:run-all']").click()


#: true once the current notebook's kernel is idle and no cell runs, for `settle` ms in a
#: row (polled in the page, not from here)
_SETTLED = """settle => {
    const panel = window.jupyterapp?.shell.currentWidget;
    const kernel = panel?.sessionContext?.session?.kernel;
    const idle = kernel?.status === 'idle' && panel.content.widgets.every(
        c => c.model.type !== 'code' || c.model.executionState !== 'running');
    const now = performance.now();
    if (!idle) { window.__idleSince = null; return false; }
    window.__idleSince ??= now;
    return now - window.__idleSince >= settle;
}"""


def wait_idle(page, timeout: float = 240, settle: float = 1.0) -> None:
    """Wait until the kernel is idle and no cell runs, for `settle` seconds in a row (the
    {eval} roles of the markdown cells are evaluated in requests of their own)."""
    from playwright.sync_api import TimeoutError as Timeout

    page.evaluate("window.__idleSince = null")
    try:
        page.wait_for_function(_SETTLED, arg=settle * 1000, polling=100, timeout=timeout * 1000)
    except Timeout:
        raise TimeoutError(f"the kernel was still busy after {timeout} s") from None


def read(page, notebook: str) -> Seen:
    """What the open notebook shows after Run All, checked: no error output except a lab's
    first exercise stub (Run All stops there; nothing after it counts), no MyST in the
    rendered text, every {eval} role evaluated and shown, every code cell run."""
    seen = Seen(notebook)
    for k, cell in enumerate(page.evaluate(_CELLS)):
        where = f"cell {k}"
        if seen.stopped_at_stub:
            break  # Run All stopped at the lab's first exercise: the rest is the student's
        if cell["kind"] == "code":
            errors = [o for o in cell["outputs"] if o["type"] == "error"]
            stub = [e for e in errors if e["ename"] == "NotImplementedError"]
            if stub and STUB in (stub[0]["evalue"] or "") and not seen.errors:
                seen.stopped_at_stub = True
                continue
            seen.errors += [f"{where}: {e['ename']}: {e['evalue']}" for e in errors]
            if not errors and cell["execution_count"] is None and cell["source"].strip():
                seen.not_run.append(f"{where}: {cell['source'].splitlines()[0]}")
        elif cell["kind"] == "markdown":
            text = cell["text"]
            if text is None:
                seen.raw_myst.append(f"{where}: not rendered")
                continue
            seen.raw_myst += [
                f"{where}: {raw!r} in …{_around(text, raw)}…" for raw in RAW_MYST if raw in text
            ]
            evaluated = {e["expression"]: e for e in cell["expressions"]}
            for expression in EVAL.findall(cell["source"]):
                result = evaluated.get(expression)
                if result is None or result["status"] != "ok":
                    why = result["error"] if result else "not evaluated"
                    seen.unevaluated.append(f"{where}: {expression} ({why})")
                elif expression in cell["codes"]:
                    seen.unevaluated.append(f"{where}: {expression} (shown as code)")
            seen.unresolved += [f"{where}: {u}" for u in cell["unresolved"]]
            seen.note_shown |= NOTE_TITLE in text
    return seen


def _around(text: str, raw: str, width: int = 40) -> str:
    i = text.index(raw)
    return " ".join(text[max(0, i - width) : i + len(raw) + width].split())


def check_page(page, lab: JupyterLab, notebook: str) -> Seen:
    """Open `notebook`, Run All, wait for the kernel, and read what it shows."""
    start = time.perf_counter()
    open_notebook(page, lab, notebook)
    run_all(page)
    wait_idle(page)
    seen = read(page, notebook)
    # A number the kernel has sent is drawn a moment later; on a loaded machine later than
    # the kernel's settle. Read again while only such numbers are missing (an error, or a
    # number never sent, is reported as it is).
    deadline = time.monotonic() + 30
    while _drawing(seen) and time.monotonic() < deadline:
        page.wait_for_timeout(250)
        seen = read(page, notebook)
    seen.seconds = time.perf_counter() - start
    return seen


def _drawing(seen: Seen) -> bool:
    """Whether every {eval} role seen without a value has one, sent but not drawn yet."""
    return bool(seen.unevaluated) and all(u.endswith("(shown as code)") for u in seen.unevaluated)


#: the first slider of the open notebook and the picture of its panel (the VBox around it)
_FIRST_SLIDER = """() => {
    const slider = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .widget-slider');
    if (!slider) return null;
    const panel = slider.closest('.widget-vbox');
    const img = panel?.querySelector('img');
    return img ? {src: img.src.length + ':' + img.src.slice(-64)} : {src: null};
}"""

#: record the time of the next key press on the slider and of its picture's next change
_ARM = """() => {
    const slider = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .widget-slider');
    const img = slider.closest('.widget-vbox').querySelector('img');
    const timing = window.__sliderTiming = {pressed: null, changed: null};
    slider.addEventListener('keydown', () => { timing.pressed ??= performance.now(); },
                            {capture: true, once: true});
    const panel = slider.closest('.widget-vbox');
    const before = img.src;
    const observer = new MutationObserver(() => {
        const now = panel.querySelector('img');
        if (now && now.src !== before && timing.changed === null) {
            timing.changed = performance.now();
            observer.disconnect();
        }
    });
    observer.observe(panel, {subtree: true, childList: true, attributes: true,
                             attributeFilter: ['src']});
}"""


def has_slider(page) -> bool:
    return page.evaluate(_FIRST_SLIDER) is not None


def move_first_slider(page, key: str | None = None, timeout: float = 30) -> float:
    """Press `key` on the first slider's handle (default: ArrowRight, or ArrowLeft at the
    slider's end); return the milliseconds from the key press to the change of its panel's
    picture (redrawn by the kernel)."""
    slider = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .widget-slider").first
    handle = slider.locator(".noUi-handle").first
    handle.scroll_into_view_if_needed()
    if key is None:
        at_end = handle.get_attribute("aria-valuenow") == handle.get_attribute("aria-valuemax")
        key = "ArrowLeft" if at_end else "ArrowRight"
    page.evaluate(_ARM)
    handle.focus()
    handle.press(key)
    page.wait_for_function("window.__sliderTiming.changed !== null", timeout=timeout * 1000)
    timing = page.evaluate("window.__sliderTiming")
    return timing["changed"] - timing["pressed"]
