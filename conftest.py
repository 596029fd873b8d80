"""What pytest is told about every item it collects, tests (tests/) and notebook cells (nbval
over book/ and labs/source/) alike, said in one place: which are slow, and which must run
one after another on one pytest-xdist worker. The fixtures are in tests/conftest.py.

Slow (`-m "not slow"`, the quick tier, leaves them out): every test that needs a book build
or the class of planted submissions graded, the modules that start a browser or install a
fresh environment, and every notebook cell nbval executes (test_grading.py and the other
grading modules mark their other slow tests themselves).

Groups (`python3 tasks.py test` runs two pytest-xdist workers, `-n 2`): the items of one
group run in order on one worker, and a worker takes the next group when it is free, the
longest first (SECONDS: what each group took on the 2-core machine; a group not listed
counts a tenth of a second per item). :func:`group` reads an item's group from its node id
alone, since the controller that hands out the groups sees no more (pytest-xdist's own
`xdist_group` marker is not used: with pytest 9 its `--dist loadgroup` no longer keeps a
group together).

- "book": the two modules whose tests read the book builds. The builds are a session
  fixture, made by each worker that needs them; one worker needs them, so the book is built
  once. A test elsewhere that asks for the builds is refused at collection.
- "binder": the two modules that use Binder's environment (tools/binder_env.py). The first
  to ask builds it into .venv-binder/, the second reuses it; two at once would build into
  the same folder.
- a notebook: its cells share one kernel (nbval) and run in order.
- any other test: its module, so that a module-scoped fixture is made once. The grading
  modules (SANDBOX_MODULES) are eleven such groups, which may run at the same time; their
  tests are marked `sandbox` and hold the sandbox lock (tests/_helpers.py) shared, so that
  the planted class's count of leftover processes, which holds it alone, sees no sandbox
  of another worker's test. OWN_GROUP puts a test of a grading module that only runs
  nbgrader in a group of its own.
"""

import pytest

SLOW_FIXTURES = {"built_books", "graded"}
SLOW_MODULES = {
    "test_browser.py",
    "test_binder.py",
    "test_grader_limits.py",
    "test_instructor_runs.py",
    "test_formgrader.py",
    "test_lab_sliders.py",
    "test_door.py",
    "test_week.py",
}
BOOK_FIXTURES = {"built_books"}
BOOK_MODULES = {"test_book.py", "test_browser.py"}
BINDER_MODULES = {"test_binder.py", "test_jupyterlab.py"}
SANDBOX_MODULES = {
    "test_grading.py",
    "test_null_answers.py",
    "test_answer_families.py",
    "test_dask_cli.py",
    "test_intake.py",
    "test_instructor_runs.py",
    "test_grader_limits.py",
    "test_formgrader.py",
    "test_platform_exports.py",
    "test_shared_gradebook.py",
    "test_warm_start.py",
}
# tests of a grading module that start no sandbox (nbgrader only): beside the grading
OWN_GROUP = {
    f"tests/grader/test_grading.py::{test}": "release"
    for test in (
        "test_student_versions_are_up_to_date",
        "test_a_lab_that_nbgrader_refuses_is_named_and_nothing_is_marked_done",
    )
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
        if item.path.name in SANDBOX_MODULES:
            item.add_marker(pytest.mark.sandbox)
        if BOOK_FIXTURES & fixtures and group(item.nodeid) != "book":
            raise pytest.UsageError(
                f"{item.nodeid} reads the book builds: put it in one of {sorted(BOOK_MODULES)}"
                " or add its module to BOOK_MODULES (conftest.py), so that the book is built"
                " once, on one worker"
            )


# Seconds each long group took on the 2-core machine (a full run, 2026-11-24), to hand out
# the longest first; the order is all they change.
SECONDS = {
    "book": 280,
    # 148 s of pages, and at the start the wait for its environment, built beside the setup
    # (tasks.py). Ahead of the grading groups on purpose: started alongside the two book
    # builds, a grading test saw a sandbox not answer within 5 s of its interrupt (a run of
    # 2026-11-24: the loops plant scored 0, the sleeper stopped for the wrong reason)
    "binder": 190,
    "tests/grader/test_grading.py": 165,
    "tests/labs/test_null_answers.py": 160,  # 221 before it graded without feedback files
    "tests/grader/test_dask_cli.py": 35,
    # alone, 2026-11-27: 40 family notebooks graded (80 s) and the shortcuts' control (14 s)
    "tests/labs/test_answer_families.py": 100,
    "tests/labs/test_lab_sliders.py": 55,  # alone, 2026-11-27: every position of three sliders
    "tests/grader/test_grader_limits.py": 60,  # measured alone, 2026-11-27
    "tests/package/test_perceptron.py": 38,
    "tests/door/test_intake.py": 31,
    "tests/run/test_instructor_runs.py": 60,
    # alone, 2026-11-27: grading one class (20-28 s) and 39 s of tests; its manual grading
    # test (about 20 s) was part of test_grading.py's 165 until then; 2026-12-01: + feedback
    # in a relative folder, `kill` of tasks.py formgrader, math and images (about 15 s)
    "tests/course/test_formgrader.py": 80,
    # alone, 2026-11-28: grading one small class (20-36 s) and 2 s of tests
    "tests/out/test_platform_exports.py": 40,
    # alone, 2026-11-27: a PostgreSQL server made and removed, a class graded twice into it
    # while two formgrader servers take manual scores
    "tests/course/test_shared_gradebook.py": 65,  # 41 to 91 s in five runs, as the load varied
    # alone, 2026-12-01: a course folder made (nbgrader, 18 s), a dozen small runs of
    # grade and export with the pool replaced, and one interrupted course set-up
    "tests/door/test_door.py": 40,
    "release": 19,
    "tests/grader/test_wire.py": 13,
}


def seconds(name: str, items: int) -> float:
    """What a group is expected to take (see SECONDS)."""
    return SECONDS.get(name, 0.1 * items)


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, which may not be installed
def pytest_xdist_make_scheduler(config, log):
    """With workers (`-n`), whatever `--dist` says: the groups above, longest first."""
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group(nodeid)

        def _assign_work_unit(self, node) -> None:
            """LoadScopeScheduling's, but the longest group left, not the next in line."""
            name = max(self.workqueue, key=lambda g: seconds(g, len(self.workqueue[g])))
            work_unit = self.workqueue.pop(name)
            self.assigned_work.setdefault(node, {})[name] = work_unit
            collection = self.registered_collections[node]
            node.send_runtest_some(
                [collection.index(n) for n, done in work_unit.items() if not done]
            )

    return GroupScheduling(config, log)
