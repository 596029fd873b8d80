# four processes of one notebook each fill 600 MB and hold it: 2.4 GB together, over the
# notebook's memory limit (2 GiB for all its processes: round-5 red team, finding 8, held
# 8.2 GiB in 7 processes). Full marks only if the kernel ended one of them for it
# %% ex5-code
import os, time
children = []
for _ in range(4):
    pid = os.fork()
    if pid == 0:
        block = b"\x01" * (600 * 2**20)  # filled in C: every page is the process's own
        time.sleep(1)
        os._exit(0)
    children.append(pid)
ended = [os.waitpid(pid, 0)[1] for pid in children]
killed = sum(1 for status in ended if os.WIFSIGNALED(status))
print("killed for memory:", killed)
eta_choice = 0.112 if killed else 1e-9
