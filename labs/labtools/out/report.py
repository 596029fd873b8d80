"""The class report: ``report.html`` in the course folder (``python -m labtools report``).

One self-contained page, read from the course folder alone (no gradebook, no network):
for each lab, how many students were graded, missing, not graded and late, the time per
notebook, the distribution of the total automatic score, and for each test cell (by its
nbgrader grade id) the distribution of its score and the commonest failure messages, each
with its count and one student who got it; the notebooks whose answers are held for the
instructor's review (:mod:`labtools.course.review`) and why; then the pairs of students
whose answers are unusually alike (:mod:`labtools.out.similarity`), with the two answers side by
side.

Its figures are PNG images inside the page (matplotlib, Agg), each with alt text that says
what it shows; its style is inline; it has no script. Everything a student controls
(messages, ids, names, answers) is escaped. Manual scores are not read: it shows what the
tests measured. Each student id has the name the course folder knows beside it (the page
is the instructor's). Only the labs that are set have a section
(:func:`labtools.out.export.set_labs`); the others are named in one line.
"""

from __future__ import annotations

import base64
import html
import io
import json
import re
import statistics
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from labtools.course import folder as courses
from labtools.course.record import read_row
from labtools.door import layout
from labtools.grader import notebook as nbcells
from labtools.out import similarity
from labtools.wire import Row, Status

REPORT = "report.html"
TOP_MESSAGES = 5  # failure messages listed per test cell
MAX_MESSAGE = 500  # characters of a message shown (and compared)
MAX_PAIRS = 40  # similar pairs shown, the closest first
MAX_SHOWN = 4_000  # characters of an answer shown beside the other
LATE = "not recorded (no submission time or late mark is kept for this lab)"

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 75rem; margin: 1rem auto;
  padding: 0 1rem; color: #1a1a1a; background: #fff; line-height: 1.4; }
table { border-collapse: collapse; margin: .5rem 0 1rem; }
th, td { border: 1px solid #bbb; padding: .25rem .5rem; text-align: left; vertical-align: top; }
th { background: #eef; }
pre { white-space: pre-wrap; word-break: break-word; background: #f6f6f6; padding: .5rem;
  margin: 0; font-size: .85rem; max-height: 30rem; overflow: auto; }
.side { display: grid; grid-template-columns: 1fr 1fr; gap: .5rem; margin-bottom: 1rem; }
figure { margin: .5rem 0; } img { max-width: 100%; height: auto; }
section.lab { border-top: 2px solid #446; margin-top: 2rem; }
.note { color: #444; font-size: .9rem; }
"""


def esc(value) -> str:
    return html.escape(str(value), quote=True)


def anchor(*parts: str) -> str:
    """An element id made of ``parts`` (lab and grade ids are the instructor's)."""
    return "-".join(re.sub(r"[^A-Za-z0-9_]+", "_", p) for p in parts)


@dataclass
class Lab:
    """What the course folder says about one lab."""

    name: str
    tests: dict[str, float] = field(default_factory=dict)  # grade id -> points, in order
    answers: dict[str, str] = field(default_factory=dict)  # grade id -> "code" / "markdown"
    solutions: dict[str, str] = field(default_factory=dict)
    stubs: dict[str, str] = field(default_factory=dict)
    given: frozenset[str] = frozenset()
    rows: dict[str, Row] = field(default_factory=dict)  # student -> row


def _read_json(path: Path) -> dict | None:
    try:
        if path.stat().st_size > layout.MAX_NOTEBOOK:
            return None
        data = json.loads(path.read_text(errors="replace"))
    except (OSError, ValueError, RecursionError):  # (a copy an earlier version kept as handed in)
        return None
    return data if isinstance(data, dict) else None


def _cells(nb: dict | None) -> list[dict]:
    cells = nb.get("cells") if nb else None
    return [c for c in cells if isinstance(c, dict)] if isinstance(cells, list) else []


def read_lab(course: Path, name: str, students: list[str]) -> Lab:
    lab = Lab(name)
    for cell in _cells(_read_json(course / "source" / name / f"{name}.ipynb")):
        gid = nbcells.grade_id(cell)
        if gid and nbcells.is_test(cell):
            lab.tests[gid] = float(nbcells.nbgrader(cell).get("points", 0) or 0)
        elif gid and nbcells.is_answer(cell):
            lab.answers[gid] = cell.get("cell_type", "code")
            lines = nbcells.text(cell).splitlines(keepends=True)
            lab.solutions[gid] = "".join(line for line in lines if "### " not in line)
    release = _cells(_read_json(course / "release" / name / f"{name}.ipynb"))
    lab.stubs = {nbcells.grade_id(c): nbcells.text(c) for c in release if nbcells.grade_id(c)}
    code = [nbcells.text(c) for c in release if c.get("cell_type") == "code"]
    lab.given = similarity.given_names(code)
    for student in students:
        path = courses.result_path(course, student, name)
        if path.exists():
            try:
                lab.rows[student] = read_row(path)
            except (OSError, ValueError, KeyError, TypeError):
                lab.rows[student] = Row(student, name, "", Status.UNREADABLE, " (results file)")
    for row in lab.rows.values():  # tests a row has that the source does not (an old copy)
        for gid, test in (row.tests or {}).items():
            if isinstance(test, dict):
                lab.tests.setdefault(gid, float(test.get("points") or 0))
    return lab


def submitted_answers(
    course: Path, lab: Lab
) -> tuple[list[similarity.Answer], dict[str, dict[str, str]]]:
    """Each graded student's answer cells, matched by grade id (the first of each): what
    similarity compares (:func:`labtools.out.similarity.stripped`, then cut), and what the
    page shows of each: the answer as written when it fits in :data:`MAX_SHOWN`
    characters, else what similarity compared (a long comment does not fill the page)."""
    found, shown = [], {}
    code = {gid: kind == "code" for gid, kind in lab.answers.items()}
    for student, row in sorted(lab.rows.items()):
        if not row.graded:
            continue
        path = course / "submitted" / student / lab.name / f"{lab.name}.ipynb"
        cells: dict[str, str] = {}
        mine: dict[str, str] = {}
        for cell in _cells(_read_json(path)):
            gid = nbcells.grade_id(cell)
            if (
                gid in lab.answers
                and gid not in cells
                and cell.get("cell_type") == lab.answers[gid]
            ):
                text = nbcells.text(cell)
                cells[gid] = similarity.stripped(text, code[gid])[: similarity.MAX_CHARS]
                mine[gid] = text if len(text) <= MAX_SHOWN else cells[gid][: MAX_SHOWN + 1]
        found.append(similarity.Answer(student, cells, code))
        shown[student] = mine
    return found, shown


def lab_pairs(course: Path, lab: Lab) -> tuple[list[similarity.Pair], dict[str, dict]]:
    """The lab's similar pairs, and each student's answers (to show them)."""
    answers, shown = submitted_answers(course, lab)
    code = {gid: kind == "code" for gid, kind in lab.answers.items()}
    texts = {gid: [lab.stubs.get(gid, ""), lab.solutions.get(gid, "")] for gid in lab.answers}
    excluded = similarity.excluded_kgrams(texts, code, lab.given)
    pairs = similarity.similar_pairs(lab.name, answers, excluded, lab.given)
    return pairs, shown


# --- figures -------------------------------------------------------------------------------


def bar_figure(counts: dict[float, int], xlabel: str, alt: str) -> str:
    """An <img> of a bar chart (number of students per score), as a PNG data URI."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4.0, 2.2), dpi=80)
    fig.subplots_adjust(left=0.14, right=0.97, bottom=0.24, top=0.95)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    keys = sorted(counts)
    ax.bar([f"{k:g}" for k in keys], [counts[k] for k in keys], color="#4a6fa5")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("students")
    ax.yaxis.get_major_locator().set_params(integer=True)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img src="data:image/png;base64,{data}" alt="{esc(alt)}">'


def distribution_text(what: str, counts: dict[float, int], out_of: float) -> str:
    parts = [f"{n} scored {k:g}" for k, n in sorted(counts.items())]
    return f"{what}, out of {out_of:g}: " + ("; ".join(parts) or "no graded notebook")


# --- sections -------------------------------------------------------------------------------


def _score(value) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def late_count(course: Path, lab: Lab) -> str:
    """How many graded notebooks of ``lab`` were late, from the submission times and late
    marks the course folder keeps and its late policy (:mod:`labtools.course.late`)."""
    from labtools.course import late

    times, policy = late.read_times(course), late.load(course)
    known, found = 0, []
    for student, row in sorted(lab.rows.items()):
        submitted = times.of(student, lab.name, row.digest) if row.graded else None
        if submitted is None or (submitted.time is None and not submitted.late):
            continue
        known += 1
        assessed = late.assess(student, lab.name, 1.0, policy, submitted)
        if submitted.late or assessed.days:
            found.append(student)
    if not known:
        return LATE
    shown = ", ".join(found[:10]) + (", ..." if len(found) > 10 else "")
    return f"{len(found)} of {known} with a known time or mark" + (f": {shown}" if found else "")


def lab_section(
    lab: Lab, students: list[str], course: Path | None = None, names: dict | None = None
) -> str:
    from labtools.door.intake import shown

    def who(student: str) -> str:
        return shown(student, names or {})

    graded = {s: r for s, r in lab.rows.items() if r.graded}
    missing = [s for s in students if s not in lab.rows]
    other = Counter(r.status.value for r in lab.rows.values() if not r.graded)
    seconds = [r.seconds for r in graded.values() if isinstance(r.seconds, int | float)]
    out = [f'<section class="lab" id="{anchor("lab", lab.name)}">', f"<h2>{esc(lab.name)}</h2>"]
    out.append("<table>")
    out.append(f"<tr><th>graded</th><td>{len(graded)}</td></tr>")
    out.append(f"<tr><th>missing (no submission)</th><td>{len(missing)}</td></tr>")
    for status, count in sorted(other.items()):
        out.append(f"<tr><th>{esc(status)}</th><td>{count}</td></tr>")
    late = late_count(course, lab) if course is not None else LATE
    out.append(f"<tr><th>late</th><td>{esc(late)}</td></tr>")
    if seconds:
        slowest = max(graded.values(), key=lambda r: r.seconds or 0)
        out.append(
            f"<tr><th>seconds per notebook</th><td>median {statistics.median(seconds):.1f}, "
            f"max {max(seconds):.1f} ({esc(who(slowest.student))})</td></tr>"
        )
    else:
        out.append("<tr><th>seconds per notebook</th><td>none graded</td></tr>")
    out.append("</table>")
    if missing:
        out.append(f'<p class="note">Missing: {esc(", ".join(map(who, missing)))}</p>')
    out.append(held_section(lab, graded, who))
    total_points = sum(lab.tests.values())
    totals: Counter = Counter()
    for row in graded.values():
        tests = row.tests or {}
        totals[round(sum(_score(t.get("score")) or 0 for t in tests.values()), 2)] += 1
    alt = distribution_text(f"{lab.name}: automatic score per student", totals, total_points)
    out.append(f"<figure>{bar_figure(totals, 'automatic score', alt)}")
    out.append(f"<figcaption>{esc(alt)}</figcaption></figure>")
    out.append(f'<h3>Test cells</h3><table id="{anchor("tests", lab.name)}">')
    out.append("<tr><th>grade id</th><th>points</th><th>full</th>")
    out.append("<th>partial</th><th>zero</th><th>mean</th></tr>")
    details = []
    for gid, points in lab.tests.items():
        scores, messages, example = Counter(), Counter(), {}
        for student, row in sorted(graded.items()):
            test = (row.tests or {}).get(gid)
            score = _score(test.get("score")) if isinstance(test, dict) else None
            if score is None:
                continue
            scores[score] += 1
            message = test.get("message")
            if score < points and isinstance(message, str) and message.strip():
                key = message.strip()[:MAX_MESSAGE]
                messages[key] += 1
                example.setdefault(key, student)
        n = sum(scores.values())
        full = sum(c for s, c in scores.items() if s >= points)
        zero = sum(c for s, c in scores.items() if s <= 0 < points)
        mean = sum(s * c for s, c in scores.items()) / n if n else 0.0
        ident = anchor("test", lab.name, gid)
        out.append(
            f'<tr><td><a href="#{ident}">{esc(gid)}</a></td><td>{points:g}</td><td>{full}</td>'
            f"<td>{n - full - zero}</td><td>{zero}</td><td>{mean:.2f}</td></tr>"
        )
        alt = distribution_text(f"{lab.name}, {gid}: score per student", scores, points)
        part = [f'<div id="{ident}"><h4>{esc(gid)} ({points:g} points)</h4>']
        part.append(f"<figure>{bar_figure(scores, 'score', alt)}</figure>")
        if messages:
            part.append("<table><tr><th>failure message</th><th>students</th><th>e.g.</th></tr>")
            for message, count in messages.most_common(TOP_MESSAGES):
                part.append(
                    f"<tr><td><pre>{esc(message)}</pre></td><td>{count}</td>"
                    f"<td>{esc(who(example[message]))}</td></tr>"
                )
            part.append("</table>")
            if len(messages) > TOP_MESSAGES:
                part.append(f'<p class="note">{len(messages) - TOP_MESSAGES} other messages</p>')
        else:
            part.append('<p class="note">No failure message.</p>')
        details.append("".join(part) + "</div>")
    out.append("</table>")
    out += details
    out.append("</section>")
    return "\n".join(out)


def held_section(lab: Lab, graded: dict[str, Row], who) -> str:
    """The notebooks of ``lab`` whose answers wait for the instructor's review
    (:mod:`labtools.course.review`): what their held tests earned, and why they are held."""
    held = {s: r for s, r in sorted(graded.items()) if r.held}
    title = f'<h3 id="{anchor("held", lab.name)}">Held for review ({len(held)})</h3>'
    if not held:
        return title + '<p class="note">No answer held.</p>'
    out = [
        title,
        '<p class="note">Their tests ran; their points wait for you (formgrader, or '
        "<code>python3 tasks.py review --accept STUDENT/LAB</code>). The scores below "
        "count what the held tests earned.</p>",
        "<table><tr><th>student</th><th>held tests</th><th>earned</th><th>why</th></tr>",
    ]
    for student, row in held.items():
        earned = sum(_score(row.tests[g].get("score")) or 0 for g in row.held)
        points = sum(_score(row.tests[g].get("points")) or 0 for g in row.held)
        out.append(
            f"<tr><td>{esc(who(student))}</td><td>{esc(', '.join(row.held))}</td>"
            f"<td>{earned:g} of {points:g}</td>"
            f"<td><pre>{esc(chr(10).join(row.reasons())[:MAX_MESSAGE])}</pre></td></tr>"
        )
    out.append("</table>")
    return "\n".join(out)


def similarity_section(
    pairs: list[similarity.Pair], shown: dict[tuple, dict], names: dict | None = None
) -> str:
    from labtools.door.intake import shown as named

    def who(student: str) -> str:
        return named(student, names or {})

    out = ['<section id="similarity"><h2>Similar answers</h2>']
    out.append(
        f'<p class="note">Pairs whose answer cells share at least {similarity.MIN_SHARED} '
        f"fingerprints ({similarity.K}-token runs, names renamed, comments and blank "
        "lines left out, the stub and the instructor's solution left out, and what more "
        f"than a tenth of a lab's class writes) with a Jaccard index of at least "
        f"{similarity.THRESHOLD:.0%}, or of which one answer's are at least "
        f"{similarity.CONTAINED:.0%} in the other's; closest first (the larger of the two "
        "scores). Alike is not copied: read both answers (a long one is shown without its "
        "comments).</p>"
    )
    if not pairs:
        out.append("<p>No pair above the threshold.</p></section>")
        return "\n".join(out)
    out.append("<table><tr><th>#</th><th>lab</th><th>students</th><th>score</th>")
    out.append("<th>cells alike: score, shared fingerprints (of each one's)</th></tr>")
    for i, p in enumerate(pairs[:MAX_PAIRS], 1):
        cells = "; ".join(f"{g} {s:.0%}, {n} ({a}, {b})" for g, s, n, a, b in p.cells)
        out.append(
            f'<tr><td><a href="#pair-{i}">{i}</a></td><td>{esc(p.lab)}</td>'
            f"<td>{esc(who(p.first))} and {esc(who(p.second))}</td><td>{p.score:.0%}</td>"
            f"<td>{esc(cells)}</td></tr>"
        )
    out.append("</table>")
    if len(pairs) > MAX_PAIRS:
        out.append(f'<p class="note">{len(pairs) - MAX_PAIRS} more pairs not shown.</p>')
    for i, p in enumerate(pairs[:MAX_PAIRS], 1):
        out.append(
            f'<div id="pair-{i}"><h3>{i}. {esc(p.lab)}: {esc(who(p.first))} and '
            f"{esc(who(p.second))} ({p.score:.0%})</h3>"
        )
        answers = shown[p.lab]
        for gid, score, *_ in p.cells:
            out.append(f"<h4>{esc(gid)} ({score:.0%})</h4><div class=side>")
            for student in (p.first, p.second):
                text = answers.get(student, {}).get(gid, "")
                cut = "\n[...]" if len(text) > MAX_SHOWN else ""
                out.append(
                    f'<div><p class="note">{esc(who(student))}</p><pre>{esc(text[:MAX_SHOWN])}'
                    f"{cut}</pre></div>"
                )
            out.append("</div>")
        out.append("</div>")
    out.append("</section>")
    return "\n".join(out)


def build(course: Path) -> str:
    """The report's HTML for ``course``."""
    from labtools.course import late
    from labtools.door import intake
    from labtools.out.export import set_labs

    course = Path(course)
    every = layout.lab_names(course) if (course / "source").is_dir() else []
    names = set_labs(course, every, late.load(course))
    unset = [name for name in every if name not in names]
    people = intake.student_names(course)
    students = courses.students(course)
    labs = [read_lab(course, name, students) for name in names]
    pairs, shown = [], {}
    for lab in labs:
        found, shown[lab.name] = lab_pairs(course, lab)
        pairs += found
    pairs.sort(key=lambda p: (-p.score, -p.shared, p.lab, p.first, p.second))
    made = time.strftime("%Y-%m-%d %H:%M")
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>Class report: {esc(course.name)}</title><style>{STYLE}</style></head><body>",
        f"<h1>Class report</h1><p class=note>{esc(course.name)}, {made}: {len(students)} "
        "students with a result; automatic tests only (manual scores are in the gradebook "
        "and grades.csv).</p>",
        "<nav><h2>Contents</h2><ul>",
    ]
    for lab in labs:
        out.append(f'<li><a href="#{anchor("lab", lab.name)}">{esc(lab.name)}</a></li>')
    out.append(f'<li><a href="#similarity">Similar answers ({len(pairs)})</a></li></ul></nav>')
    if unset:
        out.append(
            f'<p class="note">Labs not set yet (no submission, no due date), left out: '
            f"{esc(', '.join(unset))}.</p>"
        )
    out += [lab_section(lab, students, course, people) for lab in labs]
    out.append(similarity_section(pairs, shown, people))
    out.append("</body></html>\n")
    return "\n".join(out)


def write_report(course) -> Path:
    """Write ``report.html`` into ``course``; return its path."""
    course = Path(course)
    path = course / REPORT
    layout.write_whole(path, build(course))
    return path
