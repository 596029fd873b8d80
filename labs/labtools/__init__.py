"""Instructor tools for the labs, in rooms that follow a submission's path.

- :mod:`labtools.door`: what students and platforms hand over (downloads, zips, notebooks,
  times, the platforms' tables), read into checked values; ``layout`` there says where
  things are, standard library only (``tasks.py`` reads it before anything is installed);
- :mod:`labtools.inside`: the only labtools in the sandbox, beside the student's code and
  untrusted once it runs (the warm parent, the agent, the protocol, the seccomp filter);
- :mod:`labtools.grader`: the grader's side of one notebook (the sandbox it starts, the
  verdicts, the judge under limits, the worker), every verdict outside the student's reach;
- :mod:`labtools.course`: the course: its labs released, and the course folder that keeps
  what was graded (the one writer during a run, the gradebook, the late policy, the
  answers held for review, formgrader);
- :mod:`labtools.out`: what goes back to students, platforms and the instructor (feedback,
  grade tables, Canvas's and Moodle's files, the class report).

Beside them, at the top: what every room shares, :mod:`labtools.wire` (every message,
typed), :mod:`labtools.options` (the commands' options, shared with ``tasks.py``) and
:mod:`labtools.children` (the processes the commands start); and the run that goes through
the rooms, :mod:`labtools.grade` (one grading run, step by step), :mod:`labtools.schedule`
(its notebooks on workers, each outcome recorded as it comes) and ``__main__`` (the
commands).

A module imports only its own room, the rooms before it and what they share; ``inside``
imports nothing of labtools outside itself (``tests/test_labtools_modules.py``).

Command line: ``python -m labtools {release,grade,export,feedback,formgrader,report,review}
--help`` (``python3 tasks.py`` runs these in the project's environment).
"""
