"""Warnings that the trainers raise; each trainer's result class sits in its own module."""


class ConvergenceWarning(UserWarning):
    """Training stopped at its budget of epochs or steps before it converged."""


class DivergenceWarning(UserWarning):
    """Training stopped because the weights or the error grew without bound (η too large)."""
