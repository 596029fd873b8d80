"""What pytest is told about every item it collects, tests (tests/) and notebook cells (nbval
over book/ and labs/source/) alike, said in one place: which are slow, and which must run
one after another on one pytest-xdist worker. The fixtures are in tests/conftest.py.

Slow (`-m "not slow"`, the quick tier, leaves them out): every test that needs a book build
or the class of planted submissions graded, the modules that start a browser or install a
fresh environment, and every notebook cell nbval executes (test_grading.py and the other
grading modules mark their other slow tests themselves).

Groups (`--dist loadgroup`, pyproject.toml; `python3 tasks.py test` runs two workers): the
items of one group run in order on one worker, and a worker takes the next group when it is
free, the largest groups first.

- "book": every test that reads the book builds. The builds are a session fixture, made by
  each worker that needs them; one worker needs them, so the book is built once.
- "sandbox": every test of the grading modules but those marked with a group of their own
  (test_grading's check of labs/release runs nbgrader, not the sandbox). `graded` asserts
  that no process of a sandbox's user is left running when the class is graded, which a
  sandbox started by the other worker would break; the null answers, the sleeper and the
  killed run grade with both cores and time limits, so two of them should not overlap.
- a notebook: its cells share one kernel (nbval) and run in order.
- any other test: its module, so that a module-scoped fixture is made once.
"""

import pytest

SLOW_FIXTURES = {"built_books", "graded"}
SLOW_MODULES = {"test_browser.py", "test_binder.py"}
BOOK_FIXTURES = {"built_books"}
SANDBOX_MODULES = {"test_grading.py", "test_null_answers.py", "test_dask_cli.py", "test_intake.py"}


def pytest_configure(config):
    """With pytest-xdist workers (`-n`), only `--dist loadgroup` keeps the groups together.
    The group marker is declared here too, for a pytest without pytest-xdist (it then
    means nothing, and --strict-markers would refuse it undeclared)."""
    config.addinivalue_line("markers", "xdist_group(name): run with the tests of this group")
    workers = getattr(config.option, "numprocesses", None)
    dist = getattr(config.option, "dist", "no")
    if workers and dist != "loadgroup" and not hasattr(config, "workerinput"):
        raise pytest.UsageError(
            f"-n {workers} needs --dist loadgroup (not {dist}): the book builds and the "
            "grading sandbox must each stay on one worker (conftest.py)"
        )


def is_notebook_cell(item) -> bool:
    """A cell that nbval executes (its items are collected from .ipynb files)."""
    return item.path.suffix == ".ipynb"


def group(item) -> str:
    """The pytest-xdist group of a collected item (see the module's docstring); a test
    marked with a group of its own keeps it."""
    if marked := item.get_closest_marker("xdist_group"):
        return marked.args[0]
    if BOOK_FIXTURES & set(getattr(item, "fixturenames", ())):
        return "book"
    if item.path.name in SANDBOX_MODULES:
        return "sandbox"
    return str(item.path.relative_to(item.config.rootpath))


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups from the markers
def pytest_collection_modifyitems(config, items):
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if SLOW_FIXTURES & fixtures or item.path.name in SLOW_MODULES or is_notebook_cell(item):
            item.add_marker(pytest.mark.slow)
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(group(item)))
