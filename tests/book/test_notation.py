"""One notation across the book: every symbol a chapter's mathematics uses is defined in
book/notation.md.

Each chapter lists its symbols in its notebook metadata (``"notation": {"symbols": [...]}``).
The tests check the list against notation.md's symbol tables and against the mathematics
actually in the chapter's markdown, in both directions. Cells that map the sources' names
onto the book's (cell metadata ``"notation": "sources"``) are exempt: there the sources'
names belong.

A symbol is a Greek letter (``gamma``), a bold symbol (``bold w``), a roman name of more
than one letter (``Err``) or a single italic Latin letter (``k``); subscripts, hats and
stars do not make a new symbol. Euler's e (written ``e^``) is not a symbol.
"""

import json
import re

import pytest
from _helpers import ROOT

CHAPTERS = sorted((ROOT / "book").glob("[0-9][0-9]_*.ipynb"))
GREEK = (
    "alpha|beta|gamma|delta|epsilon|varepsilon|zeta|eta|theta|vartheta|iota|kappa|lambda|mu|"
    "nu|xi|pi|rho|sigma|tau|upsilon|phi|varphi|chi|psi|omega|Gamma|Delta|Theta|Lambda|Xi|Pi|"
    "Sigma|Phi|Psi|Omega"
)
MATH = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$", re.S)


def math_of(markdown):
    """The TeX of every $...$ and $$...$$ in a markdown text, outside code."""
    markdown = re.sub(r"```.*?```", "", markdown, flags=re.S)
    markdown = re.sub(r"`[^`]*`", "", markdown)
    return [a or b for a, b in MATH.findall(markdown)]


def symbols(tex):
    """The symbols (as described in the module docstring) in one piece of TeX."""
    found = set()
    tex = re.sub(r"\\(?:text|mathit|operatorname|mathbb|label|tag)\{[^{}]*\}", " ", tex)
    for name in re.findall(r"\\mathrm\{([^{}]*)\}", tex):
        if len(name) > 1:
            found.add(name)
    tex = re.sub(r"\\mathrm\{[^{}]*\}", " ", tex)
    bold = r"\\(?:mathbf|boldsymbol)\{?\\?([A-Za-z]+)\}?"
    found |= {f"bold {name}" for name in re.findall(bold, tex)}
    tex = re.sub(bold, " ", tex)
    found |= set(re.findall(r"\\(" + GREEK + r")(?![A-Za-z])", tex))
    tex = re.sub(r"\\[A-Za-z]+", " ", tex)
    tex = re.sub(r"(?<![A-Za-z])e\^", " ", tex)  # Euler's number
    found |= set(re.findall(r"(?<![A-Za-z])([A-Za-z])(?![A-Za-z])", tex))
    return found


def defined_symbols():
    """Symbols in the first column of the tables under '## Symbols' in notation.md."""
    text = (ROOT / "book" / "notation.md").read_text()
    section = text[text.index("## Symbols") : text.index("## Glossary")]
    defined = set()
    for line in section.splitlines():
        cells = line.split("|")
        if line.startswith("|") and len(cells) > 2 and not set(cells[1].strip()) <= set("-"):
            for tex in math_of(cells[1]):
                defined |= symbols(tex)
    return defined


def used_symbols(path):
    nb = json.loads(path.read_text())
    used = set()
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown" and cell["metadata"].get("notation") != "sources":
            for tex in math_of("".join(cell["source"])):
                used |= symbols(tex)
    return used


def listed_symbols(path):
    return set(json.loads(path.read_text())["metadata"]["notation"]["symbols"])


def test_the_symbol_reader_tells_symbols_apart():
    tex = r"\eta\,\mathbf{w}^* + \mathrm{Err}(\mathbf{w}) - e^{-z} + \operatorname{heaviside}(k)"
    assert symbols(tex) == {"eta", "bold w", "Err", "z", "k"}
    assert symbols(r"\hat{\mathbf{w}}, \delta, \varepsilon") == {"bold w", "delta", "varepsilon"}
    assert "y" in symbols(r"y_i \in \mathbb{R}") and "R" not in symbols(r"\mathbb{R}")


def test_notation_defines_the_core_symbols():
    defined = defined_symbols()
    for name in ("bold w", "bold x", "eta", "gamma", "r", "k", "n", "c", "y", "alpha", "Err"):
        assert name in defined, name


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_listed_symbol_is_defined_in_notation(path):
    undefined = listed_symbols(path) - defined_symbols()
    assert not undefined, (
        f"{path.name} lists symbols notation.md does not define: {sorted(undefined)}"
    )


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_the_list_matches_the_mathematics_of_the_chapter(path):
    used, listed = used_symbols(path), listed_symbols(path)
    assert used <= listed, f"{path.name} uses symbols it does not list: {sorted(used - listed)}"
    assert listed <= used, f"{path.name} lists symbols it never uses: {sorted(listed - used)}"
