"""What pytest is told about every item it collects, tests (tests/) and notebook cells (nbval
over book/ and labs/source/) alike, said in one place: which are slow, and which must run
one after another on one pytest-xdist worker. The fixtures are in tests/conftest.py.

Slow (`-m "not slow"`, the quick tier, leaves them out): every test that needs a book build
or the class of planted submissions graded, the modules that start a browser or install a
fresh environment, and every notebook cell nbval executes (test_grading.py and the other
grading modules mark their other slow tests themselves).

Groups (`python3 tasks.py test` runs two pytest-xdist workers, `-n 2`): the items of one
group run in order on one worker, and a worker takes the next group when it is free, the
largest groups first. :func:`group` reads an item's group from its node id alone, since the
controller that hands out the groups sees no more (pytest-xdist's own `xdist_group` marker
is not used: with pytest 9 its `--dist loadgroup` no longer keeps a group together).

- "book": the two modules whose tests read the book builds. The builds are a session
  fixture, made by each worker that needs them; one worker needs them, so the book is built
  once. A test elsewhere that asks for the builds is refused at collection.
- "sandbox": every test of the grading modules but those in OWN_GROUP. `graded` asserts
  that no process of a sandbox's user is left running when the class is graded, which a
  sandbox started by the other worker would break; the null answers, the sleeper and the
  killed run grade with both cores and time limits, so two of them should not overlap.
- "binder": the two modules that use Binder's environment (tools/binder_env.py). The first
  to ask builds it into .venv-binder/, the second reuses it; two at once would build into
  the same folder.
- a notebook: its cells share one kernel (nbval) and run in order.
- any other test: its module, so that a module-scoped fixture is made once.
"""

import pytest

SLOW_FIXTURES = {"built_books", "graded"}
SLOW_MODULES = {"test_browser.py", "test_binder.py"}
BOOK_FIXTURES = {"built_books"}
BOOK_MODULES = {"test_book.py", "test_browser.py"}
BINDER_MODULES = {"test_binder.py", "test_jupyterlab.py"}
SANDBOX_MODULES = {"test_grading.py", "test_null_answers.py", "test_dask_cli.py", "test_intake.py"}
# tests of a grading module that start no sandbox (nbgrader only): beside the grading
OWN_GROUP = {
    "tests/test_grading.py::test_student_versions_are_up_to_date": "release",
    "tests/test_grading.py::test_a_lab_that_nbgrader_refuses_is_named_and_nothing_is_marked_done": (
        "release"
    ),
}


def group(nodeid: str) -> str:
    """The group of the item with this node id ('tests/test_x.py::test_y[z]',
    'book/01_neuron.ipynb::Cell 3'): see the module's docstring."""
    path, _, name = nodeid.partition("::")
    test = f"{path}::{name.split('[')[0]}"
    if test in OWN_GROUP:
        return OWN_GROUP[test]
    module = path.rpartition("/")[2]
    if module in BOOK_MODULES:
        return "book"
    if module in SANDBOX_MODULES:
        return "sandbox"
    if module in BINDER_MODULES:
        return "binder"
    return path


def is_notebook_cell(item) -> bool:
    """A cell that nbval executes (its items are collected from .ipynb files)."""
    return item.path.suffix == ".ipynb"


def pytest_collection_modifyitems(config, items):
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if SLOW_FIXTURES & fixtures or item.path.name in SLOW_MODULES or is_notebook_cell(item):
            item.add_marker(pytest.mark.slow)
        if BOOK_FIXTURES & fixtures and group(item.nodeid) != "book":
            raise pytest.UsageError(
                f"{item.nodeid} reads the book builds: put it in one of {sorted(BOOK_MODULES)}"
                " or add its module to BOOK_MODULES (conftest.py), so that the book is built"
                " once, on one worker"
            )


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, which may not be installed
def pytest_xdist_make_scheduler(config, log):
    """With workers (`-n`), whatever `--dist` says: the groups above, largest first."""
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group(nodeid)

    return GroupScheduling(config, log)
