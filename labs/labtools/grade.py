"""Grading a class into a course folder that nbgrader's gradebook and formgrader use.

    python -m labtools grade SUBMISSIONS [--course grading] [--jobs N] [--regrade] ...

The course folder (default ``grading/``) is an nbgrader course: ``source/`` and
``release/`` (from ``labs/``), ``gradebook.db``, ``submitted/`` and ``autograded/`` per
student and lab, ``feedback/``. Next to them: ``results/<student>/<lab>.json`` (each
notebook's verdicts, written the moment it is graded, so that a run that is stopped
resumes where it was), ``logs/``, and the exports ``grades.csv`` and ``grades-wide.csv``.

Each notebook is graded by :func:`grade_task` (:mod:`labtools.verdicts`), in parallel on
any ``concurrent.futures.Executor``; this module alone writes the gradebook and the files.
"""

from __future__ import annotations

import concurrent.futures
import csv
import hashlib
import json
import multiprocessing
import os
import shutil
import sys
import tempfile
import traceback
import warnings
from dataclasses import asdict
from pathlib import Path

from labtools import intake, layout, release
from labtools.layout import COURSE, LABS, MARK, Submission, UsageError
from labtools.sandbox import Limits

DB = "gradebook.db"


def db_url(course: Path) -> str:
    return f"sqlite:///{course / DB}"


def open_course(course: Path, labs: Path = LABS) -> list[str]:
    """Create or bring up to date the course folder; return the lab names.

    A lab whose source changed since the last run is generated again (nbgrader
    ``generate_assignment``), so the gradebook knows its cells and points, unless it has
    graded submissions: then the course keeps grading with its own copy of the source, so
    that scores (manual ones included) and the gradebook stay consistent; a new course
    folder takes the new version.
    """
    layout.check_course(course)
    course.mkdir(parents=True, exist_ok=True)
    mark = course / MARK
    state = json.loads(mark.read_text()) if mark.exists() else {"course": COURSE, "sources": {}}
    shutil.copy(labs / "nbgrader_config.py", course / "nbgrader_config.py")
    names = layout.lab_names(labs)
    for lab in names:
        folder = labs / "source" / lab
        digest = hashlib.sha256((folder / f"{lab}.ipynb").read_bytes()).hexdigest()
        if state["sources"].get(lab) == digest and (course / "release" / lab).exists():
            continue
        if lab in state["sources"] and any((course / "results").glob(f"*/{lab}.json")):
            print(
                f"note: labs/source/{lab} changed since {course} graded it; that course "
                "folder keeps grading with its own copy (a new --course takes the new one)",
                file=sys.stderr,
            )
            continue
        shutil.rmtree(course / "source" / lab, ignore_errors=True)
        shutil.copytree(folder, course / "source" / lab)
        proc = release.nbgrader("generate_assignment", lab, "--create", "--force", cwd=course)
        if proc.returncode != 0:
            raise RuntimeError(f"nbgrader could not generate {lab}:\n{proc.stderr[-3000:]}")
        state["sources"][lab] = digest
        mark.write_text(json.dumps(state, indent=1))
    mark.write_text(json.dumps(state, indent=1))
    return names


def grade_task(task: dict) -> dict:
    """Grade one notebook (runs in a worker): plain data in, plain data out.

    ``task``: student, lab, source (the lab's source notebook), notebook (the submitted
    bytes, as text), limits, unsafe, mpl_cache. Returns the result of
    :func:`labtools.verdicts.evaluate` with the autograded notebook under ``autograded``
    (built here, so that the process that records stays light), or ``{"unreadable": ...}``
    / ``{"error": ...}`` if the notebook could not be read or grading itself failed.
    """
    import nbformat

    from labtools import verdicts

    try:
        with warnings.catch_warnings():  # duplicate or missing cell ids: nbformat fixes them
            warnings.simplefilter("ignore")
            submitted = nbformat.reads(task["notebook"], as_version=4)
            nbformat.validate(submitted)
    except Exception as err:  # noqa: BLE001 - truncated JSON, not a notebook at all, ...
        return {"unreadable": f"unreadable notebook ({type(err).__name__})"}
    try:
        result = verdicts.evaluate(
            task["source"],
            json.loads(nbformat.writes(submitted)),
            Limits(**task["limits"]),
            unsafe=task["unsafe"],
            mpl_cache=_worker_mpl_cache(task.get("mpl_cache")),
        )
        result["autograded"] = autograded_notebook(task["source"], result)
        return result
    except Exception:  # noqa: BLE001 - the grader's own failure, reported on that row
        return {"error": traceback.format_exc()}


def _mpl_cache() -> str:
    import matplotlib
    import matplotlib.font_manager  # noqa: F401 - builds the font list if it is not there

    return matplotlib.get_cachedir()


def _worker_mpl_cache(given: str | None) -> Path | None:
    """The font cache a worker lends its sandboxes: the grading machine's (``given``) if
    that folder is here, else this worker's own (a worker on another machine), else none."""
    if given and Path(given).is_dir():
        return Path(given)
    try:
        return Path(_mpl_cache())
    except Exception:  # noqa: BLE001 - no cache: matplotlib builds its font list each time
        return None


def _write(path: Path, text: str) -> None:
    """Write a file whole or not at all (a run stopped midway leaves no half file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as f:
        f.write(text)
    os.replace(f.name, path)


# what a written answer may contain once rendered: text formatting, lists, tables, code,
# links to http(s) or mailto, images by http(s); no scripts, styles, frames or event handlers
WRITTEN_TAGS = {
    "p", "br", "hr", "em", "strong", "b", "i", "del", "sub", "sup", "code", "pre",
    "blockquote", "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6", "a", "img",
    "table", "thead", "tbody", "tr", "th", "td", "span", "div",
}  # fmt: skip
WRITTEN_ATTRIBUTES = {"a": ["href", "title"], "img": ["src", "alt", "title"], "th": ["align"],
                      "td": ["align"]}  # fmt: skip


def written_html(answer: str) -> str:
    """A student's written answer as formgrader and the feedback may show it.

    Both put a markdown cell into the page as Jupyter renders it, raw HTML and
    ``javascript:`` links included, and formgrader's page can change the gradebook: an
    ``<img onerror=...>`` in an answer would run in the instructor's browser. So the
    answer is rendered here, cleaned to :data:`WRITTEN_TAGS` and
    :data:`WRITTEN_ATTRIBUTES` (links and images to http, https or mailto only), and
    stored as that HTML. "[" becomes an entity, so that no markdown link can form when
    the page renders the cell again.
    """
    import bleach
    from nbconvert.filters.markdown import markdown2html

    cleaned = bleach.clean(
        markdown2html(answer),
        tags=WRITTEN_TAGS,
        attributes=WRITTEN_ATTRIBUTES,
        protocols={"http", "https", "mailto"},
        strip=True,
    )
    return cleaned.replace("[", "&#91;")


def autograded_notebook(source_nb: dict, result: dict) -> dict:
    """The notebook as graded, for formgrader and feedback: the plan's cells with the
    grader's outputs (a failed test shows its error, as nbgrader's autograde does)."""
    import nbformat

    cells = []
    for entry in result["cells"]:
        meta = entry["metadata"] if entry["grade_id"] else {}
        if entry["role"] == "text":  # the lab's own text
            cells.append(nbformat.v4.new_markdown_cell(entry["source"], metadata=meta))
        elif entry["role"] == "written":  # the student's: rendered and cleaned
            source = written_html(entry["source"])
            cells.append(nbformat.v4.new_markdown_cell(source, metadata=meta))
        else:
            cell = nbformat.v4.new_code_cell(entry["source"], metadata=meta)
            cell.outputs = [nbformat.from_dict(o) for o in entry["outputs"]]
            cells.append(cell)
    nb = nbformat.v4.new_notebook(cells=cells, metadata=source_nb.get("metadata", {}))
    nbformat.validate(nb)
    return json.loads(nbformat.writes(nb))


def _release_texts(course: Path, lab: str) -> dict[str, str]:
    from labtools.notebook import grade_id, text

    nb = json.loads((course / "release" / lab / f"{lab}.ipynb").read_text())
    return {grade_id(c): text(c) for c in nb["cells"] if grade_id(c)}


class Recorder:
    """Saves each notebook's outcome into the course folder; the one process that writes
    there. One gradebook session and each lab's stubs serve the whole run.
    ``with Recorder(course) as recorder: recorder.record(...)``."""

    def __init__(self, course: Path):
        self.course = course
        self._gb = None
        self._stubs: dict[str, dict[str, str]] = {}

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc) -> None:
        if self._gb is not None:
            self._gb.close()
            self._gb = None

    def gradebook(self, student: str, lab: str, result: dict) -> None:
        """The automatic scores of one notebook into nbgrader's gradebook (manual scores
        that an instructor entered stay)."""
        from nbgrader.api import Gradebook, MissingEntry

        if self._gb is None:
            self._gb = Gradebook(db_url(self.course))
        if lab not in self._stubs:
            self._stubs[lab] = _release_texts(self.course, lab)
        gb, stubs = self._gb, self._stubs[lab]
        with warnings.catch_warnings():
            # nbgrader's add_submission makes SQLAlchemy warn about its own session (harmless)
            warnings.simplefilter("ignore", category=Warning)
            gb.update_or_create_student(student)
            try:
                submission = gb.find_submission(lab, student)
            except MissingEntry:
                submission = gb.add_submission(lab, student)
            (notebook,) = [nb for nb in submission.notebooks if nb.name == lab]
            grades = {g.name: g for g in notebook.grades}
            comments = {c.name: c for c in notebook.comments}
            for entry in result["cells"]:
                gid = entry["grade_id"]
                if entry["role"] == "test":
                    grades[gid].auto_score = entry["score"]
                    grades[gid].needs_manual_grade = grades[gid].manual_score is not None
                elif entry["role"] == "written":
                    grades[gid].auto_score = None
                    grades[gid].needs_manual_grade = grades[gid].manual_score is None
                if entry["role"] in ("answer", "written"):
                    empty = entry["source"].strip() in ("", stubs.get(gid, "").strip())
                    comments[gid].auto_comment = "No response." if empty else None
            gb.db.commit()

    def record(self, sub: Submission, *, digest: str, data: bytes | None, result: dict) -> dict:
        """Save one notebook's outcome: submitted copy, autograded notebook, gradebook,
        then (last, so that a stopped run grades it again) ``results/<student>/<lab>.json``."""
        course = self.course
        row = {"student": sub.student, "lab": sub.lab, "digest": digest}
        if sub.refused:
            row["status"] = sub.refused
        elif "unreadable" in result:
            row["status"] = result["unreadable"]
        elif "error" in result:
            row["status"] = "grading failed: see logs"
            _write(course / "logs" / f"{sub.student}--{sub.lab}.log", result["error"])
        else:
            where = f"{sub.student}/{sub.lab}/{sub.lab}.ipynb"
            (course / "submitted" / where).parent.mkdir(parents=True, exist_ok=True)
            (course / "submitted" / where).write_bytes(data)
            _write(course / "autograded" / where, json.dumps(result["autograded"], indent=1))
            self.gradebook(sub.student, sub.lab, result)
            notes = list(result["notes"])
            if result["stopped"]:
                notes.insert(0, f"the notebook's process was stopped: {result['stopped']}")
            row["status"] = "graded" + "".join(f"; {n}" for n in notes)
            row["tests"] = {
                e["grade_id"]: {"score": e["score"], "points": e["points"], "message": e["message"]}
                for e in result["cells"]
                if e["role"] == "test"
            }
            row["seconds"] = result["seconds"]
            log = [f"{e['grade_id']}: {e['message']}" for e in result["cells"] if e.get("message")]
            _write(
                course / "logs" / f"{sub.student}--{sub.lab}.log",
                "\n".join([row["status"], *log, "--- output ---", result["output"]]) + "\n",
            )
        _write(course / "results" / sub.student / f"{sub.lab}.json", json.dumps(row, indent=1))
        return row


class Feedback:
    """nbgrader's feedback HTML for one notebook at a time, in this process (one nbgrader
    process per lab would cost seconds each): the notebook as graded, with the scores and
    comments in the gradebook, manual ones included."""

    def __init__(self, course: Path):
        from nbgrader.converters import GenerateFeedback
        from nbgrader.coursedir import CourseDirectory
        from traitlets.config import Config

        config = Config()
        config.CourseDirectory.root = str(course)
        config.CourseDirectory.db_url = db_url(course)
        self.course = course
        self.coursedir = CourseDirectory(config=config)
        self.converter = GenerateFeedback(coursedir=self.coursedir, config=config)
        self.converter.force = True

    def write(self, student: str, lab: str) -> None:
        self.coursedir.assignment_id, self.coursedir.student_id = lab, student
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self.converter.start()
        except Exception:  # noqa: BLE001 - no feedback for this one; the log says why
            _write(self.course / "logs" / f"feedback--{student}--{lab}.log", traceback.format_exc())


def generate_feedback(course: Path, labs: list[str], *, missing_only: bool = False) -> int:
    """Feedback for every graded notebook of these labs (again after manual grading), or
    only where it is missing or older than the result (``missing_only``: after a run that
    was stopped, or one whose feedback went to workers). Returns how many were written."""
    writer, written = None, 0
    for lab in labs:
        for result in sorted((course / "results").glob(f"*/{lab}.json")):
            student = result.parent.name
            html = course / "feedback" / student / lab / f"{lab}.html"
            if missing_only and html.exists() and html.stat().st_mtime >= result.stat().st_mtime:
                continue
            if json.loads(result.read_text())["status"].startswith("graded"):
                writer = writer or Feedback(course)
                writer.write(student, lab)
                written += 1
    return written


_WRITERS: dict[str, Feedback] = {}


def feedback_task(course: str, student: str, lab: str) -> None:
    """Write one notebook's feedback (runs in a worker of the local pool, which shares the
    course folder; each worker keeps one nbgrader converter)."""
    writer = _WRITERS.get(course) or _WRITERS.setdefault(course, Feedback(Path(course)))
    writer.write(student, lab)


def _one_thread_each() -> None:
    """Worker start: numpy's BLAS on one thread, as the grading runs one notebook per core
    (idle BLAS threads of several workers would spin on the same cores)."""
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = "1"


def default_executor(jobs: int) -> concurrent.futures.Executor:
    context = multiprocessing.get_context("spawn")  # a clean interpreter per worker
    return concurrent.futures.ProcessPoolExecutor(
        max_workers=jobs, mp_context=context, initializer=_one_thread_each
    )


def grade(
    submissions,
    course="grading",
    *,
    labs: list[str] | None = None,
    students: list[str] | None = None,
    jobs: int | None = None,
    regrade: bool = False,
    unsafe: bool = False,
    limits: Limits | None = None,
    executor: concurrent.futures.Executor | None = None,
    progress: bool = True,
) -> dict:
    """Grade every submission into ``course``; returns a summary (counts and rows).

    submissions : a folder or zip: ``[submitted/]<student>/<lab>/<lab>.ipynb``, or a Canvas
        or Moodle download (see :mod:`labtools.intake`; the summary lists what it could
        not place under "not placed")
    course : the course folder, made on the first run and reused after (see the module)
    labs : only these labs (default: all)
    students : only these students (default: all)
    jobs : notebooks graded at once (default: the number of cores); ignored with executor
    regrade : grade again notebooks that already have a result (manual scores stay)
    unsafe : run student code without the sandbox (refused otherwise when it is missing)
    executor : any concurrent.futures.Executor (e.g. a dask ``Client.get_executor()``); its
        workers need the sandbox, this machine does not (a worker without it fails each
        notebook; :mod:`labtools.cluster` checks a dask cluster's workers first)
    """
    from labtools import sandbox

    layout.check_arguments(str(submissions), str(course), labs)
    course, submissions = Path(course).resolve(), Path(submissions).resolve()
    missing = sandbox.available() if executor is None else None  # else: where it runs
    if missing and not unsafe:
        raise UsageError(
            f"the sandbox cannot run here: {missing}. Grading without it runs every "
            "student's code with your rights; to do that anyway, pass --unsafe."
        )
    limits = limits or Limits()
    all_labs = open_course(course)
    labs = labs or all_labs
    with tempfile.TemporaryDirectory(prefix="submissions-") as tmp:
        taken = intake.collect(submissions, labs, Path(tmp))
        found = taken.submissions
        if students:
            found = [sub for sub in found if sub.student in students]
        if not found:
            unplaced = "".join(f"\n  {u.file!r}: {u.why}" for u in taken.unplaced[:20])
            raise UsageError(
                f"no submissions found in {submissions}; expected {layout.EXPECTED}"
                + (f"; files not placed:{unplaced}" if unplaced else "")
            )
        todo, skipped, rows = [], [], []
        for sub in found:
            data = None
            if not sub.refused:
                try:
                    data = layout.read_notebook(sub.path)
                except (OSError, ValueError) as err:
                    sub.refused = f"refused: {err}"
            digest = hashlib.sha256(data or b"").hexdigest()
            done = course / "results" / sub.student / f"{sub.lab}.json"
            if done.exists() and not regrade:
                previous = json.loads(done.read_text())
                if previous.get("digest") != digest:
                    previous["status"] += "; the submission changed since: grade it with --regrade"
                    _write(done, json.dumps(previous, indent=1))
                skipped.append(previous)
                continue
            todo.append((sub, digest, data))
        rows += _run(
            course,
            todo,
            limits=limits,
            unsafe=unsafe,
            jobs=jobs,
            executor=executor,
            progress=progress,
        )
    exported = export(course)
    return {"graded": rows, "already graded": skipped, "exported": exported, **taken.report()}


class Queue:
    """The notebooks still to grade, longest first: a lab's expected time is the mean of
    its notebooks graded so far (in this run or an earlier one); a lab not yet seen goes
    first, once, to be measured. Longest first keeps the cores busy to the end: a long
    notebook started last would leave the other cores idle while it runs."""

    def __init__(self, todo: list, seconds: dict[str, list[float]]):
        self.pending: dict[str, list] = {}
        for item in todo:
            self.pending.setdefault(item[0].lab, []).append(item)
        for items in self.pending.values():
            items.reverse()  # popped from the end: each lab's notebooks in the order given
        self.seconds = {lab: list(values) for lab, values in seconds.items()}
        self.started: set[str] = set()

    def __len__(self) -> int:
        return sum(len(items) for items in self.pending.values())

    def expected(self, lab: str) -> float:
        if self.seconds.get(lab):
            return sum(self.seconds[lab]) / len(self.seconds[lab])
        return float("inf") if lab not in self.started else 0.0

    def pop(self):
        lab = max((lab for lab, items in self.pending.items() if items), key=self.expected)
        self.started.add(lab)
        return self.pending[lab].pop()

    def measured(self, lab: str, seconds: float | None) -> None:
        if seconds is not None:
            self.seconds.setdefault(lab, []).append(seconds)


def _seconds_so_far(course: Path) -> dict[str, list[float]]:
    """Each lab's grading times recorded in the course folder by earlier runs."""
    seconds: dict[str, list[float]] = {}
    for path in (course / "results").glob("*/*.json"):
        try:
            row = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(row.get("seconds"), (int, float)):
            seconds.setdefault(path.stem, []).append(row["seconds"])
    return seconds


def _not_run(sub: Submission, digest: str) -> dict:
    """The row of a notebook whose task was cancelled: not saved, so the next run grades it."""
    status = "not graded: the cluster stopped before grading it; run the same command again"
    return {"student": sub.student, "lab": sub.lab, "digest": digest, "status": status}


def _run(course, todo, *, limits, unsafe, jobs, executor, progress) -> list[dict]:
    """Grade ``todo`` on the executor, record each result as it comes, and have the
    feedback written: by the workers of our own pool (they share the course folder), else
    here at the end.

    Our own pool gets one notebook more than it has workers, chosen by :class:`Queue` as
    each result comes in (so the feedback runs between notebooks, not all at the end);
    another executor gets every notebook at once, in the queue's order.
    """
    from tqdm import tqdm

    mpl_cache = _mpl_cache()
    sources = {
        lab: json.loads((course / "source" / lab / f"{lab}.ipynb").read_text())
        for lab in {sub.lab for sub, _, _ in todo}
    }
    rows = []
    own = executor is None
    workers = jobs or os.cpu_count() or 1
    executor = executor or default_executor(workers)
    bar = tqdm(total=len(todo), unit="notebook", disable=not progress, desc="grading")
    failures, feedback, running = 0, [], {}
    queue = Queue([item for item in todo if not item[0].refused], _seconds_so_far(course))
    in_flight = workers + 1 if own else len(todo)

    def submit() -> None:
        while queue and len(running) < in_flight:
            sub, digest, data = queue.pop()
            task = {
                "student": sub.student,
                "lab": sub.lab,
                "source": sources[sub.lab],
                "notebook": data.decode("utf-8", errors="replace"),
                "limits": asdict(limits),
                "unsafe": unsafe,
                "mpl_cache": mpl_cache,
            }
            running[executor.submit(grade_task, task)] = (sub, digest, data)

    try:
        with Recorder(course) as recorder:
            for sub, digest, _ in todo:
                if sub.refused:
                    rows.append(recorder.record(sub, digest=digest, data=None, result={}))
                    bar.update()
            submit()
            while running:
                done, _ = concurrent.futures.wait(
                    running, return_when=concurrent.futures.FIRST_COMPLETED
                )
                for future in done:
                    sub, digest, data = running.pop(future)
                    if future.cancelled():  # the executor went away (a dask scheduler lost):
                        rows.append(_not_run(sub, digest))  # nothing recorded, run again
                        failures += 1
                        bar.update()
                        continue
                    try:
                        result = future.result()
                    except Exception:  # noqa: BLE001 - a worker that died: that row, not the run
                        result = {"error": traceback.format_exc()}
                    queue.measured(sub.lab, result.get("seconds"))
                    row = recorder.record(sub, digest=digest, data=data, result=result)
                    rows.append(row)
                    if own and row["status"].startswith("graded"):
                        feedback.append(
                            executor.submit(feedback_task, str(course), sub.student, sub.lab)
                        )
                    failures += not row["status"].startswith("graded")
                    bar.set_postfix(not_graded=failures)
                    bar.update()
                submit()
        concurrent.futures.wait(feedback)
    finally:
        bar.close()
        if own:
            executor.shutdown(cancel_futures=True)
    # what no worker wrote (another executor, a failure, a run stopped before)
    generate_feedback(course, layout.lab_names(course), missing_only=True)
    return rows


def _students(course: Path) -> list[str]:
    results = course / "results"
    found = {p.name for p in results.iterdir() if p.is_dir()} if results.exists() else set()
    return sorted(found)


def export(course) -> dict[str, Path]:
    """``grades.csv`` (a row per student and lab) and ``grades-wide.csv`` (a row per
    student, a column per lab) from the results and the gradebook's manual scores."""
    from nbgrader.api import Gradebook, MissingEntry

    course = Path(course)
    labs = layout.lab_names(course)
    rows = []
    with Gradebook(db_url(course)) as gb:
        maxima = {lab: gb.find_assignment(lab).max_score for lab in labs}
        for student in _students(course):
            for lab in labs:
                row = {"student": student, "lab": lab, "automatic": 0.0, "manual": 0.0}
                row.update(total=0.0, max_score=maxima[lab], status="missing")
                result = course / "results" / student / f"{lab}.json"
                if result.exists():
                    row["status"] = json.loads(result.read_text())["status"]
                if row["status"].startswith("graded"):
                    try:
                        notebook = gb.find_submission_notebook(lab, lab, student)
                    except MissingEntry:
                        notebook = None
                    waiting = 0.0
                    for grade in notebook.grades if notebook else []:
                        if grade.manual_score is not None:
                            row["manual"] += grade.manual_score
                        elif grade.auto_score is not None:
                            row["automatic"] += grade.auto_score
                        else:
                            waiting += grade.max_score
                    row["total"] = row["automatic"] + row["manual"]
                    if waiting:
                        row["status"] += f"; {waiting:g} points wait for manual grading"
                rows.append(row)
    fields = ["student", "lab", "automatic", "manual", "total", "max_score", "status"]
    long_csv, wide_csv = course / "grades.csv", course / "grades-wide.csv"
    with open(long_csv, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    with open(wide_csv, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["student", *labs, "total", "max_score"])
        for student in _students(course):
            mine = {r["lab"]: r["total"] for r in rows if r["student"] == student}
            writer.writerow(
                [student, *(mine[lab] for lab in labs), sum(mine.values()), sum(maxima.values())]
            )
    return {"grades": long_csv, "wide": wide_csv}
