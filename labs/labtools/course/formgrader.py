"""Manual grading: JupyterLab with nbgrader's formgrader on the course folder.

    python -m labtools formgrader [--course grading] [--port 8888]

Listens on 127.0.0.1 only, with a fresh random token in the printed address. Open it,
choose *Manual Grading*, a lab, a student: the answers graded by hand have a score box and
a comment field (saved as you type). Then ``python -m labtools export`` writes the grade
tables with the manual scores, and ``python -m labtools feedback`` puts the comments into
the feedback files.

The server's output goes to ``logs/formgrader.log`` in the course folder (appended, one
file per course): a pipe that nobody reads would fill after 64 KiB, about 320 submission
pages, and then block the server. Its address space is capped at :data:`MEMORY` bytes.
Stopped with Ctrl+C or ``kill`` (SIGTERM), :func:`serve` stops the server first; killed
outright, the server gets SIGTERM from the system (``PR_SET_PDEATHSIG``).

In the server, this module is also a Jupyter server extension
(:func:`_load_jupyter_server_extension`), which adjusts nbgrader's formgrader (0.9.6,
:data:`NBGRADER`) for a course graded by these tools:

- math shows offline: the submission page loads MathJax 3 from this server (the copy the
  website vendors, ``_assets/vendor/mathjax``, fetched by ``tasks.py formgrader`` through
  ``tools/vendor_assets.py``), not MathJax 2 from a CDN (``formgrader_web/``);
- nothing a student wrote is fetched by the grader's logged-in browser: formgrader's pages
  load images only from ``data:`` URLs, JupyterLab's only from this server
  (Content-Security-Policy: :data:`FORMGRADER_CSP`, :data:`SERVER_CSP`);
- two graders saving the same score or comment: a save says what its page last had, and
  the server refuses it (409) when another grader has saved something else there since;
  the page then shows theirs and says so (``formgrader_web/static/formgrade.js``);
- nbgrader's own workflow (generate, release, collect, autograde, feedback; its exchange)
  is hidden from *Manage Assignments* and refused by the server: autograde would run a
  student's code outside the sandbox, generate and feedback would bypass ``tasks.py``;
- no code of the course folder runs in the server: it starts no kernel (a notebook opened
  in JupyterLab shows its cells and outputs, :data:`NO_KERNEL` says why it does not run),
  and nbgrader's extensions for students (Validate, which would execute a submission; the
  exchange's lists) are off.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import secrets
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from labtools.course import folder as course_folder
from labtools.door import layout

LOG = Path("logs") / "formgrader.log"  # in the course folder, appended by each start
MEMORY = 8 * 2**30  # bytes of address space for the server (RLIMIT_AS)
WEB = Path(__file__).resolve().parent / "formgrader_web"  # templates and script (see above)
# MathJax as the website vendors it (tools/vendor_assets.py; `tasks.py formgrader` fetches it)
MATHJAX = layout.LABS.parent / "_assets" / "vendor" / "mathjax"
NBGRADER = "0.9.6"  # the nbgrader whose formgrader the extension adjusts (its handlers, pages)
# formgrader's pages (a student's answers and outputs): images from data: URLs only (plots),
# never from a student's address nor from this server (a GET with the grader's session)
FORMGRADER_CSP = "; ".join(
    [
        "frame-ancestors 'self'",
        "img-src data:",
        "media-src 'none'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
    ]
)
# JupyterLab's pages in the same server (a submission opened there): from this server only
SERVER_CSP = "; ".join(
    ["frame-ancestors 'self'", "img-src 'self' data: blob:", "media-src 'self' data: blob:"]
)
PR_SET_PDEATHSIG = 1  # prctl(2)
# nbgrader's server extensions for students (Validate, the exchange's lists), off in this server
STUDENTS_EXTENSIONS = tuple(
    f"nbgrader.server_extensions.{name}"
    for name in ("validate_assignment", "assignment_list", "course_list")
)
NO_KERNEL = (
    "no kernel in formgrader: a submission's code runs only in the grading sandbox "
    "(`tasks.py grade`); read it here, or open a copy in your own JupyterLab"
)


def command(course: Path, port: int, token: str) -> list[str]:
    """The JupyterLab command line that serves formgrader for ``course``, with this module
    as a server extension (see the module)."""
    argv = [
        str(Path(sys.executable).parent / "jupyter-lab"),
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        f"--ServerApp.root_dir={course}",
        f"--IdentityProvider.token={token}",
        "--ServerApp.port_retries=0",
        f"--ServerApp.jpserver_extensions={__name__}=True",
    ]
    # nbgrader's extensions for students, off: Validate would run a submission in this server
    argv += [f"--ServerApp.jpserver_extensions={name}=False" for name in STUDENTS_EXTENSIONS]
    return argv + (["--allow-root"] if os.geteuid() == 0 else [])  # CI runs as root


def start(
    course: Path, port: int, token: str | None = None, *, die_with_us: bool = False
) -> tuple[subprocess.Popen, str]:
    """Start JupyterLab in the background; returns the process and formgrader's address.
    ``die_with_us``: the server gets SIGTERM when the thread that started it ends (the
    command's main thread, :func:`serve`; a test's worker thread would end it too soon)."""
    course = Path(course).resolve()
    layout.check_course(course)
    if not (course / layout.MARK).exists():
        raise layout.UsageError(f"{course} is not a course folder yet: grade something first")
    token = token or secrets.token_hex(24)
    env = dict(course_folder.nbgrader_env(), JUPYTER_PLATFORM_DIRS="1")
    # the extension (this module) is imported by the server: labtools on its path
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(layout.LABS), env.get("PYTHONPATH")]))
    log = course / LOG
    log.parent.mkdir(exist_ok=True)
    # looked up here: the child only calls it (no loading between fork and exec)
    prctl = ctypes.CDLL(None, use_errno=True).prctl if die_with_us else None
    parent = os.getpid()
    with open(log, "ab") as output:  # the server keeps its own copy of the descriptor
        start_at = output.tell()
        process = subprocess.Popen(
            command(course, port, token),
            cwd=course,  # nbgrader reads nbgrader_config.py from here
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            preexec_fn=lambda: _child_setup(prctl, parent),
        )
    deadline = time.monotonic() + 120
    try:
        while not _answers(port, token):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"JupyterLab did not start ({log}):\n{_tail(log, start_at)}")
            time.sleep(0.25)
    except BaseException:  # it did not start, or we were stopped (Ctrl+C, kill) meanwhile
        process.kill()
        process.wait()
        raise
    return process, f"http://127.0.0.1:{port}/formgrader?token={token}"


def _child_setup(prctl, parent: int) -> None:  # in the child, before JupyterLab starts
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
    if prctl is not None:  # SIGTERM when the thread that started it ends
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # it ended before the line above
            os._exit(1)


def _tail(log: Path, start: int, size: int = 3000) -> str:
    """The last ``size`` bytes that this start wrote to ``log``."""
    with open(log, "rb") as f:
        f.seek(max(start, f.seek(0, os.SEEK_END) - size))
        return f.read().decode(errors="replace")


def _answers(port: int, token: str) -> bool:
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=2)
        return True
    except OSError:
        return False


def serve(course: Path, port: int = 8888) -> None:
    """Start formgrader and wait until Ctrl+C or SIGTERM (``kill``), which stop it."""
    if not (MATHJAX / "tex-mml-chtml.js").is_file():
        print(
            "note: formgrader shows math as LaTeX: MathJax is not in _assets/vendor/ "
            "(`python3 tasks.py formgrader` fetches it once, with a network)",
            file=sys.stderr,
        )

    def stop(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)  # `kill`: as Ctrl+C
    process, url = start(course, port, die_with_us=True)
    log = Path(course).resolve() / LOG
    print(f"formgrader for {course}: open {url}\n(log: {log}; Ctrl+C to stop)", flush=True)
    try:
        process.wait()
    except KeyboardInterrupt:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        print("formgrader stopped", flush=True)


# ---------------------------------------------------------------------------------------
# In the server: the extension (see the module)


def _jupyter_server_extension_points():
    return [{"module": __name__}]


def _load_jupyter_server_extension(serverapp) -> None:
    """Adjust nbgrader's formgrader in this server (see the module). Its classes are
    changed, not its instances, so that it does not matter which extension loads first."""
    from importlib.metadata import version

    from jupyter_server.utils import url_path_join
    from nbgrader.server_extensions.formgrader import apihandlers, base
    from tornado import web

    if version("nbgrader") != NBGRADER:
        raise RuntimeError(
            f"labtools.course.formgrader adjusts nbgrader {NBGRADER}'s formgrader; this is "
            f"nbgrader {version('nbgrader')}: check the adjustments against it and update NBGRADER"
        )
    webapp = serverapp.web_app
    webapp.settings.setdefault("headers", {})["Content-Security-Policy"] = SERVER_CSP
    base.BaseHandler.content_security_policy = property(lambda self: FORMGRADER_CSP)
    base.BaseHandler.exporter = property(_exporter)
    base.BaseHandler.render = _render
    apihandlers.GradeHandler.put = _checked_put("Grade", ("manual_score", "extra_credit"))
    apihandlers.CommentHandler.put = _checked_put("Comment", ("manual_comment",))
    for name in REFUSED:
        getattr(apihandlers, name).post = _refused
    serverapp.kernel_manager.start_kernel = _no_kernel  # a notebook opened here runs nothing
    prefix = webapp.settings.get("base_url", "/")
    webapp.add_handlers(
        ".*$",
        [
            (url_path_join(prefix, "labtools/mathjax/(.*)"), web.StaticFileHandler,
             {"path": str(MATHJAX)}),
            (url_path_join(prefix, "labtools/static/(.*)"), web.StaticFileHandler,
             {"path": str(WEB / "static")}),
        ],
    )  # fmt: skip


# nbgrader's own workflow, which the course's tools do instead (see the module)
REFUSED = (
    "AssignHandler",  # generate
    "UnReleaseHandler",
    "ReleaseHandler",
    "CollectHandler",
    "AutogradeHandler",
    "GenerateAllFeedbackHandler",
    "ReleaseAllFeedbackHandler",
    "GenerateFeedbackHandler",
    "ReleaseFeedbackHandler",
)


async def _no_kernel(*args, **kwargs):
    """The server's kernel start, refused: every notebook in the course folder is a
    student's or the instructor's, and neither runs outside the sandbox here."""
    from tornado import web

    raise web.HTTPError(403, NO_KERNEL)


def _refused(self, *args) -> None:
    self.set_status(403)
    self.finish(
        json.dumps(
            {
                "success": False,
                "error": "not with this course folder: generate with `tasks.py labs`, grade with "
                "`tasks.py grade`, write feedback with `tasks.py feedback`, and give grades "
                "and feedback back through the learning platform (`tasks.py export`)",
            }
        )
    )


def _exporter(self):
    """formgrader's HTML exporter for a submission page, with labtools' template
    (``formgrader_web/labtools_formgrade``, over nbgrader's ``formgrade``)."""
    if "labtools_exporter" not in self.settings:
        from nbconvert.exporters import HTMLExporter
        from nbgrader.server_extensions.formgrader import handlers
        from traitlets.config import Config

        config = Config(self.settings["nbgrader_exporter"].config)
        config.HTMLExporter.template_name = "labtools_formgrade"
        config.HTMLExporter.extra_template_basedirs = [str(WEB), handlers.template_path]
        config.HTMLExporter.extra_template_paths = [handlers.template_path]
        exporter = HTMLExporter(config=config)
        exporter.from_filename = _names_escaped(exporter.from_filename)
        self.settings["labtools_exporter"] = exporter
    return self.settings["labtools_exporter"]


def _names_escaped(from_filename):
    """nbgrader's submission page prints the student's id and names into its HTML as they
    are (its template does not escape them); a name comes from the learning platform, where
    a student may have written it: escaped here, it is text."""
    import html

    def escaped(filename, resources=None, **kwargs):
        if resources:
            resources = {
                key: html.escape(value)
                if key in ("student", "last_name", "first_name") and isinstance(value, str)
                else value
                for key, value in resources.items()
            }
        return from_filename(filename, resources=resources, **kwargs)

    return escaped


def _render(self, name, **ns):
    """formgrader's other pages, with labtools' versions of some (``formgrader_web/pages``:
    each extends nbgrader's, named ``nbgrader/<page>``)."""
    if "labtools_pages" not in self.settings:
        from jinja2 import ChoiceLoader, Environment, FileSystemLoader, PrefixLoader
        from nbgrader.server_extensions.formgrader import handlers

        theirs = FileSystemLoader([handlers.template_path])
        loader = ChoiceLoader(
            [FileSystemLoader([str(WEB / "pages")]), PrefixLoader({"nbgrader": theirs}), theirs]
        )
        self.settings["labtools_pages"] = Environment(loader=loader)
    return self.settings["labtools_pages"].get_template(name).render(**ns)


def _checked_put(model: str, fields: tuple[str, ...]):
    """nbgrader's PUT of a grade or a comment, refused (409, with what is there now) when the
    request says what its page last had (``labtools_seen``) and the gradebook holds
    something else: another grader saved since. The check and the write are one UPDATE,
    so two saves at once cannot both pass it, on SQLite or PostgreSQL."""
    from nbgrader import api
    from nbgrader.server_extensions.formgrader import apihandlers, base
    from tornado import web

    original = getattr(apihandlers, f"{model}Handler").put
    table = getattr(api, model)

    @web.authenticated
    @base.check_xsrf
    @base.check_notebook_dir
    def put(self, grade_id):
        data = self.get_json_body() or {}
        seen = data.get("labtools_seen")
        if not isinstance(seen, dict):  # a client without labtools' script: as nbgrader does
            return original(self, grade_id)
        db = self.gradebook.db
        try:
            row = db.query(table).filter(table.id == grade_id).one()
        except Exception:  # noqa: BLE001 - sqlalchemy's NoResultFound, as nbgrader's 404
            raise web.HTTPError(404) from None
        new = {field: data.get(field) for field in fields}
        if model == "Grade":
            new["needs_manual_grade"] = new["manual_score"] is None and row.auto_score is None
        same = [getattr(table, field).is_not_distinct_from(seen.get(field)) for field in fields]
        changed = (
            db.query(table)
            .filter(table.id == grade_id, *same)
            .update(new, synchronize_session=False)
        )
        db.commit()  # also ends the transaction: what is read next is what is there now
        db.expire_all()
        row = db.query(table).filter(table.id == grade_id).one()
        if not changed:
            self.set_status(409)
            self.finish(json.dumps({"current": row.to_dict()}))
            return
        self.write(json.dumps(row.to_dict()))

    return put
