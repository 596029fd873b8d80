# %% [edit]
del nb["cells"][cell_index(nb, "ex1-visible")]  # a deleted test cell
nb["cells"][cell_index(nb, "ex2-tests")]["source"] = "pass"  # an edited one
