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
"""

from __future__ import annotations

import os
import resource
import secrets
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from labtools import course as course_folder
from labtools import layout

LOG = Path("logs") / "formgrader.log"  # in the course folder, appended by each start
MEMORY = 8 * 2**30  # bytes of address space for the server (RLIMIT_AS)


def command(course: Path, port: int, token: str) -> list[str]:
    """The JupyterLab command line that serves formgrader for ``course``."""
    argv = [
        str(Path(sys.executable).parent / "jupyter-lab"),
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        f"--ServerApp.root_dir={course}",
        f"--IdentityProvider.token={token}",
        "--ServerApp.port_retries=0",
    ]
    return argv + (["--allow-root"] if os.geteuid() == 0 else [])  # CI runs as root


def start(course: Path, port: int, token: str | None = None) -> tuple[subprocess.Popen, str]:
    """Start JupyterLab in the background; returns the process and formgrader's address."""
    course = Path(course).resolve()
    layout.check_course(course)
    if not (course / layout.MARK).exists():
        raise layout.UsageError(f"{course} is not a course folder yet: grade something first")
    token = token or secrets.token_hex(24)
    env = dict(course_folder.nbgrader_env(), JUPYTER_PLATFORM_DIRS="1")
    log = course / LOG
    log.parent.mkdir(exist_ok=True)
    with open(log, "ab") as output:  # the server keeps its own copy of the descriptor
        start_at = output.tell()
        process = subprocess.Popen(
            command(course, port, token),
            cwd=course,  # nbgrader reads nbgrader_config.py from here
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            preexec_fn=_limit_memory,
        )
    deadline = time.monotonic() + 120
    while not _answers(port, token):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            process.wait()
            raise RuntimeError(f"JupyterLab did not start ({log}):\n{_tail(log, start_at)}")
        time.sleep(0.25)
    return process, f"http://127.0.0.1:{port}/formgrader?token={token}"


def _limit_memory() -> None:  # in the child, before JupyterLab starts
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


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
    """Start formgrader and wait until Ctrl+C."""
    process, url = start(course, port)
    log = Path(course).resolve() / LOG
    print(f"formgrader for {course}: open {url}\n(log: {log}; Ctrl+C to stop)", flush=True)
    try:
        process.wait()
    except KeyboardInterrupt:
        process.terminate()
        process.wait()
