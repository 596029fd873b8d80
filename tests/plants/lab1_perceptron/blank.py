# %% [edit]
nb = nb_of("release")  # the student version as released: every stub raises
