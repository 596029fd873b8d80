# %% ex1-code
def pt_step(w, x, c, eta):
    return w +
