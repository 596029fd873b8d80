"""What goes back: to students, to the learning platforms, and to the instructor.

In: the course folder as a run left it (each notebook's row, the graded notebooks, the
gradebook with the marks by hand, the late policy and the submission times, the names
and ids the door kept). Out: the students' feedback pages, the grade tables, the files
Canvas and Moodle import, and the class report; each written whole
(:func:`labtools.door.layout.whole`), every text a student wrote escaped and capped.

- :mod:`~labtools.out.feedback`: nbgrader's feedback page of each graded notebook, each
  written in a child under limits;
- :mod:`~labtools.out.export`: ``grades.csv`` and ``grades-wide.csv``, the late deduction
  applied, and what is not final yet;
- :mod:`~labtools.out.platforms`: the files Canvas and Moodle import (grades, comments,
  the feedback zips), from the file each platform exported;
- :mod:`~labtools.out.report`: ``report.html``, how the class did;
  :mod:`~labtools.out.similarity`: similar answers, by winnowed token fingerprints.

The last room: nothing before it imports it, but the run (:mod:`labtools.grade`,
:mod:`labtools.schedule`) and the commands.
"""
