"""Instructor tools for the labs, one module per job.

- :mod:`labtools.release`: the student versions, generated from the sources by nbgrader;
- :mod:`labtools.grade`: grading a class into a course folder (gradebook, feedback, exports);
- :mod:`labtools.verdicts`: grading one notebook, every verdict outside the student's reach;
- :mod:`labtools.sandbox` and :mod:`labtools.agent`: where the student's code runs;
- :mod:`labtools.wire`: what may cross from the student's side (plain data only);
- :mod:`labtools.notebook`: which cells are graded, taken from the lab's source;
- :mod:`labtools.layout`: folders and arguments (standard library only);
- :mod:`labtools.formgrader`: nbgrader's formgrader on the course folder, for manual marks.

Command line: ``python -m labtools {release,grade,export,feedback,formgrader} --help``
(``python3 tasks.py`` runs these in the project's environment).
"""
