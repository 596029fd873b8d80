"""The workarounds in _ext/book_fixes.py name their versions and stop the build when stale."""

from importlib.metadata import version

import book_fixes as fixes
import pytest
from sphinx.errors import ExtensionError


def test_every_fix_targets_the_installed_versions_and_names_an_issue():
    fixes.check_targets()  # raises when an installed version differs from a target
    for packages, issue in fixes.TARGETS.values():
        assert packages and issue.strip()


@pytest.mark.parametrize("stale", ["myst-nb", "jupyter-book", "pydata-sphinx-theme"])
def test_an_upgrade_stops_the_build_naming_the_fix(stale):
    def upgraded(package):
        return "99.0" if package == stale else version(package)

    with pytest.raises(ExtensionError, match=f"written for {stale} .* but 99.0 is installed"):
        fixes.check_targets(installed=upgraded)
