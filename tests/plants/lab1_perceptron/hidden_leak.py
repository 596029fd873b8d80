# pt_step as asked, but it records the size of every x it is given; a cell added at the end
# prints them. The hidden test calls it with x of 4 numbers, the visible one with 3: the
# graded notebook (feedback, formgrader) must show only 3 (round-5 red team, finding 5)
# %% ex1-code
SEEN = []
def pt_step(w, x, c, eta):
    SEEN.append(len(x))
    error = c - (1.0 if w @ x >= 0 else 0.0)
    return w + eta * error * x
# %% [added] 1
print("SIZES SEEN:", sorted(set(SEEN)))
