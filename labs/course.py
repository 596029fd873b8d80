"""Instructor tools for the labs: generate the student versions with nbgrader.

    python3 tasks.py labs          # regenerate labs/release from labs/source

The instructor sources in ``labs/source/<lab>/<lab>.ipynb`` hold the solutions between
``### BEGIN SOLUTION`` / ``### END SOLUTION`` and hidden tests between
``### BEGIN HIDDEN TESTS`` / ``### END HIDDEN TESTS``. nbgrader strips both; this module
then gives every stub a message that says what to write, and writes the student versions
to ``labs/release/<lab>/<lab>.ipynb`` (committed, opened by Binder).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

LABS = Path(__file__).resolve().parent
STUB = "raise NotImplementedError()"


def lab_names(labs: Path = LABS) -> list[str]:
    """Names of the labs, one folder each under source/."""
    return sorted(p.name for p in (labs / "source").iterdir() if (p / f"{p.name}.ipynb").exists())


def nbgrader_command(*args, env=None) -> tuple[list[str], dict]:
    """The nbgrader command line of this Python environment, and an environment in which
    its helpers (alembic) are found: (argv, env). ``env`` defaults to os.environ."""
    bin_dir = Path(sys.executable).parent
    env = dict(os.environ if env is None else env)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    return [str(bin_dir / "nbgrader"), *args], env


def nbgrader(*args, cwd: Path) -> subprocess.CompletedProcess:
    """Run nbgrader in the course folder ``cwd`` and capture what it prints."""
    argv, env = nbgrader_command(*args)
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)


def stub_message(source_cell: dict) -> str:
    """What the student must write in this cell, read from the instructor's version."""
    text = "".join(source_cell["source"])
    funcs = re.findall(r"^def (\w+)\(", text, flags=re.M)
    if funcs:
        return f"Student exercise: write the body of `{funcs[-1]}` (see its docstring)."
    solution = text.split("### BEGIN SOLUTION")[1].split("### END SOLUTION")[0]
    names = re.findall(r"^(\w+)\s*=", solution, flags=re.M)
    if names:
        return "Student exercise: set " + ", ".join(f"`{n}`" for n in names) + "."
    return "Student exercise: replace this line with your code."


def add_stub_messages(release_nb: dict, source_nb: dict) -> dict:
    """Give each `raise NotImplementedError()` left by nbgrader its message."""
    by_id = {c["metadata"].get("nbgrader", {}).get("grade_id"): c for c in source_nb["cells"]}
    for cell in release_nb["cells"]:
        text = "".join(cell["source"])
        if cell["cell_type"] == "code" and STUB in text:
            message = stub_message(by_id[cell["metadata"]["nbgrader"]["grade_id"]])
            text = text.replace(STUB, f"raise NotImplementedError({message!r})")
            cell["source"] = text.splitlines(keepends=True)
    return release_nb


def prepare_course(course: Path, labs: Path = LABS) -> list[str]:
    """Make ``course`` a course folder with the sources, the config, the generated student
    versions and a gradebook that knows every lab; return the lab names."""
    course.mkdir(parents=True, exist_ok=True)
    shutil.copytree(labs / "source", course / "source")
    shutil.copy(labs / "nbgrader_config.py", course)
    names = lab_names(labs)
    for lab in names:
        proc = nbgrader("generate_assignment", lab, "--create", "--force", cwd=course)
        if proc.returncode != 0:
            raise RuntimeError(f"nbgrader could not generate {lab}:\n{proc.stderr[-3000:]}")
    return names


def generate(labs: Path = LABS, out: Path | None = None) -> Path:
    """Generate the student version of every lab into ``out`` (default: labs/release)."""
    out = labs / "release" if out is None else out
    with tempfile.TemporaryDirectory() as tmp:
        course = Path(tmp)
        for lab in prepare_course(course, labs):
            name = f"{lab}/{lab}.ipynb"
            release = json.loads((course / "release" / name).read_text())
            source = json.loads((labs / "source" / name).read_text())
            release["metadata"]["mystnb"] = {"execution_mode": "off"}  # the book shows, not runs
            target = out / name
            target.parent.mkdir(parents=True, exist_ok=True)
            text = json.dumps(add_stub_messages(release, source), indent=1, ensure_ascii=False)
            target.write_text(text + "\n")
    return out


# ---------------------------------------------------------------------------------------
# Grading a folder (or zip) of submissions


def find_submissions(root: Path, labs: list[str]) -> dict[str, dict[str, Path]]:
    """{student: {lab: notebook}} from ``<root>/[submitted/]<student>/<lab>/<lab>.ipynb``.

    One extra top-level folder (as an LMS zip download often has) is looked through.
    """
    for base in (root / "submitted", root, *[p for p in root.iterdir() if p.is_dir()]):
        found = {}
        for lab in labs:
            for nb in base.glob(f"*/{lab}/{lab}.ipynb"):
                found.setdefault(nb.parent.parent.name, {})[lab] = nb
        if found:
            return dict(sorted(found.items()))
    return {}


def safe_extract(zip_path: Path, target: Path) -> Path:
    """Extract a zip of submissions, refusing members that would land outside ``target``."""
    import zipfile

    with zipfile.ZipFile(zip_path) as archive:
        for member in archive.infolist():
            dest = (target / member.filename).resolve()
            if not dest.is_relative_to(target.resolve()):
                raise ValueError(f"`submissions` zip has an unsafe member: {member.filename!r}")
        archive.extractall(target)
    return target


REPO = LABS.parent
STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")


def have_bwrap() -> bool:
    """Whether bubblewrap can start a sandbox on this machine."""
    if shutil.which("bwrap") is None:
        return False
    probe = subprocess.run(
        ["bwrap", "--ro-bind", "/", "/", "--unshare-net", "true"], capture_output=True
    )
    return probe.returncode == 0


def write_sandbox_kernel(course: Path, hide: list[Path]) -> None:
    """A kernelspec that starts the student's kernel inside bubblewrap.

    The kernel sees the file system read-only, with /tmp, the repository (except the
    package and the virtual environment), the submissions and the output folder replaced
    by empty folders; it can write only to the autograded folder of this course copy, and
    it has no network. It talks to nbgrader through unix sockets in the runtime folder.
    """
    runtime, workdir = course / "runtime", course / "autograded"
    runtime.mkdir()
    workdir.mkdir()
    argv = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for path in hide:
        argv += ["--tmpfs", str(path)]
    python = Path(sys.executable)
    for path in (REPO / "src", Path(sys.prefix)):
        argv += ["--ro-bind", str(path), str(path)]
    argv += ["--bind", str(workdir), str(workdir), "--bind", str(runtime), str(runtime)]
    # no --unshare-pid: ipykernel shuts down when its parent looks like pid 1
    argv += ["--unshare-net", "--die-with-parent", "--chdir", str(workdir)]
    argv += [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    spec = {
        "argv": argv,
        "display_name": "sandbox",
        "language": "python",
        "interrupt_mode": "message",
        "env": {"MPLBACKEND": "Agg"},
    }
    kernel_dir = course / "jupyter" / "kernels" / "sandbox"
    kernel_dir.mkdir(parents=True)
    (kernel_dir / "kernel.json").write_text(json.dumps(spec, indent=1))


def _limits(memory: int):
    def apply():
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))  # the kernel inherits it
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 2**20, 64 * 2**20))

    return apply


def grade_one(
    template: Path,
    work: Path,
    student: str,
    lab: str,
    notebook: Path,
    out: Path,
    hide: list[Path],
    cell_timeout: int,
    lab_timeout: int,
    memory: int,
    sandbox: bool,
) -> dict:
    """Autograde one student's lab in a fresh copy of the course, in its own process."""
    from nbgrader.api import Gradebook

    row = {"student": student, "lab": lab, "score": 0.0, "max_score": 0.0, "status": "graded"}
    course = work / f"{student}--{lab}"
    shutil.copytree(template, course)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        row["max_score"] = gb.find_assignment(lab).max_score
    dest = course / "submitted" / student / lab / f"{lab}.ipynb"
    dest.parent.mkdir(parents=True)
    try:
        import nbformat

        submitted = nbformat.read(notebook, as_version=4)
        nbformat.validate(submitted)
    except Exception as err:  # truncated JSON, not a notebook at all, ...
        row["status"] = f"unreadable notebook ({type(err).__name__})"
        return row
    lost = (
        ""
        if any("nbgrader" in cell.metadata for cell in submitted.cells)
        else (
            "; the notebook lost its nbgrader metadata, so its answers could not be matched to "
            "the exercises: check it by hand"
        )
    )
    row["status"] += lost
    shutil.copy(notebook, dest)

    args = ["autograde", lab, "--student", student, "--create", f"--Execute.timeout={cell_timeout}"]
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(course / "runtime"))
    if sandbox:
        write_sandbox_kernel(course, hide)
        env["JUPYTER_PATH"] = str(course / "jupyter")
        args += ["--Execute.kernel_name=sandbox"]
        # the kernel has no network: it talks to nbgrader through unix sockets, and its
        # connection file (written to TMPDIR) and sockets sit in the runtime folder it sees
        env["TMPDIR"] = str(course / "runtime")
        with open(course / "nbgrader_config.py", "a") as config:
            config.write('\nc.KernelManager.transport = "ipc"\n')
            config.write(f"c.KernelManager.ip = {str(course / 'runtime' / 'kernel')!r}\n")
    else:
        (course / "runtime").mkdir()
    argv, env = nbgrader_command(*args, env=env)
    proc = subprocess.Popen(
        argv,
        cwd=course,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        preexec_fn=_limits(memory),
    )
    try:
        log, _ = proc.communicate(timeout=lab_timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.communicate()
        row["status"] = f"stopped after the time limit of {lab_timeout} s" + lost
        return row
    (out / "logs").mkdir(parents=True, exist_ok=True)
    (out / "logs" / f"{student}--{lab}.log").write_text(log)
    if proc.returncode != 0:
        row["status"] = f"grading failed (exit {proc.returncode}); see logs/{student}--{lab}.log"
        row["status"] += lost
        return row
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        row["score"] = gb.find_submission(lab, student).score
    feedback = nbgrader("generate_feedback", lab, "--student", student, "--force", cwd=course)
    html = course / "feedback" / student / lab / f"{lab}.html"
    if feedback.returncode == 0 and html.exists():
        target = out / "feedback" / student / f"{lab}.html"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(html, target)
    return row


def grade(submissions, out, cell_timeout=60, lab_timeout=600, memory_gb=4.0, sandbox=None):
    """Grade every submission; write ``grades.csv``, ``feedback/<student>/<lab>.html`` and logs.

    submissions : folder (``submitted/<student>/<lab>/<lab>.ipynb``) or a zip of one
    sandbox : None uses bubblewrap when it works here; True requires it; False skips it
    Returns the rows of grades.csv. Manually graded answers count 0 until entered (see
    the instructor guide).
    """
    import csv

    submissions, out = Path(submissions).resolve(), Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    bwrap = have_bwrap()
    sandbox = bwrap if sandbox is None else sandbox
    if sandbox and not bwrap:
        raise RuntimeError("`sandbox=True` needs bubblewrap (Debian package bubblewrap)")
    rows = []
    with tempfile.TemporaryDirectory(prefix="grading-") as tmp:
        work = Path(tmp)
        if submissions.suffix == ".zip":
            submissions = safe_extract(submissions, work / "unzipped")
        template = work / "template"
        labs = prepare_course(template)
        hide = [REPO, submissions, out]
        for student, notebooks in find_submissions(submissions, labs).items():
            for lab, notebook in notebooks.items():
                if not STUDENT_ID.match(student):
                    rows.append(
                        {
                            "student": student,
                            "lab": lab,
                            "score": 0.0,
                            "max_score": 0.0,
                            "status": "skipped: the folder name is not a valid student id",
                        }
                    )
                    continue
                rows.append(
                    grade_one(
                        template,
                        work,
                        student,
                        lab,
                        notebook,
                        out,
                        hide,
                        cell_timeout,
                        lab_timeout,
                        int(memory_gb * 2**30),
                        sandbox,
                    )
                )
    with open(out / "grades.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["student", "lab", "score", "max_score", "status"])
        writer.writeheader()
        writer.writerows(rows)
    return rows


if __name__ == "__main__":
    print("student versions written to", generate())
