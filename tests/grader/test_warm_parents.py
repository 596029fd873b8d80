"""A worker's server keeps a warm parent per lab, the most recently used ones
(labtools.grader.judge._warm_parent): two workers that take turns on the same labs start
none again. The warm parents here are stand-ins that count their starts and ends (the real
one is tested in test_warm_start.py); the cache's rules are what is tested."""

import pytest
from labtools.grader import judge, start


class Parent:
    """A warm parent that is ready at once and says when it is closed."""

    started: list = []
    closed: list = []

    def __init__(self, package, mpl_cache):
        self.package, self.alive_now = package, True
        Parent.started.append(package)

    def ready(self):
        return True

    def alive(self):
        return self.alive_now

    def close(self):
        Parent.closed.append(self.allow)


@pytest.fixture
def parents(monkeypatch):
    monkeypatch.setattr(start, "Zygote", Parent)
    monkeypatch.setattr(judge, "_WARM", {})
    monkeypatch.setattr(judge, "_WARM_DEATHS", [0])
    monkeypatch.setattr(judge, "_WARM_MISSING", [None])
    Parent.started, Parent.closed = [], []
    return Parent


LABS = [("pt",), ("bgd",), ("lms",), ("gd",), ("logistic_regression",)]


def test_labs_taken_in_turn_start_one_warm_parent_each(parents):
    for _ in range(3):
        for allow in LABS[:2]:
            judge._warm_parent(allow)
            assert judge._WARM[allow].allow == allow
    assert len(parents.started) == 2 and parents.closed == []


def test_the_least_recently_used_goes_past_the_limit(parents):
    for allow in LABS:  # one more than kept
        judge._warm_parent(allow)
    assert judge.WARM_KEPT == len(LABS) - 1
    assert parents.closed == [LABS[0]] and list(judge._WARM) == LABS[1:]
    judge._warm_parent(LABS[1])  # used again: the most recent
    judge._warm_parent(LABS[0])  # started again, and the least recent goes
    assert parents.closed == [LABS[0], LABS[2]]
    assert list(judge._WARM) == [LABS[3], LABS[4], LABS[1], LABS[0]]


def test_a_dead_warm_parent_is_replaced_and_counted(parents):
    judge._warm_parent(LABS[0])
    judge._WARM[LABS[0]].alive_now = False
    judge._warm_parent(LABS[0])
    assert len(parents.started) == 2 and judge._WARM_DEATHS == [1]
    assert judge._WARM[LABS[0]].alive_now
