"""The answer families of every lab: for each solution code cell (by grade id), shortcuts
that must earn 0 on its exercise and correct alternatives, written another way, that must
earn every point (graded by tests/labs/test_answer_families.py).

A shortcut is an answer that gets the exercise's numbers without doing what it asks: a
package function (public or private, also under another name bound before the call), the
numpy/scipy/scikit-learn equivalent, numerical differentiation where a derivative is asked.
Where no such thing exists (a value the text asks the student to find, a function nothing
computes for them), ``no_shortcut`` says why instead. A new lab adds its entry here.
"""

from textwrap import dedent


def _cells(**sources):
    return {label: dedent(source).strip() + "\n" for label, source in sources.items()}


# Lab 1 ------------------------------------------------------------------------------------
LAB1 = {
    "ex1-code": {
        "shortcuts": _cells(
            perceptron_criterion="""
            def pt_step(w, x, c, eta):
                _, grad, _ = P.perceptron_criterion(w, x[None, :], np.array([2 * c - 1]))
                return w - eta * grad
            """,
            pt_skipping="""
            from perceptrons.perceptron import _pt_skipping

            def pt_step(w, x, c, eta):
                w0 = np.asarray(w, dtype=float)
                return _pt_skipping(x[None, :], np.array([c]), "01", eta, w0, "cyclic", None,
                                    1, False, False).w
            """,
            pt_error="""
            def pt_step(w, x, c, eta):
                return w + eta * P.pt_error(c, w @ x, "01") * x
            """,
        ),
        "alternatives": _cells(
            np_heaviside="""
            def pt_step(w, x, c, eta):
                return w + eta * (c - np.heaviside(w @ x, 1.0)) * x
            """,
            lists="""
            def pt_step(w, x, c, eta):
                s = sum(wi * xi for wi, xi in zip(w, x))
                y = 1 if s >= 0 else 0
                return np.array([wi + eta * (c - y) * xi for wi, xi in zip(w, x)])
            """,
            allowed_heaviside="""
            def pt_step(w, x, c, eta):
                return w + eta * (c - P.heaviside(w @ x)) * x
            """,
        ),
    },
    "ex2-code": {
        "no_shortcut": "worth no points: the trace is graded by hand",
        "alternatives": _cells(
            lists="""
            predicted_updates = 10.0
            predicted_w = [2, -2, -1]
            """,
            integers="""
            predicted_updates = np.int64(10)
            predicted_w = np.array([2, -2, -1])
            """,
        ),
    },
    "ex3-code": {
        "shortcuts": _cells(
            pt="""
            def train(X, c, eta, max_epochs=100):
                return P.pt(X, c, eta=eta, max_epochs=max_epochs, warn=False).w
            """,
            pt_skipping="""
            from perceptrons.perceptron import _pt_skipping

            def train(X, c, eta, max_epochs=100):
                return _pt_skipping(P.augment(X), np.asarray(c), "01", eta, None, "cyclic",
                                    None, max_epochs, False, False).w
            """,
            pt_fast_alias="""
            from perceptrons import pt as run_pt  # bound before the call

            def train(X, c, eta, max_epochs=100):
                return run_pt(X, c, eta=eta, max_epochs=max_epochs, warn=False, fast=True).w
            """,
        ),
        "alternatives": _cells(
            while_counter="""
            def train(X, c, eta, max_epochs=100):
                Xa = np.column_stack([np.ones(len(X)), X])
                w = np.zeros(Xa.shape[1])
                epoch = 0
                while epoch < max_epochs:
                    mistakes = 0
                    for i in range(len(Xa)):
                        new = pt_step(w, Xa[i], c[i], eta)
                        mistakes += int(not np.array_equal(new, w))
                        w = new
                    epoch += 1
                    if mistakes == 0:
                        break
                return w
            """,
            counts_wrong_outputs="""
            def train(X, c, eta, max_epochs=100):
                Xa = P.augment(X)
                w = np.zeros(Xa.shape[1])
                for _ in range(max_epochs):
                    wrong = 0
                    for x, label in zip(Xa, c):
                        wrong += int((w @ x >= 0) != bool(label))
                        w = pt_step(w, x, label, eta)
                    if wrong == 0:
                        break
                return w
            """,
        ),
    },
    "ex5-code": {
        "no_shortcut": "a value read off the slider",
        "alternatives": _cells(
            grid_value="eta_choice = 10 ** -0.95  # the slider's value itself",
            as_shown="eta_choice = np.float64(0.1122)",
        ),
    },
}

# Lab 2 ------------------------------------------------------------------------------------
LAB2 = {
    "ex1-code": {
        "shortcuts": _cells(
            convergence_bound="""
            def bound(X, c, w_star):
                return P.convergence_bound(X, c, w_star)
            """,
            radius_margin="""
            def bound(X, c, w_star):
                return P.radius(X) ** 2 * (w_star @ w_star) / P.margin(X, c, w_star) ** 2
            """,
            submodule_alias="""
            from perceptrons.convergence import convergence_bound as cb  # bound before

            def bound(X, c, w_star):
                return cb(X, c, w_star)
            """,
        ),
        "alternatives": _cells(
            loop="""
            def bound(X, c, w_star):
                r2, gamma = 0.0, None
                for x, label in zip(np.asarray(X, dtype=float), c):
                    xa = np.concatenate([[1.0], x])
                    r2 = max(r2, float(xa @ xa))
                    g = (1 if label == 1 else -1) * float(w_star @ xa)
                    gamma = g if gamma is None else min(gamma, g)
                return r2 * float(np.dot(w_star, w_star)) / gamma**2
            """,
            normalised="""
            def bound(X, c, w_star):
                Xa = np.hstack([np.ones((len(X), 1)), X])
                signs = np.where(np.asarray(c) == 1, 1.0, -1.0)
                gamma = np.min(signs * (Xa @ w_star)) / np.linalg.norm(w_star)
                r = np.sqrt(np.max(np.sum(Xa**2, axis=1)))
                return (r / gamma) ** 2
            """,
        ),
    },
    "ex2-code": {
        "shortcuts": _cells(
            convergence_bound="""
            def measure(margin, seeds):
                rows = []
                for seed in seeds:
                    X, c, w = P.separable(100, p=2, margin=margin, rng=seed)
                    rows.append((P.pt(X, c, max_epochs=10_000).mistakes,
                                 P.convergence_bound(X, c, w)))
                return np.array(rows, dtype=float)
            """,
            radius_margin="""
            def measure(margin, seeds):
                rows = []
                for seed in seeds:
                    X, c, w = P.separable(100, p=2, margin=margin, rng=seed)
                    rows.append((P.pt(X, c, max_epochs=10_000).mistakes,
                                 P.radius(X) ** 2 * (w @ w) / P.margin(X, c, w) ** 2))
                return np.array(rows, dtype=float)
            """,
            submodule_alias="""
            from perceptrons import convergence as conv  # bound before

            def measure(margin, seeds):
                data = [P.separable(100, p=2, margin=margin, rng=s) for s in seeds]
                return np.array([(P.pt(X, c, max_epochs=10_000).mistakes,
                                  conv.convergence_bound(X, c, w)) for X, c, w in data])
            """,
        ),
        "alternatives": _cells(
            comprehension="""
            def measure(margin, seeds):
                data = [P.separable(100, p=2, margin=margin, rng=s) for s in seeds]
                updates = [P.pt(X, c, max_epochs=10_000).mistakes for X, c, _ in data]
                bounds = [bound(X, c, w) for X, c, w in data]
                return np.column_stack([updates, bounds]).astype(float)
            """,
            filled="""
            def measure(margin, seeds):
                seeds = list(seeds)
                table = np.empty((len(seeds), 2))
                for i, seed in enumerate(seeds):
                    X, c, w_star = P.separable(100, p=2, margin=margin, rng=seed)
                    table[i, 0] = P.pt(X, c, max_epochs=10_000).mistakes
                    table[i, 1] = bound(X, c, w_star)
                return table
            """,
        ),
    },
    "ex3-code": {
        "shortcuts": _cells(
            measured_bound="""
            def quartered(halved):
                def med(m):
                    return np.median([P.convergence_bound(*P.separable(100, p=2, margin=m,
                                                                       rng=s))
                                      for s in range(20)])
                return halved * med(0.05) / med(0.1)
            """,
            measured_updates="""
            def quartered(halved):
                def med(m):
                    return np.median([P.pt(*P.separable(100, p=2, margin=m, rng=s)[:2],
                                           max_epochs=10_000).mistakes for s in range(20)])
                return halved * med(0.05) / med(0.1)
            """,
            radius_margin="""
            def quartered(halved):
                X, c, w = P.separable(100, p=2, margin=0.05, rng=0)
                Y, d, v = P.separable(100, p=2, margin=0.1, rng=0)
                return halved * (P.radius(X) / P.margin(X, c, w)) ** 2 / (
                    P.radius(Y) / P.margin(Y, d, v)) ** 2
            """,
        ),
        "alternatives": _cells(
            logs="""
            import math

            def quartered(halved):
                return math.exp(2 * math.log(halved))
            """,
            product="""
            def quartered(halved):
                return np.square(halved)
            """,
        ),
    },
}

# Lab 3 ------------------------------------------------------------------------------------
LAB3 = {
    "ex1-code": {
        "shortcuts": _cells(
            sq_error_grad="""
            def grad_err(w, Xa, c):
                return P.sq_error_grad(w, Xa[:, 1:], c)
            """,
            bgd_difference="""
            def grad_err(w, Xa, c):
                return w - P.bgd(Xa[:, 1:], c, 1.0, w0=w, max_epochs=1, warn=False).path[1]
            """,
            central_differences="""
            def grad_err(w, Xa, c):
                def err(v):
                    return 0.5 * np.sum((c - Xa @ v) ** 2)

                h = 1e-6
                return np.array([(err(w + h * e) - err(w - h * e)) / (2 * h)
                                 for e in np.eye(len(w))])
            """,
            sklearn_loss_gradient="""
            from sklearn._loss.loss import HalfSquaredError
            from sklearn.linear_model._linear_loss import LinearModelLoss

            def grad_err(w, Xa, c):
                y = np.asarray(c, dtype=float)
                loss = LinearModelLoss(base_loss=HalfSquaredError(), fit_intercept=False)
                return len(y) * loss.gradient(np.asarray(w, dtype=float),
                                              np.asarray(Xa, dtype=float), y,
                                              sample_weight=None, l2_reg_strength=0.0)
            """,
        ),
        "alternatives": _cells(
            transpose="""
            def grad_err(w, Xa, c):
                return Xa.T @ (Xa @ w - c)
            """,
            loop="""
            def grad_err(w, Xa, c):
                g = np.zeros(len(w))
                for x, target in zip(Xa, c):
                    g = g - (target - x @ w) * x
                return g
            """,
        ),
    },
    "ex2-code": {
        "shortcuts": _cells(
            bgd="""
            def bgd_epoch(w, Xa, c, eta):
                return P.bgd(Xa[:, 1:], c, eta, w0=w, max_epochs=1, warn=False).path[1]
            """,
            mbgd_batch_n="""
            def bgd_epoch(w, Xa, c, eta):
                run = P.mbgd(Xa[:, 1:], c, eta, batch_size=len(c), w0=w, max_epochs=1,
                             warn=False)
                return run.path[1]
            """,
            gd_alias="""
            from perceptrons.gradient_descent import gd as descent  # bound before

            def bgd_epoch(w, Xa, c, eta):
                return descent(lambda v: grad_err(v, Xa, c), w, eta, steps=1, tol=1e-300,
                               warn=False).path[1]
            """,
        ),
        "alternatives": _cells(
            written_out="""
            def bgd_epoch(w, Xa, c, eta):
                return w + eta * (c - Xa @ w) @ Xa
            """,
            elementwise="""
            def bgd_epoch(w, Xa, c, eta):
                g = grad_err(w, Xa, c)
                return np.array([wi - eta * gi for wi, gi in zip(w, g)])
            """,
        ),
    },
    "ex3-code": {
        "no_shortcut": "a number computed from the data; no package function computes it",
        "alternatives": _cells(
            spectral_norm="eta_limit = 2 / np.linalg.norm(Xa, 2) ** 2",
            eigvals="eta_limit = 2 / max(np.linalg.eigvals(Xa.T @ Xa).real)",
        ),
    },
}

# Lab 4 ------------------------------------------------------------------------------------
LAB4 = {
    "ex1-code": {
        "shortcuts": _cells(
            gd_plus_momentum="""
            def momentum_step(w, delta_prev, g, eta, alpha):
                w_gd = P.gd(lambda v: g, w, eta, steps=1, tol=1e-300, warn=False).path[1]
                return w_gd + alpha * delta_prev, w_gd + alpha * delta_prev - w
            """,
            descend="""
            def momentum_step(w, delta_prev, g, eta, alpha):
                def step(t, v, grad):
                    return -eta * grad + alpha * delta_prev

                w_next = P.descend(lambda v: g, w, step, steps=1, tol=1e-300, warn=False).w
                return w_next, w_next - w
            """,
            descend_alias="""
            from perceptrons.gradient_descent import descend as loop  # bound before

            def momentum_step(w, delta_prev, g, eta, alpha):
                w_next = loop(lambda v: g, w, lambda t, v, grad: alpha * delta_prev - eta * grad,
                              steps=1, tol=1e-300, warn=False).w
                return w_next, w_next - w
            """,
        ),
        "alternatives": _cells(
            array_pair="""
            def momentum_step(w, delta_prev, g, eta, alpha):
                delta = alpha * np.asarray(delta_prev) - eta * np.asarray(g)
                return np.array([np.asarray(w) + delta, delta])
            """,
            list_pair="""
            def momentum_step(w, delta_prev, g, eta, alpha):
                delta = [alpha * d - eta * gi for d, gi in zip(delta_prev, g)]
                return [np.array([wi + di for wi, di in zip(w, delta)]), np.array(delta)]
            """,
        ),
    },
    "ex2-code": {
        "no_shortcut": "worth no points: the reasons are graded by hand",
        "alternatives": _cells(
            zipped="reaches_floor = dict(zip((0.005, 0.1, 1.0), (False, True, False)))",
            numpy_bools="reaches_floor = {0.005: np.False_, 0.1: np.True_, 1.0: np.False_}",
        ),
    },
    "ex3-code": {
        "no_shortcut": "a pair found with the sliders",
        "alternatives": _cells(
            # typed as the sliders show them (three digits), and other slider positions
            shown="eta_choice, alpha_choice = 0.002, 0.95",
            others="eta_choice, alpha_choice = 0.00126, 0.95",
        ),
    },
}

# Lab 5 ------------------------------------------------------------------------------------
LAB5 = {
    "ex1-code": {
        "shortcuts": _cells(
            expit="""
            from scipy.special import expit  # bound before

            def sigmoid(z):
                return expit(np.asarray(z, dtype=float))
            """,
            package="""
            def sigmoid(z):
                return P.sigmoid(z)
            """,
            log_expit="""
            import scipy.special

            def sigmoid(z):
                return np.exp(scipy.special.log_expit(np.asarray(z, dtype=float)))
            """,
            logistic_cdf="""
            import scipy.stats

            def sigmoid(z):
                return scipy.stats.logistic.cdf(np.asarray(z, dtype=float))
            """,
            # the red team of session 15: expit kept where the forbid does not replace it
            expit_default="""
            import scipy.special

            def sigmoid(z, _f=scipy.special.expit):
                return _f(np.asarray(z, dtype=float))
            """,
            expit_call_wrapper="""
            import scipy.special

            _expit_call = scipy.special.expit.__call__

            def sigmoid(z):
                return _expit_call(np.asarray(z, dtype=float))
            """,
            sklearn_logistic_sigmoid="""
            import sklearn.neural_network._base as mlp_base  # scipy's expit, another name

            def sigmoid(z):
                return mlp_base.logistic_sigmoid(np.asarray(z, dtype=float))
            """,
            softmax="""
            from scipy.special import softmax

            def sigmoid(z):
                z = np.asarray(z, dtype=float)
                return softmax(np.stack([np.zeros_like(z), z]), axis=0)[1]
            """,
        ),
        "alternatives": _cells(
            tanh="""
            def sigmoid(z):
                return 0.5 * (1 + np.tanh(np.asarray(z, dtype=float) / 2))
            """,
            loop="""
            import math

            def sigmoid(z):
                out = []
                for v in np.asarray(z, dtype=float).ravel():
                    if v >= 0:
                        out.append(1 / (1 + math.exp(-v)))
                    else:
                        out.append(math.exp(v) / (1 + math.exp(v)) if v > -745 else 0.0)
                return np.array(out).reshape(np.shape(z))
            """,
        ),
    },
    "ex2-code": {
        "shortcuts": _cells(
            package="""
            def ll_grad(w, Xa, c):
                return P.log_likelihood_grad(w, Xa[:, 1:], c)
            """,
            private="""
            from perceptrons.logistic import _ll_grad

            def ll_grad(w, Xa, c):
                return _ll_grad(w, Xa, c)
            """,
            central_differences="""
            def ll_grad(w, Xa, c):
                def ll(v):
                    z = Xa @ v
                    return np.sum(c * z - np.logaddexp(0, z))

                h = 1e-6
                return np.array([(ll(w + h * e) - ll(w - h * e)) / (2 * h)
                                 for e in np.eye(len(w))])
            """,
            complex_step="""
            def ll_grad(w, Xa, c):
                def ll(v):
                    z = Xa @ v
                    return np.sum(c * z - np.log(1 + np.exp(z)))

                h = 1e-20
                return np.array([ll(w + 1j * h * e).imag / h for e in np.eye(len(w))])
            """,
            sklearn_loss_gradient="""
            from sklearn._loss.loss import HalfBinomialLoss
            from sklearn.linear_model._linear_loss import LinearModelLoss

            def ll_grad(w, Xa, c):
                loss = LinearModelLoss(base_loss=HalfBinomialLoss(), fit_intercept=False)
                y = np.asarray(c, dtype=float)
                g = loss.gradient(np.asarray(w, dtype=float), np.asarray(Xa, dtype=float), y,
                                  sample_weight=None, l2_reg_strength=0.0)
                return -len(y) * g
            """,
        ),
        "alternatives": _cells(
            transpose="""
            def ll_grad(w, Xa, c):
                return Xa.T @ (np.asarray(c) - sigmoid(Xa @ w))
            """,
            loop="""
            def ll_grad(w, Xa, c):
                g = np.zeros(Xa.shape[1])
                for x, label in zip(Xa, c):
                    g = g + (label - sigmoid(x @ w)) * x
                return g
            """,
        ),
    },
    "ex3-code": {
        "no_shortcut": "a value the text asks to read off a package run",
        "alternatives": _cells(
            array="""
            norms_overlap = np.array([np.linalg.norm(P.logistic_regression(
                X, c, eta=0.05, steps=s, warn=False).w) for s in (2000, 20000)])
            """,
            listed="""
            norms_overlap = [float(np.sqrt(np.sum(P.logistic_regression(
                X, c, eta=0.05, steps=s, warn=False).w ** 2))) for s in (2000, 20000)]
            """,
        ),
    },
    "ex4-code": {
        "no_shortcut": "a value found with the slider",
        "alternatives": _cells(low="eta_choice = 0.158", high="eta_choice = 0.316"),
    },
}

# Lab 6 ------------------------------------------------------------------------------------
LAB6 = {
    "ex1-code": {
        # scipy builds the delay line: a library route, refused as every scipy function is
        # (labtools.reach); it was counted an alternative before the labs' rule said so
        "shortcuts": _cells(
            toeplitz="""
            import scipy.linalg

            def taps(u, m):
                u = np.asarray(u, dtype=float)
                return scipy.linalg.toeplitz(u, np.r_[u[0], np.zeros(m - 1)])
            """,
            convolution_matrix="""
            from scipy.linalg import convolution_matrix

            def taps(u, m):
                u = np.asarray(u, dtype=float)
                return convolution_matrix(u, m, mode="full")[: len(u)]
            """,
            toeplitz_default="""
            import scipy.linalg

            def taps(u, m, _toeplitz=scipy.linalg.toeplitz):
                u = np.asarray(u, dtype=float)
                return _toeplitz(u, np.r_[u[0], np.zeros(m - 1)])
            """,
        ),
        "alternatives": _cells(
            comprehension="""
            def taps(u, m):
                return np.array([[float(u[t - j]) if t >= j else 0.0 for j in range(m)]
                                 for t in range(len(u))]).reshape(len(u), m)
            """,
            window="""
            from numpy.lib.stride_tricks import sliding_window_view

            def taps(u, m):
                padded = np.concatenate([np.zeros(m - 1), np.asarray(u, dtype=float)])
                return sliding_window_view(padded, m)[:, ::-1].copy()
            """,
        ),
    },
    "ex2-code": {
        "shortcuts": _cells(
            lstsq="""
            def least_squares(X, d):
                return np.linalg.lstsq(P.augment(X), d, rcond=None)[0]
            """,
            pinv="""
            from numpy.linalg import pinv  # bound before

            def least_squares(X, d):
                return pinv(P.augment(X)) @ d
            """,
            sklearn_imported_inside="""
            def least_squares(X, d):
                from sklearn.linear_model import LinearRegression  # loaded during the call

                fit = LinearRegression().fit(X, d)
                return np.r_[fit.intercept_, fit.coef_]
            """,
            lls="""
            def least_squares(X, d):
                return P.lls(X, d)
            """,
            scipy_lstsq="""
            import scipy.linalg

            def least_squares(X, d):
                return scipy.linalg.lstsq(P.augment(X), d)[0]
            """,
            lapack_dgelss="""
            from scipy.linalg import lapack

            def least_squares(X, d):
                A = P.augment(X)
                v, x, s, rank, work, info = lapack.dgelss(A, np.asarray(d, dtype=float))
                return x[: A.shape[1]]
            """,
            numpy_gufunc="""
            from numpy.linalg import _umath_linalg

            def least_squares(X, d):
                A = P.augment(X)
                b = np.asarray(d, dtype=float)[:, None]
                x, resids, rank, s = _umath_linalg.lstsq(A, b, 1e-15, signature="ddd->ddid")
                return x[:, 0]
            """,
            ridge="""
            from sklearn.linear_model import Ridge

            def least_squares(X, d):
                fit = Ridge(alpha=0.0).fit(X, d)
                return np.r_[fit.intercept_, fit.coef_]
            """,
            lsqr="""
            from scipy.sparse.linalg import lsqr

            def least_squares(X, d):
                return lsqr(P.augment(X), np.asarray(d, dtype=float), atol=1e-16, btol=1e-16,
                            conlim=1e16, iter_lim=100000)[0]
            """,
        ),
        "alternatives": _cells(
            inverse="""
            def least_squares(X, d):
                A = P.augment(X)
                return np.linalg.inv(A.T @ A) @ (A.T @ np.asarray(d, dtype=float))
            """,
            cholesky="""
            def least_squares(X, d):
                A = np.column_stack([np.ones(len(X)), X])
                G = sum(np.outer(x, x) for x in A)
                b = sum(t * x for x, t in zip(A, d))
                L = np.linalg.cholesky(G)
                return np.linalg.solve(L.T, np.linalg.solve(L, b))
            """,
        ),
    },
    "ex3-code": {
        "shortcuts": _cells(
            lms="""
            def lms_filter(X, d, eta):
                return P.lms(X, d, eta).path
            """,
            bgd_per_sample="""
            def lms_filter(X, d, eta):
                w = np.zeros(X.shape[1] + 1)
                ws = [w]
                for t in range(len(X)):
                    w = P.bgd(X[t:t + 1], d[t:t + 1], eta, w0=w, max_epochs=1,
                              warn=False).path[1]
                    ws.append(w)
                return np.array(ws)
            """,
            mbgd_batch_1="""
            def lms_filter(X, d, eta):
                w = np.zeros(X.shape[1] + 1)
                ws = [w]
                for t in range(len(X)):
                    w = P.mbgd(X[t:t + 1], d[t:t + 1], eta, batch_size=1, w0=w,
                               max_epochs=1, warn=False).path[1]
                    ws.append(w)
                return np.array(ws)
            """,
            lms_pass="""
            from perceptrons.delta_rule import _lms_pass

            def lms_filter(X, d, eta):
                return _lms_pass(P.augment(X), np.asarray(d, dtype=float), eta,
                                 np.zeros(X.shape[1] + 1))[0]
            """,
            sgd_regressor="""
            from sklearn.linear_model import SGDRegressor

            def lms_filter(X, d, eta):
                X, d = np.asarray(X, dtype=float), np.asarray(d, dtype=float)
                model = SGDRegressor(loss="squared_error", penalty=None, alpha=0.0,
                                     learning_rate="constant", eta0=eta, shuffle=False)
                path = [np.zeros(X.shape[1] + 1)]  # its weights start at zero too
                for t in range(len(X)):
                    model.partial_fit(X[t : t + 1], d[t : t + 1])
                    path.append(np.r_[model.intercept_, model.coef_])
                return np.array(path)
            """,
        ),
        "alternatives": _cells(
            lists="""
            def lms_filter(X, d, eta):
                rows = np.column_stack([np.ones(len(X)), X]).tolist()
                w = [0.0] * len(rows[0])
                path = [list(w)]
                for x, target in zip(rows, d):
                    e = target - sum(wi * xi for wi, xi in zip(w, x))
                    w = [wi + eta * e * xi for wi, xi in zip(w, x)]
                    path.append(w)
                return np.array(path)
            """,
            appended="""
            def lms_filter(X, d, eta):
                Xa = P.augment(X)
                w = np.zeros(Xa.shape[1])
                path = [w]
                for x, target in zip(Xa, d):
                    w = w + eta * (target - x @ w) * x
                    path.append(w)
                return np.vstack(path)
            """,
        ),
    },
    "ex4-code": {
        "no_shortcut": "no package or library function gives the limits; numpy's "
        "eigenvalues are the tool the text expects",
        "alternatives": _cells(
            array_pair="""
            def lms_limits(X, eta):
                Xa = P.augment(X)
                lam = np.linalg.eigvalsh(Xa.T @ Xa / len(Xa))
                return np.array([2 / lam[-1], 1 / (eta * lam[0])])
            """,
            singular_values="""
            def lms_limits(X, eta):
                s = np.linalg.svd(P.augment(X), compute_uv=False) ** 2 / len(X)
                return [2 / s.max(), 1 / (eta * s.min())]
            """,
        ),
    },
    "ex5-code": {
        "no_shortcut": "a value found by trying",
        "alternatives": _cells(low="eta_track = 0.032", high="eta_track = 0.039"),
    },
}

# Lab 7 ------------------------------------------------------------------------------------
LAB7 = {
    "ex1-code": {
        "no_shortcut": "the text gives the permutation to use; no library split draws it",
        "alternatives": _cells(
            lists="""
            def split(n, n_test, seed):
                perm = np.random.default_rng(seed).permutation(n)
                return list(perm[n_test:]), list(perm[:n_test])
            """,
            np_split="""
            def split(n, n_test, seed):
                test_idx, train_idx = np.split(np.random.default_rng(seed).permutation(n),
                                               [n_test])
                return [train_idx, test_idx]
            """,
        ),
    },
    "ex2-code": {
        "shortcuts": _cells(
            logistic_regression="""
            def train(X, c, eta, steps):
                return P.logistic_regression(X, c, eta, steps=steps, tol=1e-300,
                                             warn=False).w
            """,
            gd="""
            def train(X, c, eta, steps):
                run = P.gd(lambda v: -P.log_likelihood_grad(v, X, c), np.zeros(X.shape[1] + 1),
                           eta, steps=steps, tol=1e-300, warn=False)
                return run.w
            """,
            submodule_alias="""
            from perceptrons.logistic import logistic_regression as fit  # bound before

            def train(X, c, eta, steps):
                return fit(X, c, eta, steps=steps, tol=1e-300, warn=False).w
            """,
        ),
        "alternatives": _cells(
            allowed_gradient="""
            def train(X, c, eta, steps):
                w = np.zeros(np.shape(X)[1] + 1)
                for _ in range(steps):
                    w = w + eta * P.log_likelihood_grad(w, X, c)
                return w
            """,
            per_example="""
            def train(X, c, eta, steps):
                Xa = np.column_stack([np.ones(len(X)), X])
                w = np.zeros(Xa.shape[1])
                for _ in range(steps):
                    g = np.zeros_like(w)
                    for x, label in zip(Xa, c):
                        g = g + (label - 1 / (1 + np.exp(-(x @ w)))) * x
                    w = w + eta * g
                return w
            """,
        ),
    },
    "ex3-code": {
        "shortcuts": _cells(
            logistic_regression="""
            def train_until(X, c, eta, tol, max_steps):
                run = P.logistic_regression(X, c, eta, steps=max_steps, tol=tol, warn=False)
                return run.w, run.iterations
            """,
            gd="""
            def train_until(X, c, eta, tol, max_steps):
                run = P.gd(lambda v: -P.log_likelihood_grad(v, X, c), np.zeros(X.shape[1] + 1),
                           eta, steps=max_steps, tol=tol, warn=False)
                return run.w, run.iterations
            """,
            submodule_alias="""
            from perceptrons.logistic import logistic_regression as fit  # bound before

            def train_until(X, c, eta, tol, max_steps):
                run = fit(X, c, eta, steps=max_steps, tol=tol, warn=False)
                return run.w, run.iterations
            """,
        ),
        "alternatives": _cells(
            while_loop="""
            def train_until(X, c, eta, tol, max_steps):
                w, k = np.zeros(np.shape(X)[1] + 1), 0
                g = P.log_likelihood_grad(w, X, c)
                while k < max_steps and np.sqrt(g @ g) > tol:
                    w = w + eta * g
                    k += 1
                    g = P.log_likelihood_grad(w, X, c)
                return [w, k]
            """,
            own_gradient="""
            def train_until(X, c, eta, tol, max_steps):
                Xa = P.augment(X)
                w = np.zeros(Xa.shape[1])
                k = 0
                for k in range(max_steps + 1):
                    g = Xa.T @ (c - P.sigmoid(Xa @ w))
                    if np.linalg.norm(g) <= tol or k == max_steps:
                        break
                    w = w + eta * g
                return w, k
            """,
        ),
    },
    "ex4-code": {
        "shortcuts": _cells(
            predict="""
            def accuracy(w, X, c):
                return float(np.mean(P.predict(X, w) == c))
            """,
            predict_alias="""
            from perceptrons.perceptron import predict as classify  # bound before

            def accuracy(w, X, c):
                return float(np.mean(classify(X, w) == np.asarray(c)))
            """,
            sklearn="""
            from sklearn.metrics import accuracy_score

            def accuracy(w, X, c):
                return float(accuracy_score(c, (P.augment(X) @ w >= 0).astype(int)))
            """,
            confusion_matrix="""
            from sklearn.metrics import confusion_matrix

            def accuracy(w, X, c):
                pred = (P.augment(X) @ w >= 0).astype(int)
                m = confusion_matrix(np.asarray(c), pred, labels=[0, 1])
                return float(np.trace(m) / m.sum())
            """,
        ),
        "alternatives": _cells(
            count="""
            def accuracy(w, X, c):
                right = 0
                for x, label in zip(np.asarray(X, dtype=float), c):
                    right += int((w[0] + x @ w[1:] >= 0) == (label == 1))
                return right / len(c)
            """,
            sigmoid="""
            def accuracy(w, X, c):
                p = P.sigmoid(P.augment(X) @ w) >= 0.5
                return np.count_nonzero(p.astype(int) == np.asarray(c)) / len(c)
            """,
        ),
    },
    "ex5-code": {
        "shortcuts": _cells(
            package="""
            def held_out(X, c, eta, steps, n_test, seed):
                perm = np.random.default_rng(seed).permutation(len(X))
                tr, te = perm[n_test:], perm[:n_test]
                w = P.logistic_regression(X[tr], c[tr], eta, steps=steps, tol=1e-300,
                                          warn=False).w
                return (np.mean(P.predict(X[tr], w) == c[tr]),
                        np.mean(P.predict(X[te], w) == c[te]))
            """,
            package_training="""
            def held_out(X, c, eta, steps, n_test, seed):
                train_idx, test_idx = split(len(X), n_test, seed)
                w = P.logistic_regression(X[train_idx], c[train_idx], eta, steps=steps,
                                          tol=1e-300, warn=False).w
                return (accuracy(w, X[train_idx], c[train_idx]),
                        accuracy(w, X[test_idx], c[test_idx]))
            """,
            submodule_alias="""
            from perceptrons.perceptron import predict as classify  # bound before

            def held_out(X, c, eta, steps, n_test, seed):
                train_idx, test_idx = split(len(X), n_test, seed)
                w = train(X[train_idx], c[train_idx], eta, steps)
                return (np.mean(classify(X[train_idx], w) == c[train_idx]),
                        np.mean(classify(X[test_idx], w) == c[test_idx]))
            """,
        ),
        "alternatives": _cells(
            array_pair="""
            def held_out(X, c, eta, steps, n_test, seed):
                idx = split(len(X), n_test, seed)
                w = train(X[idx[0]], c[idx[0]], eta, steps)
                return np.array([accuracy(w, X[i], c[i]) for i in idx])
            """,
            list_pair="""
            def held_out(X, c, eta, steps, n_test, seed):
                tr, te = split(len(X), n_test, seed)
                tr, te = np.asarray(tr), np.asarray(te)
                w = train(X[tr], c[tr], eta, steps)
                return [accuracy(w, X[tr], c[tr]), accuracy(w, X[te], c[te])]
            """,
        ),
    },
}

# Round 5 (issue 38): the routes two reviewers and a red team found around a check that read
# the student's interpreter. Here nothing reads it: scipy and scikit-learn are not in the
# sandbox (an import fails), a function the lab closes has no code there (its stand-in is
# refused during a graded call), and what cannot be left out is held for the instructor
# (tests/labs/test_answer_families.py counts a held exercise as earning nothing automatically).
LAB6["ex2-code"]["shortcuts"].update(
    _cells(
        dgelss_object_array="""
        from scipy.linalg import lapack
        _SOLVERS = np.empty(1, dtype=object)
        _SOLVERS[0] = lapack.dgelss

        def least_squares(X, d):
            return _SOLVERS[0](P.augment(X), np.asarray(d, dtype=float))[1][: X.shape[1] + 1]
        """,
        dgelss_namespace="""
        import types
        from scipy.linalg import lapack
        _S = types.SimpleNamespace(solve=lapack.dgelss)

        def least_squares(X, d):
            return _S.solve(P.augment(X), np.asarray(d, dtype=float))[1][: X.shape[1] + 1]
        """,
        dgelss_item_201="""
        from scipy.linalg import lapack
        _MANY = [abs] * 200 + [lapack.dgelss]

        def least_squares(X, d):
            return _MANY[200](P.augment(X), np.asarray(d, dtype=float))[1][: X.shape[1] + 1]
        """,
        logging_resolve="""
        import logging.config

        def least_squares(X, d):
            dgelss = logging.config._resolve("scipy.linalg.lapack.dgelss")
            return dgelss(P.augment(X), np.asarray(d, dtype=float))[1][: X.shape[1] + 1]
        """,
        matplotlib_loader="""
        from matplotlib.backends.registry import backend_registry

        def least_squares(X, d):
            lapack = backend_registry.load_backend_module("module://scipy.linalg.lapack")
            return lapack.dgelss(P.augment(X), np.asarray(d, dtype=float))[1][: X.shape[1] + 1]
        """,
        agent_replaced="""
        import sys, types
        _fake = types.ModuleType("labtools.inside.agent")
        _fake.closed_call = lambda name, args, kwargs: None
        if "labtools.inside.agent" in sys.modules:  # (in the sandbox: the agent's own module)
            sys.modules["labtools.inside.agent"] = _fake

        def least_squares(X, d):
            return P.lls(X, d)
        """,
        layers_off="""
        import sys
        for _name in list(sys.modules):
            if _name.startswith("labtools") and ("reach" in _name or "agent" in _name):
                sys.modules[_name] = None

        def least_squares(X, d):
            return np.linalg.lstsq(P.augment(X), np.asarray(d, dtype=float), rcond=None)[0]
        """,
        package_code_compiled="""
        import types
        _lls = types.FunctionType(P.lls.__code__, P.lls.__globals__)

        def least_squares(X, d):
            return _lls(X, d)
        """,
        getattr_made_name="""
        def least_squares(X, d):
            solve = getattr(np.linalg, "ls" + "tsq")
            return solve(P.augment(X), np.asarray(d, dtype=float), rcond=None)[0]
        """,
    )
)
LAB1["ex3-code"]["alternatives"].update(
    _cells(
        # review A, H3: P.predict does no part of PT; Lab 1 allows it (a stopping test)
        stops_when_predict_agrees="""
        def train(X, c, eta, max_epochs=100):
            Xa = P.augment(X)
            w = np.zeros(Xa.shape[1])
            for _ in range(max_epochs):
                if np.array_equal(P.predict(X, w), np.asarray(c)):
                    break
                for x, label in zip(Xa, c):
                    w = pt_step(w, x, label, eta)
            return w
        """,
    )
)
LAB1["ex3-code"]["shortcuts"].update(
    _cells(
        pt_code_copy="""
        import types as _types
        _pt = _types.FunctionType(P.pt.__code__, P.pt.__globals__, "pt", P.pt.__defaults__)

        def train(X, c, eta, max_epochs=100):
            return _pt(X, c, eta=eta, max_epochs=max_epochs, warn=False).w
        """,
    )
)
LAB6["ex3-code"]["shortcuts"].update(
    _cells(
        lms_pass_copy="""
        import types
        from perceptrons.delta_rule import _lms_pass
        _copy = types.FunctionType(_lms_pass.__code__, _lms_pass.__globals__)

        def lms_filter(X, d, eta):
            Xa = P.augment(X)
            return _copy(Xa, np.asarray(d, dtype=float), eta, np.zeros(Xa.shape[1]))[0]
        """,
    )
)
LAB5["ex1-code"]["shortcuts"].update(
    _cells(
        expit_object_array="""
        from scipy.special import expit
        _F = np.array([expit], dtype=object)

        def sigmoid(z):
            return _F[0](np.asarray(z, dtype=float))
        """,
    )
)
LAB7["ex4-code"]["shortcuts"].update(
    _cells(
        confusion_namespace="""
        import types
        from sklearn.metrics import confusion_matrix
        _T = types.SimpleNamespace(cm=confusion_matrix)

        def accuracy(w, X, c):
            m = _T.cm(np.asarray(c), (P.augment(X) @ w >= 0).astype(int), labels=[0, 1])
            return float(np.trace(m) / m.sum())
        """,
    )
)
# honest forms that the old check refused (issue 38, item 5): a namedtuple for a pair, a ufunc
# the student makes with np.frompyfunc of a scalar function of their own
LAB6["ex4-code"]["alternatives"].update(
    _cells(
        namedtuple_pair="""
        from collections import namedtuple
        Limits = namedtuple("Limits", "eta_max memory")

        def lms_limits(X, eta):
            Xa = P.augment(X)
            lam = np.linalg.eigvalsh(Xa.T @ Xa / len(Xa))
            return Limits(2 / lam.max(), 1 / (eta * lam.min()))
        """,
    )
)
LAB7["ex5-code"]["alternatives"].update(
    _cells(
        namedtuple_pair="""
        from collections import namedtuple
        Accuracies = namedtuple("Accuracies", "train test")

        def held_out(X, c, eta, steps, n_test, seed):
            tr, te = split(len(X), n_test, seed)
            w = train(X[tr], c[tr], eta, steps)
            return Accuracies(accuracy(w, X[tr], c[tr]), accuracy(w, X[te], c[te]))
        """,
    )
)
LAB1["ex1-code"]["alternatives"].update(
    _cells(
        frompyfunc_step="""
        _step = np.frompyfunc(lambda z: 1.0 if z >= 0 else 0.0, 1, 1)

        def pt_step(w, x, c, eta):
            return w + eta * (c - float(_step(w @ x))) * x
        """,
    )
)
LAB5["ex1-code"]["alternatives"].update(
    _cells(
        frompyfunc="""
        import math

        def _one(z):
            return 1 / (1 + math.exp(-z)) if z >= 0 else math.exp(z) / (1 + math.exp(z))

        _ufunc = np.frompyfunc(_one, 1, 1)

        def sigmoid(z):
            return _ufunc(np.asarray(z, dtype=float))
        """,
    )
)

# Shortcuts that the tests of the idea catch, not the forbid: run with nothing forbidden
# they still fail their exercise's tests (differences at ‖w‖ = 300; a measured factor is not
# h² for every h). Every other shortcut passes them all when nothing forbids it.
LAB2["ex3-code"]["caught_by_tests"] = {"measured_bound", "measured_updates", "radius_margin"}
LAB3["ex1-code"]["caught_by_tests"] = {"central_differences"}
LAB5["ex2-code"]["caught_by_tests"] = {"central_differences", "complex_step"}

FAMILIES = {
    "lab1_perceptron": LAB1,
    "lab2_convergence": LAB2,
    "lab3_delta_rule": LAB3,
    "lab4_learning_rate": LAB4,
    "lab5_logistic": LAB5,
    "lab6_lms_filter": LAB6,
    "lab7_logistic_training": LAB7,
}
