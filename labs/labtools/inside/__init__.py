"""Beside the student's code: the only labtools in the sandbox (bubblewrap binds this folder
at ``/opt/grading/lib/labtools/inside``), and untrusted once the student's code runs.

In: the grader's requests, one frame each, on pipes the grader gave. Out: answers of plain
data, frames the grader parses with :func:`labtools.wire.decode_answer` alone.

- :mod:`~labtools.inside.zygote`: the warm parent, which imports once, and a fresh,
  isolated child per notebook;
- :mod:`~labtools.inside.agent`: the student's cells and calls, run in that child;
- :mod:`~labtools.inside.protocol`: plain data, frames, requests and answers (the grader
  imports it too, through :mod:`labtools.wire`);
- :mod:`~labtools.inside.seccomp`: the system calls the sandbox refuses.

Imports nothing of labtools outside this folder: nothing else of labtools is in the
sandbox.
"""
