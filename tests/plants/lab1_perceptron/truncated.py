# %% [edit]
nb = json.dumps(nb)[:5000]  # the file cut short
