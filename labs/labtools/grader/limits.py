"""What one notebook may use: :class:`Limits`, every limit of the student's side (the
sandbox enforces them) and of the grader's side (the grader enforces them), with its
default; ``tasks.py grade ... --limit NAME=VALUE`` sets any of them."""

from __future__ import annotations

import math
from dataclasses import dataclass

from labtools import wire


@dataclass(frozen=True)
class Limits:
    """What one notebook may use. Sizes in bytes, times in seconds, texts in characters.

    The sandbox enforces the first group on the student's processes; the grader enforces
    the rest on its own side, where the student cannot change them. An instructor sets any
    of them with ``tasks.py grade ... --limit NAME=VALUE``.
    """

    # the student's processes, in the sandbox
    cell_seconds: float = 60.0  # wall clock for one cell or one call of a student function
    cpu_seconds: int = 900  # CPU time of each process
    memory: int = 2 * 2**30  # address space of each process
    notebook_memory: int = 2 * 2**30  # memory of all its processes and its /tmp together
    tmp: int = 256 * 2**20  # the private /tmp (a tmpfs, so it is memory too)
    processes: int = 32  # processes and threads the student's code may add
    file_size: int = 64 * 2**20  # largest file it may write
    output: int = 16 * 2**20  # bytes written straight to stdout/stderr before it is stopped
    open_files: int = 256
    # the grader's side
    notebook_seconds: float = 600.0  # wall clock for the notebook's cells, visible tests included
    tests_seconds: float = 120.0  # wall clock for its hidden tests, after its last cell
    message: int = 16 * 2**20  # bytes of one answer from the sandbox
    items: int = wire.MAX_ITEMS  # items (list items, dict entries, numbers) in one answer
    depth: int = wire.MAX_DEPTH  # nesting of one answer
    keys: int = 1_000  # entries of one dict in an answer
    decode_seconds: float = 10.0  # to decode one answer
    cell_output: int = 20_000  # characters of output kept per cell (and per message)
    notebook_output: int = 200_000  # characters of output kept for the whole notebook
    cell_source: int = 100_000  # characters of a student's cell kept in the graded notebook
    notebook_source: int = 500_000  # characters of the student's cells kept in all
    grader_memory: int = 4 * 2**30  # address space of the grader's side of one notebook
    grader_seconds: float = 15.0  # its time past those two (start-up, render)
    feedback_seconds: float = 60.0  # to write one notebook's feedback page

    def __post_init__(self):
        for name, value in vars(self).items():
            if type(value) not in (int, float) or not value > 0 or not math.isfinite(value):
                raise ValueError(
                    f"the limit `{name}` must be a positive, finite number; got {value!r}"
                )

    def budget(self) -> wire.Budget:
        """What one answer may cost the grader (:func:`labtools.wire.decode_answer`)."""
        return wire.Budget(
            message=self.message,
            items=self.items,
            depth=self.depth,
            keys=self.keys,
            seconds=self.decode_seconds,
            text=self.cell_output,
        )
