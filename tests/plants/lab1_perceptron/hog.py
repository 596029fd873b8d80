# %% ex2-code
big = np.ones(3 * 10**9)
predicted_updates = 11
predicted_w = np.array([-3., 2., 1.])
