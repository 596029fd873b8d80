"""Instructor tools for the labs, one module per job.

- :mod:`labtools.course.release`: the student versions, generated from the sources by nbgrader;
- :mod:`labtools.grade`: one grading run of a class into a course folder, step by step:
  - :mod:`labtools.course.folder`: the course folder (nbgrader's course, its gradebook);
  - :mod:`labtools.door.intake` and :mod:`labtools.door.layout`: the submissions (folders, zips,
    Canvas and Moodle downloads);
  - :mod:`labtools.schedule`: the notebooks on workers (the local pool, or a dask
    cluster's: :mod:`labtools.grader.cluster`);
  - :mod:`labtools.grader.worker`: one notebook graded in a worker;
  - :mod:`labtools.course.record`: each outcome into the course folder and the gradebook;
  - :mod:`labtools.out.feedback` and :mod:`labtools.out.export`: feedback files, grade tables;
  - :mod:`labtools.course.late`: the course's late policy, the submission times, the deduction;
- :mod:`labtools.grader.verdicts`: grading one notebook, every verdict outside the student's reach;
- :mod:`labtools.grader.render`: the notebook as graded, written answers cleaned;
- :mod:`labtools.grader.sandbox` and :mod:`labtools.inside`: where the student's code runs (the
  only labtools in the sandbox is ``inside``); :mod:`labtools.grader.closed`: what a lab closes;
  :mod:`labtools.course.review`: answers held for the instructor's review;
- :mod:`labtools.wire`: every message, typed: what may cross from the student's side
  (plain data only), the requests and answers, a worker's task and outcome, a row's status;
- :mod:`labtools.grader.notebook`: which cells are graded, taken from the lab's source;
- :mod:`labtools.course.formgrader`: nbgrader's formgrader on the course folder, for manual marks;
- :mod:`labtools.options`: the commands' options (shared with ``tasks.py``).

Command line: ``python -m labtools {release,grade,export,feedback,formgrader} --help``
(``python3 tasks.py`` runs these in the project's environment).
"""
