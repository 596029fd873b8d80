from concurrent.futures import ThreadPoolExecutor

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
import vendor_assets  # noqa: E402  (tools/, pytest's pythonpath, pyproject.toml)
from _helpers import STAND_IN_REPOSITORY, need_chromium, sandbox_lock  # noqa: E402

import tasks  # noqa: E402

# Which tests are slow and which share a pytest-xdist worker: ../conftest.py.


@pytest.fixture(scope="session")
def built_books(tmp_path_factory):
    """The book built from scratch twice, the way `python3 tasks.py book` builds it: the first
    for a stand-in GitHub repository (so that it has Binder buttons), the second for none.
    The builds are independent (two folders, two Sphinx processes, each executing every
    chapter) and run at the same time, one per core."""
    roots = [tmp_path_factory.mktemp(f"build{k}") for k in (1, 2)]
    vendor_assets.vendor_assets()  # fetched once, before the two builds read it
    with ThreadPoolExecutor(2) as pool:
        # raises CalledProcessError on any warning (-W) of either build
        list(pool.map(tasks.build_book, roots, [STAND_IN_REPOSITORY, None]))
    return roots


@pytest.fixture(scope="module")
def chromium():
    """One Playwright Chromium (tools/browser.py) for a module's pages."""
    import browser

    need_chromium()
    with browser.playwright_chromium() as launched:
        yield launched


@pytest.fixture(autouse=True)
def _sandbox_shared(request):
    """A test of a grading module (marked `sandbox` by ../conftest.py) holds the sandbox
    lock shared while it runs: see tests/_helpers.py."""
    if request.node.get_closest_marker("sandbox") is None:
        yield
        return
    with sandbox_lock():
        yield
