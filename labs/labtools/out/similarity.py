"""Answers that are unusually alike: token fingerprints with winnowing, as MOSS does.

Each answer cell (code: Python's tokens; written answers: words) becomes a stream of
normalised tokens: comments, spaces, line breaks, indentation and IPython magics dropped;
every name the student chose renamed to one placeholder (a name the lab gives, in its
released notebook, keeps its spelling: ``np``, ``P``, ``pt_step``; keywords, builtins and
attributes too); strings made one token; numbers kept. The hashes of its k-grams (``K``
tokens, the cell's grade id mixed in, so that cells never match across exercises) are
winnowed (the smallest hash of each window of ``WINDOW`` hashes, Schleimer, Wilkerson and
Aiken 2003): two answers that share a run of ``K + WINDOW - 1`` tokens share a
fingerprint.

Fingerprints that are not the student's own do not count: every k-gram of the given stub
(the released notebook's cell) and of the instructor's solution (the source's cell, which
most correct answers resemble), and, as MOSS's ``-m``, those held by more than
:func:`common_limit` students of the lab (a usual way to write it, not a copy).

Answers are compared cell by cell (one copied exercise among five is a copy): a cell's
score is the larger of the Jaccard index of the two fingerprint sets (shared over either's)
and their containment (shared over the smaller set's: a copy padded with code of one's own
keeps it); a pair of students is reported for each cell with at least ``MIN_SHARED``
shared fingerprints and a Jaccard index of at least ``THRESHOLD`` or a containment of at
least ``CONTAINED`` (with ``2 * MIN_SHARED`` shared), its closest cell first, the pairs best
first. Pairs are counted through an index from each fingerprint to its students, so the
work grows with the shared fingerprints, not with the square of the class.

What is compared of an answer is its text without comments, IPython magics and blank lines
(and a string's content: every string is one token), :func:`stripped`, in linear time over
the whole answer, and only then cut: to ``MAX_CHARS`` characters and ``MAX_TOKENS``
tokens. A copy behind a long comment is compared as the copy it is. The tokens are found
by a regular expression and hashed by numpy: for 300 students and 7 labs, seconds
(benchmarks/bench_report.py).
"""

from __future__ import annotations

import builtins
import itertools
import keyword
import re
import zlib
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

K = 10  # tokens per k-gram
WINDOW = 4  # k-gram hashes per winnowing window: a shared run of K + WINDOW - 1 is found
MAX_CHARS = 200_000  # characters of one answer considered, once stripped (stripped())
MAX_TOKENS = 10_000  # tokens of one answer considered
THRESHOLD = 0.5  # the Jaccard index from which a pair is reported
CONTAINED = 0.8  # the containment (shared over the smaller set) from which a pair is reported
MIN_SHARED = 4  # fingerprints a reported pair shares at least
PLACEHOLDER = "V"
KNOWN = frozenset(dir(builtins)) | frozenset(keyword.kwlist) | frozenset(keyword.softkwlist)
MAGIC = re.compile(r"^[ \t]*[%!].*$", re.M)
WORD = re.compile(r"\w+")
# Python's tokens, found by one regular expression in C (the standard library's tokenize
# is ten times slower, and stops at the first error): a fragment, a cell that does not
# parse, an unclosed string are read as far as they go. Spaces, line breaks, indentation
# and comments are not tokens (a match that is only these finds ""); an attribute is one
# token with its dot (".sum").
TOKEN = re.compile(
    r"""
    (?:\s+|\#[^\n]*+|\\\n)*+
    (
      [rRbBuUfF]{0,2}(?:\"\"\"(?:\\.|[^\\])*?\"\"\"|\'\'\'(?:\\.|[^\\])*?\'\'\'
        |"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')
    | \.[ \t]*[^\W\d]\w*
    | [^\W\d]\w*
    | 0[xXoObB][\da-fA-F_]+|(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][+-]?\d+)?[jJ]?
    | \*\*=?|//=?|>>=?|<<=?|->|:=|\.\.\.|[-+*/%@&|^=<>!]=
    | \S
    )?
    """,
    re.X | re.S,
)
STRING = re.compile(r"[rRbBuUfF]{0,2}['\"]")
NAME = re.compile(r"[^\W\d]\w*")


_CODE_NEXT = re.compile(r"#|[\"']")  # where a comment or a string starts
_SINGLE = {q: re.compile(rf"(?:\\.|[^{q}\\\n])*{q}?") for q in "\"'"}  # the rest of a string
_COMMENT_END = re.compile(r"-->")


def _triple_end(text: str, start: int, quote: str) -> int:
    """Where the triple-quoted string whose content starts at ``start`` ends (past its
    closing quotes; the text's end if it has none)."""
    at = start
    while True:
        found = text.find(quote, at)
        if found < 0:
            return len(text)
        before = found
        while before > start and text[before - 1] == "\\":
            before -= 1
        if (found - before) % 2 == 0:  # not escaped
            return found + 3
        at = found + 1


def stripped(source: str, code: bool = True) -> str:
    """What of an answer is compared: code without comments, IPython magics (``%``, ``!``)
    and blank lines, each string literal written ``"S"`` (its content is not compared); a
    written answer without HTML comments and blank lines. Linear in the answer's length, so
    that the whole answer is read before anything is cut."""
    out, at = [], 0
    if code:
        while True:
            found = _CODE_NEXT.search(source, at)
            if found is None:
                out.append(source[at:])
                break
            out.append(source[at : found.start()])
            start = found.start()
            if source[start] == "#":
                end = source.find("\n", start)
                at = len(source) if end < 0 else end
                continue
            quote = source[start]
            if source.startswith(quote * 3, start):
                at = _triple_end(source, start + 3, quote * 3)
            else:
                at = _SINGLE[quote].match(source, start + 1).end()
            out.append('"S"')
    else:
        while True:
            start = source.find("<!--", at)
            if start < 0:
                out.append(source[at:])
                break
            out.append(source[at:start])
            end = _COMMENT_END.search(source, start + 4)
            at = len(source) if end is None else end.end()
    lines = "".join(out).splitlines()
    return "\n".join(line for line in lines if line.strip() and not (code and MAGIC.match(line)))


def given_names(code_cells: Iterable[str]) -> frozenset[str]:
    """The names the lab's released notebook spells (its imports, its stubs' signatures,
    its data): kept as they are, since no student renames them to hide a copy."""
    names = set()
    for source in code_cells:
        names.update(t for t in TOKEN.findall(source) if t and NAME.fullmatch(t))
    return frozenset(names)


class Normal(dict):
    """Each token's normalised form (see the module's docstring) and its number (the
    CRC-32 of that form, plus one): ``normal[token]`` is the number, ``normal.text``
    the form; each token is worked out once."""

    def __init__(self, given: frozenset[str] = frozenset()):
        super().__init__()
        self.given, self.text = given, {}

    def __missing__(self, token: str) -> int:
        if STRING.match(token):
            form = '"S"'
        elif token[0] == "." and len(token) > 1 and not token[1].isdigit():
            form = "." + token[1:].strip()
        elif NAME.fullmatch(token):
            form = token if token in KNOWN or token in self.given else PLACEHOLDER
        else:
            form = token
        self.text[token] = form
        self[token] = found = zlib.crc32(form.encode()) + 1
        return found


def _tokens(source: str, code: bool) -> list[str]:
    """The tokens of an answer as written (:func:`stripped` first, then cut)."""
    text = stripped(source, code)[:MAX_CHARS]
    if code:
        found = (m[1] for m in TOKEN.finditer(text) if m[1])
    else:
        found = (m[0].lower() for m in WORD.finditer(text))
    return list(itertools.islice(found, MAX_TOKENS))


def code_tokens(source: str, given: frozenset[str] = frozenset()) -> list[str]:
    """The normalised tokens of a code cell (see the module's docstring)."""
    normal = Normal(given)
    found = _tokens(source, True)
    for token in found:
        normal[token]
    return [normal.text[token] for token in found]


def text_tokens(source: str) -> list[str]:
    """The normalised tokens of a written answer: its words, in lower case."""
    return _tokens(source, False)


def token_ids(source: str, code: bool, normal: Normal) -> list[int]:
    """The numbers of the normalised tokens of an answer (code, or a written answer)."""
    return list(map(normal.__getitem__, _tokens(source, code)))


BASE = np.uint64(1_000_003)
MIX = 0x9E3779B97F4A7C15


def kgrams(ids: list[int], cell: str) -> np.ndarray:
    """The hash of each k-gram of the token numbers ``ids`` (a polynomial modulo 2**64:
    the same in every process), with the cell's grade id mixed in; a shorter answer is
    one k-gram."""
    if not ids:
        return np.zeros(0, np.uint64)
    salt = np.uint64(zlib.crc32(cell.encode()) * MIX % 2**64)
    values = np.array(ids, np.uint64)
    span = min(K, len(values))
    count = len(values) - span + 1
    hashes = np.zeros(count, np.uint64)
    for j in range(span):  # arrays of uint64 wrap around modulo 2**64, as meant here
        hashes = hashes * BASE + values[j : j + count]
    return hashes ^ salt


def winnow(hashes: np.ndarray) -> np.ndarray:
    """The fingerprints of an array of k-gram hashes, sorted and each once: the smallest
    of each window of ``WINDOW`` (robust winnowing: on a tie the rightmost)."""
    if len(hashes) <= WINDOW:
        return np.unique(hashes[hashes == hashes.min()] if len(hashes) else hashes)
    windows = np.lib.stride_tricks.sliding_window_view(hashes, WINDOW)[:, ::-1]
    at = np.arange(len(windows)) + WINDOW - 1 - windows.argmin(axis=1)
    return np.unique(hashes[at])


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
    excluded: dict[str, np.ndarray],
    given: frozenset[str] = frozenset(),
    normal: Normal | None = None,
) -> dict[str, np.ndarray]:
    """{grade id: fingerprints} of one student's answers, each cell's less the k-grams
    excluded for it (its stub's and its solution's); ``normal``: the lab's tokens worked
    out so far (one for the whole lab saves time)."""
    found, normal = {}, normal if normal is not None else Normal(given)
    for cell, source in answer.cells.items():
        prints = winnow(kgrams(token_ids(source, answer.code.get(cell, True), normal), cell))
        if cell in excluded:
            prints = prints[~np.isin(prints, excluded[cell], assume_unique=True)]
        found[cell] = prints
    return found


def excluded_kgrams(
    texts: dict[str, list[str]], code: dict[str, bool], given: frozenset[str] = frozenset()
) -> dict[str, np.ndarray]:
    """Every k-gram hash of the lab's own text for each cell ({grade id: [stub, solution]}):
    what no pair of students is counted for sharing."""
    out, normal = {}, Normal(given)
    for cell, sources in texts.items():
        found = [kgrams(token_ids(s, code.get(cell, True), normal), cell) for s in sources]
        out[cell] = np.unique(np.concatenate([np.zeros(0, np.uint64), *found]))
    return out


def similar_pairs(
    lab: str,
    answers: list[Answer],
    excluded: dict[str, np.ndarray],
    given: frozenset[str] = frozenset(),
    threshold: float = THRESHOLD,
    min_shared: int = MIN_SHARED,
) -> list[Pair]:
    """The pairs of ``answers`` (one lab) at or above ``threshold``, best first."""
    names = sorted({a.student for a in answers})
    cells = sorted({cell for a in answers for cell in a.cells})
    who, where = {s: i for i, s in enumerate(names)}, {c: i for i, c in enumerate(cells)}
    parts = [np.zeros(0, np.uint64)]
    owners, kinds = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    normal = Normal(given)
    for answer in answers:
        for cell, prints in fingerprints(answer, excluded, given, normal).items():
            parts.append(prints)
            owners.append(np.full(len(prints), who[answer.student]))
            kinds.append(np.full(len(prints), where[cell]))
    hashes, owner, kind = np.concatenate(parts), np.concatenate(owners), np.concatenate(kinds)
    order = np.argsort(hashes, kind="stable")
    hashes, owner, kind = hashes[order], owner[order], kind[order]
    starts = np.flatnonzero(np.r_[True, hashes[1:] != hashes[:-1]])
    counts = np.diff(np.r_[starts, len(hashes)])
    holders = np.repeat(counts, counts)  # how many students hold each entry's fingerprint
    limit = common_limit(len(names))
    mine = holders <= limit  # the others are common: not counted
    sizes = np.bincount(owner[mine] * len(cells) + kind[mine], minlength=len(names) * len(cells))
    shared: Counter = Counter()  # (first, second, cell index)
    for start, count in zip(starts.tolist(), counts.tolist(), strict=True):
        if 2 <= count <= limit:
            group = sorted(owner[start : start + count].tolist())
            cell = int(kind[start])
            for i, first in enumerate(group):
                for second in group[i + 1 :]:
                    shared[first, second, cell] += 1
    alike: dict[tuple[int, int], list] = defaultdict(list)
    for (first, second, cell), count in shared.items():
        a, b = int(sizes[first * len(cells) + cell]), int(sizes[second * len(cells) + cell])
        jaccard, contained = count / (a + b - count), count / min(a, b)
        if count >= min_shared and (
            jaccard >= threshold or (contained >= CONTAINED and count >= 2 * min_shared)
        ):
            alike[first, second].append((cells[cell], max(jaccard, contained), count, a, b))
    pairs = [
        Pair(lab, names[first], names[second], tuple(sorted(found, key=lambda c: (-c[1], c[0]))))
        for (first, second), found in alike.items()
    ]
    pairs.sort(key=lambda p: (-p.score, -p.shared, p.first, p.second))
    return pairs
