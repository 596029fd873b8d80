# %% [edit]
index = cell_index(nb, "ex1-visible")  # a test cell copied
nb["cells"].insert(index, json.loads(json.dumps(nb["cells"][index])))
