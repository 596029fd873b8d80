# The instructor's answers, as they are.
