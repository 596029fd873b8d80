"""The grader's side: one notebook graded, every verdict outside the student's reach.

In: a :class:`~labtools.wire.Task` of plain data (the lab's source notebook, the text of
the submitted notebook as the door wrote it, the limits). Out: an
:class:`~labtools.wire.Outcome` of plain data (each cell with its score and output, the
notes, the notebook as graded). The student's cells run in a sandbox (``inside/``, the
only labtools there); what comes back is data, parsed by :func:`labtools.wire.decode_answer`.

- :mod:`~labtools.grader.worker`: one notebook in a worker, a task in, an outcome out;
  :mod:`~labtools.grader.cluster`: the workers of a dask cluster, checked first;
- :mod:`~labtools.grader.judge`: the grader's side of one notebook in a child under
  limits, forked from a server per worker;
- :mod:`~labtools.grader.verdicts`: the cells in order, the student's in the sandbox, the
  tests on the grader's side; :mod:`~labtools.grader.notebook`: which cells are graded
  and how; :mod:`~labtools.grader.render`: the notebook as graded;
- :mod:`~labtools.grader.closed`: what a lab closes (its copy of the package);
- :mod:`~labtools.grader.sandbox`: one notebook's process in its sandbox, its requests and
  answers; made of :mod:`~labtools.grader.bwrap` (the command lines: bubblewrap's
  namespaces and file system), :mod:`~labtools.grader.start` (how the process starts: a
  child of a warm parent, or a sandbox of its own), :mod:`~labtools.grader.memory` (the
  notebook's memory, all its processes together) and :mod:`~labtools.grader.limits`
  (every limit of one notebook).

Nothing here imports the course folder or what goes out (``course``, ``out``); a worker
is given no path of the course folder.
"""
