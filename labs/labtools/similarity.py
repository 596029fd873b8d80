"""Answers that are unusually alike: token fingerprints with winnowing, as MOSS does.

Each answer cell (code: Python's own tokenizer; written answers: words) becomes a stream of
normalised tokens: comments, blank lines and IPython magics dropped; every name the student
chose renamed to one placeholder (a name the lab gives, in its released notebook, keeps its
spelling: ``np``, ``P``, ``pt_step``; keywords, builtins and attributes too); strings made
one token; numbers kept. The hashes of its k-grams (``K`` tokens, the cell's grade id
mixed in, so that cells never match across exercises) are winnowed (the smallest hash of
each window of ``WINDOW`` hashes, Schleimer, Wilkerson and Aiken 2003): two answers that
share a run of ``K + WINDOW - 1`` tokens share a fingerprint.

Fingerprints that are not the student's own do not count: every k-gram of the given stub
(the released notebook's cell) and of the instructor's solution (the source's cell, which
most correct answers resemble), and, as MOSS's ``-m``, those held by more than
:func:`common_limit` students of the lab (a usual way to write it, not a copy).

Answers are compared cell by cell (one copied exercise among five is a copy): a cell's
score is the Jaccard index of the two fingerprint sets (shared over either's); a pair of
students is reported for each cell with at least ``MIN_SHARED`` shared fingerprints and a
score of at least ``THRESHOLD``, its closest cell first, the pairs best first. Pairs are
counted through an index from each fingerprint to its students, so the work grows with the
shared fingerprints, not with the square of the class. Each answer is cut to
``MAX_CHARS`` characters first.

Standard library only.
"""

from __future__ import annotations

import builtins
import io
import keyword
import re
import tokenize
import zlib
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

K = 10  # tokens per k-gram
WINDOW = 4  # k-gram hashes per winnowing window: a shared run of K + WINDOW - 1 is found
MAX_CHARS = 20_000  # characters of one answer considered
THRESHOLD = 0.5  # the Jaccard index from which a pair is reported
MIN_SHARED = 4  # fingerprints a reported pair shares at least
PLACEHOLDER = "V"
KNOWN = frozenset(dir(builtins)) | frozenset(keyword.kwlist) | frozenset(keyword.softkwlist)
MAGIC = re.compile(r"^\s*[%!]")
WORD = re.compile(r"\w+")


def given_names(code_cells: Iterable[str]) -> frozenset[str]:
    """The names the lab's released notebook spells (its imports, its stubs' signatures,
    its data): kept as they are, since no student renames them to hide a copy."""
    names = set()
    for source in code_cells:
        for kind, text in _tokens(source):
            if kind == tokenize.NAME:
                names.add(text)
    return frozenset(names)


def _tokens(source: str) -> list[tuple[int, str]]:
    """(type, text) of the Python tokens of ``source`` up to its first error (a fragment,
    a cell that does not parse, an unclosed bracket: what was read counts)."""
    lines = [line for line in source.splitlines(keepends=True) if not MAGIC.match(line)]
    found = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO("".join(lines)).readline):
            found.append((tok.type, tok.string))
    except (tokenize.TokenError, SyntaxError):
        pass
    return found


def code_tokens(source: str, given: frozenset[str] = frozenset()) -> list[str]:
    """The normalised tokens of a code cell (see the module's docstring)."""
    out: list[str] = []
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}
    previous = ""
    for kind, text in _tokens(source[:MAX_CHARS]):
        if kind in skip:
            continue
        if kind == tokenize.NAME:
            keep = text in KNOWN or text in given or previous == "."
            out.append(text if keep else PLACEHOLDER)
        elif kind == tokenize.STRING:
            out.append('"S"')
        elif kind == tokenize.NEWLINE:
            out.append(";")
        elif kind == tokenize.INDENT:
            out.append("{")
        elif kind == tokenize.DEDENT:
            out.append("}")
        elif kind in (tokenize.NUMBER, tokenize.OP):
            out.append(text)
        else:  # an error token, f-string parts of newer Pythons: one kind of token
            out.append(tokenize.tok_name.get(kind, "?"))
        previous = text
    return out


def text_tokens(source: str) -> list[str]:
    """The normalised tokens of a written answer: its words, in lower case."""
    return [w.lower() for w in WORD.findall(source[:MAX_CHARS])]


def tokens(source: str, code: bool, given: frozenset[str] = frozenset()) -> list[str]:
    return code_tokens(source, given) if code else text_tokens(source)


def _ids(words: list[str]) -> list[int]:
    return [zlib.crc32(w.encode()) for w in words]


def kgrams(words: list[str], cell: str) -> list[int]:
    """The hash of each k-gram of ``words`` (deterministic: the same in every process),
    with the cell's grade id mixed in."""
    ids, salt = _ids(words), zlib.crc32(cell.encode())
    if 0 < len(ids) < K:  # a short answer is one k-gram
        return [hash((salt, *ids))]
    return [hash((salt, *ids[i : i + K])) for i in range(len(ids) - K + 1)]


def winnow(hashes: list[int]) -> set[int]:
    """The fingerprints of a list of k-gram hashes: the smallest of each window (robust
    winnowing: on a tie the rightmost, kept once while it stays in the window)."""
    if len(hashes) <= WINDOW:
        return {min(hashes)} if hashes else set()
    chosen, last = set(), -1
    for start in range(len(hashes) - WINDOW + 1):
        window = hashes[start : start + WINDOW]
        low = min(window)
        at = start + max(i for i, h in enumerate(window) if h == low)
        if at != last:
            chosen.add(low)
            last = at
    return chosen


@dataclass
class Answer:
    """One student's answers to one lab: {grade id: text}, and which of them are code."""

    student: str
    cells: dict[str, str]
    code: dict[str, bool] = field(default_factory=dict)


@dataclass(frozen=True)
class Pair:
    """Two students with alike answers in one lab: each cell whose answers are alike (grade
    id, Jaccard index, shared fingerprints, each one's fingerprints), the closest first;
    the pair's score is its closest cell's."""

    lab: str
    first: str
    second: str
    cells: tuple[tuple[str, float, int, int, int], ...]

    @property
    def score(self) -> float:
        return self.cells[0][1]

    @property
    def shared(self) -> int:
        return sum(cell[2] for cell in self.cells)


def common_limit(students: int) -> int:
    """How many students of a lab may hold a fingerprint before it counts as common."""
    return max(10, students // 10)


def fingerprints(
    answer: Answer,
    excluded: dict[str, set[int]],
    given: frozenset[str] = frozenset(),
) -> dict[int, str]:
    """{fingerprint: grade id} of one student's answers, less the excluded k-grams of
    each cell (its stub's and its solution's)."""
    found: dict[int, str] = {}
    for cell, source in answer.cells.items():
        code = answer.code.get(cell, True)
        hashes = kgrams(tokens(source, code, given), cell)
        for h in winnow(hashes) - excluded.get(cell, set()):
            found[h] = cell
    return found


def excluded_kgrams(
    texts: dict[str, list[str]], code: dict[str, bool], given: frozenset[str] = frozenset()
) -> dict[str, set[int]]:
    """Every k-gram hash of the lab's own text for each cell ({grade id: [stub, solution]}):
    what no pair of students is counted for sharing."""
    out: dict[str, set[int]] = {}
    for cell, sources in texts.items():
        hashes: set[int] = set()
        for source in sources:
            hashes.update(kgrams(tokens(source, code.get(cell, True), given), cell))
        out[cell] = hashes
    return out


def similar_pairs(
    lab: str,
    answers: list[Answer],
    excluded: dict[str, set[int]],
    given: frozenset[str] = frozenset(),
    threshold: float = THRESHOLD,
    min_shared: int = MIN_SHARED,
) -> list[Pair]:
    """The pairs of ``answers`` (one lab) at or above ``threshold``, best first."""
    prints = {a.student: fingerprints(a, excluded, given) for a in answers}
    holders: dict[int, list[str]] = defaultdict(list)
    for student, found in prints.items():
        for h in found:
            holders[h].append(student)
    limit = common_limit(len(answers))
    sizes: Counter = Counter()  # (student, cell): fingerprints that are not common
    shared: Counter = Counter()  # (first, second, cell)
    for h, who in holders.items():
        if len(who) > limit:
            continue
        cell = prints[who[0]][h]
        for student in who:
            sizes[student, cell] += 1
        who = sorted(who)
        for i, first in enumerate(who):
            for second in who[i + 1 :]:
                shared[first, second, cell] += 1
    alike: dict[tuple[str, str], list] = defaultdict(list)
    for (first, second, cell), count in shared.items():
        mine, theirs = sizes[first, cell], sizes[second, cell]
        score = count / (mine + theirs - count)
        if count >= min_shared and score >= threshold:
            alike[first, second].append((cell, score, count, mine, theirs))
    pairs = [
        Pair(lab, first, second, tuple(sorted(cells, key=lambda c: (-c[1], c[0]))))
        for (first, second), cells in alike.items()
    ]
    pairs.sort(key=lambda p: (-p.score, -p.shared, p.first, p.second))
    return pairs
