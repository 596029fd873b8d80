"""perceptrons: the algorithms of the course *Single-layer neural networks*.

Every chapter and lab imports its algorithms from here; each function names the chapter
that introduces it. Inputs ``X`` have shape (n, p) without the constant feature x0 = 1;
the trainers prepend it and return weights w of shape (p+1,) with w[0] = w0 = -θ. Every
trainer's result has the same fields, ``w``, ``path``, ``loss``, ``iterations``,
``converged`` and ``diverged`` (:mod:`perceptrons._results` says what each means).
"""

from ._results import ConvergenceWarning, DivergenceWarning
from .adaptive import adadelta, adagrad, adam, nadam, nesterov, rmsprop
from .convergence import convergence_bound, margin, radius
from .datasets import (
    blobs,
    hill_valley,
    hill_valley_grad,
    noisy,
    rosenbrock,
    rosenbrock_grad,
    separable,
    xor,
)
from .delta_rule import (
    DeltaResult,
    LMSResult,
    bgd,
    igd,
    lls,
    lms,
    mbgd,
    sq_error,
    sq_error_grad,
)
from .gradient_descent import GDResult, descend, exact_step, gd, steepest_descent
from .logistic import (
    LogisticResult,
    irls,
    log_likelihood,
    log_likelihood_grad,
    logistic_regression,
    sigmoid,
)
from .perceptron import (
    BatchPerceptronResult,
    PTResult,
    augment,
    batch_perceptron,
    heaviside,
    perceptron_criterion,
    predict,
    pt,
    pt_error,
)

__version__ = "0.1.0"

__all__ = [
    "BatchPerceptronResult",
    "ConvergenceWarning",
    "DeltaResult",
    "DivergenceWarning",
    "GDResult",
    "LMSResult",
    "LogisticResult",
    "PTResult",
    "adadelta",
    "adagrad",
    "adam",
    "augment",
    "batch_perceptron",
    "bgd",
    "blobs",
    "convergence_bound",
    "descend",
    "exact_step",
    "gd",
    "heaviside",
    "hill_valley",
    "hill_valley_grad",
    "igd",
    "irls",
    "lls",
    "lms",
    "mbgd",
    "log_likelihood",
    "log_likelihood_grad",
    "logistic_regression",
    "margin",
    "nadam",
    "nesterov",
    "noisy",
    "perceptron_criterion",
    "predict",
    "pt",
    "pt_error",
    "radius",
    "rmsprop",
    "rosenbrock",
    "rosenbrock_grad",
    "separable",
    "sigmoid",
    "sq_error",
    "sq_error_grad",
    "steepest_descent",
    "xor",
]
