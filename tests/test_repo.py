"""The README's promises: two commands, and CI runs the test one."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_commands():
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip()]


def test_readme_has_exactly_two_commands_book_then_test():
    assert readme_commands() == ["python3 tasks.py book", "python3 tasks.py test"]


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    assert readme_commands()[1] in ci


def test_requirements_install_the_package_last():
    lines = [
        line.strip()
        for line in (ROOT / "requirements.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert lines[-1] == "-e ."


def test_ci_installs_the_system_packages_the_tests_need():
    ci = (ROOT / ".ci" / "run").read_text()
    for package in ("bubblewrap", "chromium", "git"):
        assert f"missing+=({package})" in ci
    assert 'export CI="${CI:-true}"' in ci  # so that the browser and sandbox tests fail, not skip


def tasks_module():
    from _helpers import load_module

    return load_module("tasks", ROOT / "tasks.py")


def test_repository_url_accepts_github_remotes_only(monkeypatch):
    tasks = tasks_module()
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

    tasks = tasks_module()
    assert tasks.book_config(tmp_path, None) == ROOT / "_config.yml"
    base = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert "repository" not in base and "launch_buttons" not in base  # appended keys stay unique
    config = yaml.safe_load(tasks.book_config(tmp_path, "https://github.com/o/r").read_text())
    assert config["repository"] == {"url": "https://github.com/o/r", "branch": "main"}
    assert config["launch_buttons"]["binderhub_url"] == "https://mybinder.org"
    assert {k: v for k, v in config.items() if k not in ("repository", "launch_buttons")} == base


def test_tasks_reads_the_table_of_contents_like_yaml():
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc["parts"]:
        files += [chapter["file"] for chapter in part["chapters"]]
    assert tasks_module().toc_documents() == files
