"""The one parser of untrusted bytes: frames and answers from the sandbox, refused cleanly.

The agent in the sandbox runs the student's code in its own process, so every byte it
sends is the student's to choose. :func:`labtools.wire.decode_answer` is the only way from
those bytes to the grader's objects; here it gets hostile frames (deep nesting, key
collisions, huge counts, invalid UTF-8, wrong types) and must refuse each with
NotPlainData, quickly and within bounded memory.
"""

import dataclasses
import json
import os
import re
import resource
import time

import numpy as np
import pytest
from _helpers import ROOT
from labtools import wire
from labtools.grader.limits import Limits

BUDGET = Limits().budget()


def answer(value_json: bytes) -> bytes:
    """An answer whose value is the given JSON text."""
    return b'{"id": "n", "value": ' + value_json + b"}"


def test_an_honest_answer_decodes_to_fresh_objects():
    value = {"w": np.arange(3.0), "k": (1, [2.5, None]), 0.1: True}
    raw = json.dumps({"id": "n", "value": wire.to_plain(value), "stdout": "hi"}).encode()
    got = wire.decode_answer(raw, BUDGET)
    assert got.id == "n" and got.stdout == "hi" and got.has_value
    assert set(got.value) == {"w", "k", 0.1} and got.value["k"] == (1, [2.5, None])
    assert np.array_equal(got.value["w"], np.arange(3.0))


def test_a_real_number_of_another_kind_crosses_as_its_float():
    """Red team, round 6: Lab 7's accuracy as a fractions.Fraction (assert_same accepts
    it in JupyterLab) was not plain data, and the honest answer earned 0."""
    from fractions import Fraction

    class Broken(float):  # a real number whose float the student's code refuses
        pass

    raw = json.dumps({"id": "n", "value": wire.to_plain([Fraction(3, 4)])}).encode()
    assert wire.decode_answer(raw, BUDGET).value == [0.75]

    class NoFloat(Fraction):
        def __float__(self):
            raise ValueError("no")

    with pytest.raises(wire.NotPlainData, match="no float value"):
        wire.to_plain(NoFloat(1, 3))
    assert wire.to_plain(Broken(0.5)) == 0.5


COLLIDING = b", ".join(b"[%d, 0]" % (k * (2**61 - 1)) for k in range(200_000))


@pytest.mark.parametrize(
    "raw, says",
    [
        (answer(b"[" * 200_000 + b"]" * 200_000), "message: .*RecursionError"),
        (answer(b"[" * 40 + b"]" * 40), "value: .*nested deeper than 32"),
        (answer(b'{"$dict": [' + COLLIDING + b"]}"), "value: .*more than 1000 keys"),
        # a JSON object whose keys all hash alike: refused before a dict is built
        (
            b"{" + b", ".join(b'"k%d": 0' % k for k in range(200_000)) + b"}",
            "message: .*more than 16 keys",
        ),
        (answer(b"[" + b"[], " * 3_000_000 + b"[]]"), "message: .*more than 2000000 items"),
        (answer(b'"\xff\xfe"'), "message: .*UnicodeDecodeError"),
        (answer(b"1" * 5_000), "message: .*ValueError"),  # an int of 5 000 digits
        (b"[1, 2]", "message: .*not an object"),
        (b'{"id": 7}', "message: .*id is not text"),
        (b'{"id": "n", "stdout": ["a"]}', "message: .*stdout is not text"),
        (b'{"id": "n", "missing": "yes"}', "message: .*missing is not True or False"),
        (b'{"id": "n", "oops": 1}', "message: .*unknown fields"),
        (b'{"id": "n", "warnings": [["A", "b", "c"]]}', "message: .*malformed warnings"),
        (
            b'{"id": "n", "warnings": [' + b'["A", "b"], ' * 30 + b'["A", "b"]]}',
            "message: .*malformed warnings",
        ),
        (
            answer(b'{"$ndarray": {"dtype": "|O", "shape": [1], "data": ""}}'),
            "value: .*dtype object",
        ),
        (answer(b'{"$ndarray": {"dtype": "<f8", "shape": [-1], "data": ""}}'), "value: .*shape"),
        (
            answer(b'{"$ndarray": {"dtype": "<f8", "shape": [99999999999], "data": ""}}'),
            "value: .*shape",
        ),
        (answer(b'{"$ndarray": {"dtype": "<f8", "shape": [1], "data": "!!"}}'), "value: .*base64"),
        (
            answer(b'{"$ndarray": {"dtype": "nonsense", "shape": [1], "data": ""}}'),
            "value: .*dtype",
        ),
        (answer(b'{"$range": [0, 100000000000000000000, 1]}'), "value: .*range of more than"),
        (answer(b'{"$evil": 1}'), "value: .*tagged"),
        (b"x" * (BUDGET.message + 1), "message: .*more than 16777216 bytes"),
    ],
)
def test_hostile_answers_are_refused_quickly(raw, says):
    """A malformed message is refused whole (NotPlainData: the sandbox is stopped); a value
    that is not plain data, or over the budget, is refused as that value (a wrong answer).
    Quickly: in CPU time of this process (which other work on the machine does not add to),
    far below what building the hostile value would take (the colliding keys: minutes)."""
    start = time.process_time()
    try:
        got = f"value: {wire.decode_answer(raw, BUDGET).refused}"
    except wire.NotPlainData as err:
        got = f"message: {err}"
    assert time.process_time() - start < 2.0
    assert re.match(says, got), got


def test_decoding_stops_at_its_time_limit():
    slow = wire.Budget(seconds=0.0)
    raw = json.dumps({"id": "n", "value": list(range(5000))}).encode()
    assert wire.decode_answer(raw, slow).refused == "took longer than 0 s to decode"


def test_texts_are_cut_by_the_grader():
    raw = json.dumps({"id": "n", "stdout": "x" * 100_000, "raised": "y" * 50_000}).encode()
    got = wire.decode_answer(raw, BUDGET)
    assert len(got.stdout) < BUDGET.text + 100 and got.stdout.endswith("cut by the grader]")
    assert len(got.raised) < BUDGET.text + 100


def test_the_worst_answer_within_the_budget_costs_bounded_memory():
    """Every JSON value costs a comma or a bracket, so the items budget bounds the objects
    built: a message of empty lists (the most objects per byte) at the budget's edge."""
    edge = BUDGET.items // 2 - 2  # each "[]," counts a bracket and a comma
    raw = answer(b"[" + b"[]," * edge + b"[]]")
    read, write = os.pipe()
    pid = os.fork()  # measured in a child of its own: its peak is the decoding's alone
    if pid == 0:
        try:
            before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            got = wire.decode_answer(raw, dataclasses.replace(BUDGET, seconds=120))
            grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before  # KiB
            os.write(write, json.dumps([len(got.value), grown * 1024]).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as report:
        items, peak = json.loads(report.read())
    os.waitpid(pid, 0)
    assert items == edge + 1
    assert peak < 256 * 2**20, f"{peak / 2**20:.0f} MiB"


def test_frames_are_read_whole_or_refused():
    r, w = os.pipe()
    try:
        wire.write_frame(w, b"hello")
        assert wire.read_frame(r, limit=10) == b"hello"
        wire.write_frame(w, b"x" * 11)
        with pytest.raises(wire.FrameTooLarge):
            wire.read_frame(r, limit=10)
    finally:
        os.close(w)
        os.close(r)
    r, w = os.pipe()
    os.write(w, wire.HEADER.pack(100) + b"short")
    with pytest.raises(TimeoutError):  # the rest of the frame does not come in time
        wire.read_frame(r, limit=1000, deadline=time.monotonic() + 0.2)
    os.write(w, wire.HEADER.pack(100) + b"short")
    os.close(w)
    with pytest.raises(EOFError):  # the sender ends in the middle of a frame
        wire.read_frame(r, limit=1000, deadline=time.monotonic() + 0.2)
    os.close(r)
    r, w = os.pipe()
    os.close(w)
    assert wire.read_frame(r, limit=10) is None  # closed before a frame: the agent's end
    os.close(r)


def test_framing_has_one_home():
    """The agent and the sandbox move bytes only through labtools.wire."""
    from pathlib import Path

    tools = Path(wire.__file__).parent
    sandbox = [f"grader/{m}.py" for m in ("sandbox", "start", "bwrap", "memory", "verdicts")]
    for name in ("inside/agent.py", "inside/zygote.py", *sandbox):
        text = (tools / name).read_text()
        assert "import struct" not in text and "os.read(" not in text, name
        # the agent reads the grader's requests, the warm parent the grader's job, the
        # sandbox bubblewrap's own report (written before any student code runs): none is
        # the student's
        for trusted in ("json.loads(payload)", "json.loads(info)", "json.loads(message)"):
            text = text.replace(trusted, "")
        assert "json.loads(" not in text, name


@pytest.mark.parametrize(
    "given, says",
    [
        (["notebook_seconds=abc"], "not a number"),
        (["nope=1"], "NAME one of cell_seconds"),
        (["message"], "NAME=VALUE"),
        (["keys=0"], "must be a positive, finite number"),
        # "no limit" is not a limit: an infinite wait overflowed the pipe's timer and failed
        # every notebook (round-4 red team, finding 6)
        (["notebook_seconds=inf"], "must be a positive, finite number"),
        (["cell_seconds=nan"], "must be a positive, finite number"),
    ],
)
def test_limits_on_the_command_line_are_checked(given, says):
    from labtools.__main__ import limits_from, parser
    from labtools.door.layout import UsageError

    args = parser().parse_args(["grade", "x", *(f"--limit={g}" for g in given)])
    with pytest.raises(UsageError, match=says):
        limits_from(args)


def test_limits_on_the_command_line_reach_the_grader():
    from labtools.__main__ import limits_from, parser

    argv = ["grade", "x", "--cell-timeout", "5", "--limit", "notebook_seconds=900"]
    args = parser().parse_args([*argv, "--limit", "notebook-output=1e6", "--limit", "keys=50"])
    limits = limits_from(args)
    assert (limits.cell_seconds, limits.notebook_seconds) == (5.0, 900.0)
    assert (limits.notebook_output, limits.keys) == (1_000_000, 50)
    assert limits.budget().keys == 50 and limits.budget().text == limits.cell_output


def test_the_guide_lists_every_limit_with_its_default():
    guide = (ROOT / "book" / "instructors.md").read_text()
    for field in dataclasses.fields(Limits):
        assert f"| `{field.name}` | {field.default!r} |" in guide, field.name
