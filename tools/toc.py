"""The pages of the book's table of contents, _toc.yml, in reading order.

    .venv/bin/python tools/toc.py            # one page a line: book/intro, book/00_tour, ...

Reads _toc.yml as YAML, so it needs PyYAML: tasks.py runs it with the Python of .venv,
after setting that up (tasks.py itself uses the standard library only).
"""

from pathlib import Path

import yaml

TOC = Path(__file__).resolve().parents[1] / "_toc.yml"


def documents(entry) -> list[str]:
    """The `root` and every `file` below it (parts, chapters, sections), in reading order,
    as paths without suffix ('book/intro')."""
    if isinstance(entry, list):
        return [doc for item in entry for doc in documents(item)]
    if not isinstance(entry, dict):
        return []
    found = [entry[key] for key in ("root", "file") if key in entry]
    for value in entry.values():
        found += documents(value) if isinstance(value, list) else []
    return found


def main() -> None:
    print("\n".join(documents(yaml.safe_load(TOC.read_text()))))


if __name__ == "__main__":
    main()
