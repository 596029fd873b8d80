import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
from _helpers import STAND_IN_REPOSITORY  # noqa: E402

import tasks  # noqa: E402  (pytest's pythonpath, pyproject.toml)


@pytest.fixture(scope="session")
def built_books(tmp_path_factory):
    """The book built from scratch twice, the way `python3 tasks.py book` builds it: the first
    for a stand-in GitHub repository (so that it has Binder buttons), the second for none."""
    roots = [tmp_path_factory.mktemp(f"build{k}") for k in (1, 2)]
    for root, repository in zip(roots, [STAND_IN_REPOSITORY, None], strict=True):
        tasks.build_book(root, repository)  # raises CalledProcessError on any warning (-W)
    return roots


# What `-m "not slow"` leaves out, said in one place: every test that needs a book build or
# the class of planted submissions graded, and the modules that start a browser or install a
# fresh environment (test_grading.py marks its other slow tests itself).
SLOW_FIXTURES = {"built_books", "graded"}
SLOW_MODULES = {"test_browser.py", "test_binder.py"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())) or (
            item.path.name in SLOW_MODULES
        ):
            item.add_marker(pytest.mark.slow)
