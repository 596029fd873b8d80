"""The door: what students and learning platforms hand over, read into checked values.

In: what an instructor downloaded (a folder, a zip, a Canvas or Moodle download), every
byte of it the students' or a platform's. Out: one
:class:`~labtools.door.layout.Submission` per student and lab, or why it is refused; each
notebook as the canonical JSON text the door writes of it; each submission's time
(:class:`~labtools.door.timestamps.Submitted`); a platform's table as rows of strings; the
names and ids the course folder keeps.

- :mod:`~labtools.door.layout`: where things are (the labs, a folder of submissions, a
  course folder), the checks of the arguments, and :func:`~labtools.door.layout.whole`,
  the one way a course folder's file is written; standard library only, so that
  ``tasks.py`` reads it before anything is installed;
- :mod:`~labtools.door.intake`: every layout of a download (this project's folders, zips,
  Canvas, Moodle) to one list of submissions, each student apart;
- :mod:`~labtools.door.parse`: each file read once, in a child under time and memory
  limits (a notebook, a ``timestamp.txt``, a platform's CSV);
- :mod:`~labtools.door.timestamps`: when a submission came in.

Nothing here imports the rooms after it (``grader``, ``course``, ``out``).
"""
