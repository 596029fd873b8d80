#!/usr/bin/env python3
"""The course's two jobs, each a single command that also sets everything up.

    python3 tasks.py book   # make .venv, install, build the website, print where it is
    python3 tasks.py test   # make .venv, install, run the commit hooks and every test
    python3 tasks.py test --quick   # the same without the slow tests (builds, browser, ...)

To look at the website without a browser at hand, or to print it (both need Chromium,
`apt-get install chromium` on Debian):

    python3 tasks.py screenshots   # every page at desktop and phone width: _build/screenshots/
    python3 tasks.py pdf           # the whole book as one PDF: _build/pdf/book.pdf

For students: the course in JupyterLab on your own machine (sets up .venv-lab/ the first time,
then works offline; options after `lab` go to JupyterLab, e.g. --no-browser --port 8890):

    python3 tasks.py lab

For instructors (see the instructor guide in the book; `--help` after each job):

    python3 tasks.py labs                    # regenerate labs/release from labs/source
    python3 tasks.py grade SUBMISSIONS       # grade a folder or zip into the course folder
    python3 tasks.py formgrader              # grade answers by hand (nbgrader's formgrader)
    python3 tasks.py export                  # grades.csv and grades-wide.csv, manual marks too
    python3 tasks.py feedback                # feedback files again, with your comments
    python3 tasks.py report                  # report.html: how the class did, similar answers
    python3 tasks.py review                  # answers held for review; --accept gives points

Only the standard library is used here, so a fresh machine with Python 3.11 is enough.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "tools"))
from vendor_assets import vendor_assets  # noqa: E402  (standard library only, like browser)

VENV = ROOT / ".venv"


def scripts(env_dir: Path) -> Path:
    """The folder of a virtual environment's python and commands."""
    return env_dir / ("Scripts" if os.name == "nt" else "bin")


BIN = scripts(VENV)
BUILD = ROOT / "_build"
LAB_VENV = ROOT / ".venv-lab"  # the student environment with JupyterLab (`lab`)
SANDBOX_VENV = ROOT / ".venv-sandbox"  # what a graded notebook's code may use, nothing else
FIRST_PAGE = "book/00_tour.ipynb"  # where `lab` opens the course
# JupyterLab asks the network for news and for a newer version: not on a student's machine
# that may be offline (an overrides file in the environment sets the defaults of every user)
LAB_OVERRIDES = {
    "@jupyterlab/apputils-extension:notification": {
        "checkForUpdates": False,
        "fetchNews": "false",
    },
}


def run(*cmd, **kwargs) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    subprocess.run([str(c) for c in cmd], cwd=ROOT, check=True, **kwargs)


def digest(*paths: Path) -> str:
    h = hashlib.sha256()
    for path in paths:
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for f in files:
            h.update(str(f.relative_to(ROOT)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()


def install(env_dir: Path, requirements: str) -> Path:
    """Create the virtual environment ``env_dir`` if needed and install ``requirements``
    into it, pinned by constraints.txt; return its python. pip installs uv
    (requirements-setup.txt) and uv installs the rest, compiled to bytecode as pip would
    (the grading sandbox cannot write it later); should uv fail (say the registry is only
    reachable through pip's own configuration, which uv does not read), pip installs them."""
    python = scripts(env_dir) / "python"
    if not python.exists():
        print(f"Creating the virtual environment {env_dir.name}/", flush=True)
        venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    pip = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    pinned = ["-r", requirements, "-c", "constraints.txt"]
    try:
        run(*pip, "-r", "requirements-setup.txt", "-c", "constraints.txt")
        uv = [python, "-m", "uv", "pip", "install", "--quiet", "--compile-bytecode"]
        run(*uv, "--python", python, *pinned)
    except subprocess.CalledProcessError:
        print(f"uv could not install {requirements}; pip installs it instead", flush=True)
        run(*pip, *pinned)
    return python


def setup_sandbox() -> Path:
    """Make .venv-sandbox, the grading sandbox's own environment (requirements-sandbox.txt
    and the package's dependencies: IPython, numpy, matplotlib, ipywidgets), with uv from
    .venv, so that it holds no pip, no setuptools and no uv either; return its python. Like
    :func:`setup`, only when what it depends on changed."""
    python = scripts(SANDBOX_VENV) / "python"
    stamp = SANDBOX_VENV / ".installed-requirements-sandbox.txt"
    want = digest(
        *(ROOT / f for f in ("requirements-sandbox.txt", "pyproject.toml", "constraints.txt"))
    )
    if stamp.exists() and stamp.read_text() == want and python.exists():
        return python
    print(f"Creating the grading sandbox's environment {SANDBOX_VENV.name}/", flush=True)
    venv.EnvBuilder(with_pip=False, clear=True).create(SANDBOX_VENV)
    uv = [BIN / "python", "-m", "uv", "pip", "install", "--quiet", "--compile-bytecode"]
    needs = ["-r", "requirements-sandbox.txt", "-r", "pyproject.toml", "-c", "constraints.txt"]
    run(*uv, "--python", python, *needs)
    stamp.write_text(want)
    return python


def setup(requirements: str, env_dir: Path = VENV) -> Path:
    """Install `requirements` into `env_dir` (.venv), unless nothing they depend on has
    changed since the last time (then nothing is fetched: it works offline); return its
    python."""
    if sys.version_info < (3, 11):
        sys.exit(f"Python 3.11 or newer is needed; this is {sys.version.split()[0]}.")
    stamp = env_dir / f".installed-{requirements}"
    reqs = sorted(ROOT.glob("requirements*.txt"))  # -r includes reach any of them
    want = digest(*reqs, ROOT / "constraints.txt", ROOT / "pyproject.toml")
    python = scripts(env_dir) / "python"
    if stamp.exists() and stamp.read_text() == want and python.exists():
        return python
    install(env_dir, requirements)
    stamp.write_text(want)
    return python


def lab_settings(env_dir: Path) -> Path:
    """Write JupyterLab's settings overrides into the environment `env_dir` (its
    share/jupyter/lab/settings/overrides.json, read for every user of that JupyterLab)."""
    overrides = env_dir / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    overrides.parent.mkdir(parents=True, exist_ok=True)
    overrides.write_text(json.dumps(LAB_OVERRIDES, indent=1) + "\n")
    return overrides


def lab(args: list[str]) -> None:
    """Set up .venv-lab (the student environment and JupyterLab) and open the course's first
    page in JupyterLab, with `args` passed on to `jupyter lab`."""
    python = setup("requirements-lab.txt", LAB_VENV)
    lab_settings(LAB_VENV)
    print(
        f"\nOpening the course ({FIRST_PAGE}) in JupyterLab. Its address, with the token that"
        "\nlets you in, is printed below: the line starting with http://127.0.0.1 and ending in"
        f"\n{FIRST_PAGE}?token=...; open it in a browser if none opens. Control-C stops it.\n",
        flush=True,
    )
    # the root of the repository is JupyterLab's root (book/ and labs/release/ in its file
    # browser); the address it prints and opens is the course's first page
    try:
        run(
            python,
            "-m",
            "jupyter",
            "lab",
            f"--ServerApp.root_dir={ROOT}",
            f"--LabApp.default_url=/lab/tree/{FIRST_PAGE}",
            *args,
        )
    except KeyboardInterrupt:
        pass


def repository_url() -> str | None:
    """The public GitHub repository of this book, for the launch buttons: $BOOK_REPOSITORY_URL
    (the Pages workflow sets it), else the `origin` remote if it is on GitHub, else None."""
    url = os.environ.get("BOOK_REPOSITORY_URL", "").strip()
    if not url:
        found = subprocess.run(
            ["git", "remote", "get-url", "origin"], cwd=ROOT, capture_output=True, text=True
        )
        url = found.stdout.strip() if found.returncode == 0 else ""
    match = re.fullmatch(
        r"(?:https://github\.com/|git@github\.com:)([\w.-]+)/([\w.-]+?)(?:\.git)?/?", url
    )
    return f"https://github.com/{match[1]}/{match[2]}" if match else None


def book_config(out: Path, repository: str | None) -> Path:
    """The configuration to build with: _config.yml, plus Binder launch buttons when the
    repository is known (Jupyter Book would otherwise point them at its own repository)."""
    if repository is None:
        return ROOT / "_config.yml"
    config = out / "_config.launch.yml"
    out.mkdir(parents=True, exist_ok=True)
    added = {
        "repository": {
            "url": repository,
            "branch": os.environ.get("BOOK_REPOSITORY_BRANCH", "main"),
        },
        "launch_buttons": {
            "binderhub_url": "https://mybinder.org",
            "notebook_interface": "jupyterlab",
        },
    }
    # each value as JSON, which YAML reads as a flow mapping: quoting is json's job, not ours
    lines = [f"{key}: {json.dumps(value)}" for key, value in added.items()]
    note = "# Added by tasks.py: the repository is known, so pages get Binder buttons."
    config.write_text("\n".join([(ROOT / "_config.yml").read_text(), note, *lines, ""]))
    return config


def build_book(root: Path = ROOT, repository: str | None = None, builder: str = "html") -> Path:
    """Build the website into `root`/_build/`builder` with warnings as errors; return its
    index.html.

    `repository` is the GitHub URL the Binder buttons open (none without it); `builder` is
    "html" (the website) or "singlehtml" (the whole book on one page, for the PDF). Sphinx
    reads, and so executes, only the chapters changed since the last build, or every chapter
    when the package they import has changed.
    """
    out = root / "_build"
    vendor_assets()  # MathJax and the widget manager, served from the site
    # Sphinx keys on the chapters only: read them all again when the package they import
    # changes (the chapters run inline, while Sphinx reads them)
    src_stamp = out / ".src-digest"
    want = digest(ROOT / "src")
    if not src_stamp.exists() or src_stamp.read_text() != want:
        for stale in (".doctrees", "jupyter_execute", ".jupyter_cache"):
            shutil.rmtree(out / stale, ignore_errors=True)
    # _ext on the path: Jupyter Book looks for local_extensions next to the config file,
    # which is not the case for the generated one (book_config)
    python_path = os.pathsep.join(filter(None, [str(ROOT / "_ext"), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PYTHONHASHSEED="0", PYTHONPATH=python_path)
    run(
        BIN / "jupyter-book",
        "build",
        ROOT,
        "--path-output",
        root,
        "--warningiserror",
        "--nitpick",
        "--keep-going",
        "--builder",
        builder,
        "--config",
        book_config(out, repository),
        env=env,
    )
    src_stamp.write_text(want)
    if builder == "singlehtml":
        # the one page is written at the root document's path (book/intro.html) but links
        # its assets as if it were at the top; put it there, in place of the redirect
        page = out / builder / f"{toc_documents()[0]}.html"
        shutil.copyfile(page, out / builder / "index.html")
    return out / builder / "index.html"


def toc_documents() -> list[str]:
    """The pages of _toc.yml in reading order ('book/intro', 'book/00_tour', ...): read as
    YAML by tools/toc.py in the Python of .venv, so only after setup."""
    found = subprocess.run(
        [BIN / "python", ROOT / "tools" / "toc.py"], capture_output=True, text=True, check=True
    )
    return found.stdout.split()


def screenshots(html: Path, out: Path) -> list[Path]:
    """PNGs of the top of every page at desktop (1280 px) and phone (390 px) width."""
    from browser import Site, screenshot

    shots = []
    with Site(html) as site:
        for doc in toc_documents():
            for device, width in (("desktop", 1280), ("phone", 390)):
                png = out / device / f"{doc.replace('/', '__')}.png"
                shots.append(screenshot(site.url(f"{doc}.html"), png, width))
    return shots


def pdf(singlehtml: Path, out: Path):
    """The one-page book printed to PDF (``out``) by Chromium, MathJax typeset, widgets
    drawn; returns the page as printed (``browser.Page``: its DOM and console)."""
    from browser import Site, print_pdf

    with Site(singlehtml) as site:
        return print_pdf(site.url("index.html"), out)


def binder_in_background() -> subprocess.Popen:
    """Start `tools/binder_env.py` (build or reuse .venv-binder/; standard library only);
    its output goes to .venv-binder/build.log. A test that needs the environment waits for
    this build (binder_env holds a lock while it builds)."""
    log_path = ROOT / ".venv-binder" / "build.log"
    log_path.parent.mkdir(exist_ok=True)
    print(f"Building Binder's environment in the background ({log_path.relative_to(ROOT)})")
    with log_path.open("w") as log:
        return subprocess.Popen(
            [sys.executable, str(ROOT / "tools" / "binder_env.py")],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def labtools(*args: str) -> None:
    """Run ``python -m labtools ARGS`` (labs/labtools) in the instructor environment, with
    its bin folder on PATH (nbgrader runs alembic by name); SIGINT and SIGTERM sent to
    this process go on to it (`kill PID` stops the grading, not just tasks.py), and this
    process waits for it to end."""
    setup("requirements-instructor.txt")
    setup_sandbox()  # where the students' code runs
    python_path = os.pathsep.join(filter(None, [str(ROOT / "labs"), os.environ.get("PYTHONPATH")]))
    path = os.pathsep.join(filter(None, [str(BIN), os.environ.get("PATH")]))
    env = dict(os.environ, PYTHONPATH=python_path, PATH=path)
    cmd = [str(BIN / "python"), "-m", "labtools", *args]
    print("+", " ".join(labtools_options().shown(cmd)), flush=True)  # a --db password masked
    sys.exit(run_forwarding(cmd, env))


def run_forwarding(cmd: list[str], env: dict) -> int:
    """Run ``cmd`` and return its exit code, passing SIGINT and SIGTERM on to it."""
    import signal

    child = subprocess.Popen(cmd, cwd=ROOT, env=env)

    def forward(signum, frame):
        if child.poll() is None:
            child.send_signal(signum)

    old = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        code = child.wait()  # a signal forwarded meanwhile: the wait goes on (PEP 475)
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
    return 128 - code if code < 0 else code  # killed by signal N: 128 + N, as a shell says


def labtools_options():
    """labtools.options: the instructor commands' options (standard library only)."""
    sys.path.insert(0, str(ROOT / "labs"))
    from labtools import options

    return options


def check_grade_arguments(args: argparse.Namespace) -> None:
    """What `grade` can check before anything is installed (labtools.door.layout is stdlib)."""
    sys.path.insert(0, str(ROOT / "labs"))
    from labtools.door.layout import UsageError, check_arguments

    try:
        check_arguments(args.submissions, args.course, args.labs, args.jobs)
    except UsageError as err:
        sys.exit(f"error: {err}")


def command_line() -> argparse.ArgumentParser:
    """The jobs and their arguments (checked before anything is installed)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    jobs = parser.add_subparsers(dest="job", required=True)
    test = jobs.add_parser("test", help="set up and run the hooks and every test")
    test.add_argument(
        "--quick", action="store_true", help="only the tests not marked slow (about 65 CPU-seconds)"
    )
    for name, text in (
        ("book", "set up and build the website"),
        ("screenshots", "every page at desktop and phone width (needs Chromium)"),
        ("pdf", "the whole book as one PDF (needs Chromium)"),
        ("labs", "regenerate labs/release from labs/source"),
        ("clean", "remove _build/"),
    ):
        jobs.add_parser(name, help=text)
    jobs.add_parser(
        "lab",
        help="open the course in JupyterLab (sets up .venv-lab/; then works offline)",
        description="Set up .venv-lab/ and open the course in JupyterLab. Any further "
        "arguments go to `jupyter lab`, e.g. --no-browser --port 8890.",
    )
    options = labtools_options()  # declared once, by labtools (standard library only)
    for name in ("grade", "formgrader", "export", "feedback", "report", "review"):
        options.add_options(name, jobs.add_parser(name, help=options.JOBS[name]))
    return parser


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = command_line()
    # `lab` passes what it does not know on to JupyterLab; the other jobs refuse it
    args, rest = parser.parse_known_args(argv)
    if rest and args.job != "lab":
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    job = args.job
    try:
        if job == "lab":
            lab(rest)
        elif job == "book":
            setup("requirements-book.txt")
            index = build_book(repository=repository_url())
            print(f"\nThe book is built. Open {index.relative_to(ROOT)} in a browser.")
        elif job == "screenshots":
            setup("requirements-book.txt")
            index = build_book(repository=repository_url())
            shots = screenshots(index.parent, BUILD / "screenshots")
            print(f"\n{len(shots)} screenshots in _build/screenshots/ (desktop/, phone/).")
        elif job == "pdf":
            setup("requirements-book.txt")
            # the configuration of `book` (Binder buttons when the repository is known), so
            # that after `book` Sphinx reuses the chapters it executed and only writes the page
            index = build_book(repository=repository_url(), builder="singlehtml")
            book = BUILD / "pdf" / "book.pdf"
            pdf(index.parent, book)
            print(f"\nThe book as one PDF: {book.relative_to(ROOT)}")
        elif job == "test":
            # Binder's environment (tests/book/test_binder.py, test_jupyterlab.py) is mostly pip
            # waiting on downloads and disk: build it while .venv is set up and the tests start
            binder = None if args.quick else binder_in_background()
            setup("requirements-test.txt")
            setup_sandbox()  # the grading sandbox's own Python environment
            # the commit hooks first (.pre-commit-config.yaml): lint, format, clean notebooks
            if (ROOT / ".git").exists():
                run(BIN / "pre-commit", "run", "--all-files", "--show-diff-on-failure")
            else:
                print("Not a git checkout: the pre-commit hooks were NOT run.", flush=True)
            env = dict(os.environ, PYTHONHASHSEED="0")
            quick = ["-m", "not slow"] if args.quick else []  # no builds, no notebooks
            # two workers (pytest-xdist); what must not overlap is grouped (conftest.py)
            workers = ["-n", "2"]
            slowest = ["--durations=15"]  # the slowest tests, listed at the end
            try:
                run(BIN / "python", "-m", "pytest", *quick, *workers, *slowest, env=env)
            finally:
                if binder is not None and binder.poll() is None:  # the tests stopped early
                    binder.terminate()
                    binder.wait()
        elif job == "labs":
            labtools("release")  # exits with its code
        elif job in ("grade", "formgrader", "export", "feedback", "report", "review"):
            if job == "grade":
                check_grade_arguments(args)
            if job == "formgrader":  # MathJax for its pages, the website's copy (fetched once)
                try:
                    vendor_assets()
                except (OSError, RuntimeError) as err:
                    print(f"note: MathJax could not be fetched for formgrader: {err}", flush=True)
            # the same arguments, as given: labtools declares and reads them (labtools.options)
            labtools(*argv[argv.index(job) :])
        else:
            shutil.rmtree(BUILD, ignore_errors=True)
    except subprocess.CalledProcessError as err:
        sys.exit(err.returncode)


if __name__ == "__main__":
    main()
