"""The README's promises: two commands, and CI runs the test one."""

import re
import shlex
import shutil
import subprocess

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
