"""Recording each notebook's outcome into the course folder, the moment it is graded.

:class:`Recorder` is the one writer of the course folder during a run: the submitted copy,
the autograded notebook, nbgrader's gradebook (automatic scores; manual ones stay), the
log, and last ``results/<student>/<lab>.json`` (a :class:`~labtools.wire.Row`), so that a
run that is stopped resumes where it was.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path

from labtools.course import folder as courses
from labtools.door.layout import Submission, write_whole
from labtools.wire import Outcome, Row, Status, capped


def held_exercises(review: list) -> set[str | None]:
    """The exercises whose automatic points a review holds (None: all of them)."""
    return {finding["exercise"] for finding in review if finding["held"]}


def held_comment(why: list, cells: list, exercise: str | None) -> str:
    """The comment on a held answer: why, and what the exercise's tests earned (what
    ``review --accept`` gives; *Full credit* in formgrader gives all points)."""
    from perceptrons.handin import exercise_of

    tests = [c for c in cells if c["role"] == "test" and exercise_of(c["grade_id"]) == exercise]
    earned = sum(c.get("score", 0.0) for c in tests)
    points = sum(c.get("points", 0.0) for c in tests)
    reasons = "; ".join(f"{f['cell']}, line {f['line']}: {f['what']}" for f in why)
    return (
        f"Held for the instructor's review: {reasons}. Its tests earned {earned:g} of "
        f"{points:g} points."
    )


def is_held(grade_id: str, held: set) -> bool:
    from perceptrons.handin import exercise_of

    return None in held or exercise_of(grade_id) in held


def release_texts(course: Path, lab: str) -> dict[str, str]:
    """Each graded cell's text in the student version (a stub left as it was is no answer)."""
    from labtools.grader.notebook import grade_id, text

    nb = json.loads((course / "release" / lab / f"{lab}.ipynb").read_text())
    return {grade_id(c): text(c) for c in nb["cells"] if grade_id(c)}


NOTES = 8  # notes a row's status shows (the log has every one)
NOTE = 200  # characters of each note shown
# what a row's status says of scores given by hand for answers that changed since
STALE = "scores given by hand for answers that changed since, not kept"


def answer_digests(result: dict) -> dict[str, str]:
    """{grade id: SHA-256 of its text} of each answer cell as graded (the text the
    instructor reads in formgrader), and ``"*"``: of all of them together (what a score
    given by hand to a test cell belongs to)."""
    found, everything = {}, hashlib.sha256()
    for entry in result["cells"]:
        gid = entry.get("grade_id")
        if gid and entry["role"] in ("answer", "written") and gid not in found:
            data = entry["source"].encode("utf-8", "surrogatepass")
            found[gid] = hashlib.sha256(data).hexdigest()
            everything.update(f"{len(gid)}:{gid}{found[gid]}".encode("utf-8", "surrogatepass"))
    found["*"] = everything.hexdigest()
    return found


def same_answer(previous: Row | None, digest: str, key: str, now: dict[str, str]) -> bool:
    """Whether the answer ``key`` (a grade id, or "*") is the one the row graded before
    (``previous``) had: by its digest where the row kept it, else by the whole notebook's
    (a row of an earlier version); no row before: not known, so not the same."""
    if previous is None:
        return False
    if previous.answers is not None:
        return previous.answers.get(key) == now.get(key)
    return bool(previous.digest) and previous.digest == digest


def shown_notes(notes: list[str]) -> str:
    """The notes as a row's status shows them: each cut to :data:`NOTE` characters, at most
    :data:`NOTES` of them, and how many more the log has."""
    shown = [capped(n, NOTE) for n in notes[:NOTES]]
    if len(notes) > NOTES:
        shown.append(f"{len(notes) - NOTES} more notes in the log")
    return "".join(f"; {n}" for n in shown)


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

    def gradebook(
        self,
        student: str,
        lab: str,
        result: dict,
        previous: Row | None = None,
        digest: str = "",
    ) -> list[str]:
        """The automatic scores of one notebook into nbgrader's gradebook. A score that an
        instructor gave by hand stays if it was given for the same answer (``previous``:
        the row graded before, with its answers' digests, :func:`same_answer`); one for an
        answer that changed since is taken out and its cell waits for grading by hand
        again. Returns a note for each score taken out ("ex6-answer (2 points)")."""
        from nbgrader.api import Gradebook, MissingEntry

        if self._gb is None:
            self._gb = Gradebook(courses.db_url(self.course))
        if lab not in self._stubs:
            self._stubs[lab] = release_texts(self.course, lab)
        gb, stubs = self._gb, self._stubs[lab]
        now = answer_digests(result)
        dropped = []
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
                grade = grades.get(gid) if gid else None
                if grade is not None and grade.manual_score is not None:
                    key = gid if entry["role"] in ("answer", "written") else "*"
                    if not same_answer(previous, digest, key, now):
                        dropped.append(f"{gid} ({grade.manual_score:g} points)")
                        grade.manual_score = None
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
                    from perceptrons.handin import exercise_of

                    exercise = exercise_of(gid)
                    why = [
                        f
                        for f in result.get("review", [])
                        if f["held"] and (f["cell"] == gid or f["exercise"] in (None, exercise))
                    ]
                    if entry["role"] == "answer" and why and is_held(gid, held):
                        comments[gid].auto_comment = held_comment(why, result["cells"], exercise)
            gb.db.commit()
        return dropped

    def record(
        self, sub: Submission, *, digest: str, data: bytes | None, outcome: Outcome | None
    ) -> Row:
        """Save one notebook's outcome (None for a refused submission): submitted copy,
        autograded notebook, gradebook, then (last, so that a stopped run grades it again)
        ``results/<student>/<lab>.json``."""
        course = self.course
        log = course / "logs" / f"{sub.student}--{sub.lab}.log"
        path = courses.result_path(course, sub.student, sub.lab)
        if sub.refused:
            row = Row.of(sub.student, sub.lab, digest, sub.refused)
        elif outcome.status is Status.UNREADABLE:
            row = Row(sub.student, sub.lab, digest, Status.UNREADABLE, outcome.detail)
        elif outcome.status is not Status.GRADED:
            row = Row(sub.student, sub.lab, digest, Status.FAILED, ": see logs")
            write_whole(log, outcome.detail)
        else:
            try:
                row = self._graded(sub, digest, data, outcome, path, log)
            except Exception:  # noqa: BLE001 - this notebook's, never the class's: failed,
                import traceback  # with why in its log, and graded again by the next run

                if self._gb is not None:
                    self._gb.db.rollback()
                row = Row(sub.student, sub.lab, digest, Status.FAILED, ": see logs")
                write_whole(log, "recording failed\n" + traceback.format_exc())
        write_whole(path, json.dumps(row.to_json(), indent=1))
        return row

    def _graded(self, sub, digest: str, data, outcome: Outcome, path: Path, log: Path) -> Row:
        """A graded notebook into the course folder: its copies, the gradebook, its log;
        returns its row (:meth:`record` writes it)."""
        course = self.course
        result = outcome.evaluation
        previous = None
        if path.exists():
            try:
                previous = read_row(path)
            except (OSError, ValueError, KeyError, TypeError):
                previous = None
        where = f"{sub.student}/{sub.lab}/{sub.lab}.ipynb"
        write_whole(course / "submitted" / where, data)
        write_whole(course / "autograded" / where, json.dumps(outcome.autograded, indent=1))
        dropped = self.gradebook(sub.student, sub.lab, result, previous, digest)
        notes = list(result["notes"])
        if result["stopped"]:
            notes.insert(0, f"the notebook's process was stopped: {result['stopped']}")
        if dropped:  # first: what the instructor must do again
            notes.insert(0, f"{STALE}: {', '.join(dropped)}; grade them again in formgrader")
        row = Row(sub.student, sub.lab, digest, Status.GRADED)
        row.detail = shown_notes(notes)
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
        row.answers = answer_digests(result)
        messages = [f"{e['grade_id']}: {e['message']}" for e in result["cells"] if e.get("message")]
        whole = [Status.GRADED.value, *(f"note: {n}" for n in notes), *messages]
        write_whole(log, "\n".join([*whole, "--- output ---", result["output"]]) + "\n")
        return row


def read_row(path: Path) -> Row:
    """A row as :meth:`Recorder.record` wrote it (by this version or an earlier one)."""
    return Row.from_json(json.loads(path.read_text()))
