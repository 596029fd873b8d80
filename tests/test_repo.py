"""The README's promises: two commands, and CI runs the test one."""

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from _helpers import ROOT

import tasks  # (pytest's pythonpath, pyproject.toml)


def readme_commands():
    """The commands in the README's bash blocks, each split into its words."""
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    return [shlex.split(line) for block in blocks for line in block.splitlines() if line.strip()]


def test_readme_has_exactly_two_commands_book_then_test():
    commands = readme_commands()
    assert len(commands) == 2, commands
    for words in commands:
        assert words[:2] == ["python3", "tasks.py"], words  # the entry point, the system Python
    jobs = [tasks.command_line().parse_args(words[2:]).job for words in commands]
    assert jobs == ["book", "test"]


@pytest.fixture(scope="module")
def ci_calls(tmp_path_factory):
    """.ci/run on a machine without bubblewrap, Chromium and git, CI not set: apt-get and
    python3 are stand-ins that log their calls (environment variable CI, then arguments)."""
    folder = tmp_path_factory.mktemp("ci")
    log = folder / "calls"
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    for name in ("apt-get", "python3"):
        stub = bin_dir / name
        stub.write_text(f'#!/bin/sh\necho "{name} CI=$CI $*" >> "{log}"\n')
        stub.chmod(0o755)
    (bin_dir / "dirname").symlink_to(shutil.which("dirname"))  # the script's only other tool
    subprocess.run(
        [shutil.which("bash"), ROOT / ".ci" / "run"],
        env={"PATH": str(bin_dir)},
        check=True,
        capture_output=True,
    )
    return [shlex.split(line) for line in log.read_text().splitlines()]


def test_ci_runs_the_readme_test_command(ci_calls):
    tests = [[call[0], *call[2:]] for call in ci_calls if call[0] != "apt-get"]
    assert tests == [readme_commands()[1]]


def test_requirements_install_the_package_last():
    lines = [
        line.strip()
        for line in (ROOT / "requirements.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert lines[-1] == "-e ."


def test_ci_installs_the_system_packages_the_tests_need(ci_calls):
    installs = [call for call in ci_calls if call[0] == "apt-get" and "install" in call]
    assert len(installs) == 1
    assert {"bubblewrap", "chromium", "git"} <= set(installs[0])
    # CI is set for the tests, so that the browser and sandbox tests fail, not skip
    assert {call[1] for call in ci_calls if call[0] != "apt-get"} == {"CI=true"}


def test_repository_url_accepts_github_remotes_only(monkeypatch):
    for given, want in [
        ("https://github.com/org/course", "https://github.com/org/course"),
        ("https://github.com/org/course.git", "https://github.com/org/course"),
        ("git@github.com:org/my.course.git", "https://github.com/org/my.course"),
        ("https://gitlab.com/org/course", None),  # Jupyter Book's Binder links are GitHub only
        ("https://github.com/org", None),
    ]:
        monkeypatch.setenv("BOOK_REPOSITORY_URL", given)
        assert tasks.repository_url() == want, given


def test_book_config_adds_binder_only_with_a_repository(tmp_path):
    import yaml

    assert tasks.book_config(tmp_path, None) == ROOT / "_config.yml"
    base = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert "repository" not in base and "launch_buttons" not in base  # appended keys stay unique
    config = yaml.safe_load(tasks.book_config(tmp_path, "https://github.com/o/r").read_text())
    assert config["repository"] == {"url": "https://github.com/o/r", "branch": "main"}
    assert config["launch_buttons"]["binderhub_url"] == "https://mybinder.org"
    assert {k: v for k, v in config.items() if k not in ("repository", "launch_buttons")} == base
    odd = 'https://github.com/o/r"\nx: [1'  # quotes and line breaks stay inside the value
    config = yaml.safe_load(tasks.book_config(tmp_path, odd).read_text())
    assert config["repository"]["url"] == odd and "x" not in config


def test_tasks_reads_the_table_of_contents_like_yaml():
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc["parts"]:
        files += [chapter["file"] for chapter in part["chapters"]]
    assert tasks.toc_documents() == files


DECISIONS = ROOT / "docs" / "decisions"
DATE = r"\d{4}-\d{2}-\d{2}"
# folders that hold no file of ours: environments, builds, caches, downloaded assets
NOT_OURS = {
    ".git",
    ".venv",
    ".venv-lab",
    ".venv-binder",
    ".venv-sandbox",
    "_build",
    "node_modules",
    "vendor",
}
NOT_OURS |= {"__pycache__", ".pytest_cache", ".hypothesis", ".ruff_cache", ".ipynb_checkpoints"}


def decision_records():
    return sorted(path for path in DECISIONS.glob("*.md") if path.name != "README.md")


def index_links():
    """The files that docs/decisions/README.md links to, as written: [text](file)."""
    return re.findall(r"\]\(([^)#\s]+)\)", (DECISIONS / "README.md").read_text())


def statuses(text):
    """The Status items of a record ("- **Status.** ...", "- Status: ..."), each with the
    lines that continue it."""
    return re.findall(r"^- (?:\*\*)?Status\b.*?(?=^- |^#|\Z)", text, re.M | re.S)


def test_every_decision_record_has_a_title_context_decision_and_dated_status():
    records = decision_records()
    assert len(records) > 50  # the diary's decisions and those after it
    for path in records:
        text = path.read_text()
        lines = text.splitlines()
        assert re.fullmatch(r"# \S.*", lines[0]), f"{path.name}: no title on its first line"
        for part in ("Context", "Decision"):  # "- **Context.**", "## Context"
            assert re.search(rf"^(- \*\*|## ){part}\b", text, re.M), f"{path.name}: no {part}"
        status = statuses(text)
        assert len(status) == 1, f"{path.name}: no Status, or more than one"
        dated = re.search(DATE, status[0]) or re.search(rf"^- (\*\*)?Date\b.*{DATE}", text, re.M)
        assert dated, f"{path.name}: its Status has no date (YYYY-MM-DD)"


def test_every_decision_record_is_in_the_index_and_every_link_there_exists():
    links = index_links()
    records = [path.name for path in decision_records()]
    assert sorted(set(records) - set(links)) == [], "not in docs/decisions/README.md"
    assert sorted(set(links) - set(records)) == [], "in the index, but no such record"
    assert len(links) == len(set(links)), "a record listed twice in the index"


def test_a_superseded_record_names_records_that_exist():
    superseded = 0
    for path in decision_records():
        text = path.read_text()
        status = statuses(text)[0]
        if "Superseded by" in status:
            superseded += 1
            named = re.findall(r"`([\w.-]+\.md)`", status)
            assert named, f"{path.name}: superseded by which record?"
            for name in named:
                assert (DECISIONS / name).is_file(), f"{path.name}: no record {name}"
    assert superseded >= 3  # the fast PT, the PT speed goals, labs 6 and 7 as first written


def test_nothing_links_to_the_old_decisions_diary():
    old = "docs/decisions" + ".md"  # replaced by docs/decisions/README.md
    found = []
    for folder, subfolders, files in os.walk(ROOT):
        subfolders[:] = [name for name in subfolders if name not in NOT_OURS]
        for name in files:
            path = Path(folder, name)
            if path.suffix in {".md", ".py", ".ipynb", ".txt", ".toml", ".yml", ".yaml", ".cfg"}:
                found += [
                    f"{path.relative_to(ROOT)}:{number}"
                    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
                    if old in line
                ]
    assert not (ROOT / old).exists()
    assert found == [], f"links to {old}, now docs/decisions/README.md: {found}"


@pytest.mark.parametrize("quick", [False, True])
def test_the_test_command_builds_binders_environment_beside_the_setup(monkeypatch, quick):
    """The full tier starts Binder's environment in the background before .venv is set up,
    and stops it if the tests end first; the quick tier does not need it."""
    calls = []

    class Build:
        def __init__(self):
            self.running = True

        def poll(self):
            return None if self.running else 0

        def terminate(self):
            calls.append("terminate")
            self.running = False

        def wait(self):
            calls.append("wait")

    monkeypatch.setattr(tasks, "binder_in_background", lambda: calls.append("binder") or Build())
    monkeypatch.setattr(tasks, "setup", lambda reqs: calls.append(reqs))
    # not the real one: with `run` replaced it would empty .venv-sandbox whenever its
    # requirements changed (venv's clear) and mark it installed
    monkeypatch.setattr(tasks, "setup_sandbox", lambda: None)
    monkeypatch.setattr(tasks, "run", lambda *cmd, **kw: calls.append(Path(cmd[0]).name))
    tasks.main(["test", "--quick"] if quick else ["test"])
    if quick:
        assert calls == ["requirements-test.txt", "pre-commit", "python"]
    else:
        setup = ["requirements-test.txt", "pre-commit", "python"]
        assert calls == ["binder", *setup, "terminate", "wait"]
