"""What Binder builds (tools/binder_env.py: repo2docker's base from its lock, then
requirements.txt and the package) runs every student lab up to its first exercise, by nbclient:
the fast complement of tests/book/test_jupyterlab.py, which does the same in JupyterLab."""

import json
import subprocess

import binder_env  # tools/ (pytest's pythonpath)
import nbformat
import pytest
from _helpers import ROOT
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

RELEASE = sorted((ROOT / "labs" / "release").glob("*/*.ipynb"))


@pytest.fixture(scope="module")
def binder_kernel(tmp_path_factory):
    """A kernel in the Binder-faithful environment (built once, then reused)."""
    python = binder_env.build().python
    spec_dir = tmp_path_factory.mktemp("kernels") / "kernels" / "binder"
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "binder",
                "language": "python",
            }
        )
    )
    return spec_dir.parent.parent, python


def test_requirements_alone_import_the_package(binder_kernel):
    _, python = binder_kernel
    out = subprocess.run(
        [str(python), "-c", "import perceptrons, ipywidgets; print(perceptrons.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == __import__("perceptrons").__version__
    for module in ("nbgrader", "myst_nb", "sphinx", "jupyter_book"):
        missing = subprocess.run([str(python), "-c", f"import {module}"], capture_output=True)
        assert missing.returncode != 0, f"{module}: build and instructor tools stay out"


@pytest.mark.parametrize("path", RELEASE, ids=[p.stem for p in RELEASE])
def test_student_lab_runs_up_to_its_first_stub(binder_kernel, path, monkeypatch):
    jupyter_path, _ = binder_kernel
    monkeypatch.setenv("JUPYTER_PATH", str(jupyter_path))
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb, kernel_name="binder", timeout=120, resources={"metadata": {"path": str(path.parent)}}
    )
    with pytest.raises(CellExecutionError) as stopped:
        client.execute()
    assert "NotImplementedError" in str(stopped.value)
    assert "Student exercise:" in str(stopped.value)
    first_stub = next(
        i
        for i, c in enumerate(nb.cells)
        if "raise NotImplementedError(" in c.source and c.cell_type == "code"
    )
    ran = [c for c in nb.cells[:first_stub] if c.cell_type == "code"]
    assert all(c.get("execution_count") for c in ran), "a cell before the first stub did not run"
    assert not any(o.get("output_type") == "error" for c in ran for o in c.get("outputs", []))


def test_two_builds_at_once_run_one_after_the_other(tmp_path, monkeypatch):
    """`tasks.py test` builds the environment in the background while a test may ask for it:
    the second build waits for the first (a lock in the cache folder), then reuses it."""
    import threading
    import time

    spans = []

    def slow_build(cache, fresh):
        start = time.monotonic()
        time.sleep(0.3)
        spans.append((start, time.monotonic()))

    monkeypatch.setattr(binder_env, "_build", slow_build)
    builds = [threading.Thread(target=binder_env.build, args=(tmp_path,)) for _ in range(2)]
    for thread in builds:
        thread.start()
    for thread in builds:
        thread.join()
    (first_start, first_end), (second_start, _) = sorted(spans)
    assert second_start >= first_end > first_start
