"""A Python environment built the way Binder (repo2docker) builds this repository's image, to
test and time the course where students run it.

    python3 tools/binder_env.py          # build (or reuse) it; print where it is and its costs
    python3 tools/binder_env.py --fresh  # build it again, to measure Binder's install cost

What repo2docker does for this repository (see `REPO2DOCKER`'s python build pack): a conda
environment from the lock file that ships inside the jupyter-repo2docker package, then, in the
repository, ``pip install --no-cache-dir -r requirements.txt`` and
``pip install --no-cache-dir .`` (pyproject.toml has [project] and [build-system]).

What this does: the same lock and the same two pip commands, but the base is a venv of this
machine's Python 3.11 (conda is not available here) in which pip installs the lock's top-level
packages (environment.py-3.11.yml) pinned to every Python package version of the lock. See
docs/decisions/binder-faithful-env.md for what is faithful and what is not.

The environment is kept in .venv-binder/ (git-ignored), keyed by a digest of requirements.txt,
constraints.txt, pyproject.toml and the lock, so a second run reuses it; the package's own
sources (src/) are reinstalled into it when they change. Standard library only.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

try:
    import fcntl
except ImportError:  # not on Windows: builds there are not run side by side
    fcntl = None

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".venv-binder"
#: the repo2docker release mybinder.org builds with (its lock files fix Binder's base image)
REPO2DOCKER = "2026.4.0"
PYTHON = "3.11"  # runtime.txt
LOCK = f"repo2docker/buildpacks/conda/environment.py-{PYTHON}-linux-64.lock"
YML = f"repo2docker/buildpacks/conda/environment.py-{PYTHON}.yml"
#: conda-forge names whose PyPI distribution is called otherwise
PYPI_NAMES = {
    "brotli-python": "brotli",
    "jupyterhub-base": "jupyterhub",
    "jupyterhub-singleuser": "jupyterhub",  # the PyPI package carries the singleuser server
    "nbconvert-core": "nbconvert",
    "python-fastjsonschema": "fastjsonschema",
}
#: top-level packages of the yml that are not Python distributions
NOT_PYPI = {"python", "nodejs", "pip"}


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass
class Lock:
    """Binder's base for Python 3.11, read from the repo2docker wheel."""

    python: str  # the lock's Python version (the image's)
    pins: dict[str, str]  # PyPI name -> version, for every Python package of the lock
    top_level: list[str]  # pip requirements made from the yml's dependencies
    text: str  # the lock file itself (its digest keys the cache)


@dataclass
class BinderEnv:
    path: Path
    python: Path
    bin: Path
    reused: bool
    costs: dict = field(default_factory=dict)  # see build(); measured when it was built

    def report(self) -> str:
        c = self.costs
        lines = [
            f"Binder-faithful environment: {self.path.relative_to(ROOT)}"
            + (" (reused)" if self.reused else ""),
            f"  base (repo2docker {REPO2DOCKER} lock, Python {c['lock_python']} there, "
            f"{c['python']} here): {c['base_seconds']:.0f} s, "
            f"{c['base_mb']:.0f} MB of site-packages",
            f"  left out of the base: {', '.join(c['left_out']) or 'nothing'}",
            f"  pip install -r requirements.txt and pip install .: "
            f"{c['requirements_seconds']:.0f} s, +{c['added_mb']:.0f} MB "
            f"({len(c['added'])} packages added)",
            f"  added: {', '.join(f'{n} {v}' for n, v in sorted(c['added'].items()))}",
            "  base packages pip replaced: "
            + (
                ", ".join(f"{n} {a} -> {b}" for n, (a, b) in sorted(c["replaced"].items()))
                or "none"
            ),
        ]
        return "\n".join(lines)


def wheel(cache: Path = CACHE) -> Path:
    """The jupyter-repo2docker wheel (downloaded once with pip, no dependencies)."""
    folder = cache / f"repo2docker-{REPO2DOCKER}"
    found = sorted(folder.glob("jupyter_repo2docker-*.whl"))
    if not found:
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
            + ["--only-binary=:all:", "-d", str(folder), f"jupyter-repo2docker=={REPO2DOCKER}"],
            check=True,
        )
        found = sorted(folder.glob("jupyter_repo2docker-*.whl"))
    return found[0]


def parse_lock(text: str, yml: str) -> Lock:
    """The Python packages of a conda explicit lock (URLs ending in name-version-build.conda)
    and the top-level requirements of the environment yml it was frozen from."""
    pins, python = {}, None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "@")):
            continue
        file = line.split("#")[0].rsplit("/", 1)[-1]
        base = file.removesuffix(".conda").removesuffix(".tar.bz2")
        name, version, build = base.rsplit("-", 2)
        if name == "python":
            python = version
        # Python distributions are built per Python ("py311...", "pyhd8ed1ab..."); the
        # others are C libraries, tools, or metapackages ("h..."), not on PyPI under that name
        elif build.startswith("py"):
            pins[PYPI_NAMES.get(name, name)] = version
    top_level = []
    dependencies = yml.split("\ndependencies:", 1)[-1]
    for line in dependencies.splitlines():
        m = re.match(r"\s*-\s*([A-Za-z0-9_.-]+)\s*([=<>!]=?[^\s#]*)?", line)
        if not m or m[1] in NOT_PYPI:
            continue
        spec = m[2] or ""
        if spec.startswith("=") and not spec.startswith("=="):
            spec = "=" + spec  # conda's "=3.11.*" is pip's "==3.11.*"
        top_level.append(PYPI_NAMES.get(m[1], m[1]) + spec)
    if python is None:
        raise ValueError("the lock file names no python package")
    return Lock(python=python, pins=pins, top_level=top_level, text=text)


def read_lock(cache: Path = CACHE) -> Lock:
    with zipfile.ZipFile(wheel(cache)) as whl:
        return parse_lock(whl.read(LOCK).decode(), whl.read(YML).decode())


def key(lock: Lock) -> str:
    h = hashlib.sha256(REPO2DOCKER.encode())
    h.update(lock.text.encode())
    for name in ("requirements.txt", "constraints.txt", "pyproject.toml"):
        h.update(name.encode())
        h.update((ROOT / name).read_bytes())
    return h.hexdigest()[:16]


def src_digest() -> str:
    h = hashlib.sha256()
    for f in sorted((ROOT / "src").rglob("*")):
        if f.is_file() and "__pycache__" not in f.parts and not f.name.endswith(".egg-info"):
            h.update(str(f.relative_to(ROOT)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()


def base_python() -> str:
    """A Python 3.11 interpreter of this machine (the lock's minor version)."""
    if f"{sys.version_info[0]}.{sys.version_info[1]}" == PYTHON:
        return sys.executable
    found = shutil.which(f"python{PYTHON}")
    if found is None:
        raise FileNotFoundError(f"Python {PYTHON} is needed (Binder's runtime.txt says so)")
    return found


def pip(python: Path, *args: str, log: Path) -> float:
    """Run pip in the environment; return the seconds it took. Its output goes to `log`."""
    return module(python, "pip", *args, "--disable-pip-version-check", log=log)


def module(python: Path, name: str, *args: str, log: Path) -> float:
    """Run `python -m NAME ARGS` in the environment; return the seconds it took. Its output
    goes to `log`; RuntimeError with the log's last lines if it fails."""
    start = time.perf_counter()
    shown = " ".join((name, *args))
    with log.open("a") as out:
        out.write(f"\n$ {shown}\n")
        out.flush()
        done = subprocess.run(
            [str(python), "-m", name, *args], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT
        )
    if done.returncode:
        tail = "".join(log.read_text().splitlines(keepends=True)[-30:])
        raise RuntimeError(f"{shown} failed (log: {log}):\n{tail}")
    return time.perf_counter() - start


def uv_pin() -> str:
    """uv's requirement as constraints.txt pins it (`uv==VERSION`)."""
    lines = (ROOT / "constraints.txt").read_text().splitlines()
    return next(line for line in lines if line.startswith("uv=="))


def install_base(python: Path, top: list[str], pins: Path, log: Path) -> None:
    """Install the base's packages `top` at the versions of `pins`: what conda installs in
    Binder's image, so the installer is not what is reproduced. uv does it (about a third of
    pip's time; bytecode compiled, as conda's packages are), installed for this and removed
    after (Binder's base has no uv); pip does it if uv fails. Raises RuntimeError if both
    fail."""
    try:
        pip(python, "install", uv_pin(), log=log)
        uv = ["pip", "install", "--compile-bytecode", "--python", str(python)]
        module(python, "uv", *uv, *top, "-c", str(pins), log=log)
    except RuntimeError:
        pip(python, "install", "--no-cache-dir", *top, "-c", str(pins), log=log)
    finally:
        pip(python, "uninstall", "--yes", "uv", log=log)


def installed(python: Path) -> dict[str, str]:
    code = (
        "import json, importlib.metadata as m\n"
        "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))"
    )
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    return {normalize(k): v for k, v in json.loads(out.stdout).items()}


def site_packages_mb(env: Path) -> float:
    total = 0
    for folder in env.glob("lib/python*/site-packages"):
        for dirpath, _, files in os.walk(folder):
            total += sum(os.lstat(os.path.join(dirpath, f)).st_size for f in files)
    return total / 1e6


@contextlib.contextmanager
def _alone(cache: Path):
    """Hold `cache`/.lock: one build at a time (`tasks.py test` starts one in the background
    while the tests may ask for the environment too; the second waits, then reuses it)."""
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / ".lock").open("w") as held:
        if fcntl is not None:
            fcntl.flock(held, fcntl.LOCK_EX)
        yield


def build(cache: Path = CACHE, fresh: bool = False) -> BinderEnv:
    """Binder's environment for this repository: built once per key (see `key`), else
    reused, with the package reinstalled when src/ changed. Another build of the same
    `cache` (another process) is waited for."""
    with _alone(cache):
        return _build(cache, fresh)


def _build(cache: Path, fresh: bool) -> BinderEnv:
    lock = read_lock(cache)
    path = cache / key(lock)
    python = path / "bin" / "python"
    done = path / "costs.json"
    if fresh:
        shutil.rmtree(path, ignore_errors=True)
    if done.exists():
        env = BinderEnv(path, python, path / "bin", True, json.loads(done.read_text()))
        stamp = path / ".src-digest"
        if stamp.read_text() != (want := src_digest()):
            # what `pip install .` put there is a copy of src/: copy it again
            pip(python, "install", "--no-deps", ".", log=path / "pip.log")
            stamp.write_text(want)
        return env
    for old in cache.glob("*/costs.json"):  # keep one environment, not one per change
        shutil.rmtree(old.parent, ignore_errors=True)
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    log = path / "pip.log"
    pins = path / "binder-base-constraints.txt"
    pins.write_text(
        f"# every Python package of repo2docker {REPO2DOCKER}'s {LOCK.rsplit('/', 1)[-1]}\n"
        + "".join(f"{name}=={version}\n" for name, version in sorted(lock.pins.items()))
    )
    start = time.perf_counter()
    subprocess.run([base_python(), "-m", "venv", str(path)], check=True)
    # the base: the lock's pip, then its top-level packages at the lock's versions
    pip(python, "install", "--no-cache-dir", f"pip=={lock.pins['pip']}", log=log)
    left_out = []
    top = [*lock.top_level, "setuptools", "wheel"]
    try:
        install_base(python, top, pins, log)
    except RuntimeError:
        # jupyterhub (the singleuser server) is the only one Binder needs for its own
        # login, not for the course: without it, say so
        left_out = [r for r in top if r.startswith("jupyterhub")]
        top = [r for r in top if r not in left_out]
        install_base(python, top, pins, log)
    base_seconds = time.perf_counter() - start
    before, base_mb = installed(python), site_packages_mb(path)
    # what repo2docker's python build pack runs in the repository (assemble scripts)
    seconds = pip(python, "install", "--no-cache-dir", "-r", "requirements.txt", log=log)
    seconds += pip(python, "install", "--no-cache-dir", ".", log=log)
    after = installed(python)
    costs = {
        "repo2docker": REPO2DOCKER,
        "lock_python": lock.python,
        "python": subprocess.run(
            [str(python), "-c", "import platform; print(platform.python_version())"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip(),
        "left_out": left_out,
        "base_seconds": base_seconds,
        "base_mb": base_mb,
        "requirements_seconds": seconds,
        "added_mb": site_packages_mb(path) - base_mb,
        "added": {n: v for n, v in after.items() if n not in before},
        "replaced": {n: (before[n], v) for n, v in after.items() if before.get(n, v) != v},
    }
    (path / ".src-digest").write_text(src_digest())
    done.write_text(json.dumps(costs, indent=1) + "\n")
    return BinderEnv(path, python, path / "bin", False, costs)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fresh", action="store_true", help="build again, even if cached")
    parser.add_argument("--json", action="store_true", help="print the costs as JSON")
    args = parser.parse_args(argv)
    env = build(fresh=args.fresh)
    print(json.dumps(asdict(env), default=str, indent=1) if args.json else env.report())
    return 0


if __name__ == "__main__":
    sys.exit(main())
