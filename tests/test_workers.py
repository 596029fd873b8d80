"""How the full run shares its pytest-xdist workers (../conftest.py): the groups, their
order, and the one rule between the workers (the sandbox lock, tests/_helpers.py)."""

import importlib.util
import threading
import time

from _helpers import ROOT, sandbox_lock


def root_conftest():
    spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_groups_keep_together_what_shares_a_build_a_kernel_or_an_environment():
    group = root_conftest().group
    assert group("tests/book/test_book.py::x") == group("tests/book/test_browser.py::y[a]")
    assert group("tests/book/test_binder.py::t") == group("tests/book/test_jupyterlab.py::t[b]")
    assert group("book/02_perceptron.ipynb::Cell 3") == "book/02_perceptron.ipynb"
    assert group("book/02_perceptron.ipynb::Cell 3") != group("book/03_convergence.ipynb::Cell 0")
    grading = {group(f"tests/{m}::t") for m in root_conftest().SANDBOX_MODULES}
    assert len(grading) == 11  # may run at the same time, under the sandbox lock
    assert group("tests/grader/test_grading.py::test_student_versions_are_up_to_date") == "release"


def test_the_longest_groups_are_handed_out_first():
    conftest = root_conftest()
    named = sorted(conftest.SECONDS, key=lambda g: -conftest.SECONDS[g])
    # binder second: no grading group starts alongside the book builds (see SECONDS)
    grading = ["tests/grader/test_grading.py", "tests/labs/test_null_answers.py"]
    assert named[:4] == ["book", "binder", *grading]
    assert conftest.seconds("tests/package/test_plotting.py", 4) < conftest.seconds("release", 2)


def test_the_sandbox_lock_lets_tests_share_and_the_count_wait_for_them(tmp_path):
    """The one rule between the workers (tests/_helpers.py): shared holders overlap; one
    that asks to be alone waits until they are done; a test that starts while it waits
    waits for it."""
    path, events = tmp_path / "lock", []

    def hold(name, alone, seconds):
        with sandbox_lock(alone=alone, path=path):
            events.append(f"{name} in")
            time.sleep(seconds)
            events.append(f"{name} out")

    def start(name, alone, seconds):
        thread = threading.Thread(target=hold, args=(name, alone, seconds))
        thread.start()
        time.sleep(0.2)
        return thread

    threads = [start("a", False, 0.8), start("b", False, 0.8)]  # both in at once
    threads += [start("count", True, 0.3), start("c", False, 0.1)]  # c waits behind count
    for thread in threads:
        thread.join()
    assert events[:2] == ["a in", "b in"]
    assert events.index("count in") > max(events.index("a out"), events.index("b out"))
    assert events.index("c in") > events.index("count out")
