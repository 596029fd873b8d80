"""For the chapters' pages: show the package's own code as a listing.

A chapter shows an algorithm by running ``chapter.code(P.pt)`` in a cell whose input is
hidden: the listing is the function's source as the installed package has it, rendered as a
highlighted Python block by the website (myst-nb) and by JupyterLab alike.
"""

from __future__ import annotations

import inspect
import textwrap


class Listing:
    """Python source that notebooks render as a highlighted code block (Markdown)."""

    def __init__(self, text: str):
        self.text = text

    def _repr_markdown_(self) -> str:
        fence = "`" * max(3, _longest_backtick_run(self.text) + 1)
        return f"{fence}python\n{self.text}\n{fence}"

    def __repr__(self) -> str:
        return self.text


def _longest_backtick_run(text: str) -> int:
    run = longest = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    return longest


def code(obj, start_at: str | None = None) -> Listing:
    """The source of the function or class ``obj``, from the first line that contains
    ``start_at`` on (dedented), as a :class:`Listing`."""
    if not (inspect.isfunction(obj) or inspect.isclass(obj)):
        raise ValueError(f"obj: a function or a class, not {type(obj).__name__}")
    lines = inspect.getsource(obj).splitlines()
    if start_at is not None:
        hits = [i for i, line in enumerate(lines) if start_at in line]
        if not hits:
            raise ValueError(f"start_at: {start_at!r} is not in the source of {obj.__qualname__}")
        lines = lines[hits[0] :]
    return Listing(textwrap.dedent("\n".join(lines)))
