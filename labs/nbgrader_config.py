"""nbgrader settings for the labs (the course root is this folder)."""

c = get_config()  # noqa: F821 - provided by nbgrader when it reads this file

c.CourseDirectory.source_directory = "source"  # instructor versions, with solutions
c.CourseDirectory.release_directory = "release"  # student versions, generated, committed
c.CourseDirectory.db_url = "sqlite:///gradebook.db"

c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# grading untrusted notebooks: a time limit per cell that interrupts the kernel, and
# cells that were deleted or edited come back from the source
c.Execute.timeout = 60
c.Execute.interrupt_on_timeout = True
c.OverwriteCells.add_missing_cells = True
c.LimitOutput.max_lines = 1000
