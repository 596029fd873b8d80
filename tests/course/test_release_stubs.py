"""The message of each stub in the student versions names what the student must write
(labtools.course.release.stub_message): every name a value answer sets, a tuple's items too."""

import json

from _helpers import ROOT
from labtools.course import release
from labtools.door import layout
from labtools.grader import notebook


def value_cell(solution: str) -> dict:
    return {"source": f"### BEGIN SOLUTION\n{solution}\n### END SOLUTION\n", "metadata": {}}


def test_a_tuple_assignment_names_each_of_its_names():
    """Review B, L4: Lab 4's `eta_choice, alpha_choice = 0.001, 0.95` gave the stub
    'replace this line with your code', naming neither."""
    assert release.stub_message(value_cell("eta_choice, alpha_choice = 0.001, 0.95")) == (
        "Student exercise: set `eta_choice`, `alpha_choice`."
    )
    assert release.stub_message(value_cell("a = 1\nb,c= (2, 3)\nd == 4")) == (
        "Student exercise: set `a`, `b`, `c`."
    )
    assert release.stub_message(value_cell("print(1)")) == (
        "Student exercise: replace this line with your code."
    )


def test_every_value_stub_of_the_labs_names_what_its_solution_sets():
    for lab in layout.lab_names():
        source = json.loads((ROOT / "labs" / "source" / lab / f"{lab}.ipynb").read_text())
        released = json.loads((ROOT / "labs" / "release" / lab / f"{lab}.ipynb").read_text())
        stubs = {
            notebook.grade_id(c): notebook.text(c)
            for c in released["cells"]
            if c["cell_type"] == "code" and "raise NotImplementedError(" in notebook.text(c)
        }
        for cell in source["cells"]:
            if cell["cell_type"] != "code" or not notebook.is_answer(cell):
                continue
            solution = notebook.text(cell).split("### BEGIN SOLUTION")[1].split("### END")[0]
            gid = notebook.grade_id(cell)
            for name in notebook.assigned_names(solution.strip("\n")):
                assert f"`{name}`" in stubs[gid], f"{lab} {gid}: the stub does not name {name}"
