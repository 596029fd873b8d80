"""Manual grading: JupyterLab with nbgrader's formgrader on the course folder.

    python -m labtools formgrader [--course grading] [--port 8888]

Listens on 127.0.0.1 only, with a fresh random token in the printed address. Open it,
choose *Manual Grading*, a lab, a student: the answers graded by hand have a score box and
a comment field (saved as you type). Then ``python -m labtools export`` writes the grade
tables with the manual scores, and ``python -m labtools feedback`` puts the comments into
the feedback files.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from labtools import course as course_folder
from labtools import layout


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
    process = subprocess.Popen(
        command(course, port, token),
        cwd=course,  # nbgrader reads nbgrader_config.py from here
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,  # read only if it fails to start; quiet after that
        text=True,
    )
    deadline = time.monotonic() + 120
    while not _answers(port, token):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"JupyterLab did not start:\n{process.communicate()[1][-3000:]}")
        time.sleep(0.25)
    return process, f"http://127.0.0.1:{port}/formgrader?token={token}"


def _answers(port: int, token: str) -> bool:
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=2)
        return True
    except OSError:
        return False


def serve(course: Path, port: int = 8888) -> None:
    """Start formgrader and wait until Ctrl+C."""
    process, url = start(course, port)
    print(f"formgrader for {course}: open {url}\n(Ctrl+C to stop)", flush=True)
    try:
        process.wait()
    except KeyboardInterrupt:
        process.terminate()
        process.wait()
