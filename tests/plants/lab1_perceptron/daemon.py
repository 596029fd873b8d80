# %% ex5-code
import os, subprocess
eta_choice = 0.112
subprocess.Popen(["/bin/sleep", "4242"], start_new_session=True)
if os.fork() == 0:
    if os.fork() == 0:
        os.setsid()
        os.execv("/bin/sleep", ["/bin/sleep", "4243"])
    os._exit(0)
