"""One pin per package: requirement files name, constraints.txt pins, imports are declared."""

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions

from _helpers import ROOT

REQUIREMENTS = sorted(ROOT.glob("requirements*.txt"))
CODE = [
    *(ROOT / "src").rglob("*.py"),
    *(ROOT / "tools").glob("*.py"),
    *(ROOT / "_ext").glob("*.py"),
    *(p for p in (ROOT / "tests").rglob("*.py") if "plants" not in p.parts),
    *(ROOT / "benchmarks").glob("*.py"),
    ROOT / "tasks.py",
    *(ROOT / "labs" / "labtools").rglob("*.py"),
]


def canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def named():
    """{package: file} for every direct dependency, from pyproject.toml and requirements."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    found = {canonical(name): "pyproject.toml" for name in project["dependencies"]}
    for path in REQUIREMENTS:
        for line in path.read_text().splitlines():
            line = line.split("#")[0].strip()
            if line and not line.startswith("-"):
                found[canonical(line)] = path.name
    return found


def pins():
    lines = (ROOT / "constraints.txt").read_text().splitlines()
    return dict(canonical(line).split("==") for line in lines if line and line[0] != "#")


def test_requirement_files_name_packages_without_versions_and_use_the_constraints():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for name in project["dependencies"]:
        assert re.fullmatch(r"[A-Za-z0-9_.-]+", name), f"pyproject.toml pins {name}"
    for path in REQUIREMENTS:
        lines = [line.split("#")[0].strip() for line in path.read_text().splitlines()]
        assert "-c constraints.txt" in lines, path.name
        for line in lines:
            assert not re.search(r"[=<>~!]", line), f"{path.name} pins {line}"


def test_every_direct_dependency_is_named_once_and_pinned():
    seen = {}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    sources = [("pyproject.toml", project["dependencies"])] + [
        (p.name, [line.split("#")[0].strip() for line in p.read_text().splitlines()])
        for p in REQUIREMENTS
    ]
    for source, names in sources:
        for name in names:
            if name and not name.startswith("-"):
                assert canonical(name) not in seen, f"{name}: {seen.get(canonical(name))}, {source}"
                seen[canonical(name)] = source
    missing = sorted(set(seen) - set(pins()))
    assert not missing, f"not pinned in constraints.txt: {missing}"


def test_every_imported_package_is_declared():
    distributions = packages_distributions()
    local = {"perceptrons", "_helpers", "tasks", "browser", "vendor_assets", "book_fixes"}
    local |= {"labtools"}
    local |= {p.stem for p in CODE}
    declared = set(named())
    undeclared = set()
    for path in CODE:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if top in sys.stdlib_module_names or top in local:
                    continue
                dists = {canonical(d) for d in distributions.get(top, [top])}
                if not dists & declared:
                    undeclared.add(f"{top} ({path.relative_to(ROOT)})")
    assert not undeclared, f"imported but not declared: {sorted(undeclared)}"
