# %% ex1-code
def pt_step(w, x, c, eta):
    return w + eta * P.pt_error(c, w @ x, "01") * x

# %% ex3-code
def train(X, c, eta, max_epochs=100):
    return P.pt(X, c, eta=eta, max_epochs=max_epochs).w
