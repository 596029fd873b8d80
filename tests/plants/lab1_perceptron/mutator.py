# %% ex1-code
def pt_step(w, x, c, eta):
    error = c - (1.0 if w @ x >= 0 else 0.0)
    w += eta * error * x  # right values, but the caller's w changes too
    return w
