# %% [edit]
nb["cells"].reverse()
