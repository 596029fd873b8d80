#!/usr/bin/env python3
"""Fetch the browser libraries the website loads, so that it works without a CDN.

    python3 tools/vendor_assets.py      # writes _assets/vendor/ (git-ignored)

The book's pages load MathJax (math) and the ipywidgets HTML manager with RequireJS
(widgets saved in executed notebooks). Each npm package is downloaded once from the
registry, checked against the integrity hash pinned below, and only the files the pages
load are copied into `_assets/vendor/`, which the site publishes as `_static/vendor/`; and
`_config.yml` points at (`mathjax_path`, `nb_ipywidgets_js`). The browser test
(tests/test_browser.py) fails if a page asks for a file that is missing here.

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
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENDOR = ROOT / "_assets" / "vendor"
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
MANIFEST = VENDOR / "manifest.json"


def tarball_url(name: str, version: str) -> str:
    return f"{REGISTRY}/{name}/-/{name.split('/')[-1]}-{version}.tgz"


def check_integrity(data: bytes, integrity: str, name: str) -> None:
    algorithm, _, expected = integrity.partition("-")
    actual = base64.b64encode(hashlib.new(algorithm, data).digest()).decode()
    if actual != expected:
        raise RuntimeError(f"{name}: the downloaded tarball does not match its pinned hash")


def matching(path: str, patterns: dict[str, str]) -> tuple[str, Path] | None:
    """The pattern that package file `path` (e.g. 'es5/x.js') matches and where it goes."""
    for pattern, folder in patterns.items():
        if fnmatch.fnmatchcase(path, pattern):
            # drop only the pattern's first folder, so that MathJax still finds its fonts
            # relative to its own script (vendor/mathjax/output/chtml/fonts/...)
            base = pattern.split("/")[0] + "/" if "/" in pattern else ""
            return pattern, VENDOR / folder / path.removeprefix(base)
    return None


def fetch(name: str, version: str, integrity: str, patterns: dict[str, str]) -> list[str]:
    url = tarball_url(name, version)
    print(f"Fetching {name}@{version}", flush=True)
    with urllib.request.urlopen(url, timeout=120) as response:
        data = response.read()
    check_integrity(data, integrity, name)
    written, used = [], set()
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            found = member.isfile() and matching(member.name.removeprefix("package/"), patterns)
            if not found:
                continue
            used.add(found[0])
            dest = found[1]
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(tar.extractfile(member).read())
            written.append(dest.relative_to(VENDOR).as_posix())
    if missing := set(patterns) - used:
        raise RuntimeError(f"{name}@{version} has no file matching {sorted(missing)}")
    return sorted(written)


def vendor_assets() -> Path:
    """Make `_assets/vendor/` hold exactly the pinned files; download only when they changed."""
    wanted = {name: list(spec) for name, spec in PACKAGES.items()}
    if MANIFEST.exists():
        manifest = json.loads(MANIFEST.read_text())
        if manifest["packages"] == wanted and all(
            (VENDOR / f).is_file() for f in manifest["files"]
        ):
            return VENDOR
    shutil.rmtree(VENDOR, ignore_errors=True)
    files = []
    for name, (version, integrity, patterns) in PACKAGES.items():
        files += fetch(name, version, integrity, patterns)
    MANIFEST.write_text(json.dumps({"packages": wanted, "files": files}, indent=1) + "\n")
    size = sum((VENDOR / f).stat().st_size for f in files)
    print(f"Wrote {len(files)} files ({size / 1e6:.1f} MB) to _assets/vendor/", flush=True)
    return VENDOR


if __name__ == "__main__":
    try:
        vendor_assets()
    except (OSError, RuntimeError) as err:
        sys.exit(f"Could not fetch the website's browser libraries: {err}")
