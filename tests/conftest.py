import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
from _helpers import ROOT, STAND_IN_REPOSITORY, load_module  # noqa: E402


@pytest.fixture(scope="session")
def built_books(tmp_path_factory):
    """The book built from scratch twice, the way `python3 tasks.py book` builds it: the first
    for a stand-in GitHub repository (so that it has Binder buttons), the second for none."""
    tasks = load_module("tasks", ROOT / "tasks.py")
    roots = [tmp_path_factory.mktemp(f"build{k}") for k in (1, 2)]
    for root, repository in zip(roots, [STAND_IN_REPOSITORY, None], strict=True):
        tasks.build_book(root, repository)  # raises CalledProcessError on any warning (-W)
    return roots


# What `-m "not slow"` leaves out, said in one place: every test that needs a book build, and
# the modules that start a browser, grade in a sandbox or install a fresh environment.
SLOW_FIXTURES = {"built_books"}
SLOW_MODULES = {"test_browser.py", "test_grading.py", "test_binder.py"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())) or (
            item.path.name in SLOW_MODULES
        ):
            item.add_marker(pytest.mark.slow)
