"""The class report (labs/labtools/out/report.py) and its similarity method
(labs/labtools/out/similarity.py): the method on hand-made answers, the report on a small
course folder written the way ``grade`` writes one (tests/_helpers.py ``class_folder``), a
planted ring of copies in a large made-up class, and the page offline in Chromium."""

import json
import re

import numpy as np
import pytest
from _helpers import class_folder, need_chromium, random_answer, renamed
from bs4 import BeautifulSoup
from labtools.__main__ import main
from labtools.course import folder as courses
from labtools.course.record import read_row
from labtools.door import timestamps
from labtools.out import report, similarity
from labtools.out.similarity import Answer, similar_pairs

STUB = '''def train(X, c, eta, max_epochs=100):
    """PT from w = 0 in cyclic order, built on pt_step; returns w of shape (p+1,)."""
    # YOUR CODE HERE
    raise NotImplementedError("Student exercise: write the body of `train` (see its docstring)")
'''
HEAD = STUB.split("    # YOUR")[0]
SOLUTION = (
    HEAD
    + """    Xa = P.augment(X)
    w = np.zeros(Xa.shape[1])
    for epoch in range(max_epochs):
        changed = False
        for x, ci in zip(Xa, c):
            new = pt_step(w, x, ci, eta)
            if not np.array_equal(new, w):
                changed = True
            w = new
        if not changed:
            break
    return w
"""
)
ALICE = (
    HEAD
    + """    A = np.hstack([np.ones((len(X), 1)), X])
    weights = np.zeros(A.shape[1])
    epoch = 0
    while epoch < max_epochs:
        mistakes = 0
        for i in range(len(A)):
            before = weights.copy()
            weights = pt_step(weights, A[i], c[i], eta)
            if np.any(before != weights):
                mistakes += 1
        if mistakes == 0:
            break
        epoch += 1
    return weights
"""
)
CAROL = (
    HEAD
    + """    n, p = X.shape
    w = np.array([0.0] * (p + 1))
    aug = np.c_[np.ones(n), X]
    for _ in range(max_epochs):
        updates = [not np.allclose(pt_step(w, row, lab, eta), w) for row, lab in zip(aug, c)]
        if not any(updates):
            return w
        for row, lab in zip(aug, c):
            w = pt_step(w, row, lab, eta)
    return w
"""
)
# alice's answer, every name of hers renamed and comments added: a copy
BOB = renamed(
    ALICE, {"A": "Z", "weights": "vec", "epoch": "ep", "mistakes": "errs", "before": "old"}
).replace("    return vec", "    # my own work\n    return vec")
GIVEN = similarity.given_names([STUB, "import numpy as np\nimport perceptrons as P\n"])
CELL = "ex3-code"


def pairs_of(answers, threshold=0.0, min_shared=1, exclude=True):
    """Every pair that shares any fingerprint (the reporting threshold set aside)."""
    texts = {CELL: [STUB, SOLUTION]} if exclude else {}
    excluded = similarity.excluded_kgrams(texts, {CELL: True}, GIVEN)
    found = similar_pairs("lab", answers, excluded, GIVEN, threshold, min_shared)
    return {(p.first, p.second): p for p in found}


def answers(**texts):
    return [Answer(student, {CELL: text}) for student, text in texts.items()]


def test_tokens_rename_the_students_names_and_keep_the_labs():
    given = frozenset({"x", "np"})
    assert similarity.code_tokens("total = np.sum(x) + 1  # mine\n", given) == [
        *("V", "=", "np", ".sum", "(", "x", ")", "+", "1")
    ]
    assert similarity.code_tokens("%timeit f()\ns = 'a'\n") == ["V", "=", '"S"']
    assert similarity.code_tokens("def f(:\n") == ["def", "V", "(", ":"]  # up to the error
    assert similarity.code_tokens("x = (1,\n") == ["V", "=", "(", "1", ","]
    assert similarity.text_tokens("The Weights, scaled!") == ["the", "weights", "scaled"]


def test_a_copy_with_renamed_variables_scores_one():
    found = pairs_of(answers(alice=ALICE, bob=BOB))
    assert list(found) == [("alice", "bob")]
    pair = found["alice", "bob"]
    ((cell, score, shared, mine, theirs),) = pair.cells
    assert (cell, score) == (CELL, 1.0) and shared == mine == theirs > 20


def test_two_independent_correct_solutions_share_nothing():
    assert pairs_of(answers(alice=ALICE, carol=CAROL)) == {}


def test_copies_of_the_instructors_solution_are_not_flagged():
    dave = renamed(SOLUTION, {"changed": "flag", "Xa": "XX", "new": "nxt"})
    assert pairs_of(answers(dave=dave, erin=SOLUTION)) == {}
    # without the solution left out, they are a copy of each other
    assert pairs_of(answers(dave=dave, erin=SOLUTION), exclude=False)["dave", "erin"].score == 1


def test_the_stub_is_left_out():
    # both keep the stub's long message and add unrelated lines of their own
    mine = STUB + "    w = np.zeros(3)\n    return w\n"
    theirs = STUB + "    print(eta)\n"
    assert pairs_of(answers(frank=mine, gina=theirs)) == {}
    assert ("frank", "gina") in pairs_of(answers(frank=mine, gina=theirs), exclude=False)
    # the stub alone leaves no fingerprint
    excluded = similarity.excluded_kgrams({CELL: [STUB]}, {}, GIVEN)
    (prints,) = similarity.fingerprints(Answer("h", {CELL: STUB}), excluded, GIVEN).values()
    assert len(prints) == 0
    assert len(similarity.fingerprints(Answer("h", {CELL: STUB}), {}, GIVEN)[CELL]) > 0


def test_a_planted_ring_is_found_in_a_large_made_up_class():
    """300 students, three answer cells each, drawn at random; students 0-3 share one
    cell's answer (renamed) and 10 and 11 another's: exactly those pairs are reported."""
    rng = np.random.default_rng(30)
    cells = ["ex1", "ex2", "ex3"]
    class_ = [Answer(f"s{k:03d}", {c: random_answer(rng) for c in cells}) for k in range(300)]
    for k in (1, 2, 3):
        class_[k].cells["ex2"] = renamed(class_[0].cells["ex2"], {"v0": f"t{k}", "v1": "q"})
    class_[11].cells["ex3"] = renamed(class_[10].cells["ex3"], {"x": "y"}).replace("eta", "c")
    found = similar_pairs("lab", class_, {}, frozenset(), threshold=0.3)
    ring = {(f"s{a:03d}", f"s{b:03d}") for a in range(4) for b in range(a + 1, 4)}
    assert {(p.first, p.second) for p in found} == ring | {("s010", "s011")}
    assert {tuple(c[0] for c in p.cells) for p in found} == {("ex2",), ("ex3",)}
    assert all(p.score == 1.0 for p in found)


# --- the report on a small course folder ---------------------------------------------------

LAB = "lab1_perceptron"
HOSTILE = '<script>window.HOSTILE = 1</script><img src="x" onerror="window.HOSTILE = 2">'
FAILED = "AssertionError: train(X_and, c_and, 1.0) differs from P.pt"


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """Six students: ann (her own train), bo and cy (ann's renamed; cy's failure message
    and a comment in her answer hostile), di (another train of her own, failing), ed
    (refused) hand in lab 1; fay hands in lab 2 only. The report written by the command."""
    folder = tmp_path_factory.mktemp("course") / "grading"
    own = ALICE.replace("A = np.hstack([np.ones((len(X), 1)), X])", "A = P.augment(X)")
    fail = {"ex3-visible": (0, FAILED), "ex3-hidden": (0, FAILED)}
    results = {
        "ann": {LAB: {"answers": {"ex3-code": own}, "seconds": 2.0}},
        "bo": {LAB: {"answers": {"ex3-code": renamed(own, {"weights": "u"})}, "seconds": 4.0}},
        "cy": {
            LAB: {
                "answers": {"ex3-code": f"# {HOSTILE}\n" + renamed(own, {"epoch": "k"})},
                "tests": {"ex1-visible": (0, HOSTILE), "ex3-visible": (0, FAILED)},
                "seconds": 9.0,
            }
        },
        "di": {LAB: {"answers": {"ex3-code": CAROL}, "tests": fail, "seconds": 3.0}},
        "ed": {LAB: {"status": "refused: the notebook is a symbolic link"}},
        "fay": {"lab2_convergence": {"seconds": 1.0}},
    }
    class_folder(folder, results)
    # di's answer to exercise 3 is held for review (labtools.course.review), with a hostile reason
    path = courses.result_path(folder, "di", LAB)
    row = read_row(path)
    row.tests["ex3-hidden"]["held"] = True
    row.review = [{"cell": "ex3-code", "line": 4, "what": f"uses eval {HOSTILE}", "held": True,
                   "exercise": "ex3"}]  # fmt: skip
    path.write_text(json.dumps(row.to_json()))
    # submission times as a run keeps them (labtools.course.late): bo 2 hours after the due date,
    # ann before it, cy marked late by Canvas; di's time belongs to another notebook
    import datetime as dt

    from labtools.course import late

    (folder / late.POLICY).write_text(
        "[penalty]\npercent_per_day = 10\n[due]\nlab1_perceptron = 2026-02-06T23:59:00+01:00\n"
    )
    zone = dt.timezone(dt.timedelta(hours=1))
    digest = {s: read_row(courses.result_path(folder, s, LAB)).digest for s in ("ann", "bo", "cy")}
    late.record_times(folder, {
        ("ann", LAB): timestamps.Submitted(dt.datetime(2026, 2, 6, 20, 0, tzinfo=zone),
                                     source="timestamp.txt", digest=digest["ann"]),
        ("bo", LAB): timestamps.Submitted(dt.datetime(2026, 2, 7, 2, 0, tzinfo=zone),
                                    source="timestamp.txt", digest=digest["bo"]),
        ("cy", LAB): timestamps.Submitted(late=True, source="Canvas _LATE", digest=digest["cy"]),
        ("di", LAB): timestamps.Submitted(dt.datetime(2026, 2, 9, tzinfo=zone), digest="another"),
    })  # fmt: skip
    assert main(["report", "--course", str(folder)]) == 0
    return folder


@pytest.fixture(scope="module")
def page(course):
    text = (course / report.REPORT).read_text()
    return text, BeautifulSoup(text, "html.parser")


def section(soup, lab):
    return soup.find(id=report.anchor("lab", lab))


def test_the_report_counts_each_lab(page):
    _, soup = page
    rows = {tr.th.get_text(): tr.td.get_text() for tr in section(soup, LAB).table.find_all("tr")}
    assert rows["graded"] == "4"
    assert rows["missing (no submission)"] == "1"  # fay
    assert rows["refused"] == "1"  # ed
    assert rows["late"] == "2 of 3 with a known time or mark: bo, cy"
    assert rows["seconds per notebook"] == "median 3.5, max 9.0 (cy)"
    lab2 = section(soup, "lab2_convergence").table.find_all("tr")
    other = {tr.th.get_text(): tr.td.get_text() for tr in lab2}
    assert other["graded"] == "1" and other["missing (no submission)"] == "5"


def test_the_report_lists_failure_messages_with_counts_and_an_example(page):
    _, soup = page
    ident = report.anchor("test", LAB, "ex3-visible")
    table = soup.find(id=ident).table
    (row,) = table.find_all("tr")[1:]
    assert [td.get_text() for td in row.find_all("td")] == [FAILED, "2", "cy"]
    summary = {
        tr.td.get_text(): [td.get_text() for td in tr.find_all("td")]
        for tr in soup.find(id=report.anchor("tests", LAB)).find_all("tr")[1:]
    }
    assert summary["ex3-visible"] == ["ex3-visible", "1", "2", "0", "2", "0.50"]
    assert summary["ex1-hidden"] == ["ex1-hidden", "2", "4", "0", "0", "2.00"]


def test_the_report_lists_the_answers_held_for_review_and_why(page):
    _, soup = page
    held = soup.find(id=report.anchor("held", LAB))
    assert held.get_text() == "Held for review (1)"
    (row,) = held.find_next("table").find_all("tr")[1:]
    cells = [td.get_text() for td in row.find_all("td")]
    assert cells == ["di", "ex3-hidden", "0 of 2", f"ex3-code, line 4: uses eval {HOSTILE}"]
    lab2 = soup.find(id=report.anchor("held", "lab2_convergence"))
    assert lab2.get_text() == "Held for review (0)"
    assert lab2.find_next("p").get_text() == "No answer held."


def test_every_figure_is_an_image_with_alt_text(page):
    _, soup = page
    images = soup.find_all("img")
    assert len(images) == 13  # each lab's total and each test cell (6 and 5)
    for image in images:
        assert image["src"].startswith("data:image/png;base64,")
        assert len(image["alt"]) > 20
    totals = section(soup, LAB).figure.img["alt"]
    assert totals == (
        f"{LAB}: automatic score per student, out of 7: 1 scored 4; 1 scored 5; 2 scored 7"
    )


def test_student_text_is_escaped(page):
    text, soup = page
    assert "<script" not in text.lower()
    assert not soup.find_all("script")
    assert all(not img.get("onerror") for img in soup.find_all("img"))
    escaped = HOSTILE.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    assert escaped.replace('"', "&quot;") in text  # the message and the answer, as text
    shown = [pre.get_text() for pre in soup.find_all("pre")]
    assert HOSTILE in shown  # the failure message
    assert any(pre.startswith(f"# {HOSTILE}\n") for pre in shown)  # cy's answer


def test_the_similarity_section_shows_the_copied_pairs_side_by_side(page):
    _, soup = page
    listed = soup.find(id="similarity").table.find_all("tr")[1:]
    pairs = [tr.find_all("td")[2].get_text() for tr in listed]
    assert pairs == ["ann and bo", "ann and cy", "bo and cy"]
    first = soup.find(id="pair-1")
    assert [p.get_text() for p in first.find_all("p")] == ["ann", "bo"]
    assert [pre.get_text() for pre in first.find_all("pre")][1].count("u = pt_step(u,") == 1
    # nobody else: the instructor's answers (ed, fay) and di's own are not alike


def test_a_copy_behind_a_long_comment_or_padded_with_code_is_found(tmp_path):
    """Round 5, finding 19: answers are compared without their comments and blank lines
    before anything is cut, and by containment as well as by the Jaccard index: the same
    answer behind one comment of 20 000 characters, or followed by three times as much
    code of one's own, is listed with the others, through ``python -m labtools report``."""
    own = ALICE.replace("A = np.hstack([np.ones((len(X), 1)), X])", "A = P.augment(X)")
    rng = np.random.default_rng(19)
    padding = "".join(random_answer(rng, 20).replace("def answer", f"def helper{k}")
                      for k in range(3))  # fmt: skip
    results = {
        "sim_a": own,
        "sim_b": renamed(own, {"weights": "u"}),
        "sim_c": "# " + "x" * 20_000 + "\n" + renamed(own, {"epoch": "k"}),
        "sim_d": renamed(own, {"mistakes": "m"}) + "\n\n" + padding,
        "sim_e": CAROL,  # her own
    }
    folder = class_folder(tmp_path / "grading", {
        student: {LAB: {"answers": {"ex3-code": answer}}} for student, answer in results.items()
    })  # fmt: skip
    assert main(["report", "--course", str(folder)]) == 0
    soup = BeautifulSoup((folder / report.REPORT).read_text(), "html.parser")
    listed = soup.find(id="similarity").table.find_all("tr")[1:]
    pairs = {tr.find_all("td")[2].get_text() for tr in listed}
    assert pairs == {
        f"{a} and {b}" for a, b in [("sim_a", "sim_b"), ("sim_a", "sim_c"), ("sim_a", "sim_d"),
                                    ("sim_b", "sim_c"), ("sim_b", "sim_d"), ("sim_c", "sim_d")]
    }  # fmt: skip
    # the padded answer alone: its Jaccard index is below the threshold, its containment not
    (d,) = [p for p in similar_pairs(LAB, [Answer("a", {"c": own}), Answer("d", {"c": results[
        "sim_d"]})], {}, GIVEN)]  # fmt: skip
    ((_, score, shared, mine, theirs),) = d.cells
    assert shared / (mine + theirs - shared) < similarity.THRESHOLD <= similarity.CONTAINED <= score
    shown = [pre.get_text() for pre in soup.find_all("pre")]
    assert not any("x" * 100 in text for text in shown)  # the comment is not what is shown


def test_a_course_folder_that_is_not_one_is_refused(tmp_path, capsys):
    assert main(["report", "--course", str(tmp_path / "nowhere")]) == 2
    assert "no course folder" in capsys.readouterr().err


# --- the page in a browser, offline ---------------------------------------------------------


@pytest.mark.slow
def test_the_report_in_a_browser_offline(course, chromium):
    need_chromium()
    page = chromium.new_page()
    outside, failed = [], []

    def route(request_route):
        if request_route.request.url.startswith(("file:", "data:")):
            request_route.continue_()
        else:
            outside.append(request_route.request.url)
            request_route.abort()

    page.route("**/*", route)
    page.on("requestfailed", lambda request: failed.append(request.url))
    page.goto((course / report.REPORT).as_uri())
    page.wait_for_load_state("load")
    images = page.eval_on_selector_all(
        "img", "els => els.map(e => [e.complete, e.naturalWidth, e.alt])"
    )
    links = page.eval_on_selector_all(
        "a[href]",
        "els => els.map(a => [a.getAttribute('href'),"
        " !!document.getElementById(decodeURIComponent(a.getAttribute('href').slice(1)))])",
    )
    text = page.inner_text("body")
    hostile = page.evaluate("window.HOSTILE")
    page.close()
    assert outside == [] and failed == []
    assert len(images) == 13
    assert all(done and width > 0 and alt for done, width, alt in images), images
    assert links and all(href.startswith("#") and found for href, found in links), links
    assert hostile is None
    assert HOSTILE in text
    assert re.search(r"ann and bo", text)
