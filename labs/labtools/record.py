"""Recording each notebook's outcome into the course folder, the moment it is graded.

:class:`Recorder` is the one writer of the course folder during a run: the submitted copy,
the autograded notebook, nbgrader's gradebook (automatic scores; manual ones stay), the
log, and last ``results/<student>/<lab>.json`` (a :class:`~labtools.wire.Row`), so that a
run that is stopped resumes where it was.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from labtools import course as courses
from labtools.layout import Submission, write_whole
from labtools.wire import Outcome, Row, Status


def held_exercises(review: list) -> set[str | None]:
    """The exercises whose automatic points a review holds (None: all of them)."""
    return {finding["exercise"] for finding in review if finding["held"]}


def is_held(grade_id: str, held: set) -> bool:
    from perceptrons.handin import exercise_of

    return None in held or exercise_of(grade_id) in held


def release_texts(course: Path, lab: str) -> dict[str, str]:
    """Each graded cell's text in the student version (a stub left as it was is no answer)."""
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
            self._gb = Gradebook(courses.db_url(self.course))
        if lab not in self._stubs:
            self._stubs[lab] = release_texts(self.course, lab)
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
            held = held_exercises(result.get("review", []))
            for entry in result["cells"]:
                gid = entry["grade_id"]
                if entry["role"] == "test" and is_held(gid, held):  # for the instructor to
                    grades[gid].auto_score = 0.0  # give, in formgrader or `review --accept`
                    grades[gid].needs_manual_grade = grades[gid].manual_score is None
                elif entry["role"] == "test":
                    grades[gid].auto_score = entry["score"]
                    grades[gid].needs_manual_grade = grades[gid].manual_score is not None
                elif entry["role"] == "written":
                    grades[gid].auto_score = None
                    grades[gid].needs_manual_grade = grades[gid].manual_score is None
                if entry["role"] in ("answer", "written"):
                    empty = entry["source"].strip() in ("", stubs.get(gid, "").strip())
                    comments[gid].auto_comment = "No response." if empty else None
                    why = [
                        f
                        for f in result.get("review", [])
                        if f["held"] and (f["cell"] == gid or f["exercise"] is None)
                    ]
                    if entry["role"] == "answer" and why and is_held(gid, held):
                        comments[gid].auto_comment = "Held for the instructor's review: " + (
                            "; ".join(f"{f['cell']}, line {f['line']}: {f['what']}" for f in why)
                        )
            gb.db.commit()

    def record(
        self, sub: Submission, *, digest: str, data: bytes | None, outcome: Outcome | None
    ) -> Row:
        """Save one notebook's outcome (None for a refused submission): submitted copy,
        autograded notebook, gradebook, then (last, so that a stopped run grades it again)
        ``results/<student>/<lab>.json``."""
        course = self.course
        log = course / "logs" / f"{sub.student}--{sub.lab}.log"
        if sub.refused:
            row = Row.of(sub.student, sub.lab, digest, sub.refused)
        elif outcome.status is Status.UNREADABLE:
            row = Row(sub.student, sub.lab, digest, Status.UNREADABLE, outcome.detail)
        elif outcome.status is not Status.GRADED:
            row = Row(sub.student, sub.lab, digest, Status.FAILED, ": see logs")
            write_whole(log, outcome.detail)
        else:
            result = outcome.evaluation
            where = f"{sub.student}/{sub.lab}/{sub.lab}.ipynb"
            (course / "submitted" / where).parent.mkdir(parents=True, exist_ok=True)
            (course / "submitted" / where).write_bytes(data)
            write_whole(course / "autograded" / where, json.dumps(outcome.autograded, indent=1))
            self.gradebook(sub.student, sub.lab, result)
            notes = list(result["notes"])
            if result["stopped"]:
                notes.insert(0, f"the notebook's process was stopped: {result['stopped']}")
            row = Row(sub.student, sub.lab, digest, Status.GRADED)
            row.detail = "".join(f"; {n}" for n in notes)
            held = held_exercises(result.get("review", []))
            row.tests = {
                e["grade_id"]: {"score": e["score"], "points": e["points"], "message": e["message"]}
                for e in result["cells"]
                if e["role"] == "test"
            }
            for gid, verdict in row.tests.items():
                if is_held(gid, held):
                    verdict["held"] = True
            row.review = result.get("review") or None
            row.seconds = result["seconds"]
            messages = [
                f"{e['grade_id']}: {e['message']}" for e in result["cells"] if e.get("message")
            ]
            write_whole(
                log, "\n".join([row.text, *messages, "--- output ---", result["output"]]) + "\n"
            )
        path = courses.result_path(course, sub.student, sub.lab)
        write_whole(path, json.dumps(row.to_json(), indent=1))
        return row


def read_row(path: Path) -> Row:
    """A row as :meth:`Recorder.record` wrote it (by this version or an earlier one)."""
    return Row.from_json(json.loads(path.read_text()))
