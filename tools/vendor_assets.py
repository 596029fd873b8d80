#!/usr/bin/env python3
"""Fetch the browser libraries the website loads, so that it works without a CDN.

    python3 tools/vendor_assets.py      # writes _assets/vendor/ (git-ignored)

The book's pages load MathJax (math) and the ipywidgets HTML manager with RequireJS
(widgets saved in executed notebooks). Each npm package is downloaded once from the
registry, checked against the integrity hash pinned below, and only the files the pages
load are copied into `_assets/vendor/`, which the site publishes as `_static/vendor/`; and
`_config.yml` points at (`mathjax_path`, `nb_ipywidgets_js`). The browser test
(tests/book/test_browser.py) fails if a page asks for a file that is missing here.

The browser test also needs one library the site must not publish: axe-core, the
accessibility checker it runs on every page. `axe_core()` fetches it the same way, pinned
and checked, into the git-ignored `tests/vendor/` (outside `_assets/`, which Sphinx copies
into the site).

Only the standard library is used: tasks.py runs this before the virtual environment exists.
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import io
import json
import shutil
import sys
import tarfile
import tempfile
import urllib.request
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows (tasks.py lab for students): nothing else fetches at once there
    fcntl = None

ROOT = Path(__file__).resolve().parents[1]
VENDOR = ROOT / "_assets" / "vendor"
TEST_VENDOR = ROOT / "tests" / "vendor"
REGISTRY = "https://registry.npmjs.org"

# package: (version, npm integrity, {file pattern in the package: folder under vendor/})
PACKAGES = {
    "mathjax": (
        "3.2.2",
        "sha512-Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/O9NliPc+x77k1/FEsPsjKPZGJvtRZM1vO+geW0OhGw==",
        {
            # the combined component Sphinx loads, and the fonts of its CommonHTML output
            "es5/tex-mml-chtml.js": "mathjax",
            "es5/output/chtml/fonts/woff-v2/*.woff": "mathjax",
            # TeX packages the pages' math loads on demand
            "es5/input/tex/extensions/boldsymbol.js": "mathjax",
        },
    ),
    "@jupyter-widgets/html-manager": (
        "1.0.15",
        "sha512-5thBIV6ymNgmPVOHvzx+gGy8ZSKmSazhtGw4/c4xJDVzRhG9PTeQsRjF3FUTopvFi//SABeNz1yp47bCrJ3CQA==",
        # the manager, and its icon fonts (woff2 only: every browser that runs it reads those)
        {"dist/embed-amd.js": "html-manager", "dist/*.woff2": "html-manager"},
    ),
    "requirejs": (
        "2.3.7",
        "sha512-DouTG8T1WanGok6Qjg2SXuCMzszOo0eHeH9hDZ5Y4x8Je+9JB38HdTLT4/VA8OaUhBa0JPVHJ0pyBkM1z+pDsw==",
        {"require.js": "requirejs"},
    ),
}

# What the tests load into the pages, never the site: the same form as PACKAGES.
TEST_PACKAGES = {
    "axe-core": (
        "4.14.1",
        "sha512-FHfa+lmNjQZfJz1q8wKqIDwC6DExcHt/pkjNQb09a3NPjCKg2rhu5qb2S4r76ASyFNNtuFooJpZe37OgudVGtQ==",
        {"axe.min.js": "axe-core"},
    ),
}


def tarball_url(name: str, version: str) -> str:
    return f"{REGISTRY}/{name}/-/{name.split('/')[-1]}-{version}.tgz"


def check_integrity(data: bytes, integrity: str, name: str) -> None:
    algorithm, _, expected = integrity.partition("-")
    actual = base64.b64encode(hashlib.new(algorithm, data).digest()).decode()
    if actual != expected:
        raise RuntimeError(f"{name}: the downloaded tarball does not match its pinned hash")


def matching(path: str, patterns: dict[str, str], vendor: Path = VENDOR) -> tuple[str, Path] | None:
    """The pattern that package file `path` (e.g. 'es5/x.js') matches and where it goes."""
    for pattern, folder in patterns.items():
        if fnmatch.fnmatchcase(path, pattern):
            # drop only the pattern's first folder, so that MathJax still finds its fonts
            # relative to its own script (vendor/mathjax/output/chtml/fonts/...)
            base = pattern.split("/")[0] + "/" if "/" in pattern else ""
            return pattern, vendor / folder / path.removeprefix(base)
    return None


def fetch(
    name: str, version: str, integrity: str, patterns: dict[str, str], vendor: Path = VENDOR
) -> list[str]:
    url = tarball_url(name, version)
    print(f"Fetching {name}@{version}", flush=True)
    with urllib.request.urlopen(url, timeout=120) as response:
        data = response.read()
    check_integrity(data, integrity, name)
    written, used = [], set()
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            path = member.name.removeprefix("package/")
            found = member.isfile() and matching(path, patterns, vendor)
            if not found:
                continue
            used.add(found[0])
            dest = found[1]
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(tar.extractfile(member).read())
            written.append(dest.relative_to(vendor).as_posix())
    if missing := set(patterns) - used:
        raise RuntimeError(f"{name}@{version} has no file matching {sorted(missing)}")
    return sorted(written)


def vendor(packages: dict = PACKAGES, folder: Path = VENDOR) -> Path:
    """Make `folder` hold exactly the pinned files of `packages`; download only when they
    changed. One process at a time (a lock file in the temporary folder): the book
    build and formgrader's test may ask at once, and one must not empty the folder while
    the other reads it."""
    name = hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:16]
    with open(Path(tempfile.gettempdir()) / f"perceptrons-vendor-{name}.lock", "w") as lock:
        if fcntl is not None:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        return _vendor(packages, folder)


def _vendor(packages: dict, folder: Path) -> Path:
    manifest_file = folder / "manifest.json"
    wanted = {name: list(spec) for name, spec in packages.items()}
    if manifest_file.exists():
        manifest = json.loads(manifest_file.read_text())
        if manifest["packages"] == wanted and all(
            (folder / f).is_file() for f in manifest["files"]
        ):
            return folder
    shutil.rmtree(folder, ignore_errors=True)
    files = []
    for name, (version, integrity, patterns) in packages.items():
        files += fetch(name, version, integrity, patterns, folder)
    manifest_file.write_text(json.dumps({"packages": wanted, "files": files}, indent=1) + "\n")
    size = sum((folder / f).stat().st_size for f in files)
    where = folder.relative_to(ROOT).as_posix()
    print(f"Wrote {len(files)} files ({size / 1e6:.1f} MB) to {where}/", flush=True)
    return folder


def vendor_assets() -> Path:
    """The site's browser libraries in `_assets/vendor/` (PACKAGES)."""
    return vendor(PACKAGES, VENDOR)


def axe_core() -> Path:
    """The axe-core script the browser test runs in each page (TEST_PACKAGES), fetched into
    the git-ignored tests/vendor/ if it is not there yet."""
    return vendor(TEST_PACKAGES, TEST_VENDOR) / "axe-core" / "axe.min.js"


if __name__ == "__main__":
    try:
        vendor_assets()
    except (OSError, RuntimeError) as err:
        sys.exit(f"Could not fetch the website's browser libraries: {err}")
