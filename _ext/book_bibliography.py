"""The reference list labelled as the text cites: "Rosenblatt, 1958", not "[Ros58]".

The text cites author and year (`bibtex_reference_style: author_year` in _config.yml), but
pybtex's styles label the list with numbers or alpha keys, so a reader who scrolls to the
list instead of following the link could not match a citation with its entry. This
registers `book_author_year`, pybtex's alpha style with labels that read like the citations
(one author: "Hebb, 1949"; two: "Widrow and Hoff, 1960"; more: "Azevedo et al., 2009"),
sorted by them; `bibtex_default_style` in _config.yml selects it.
"""

import string

from pybtex.plugin import register_plugin
from pybtex.style.formatting.alpha import Style as AlphaStyle
from pybtex.style.labels import BaseLabelStyle


def author_year(entry) -> str:
    """The label of one entry, as the author_year citation style writes it in the text."""
    persons = entry.persons.get("author") or entry.persons.get("editor") or []
    names = [" ".join(p.prelast_names + p.last_names) for p in persons]
    if len(names) >= 3 or "others" in names:
        who = f"{names[0]} et al."
    else:
        who = " and ".join(names)
    return f"{who}, {entry.fields.get('year', 'n.d.')}"


class AuthorYearLabels(BaseLabelStyle):
    def format_labels(self, sorted_entries):
        labels = [author_year(entry) for entry in sorted_entries]
        for label in set(labels):  # the same author and year twice: 1962a, 1962b
            if labels.count(label) > 1:
                suffixes = iter(string.ascii_lowercase)
                labels = [f"{lab}{next(suffixes)}" if lab == label else lab for lab in labels]
        yield from labels


class AuthorYearStyle(AlphaStyle):
    default_label_style = AuthorYearLabels


def setup(app):
    register_plugin("pybtex.style.formatting", "book_author_year", AuthorYearStyle)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
