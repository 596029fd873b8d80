# four processes of one notebook each fill 256 MiB and hold it: 1 GiB together, over the
# notebook's memory limit (768 MiB for all its processes in this test; round-5 red team,
# finding 8, held 8.2 GiB in 7 processes). Each holds its memory until every one has
# filled its own or died, so the four are over the limit together however slowly the
# machine runs. Full marks only if the kernel ended one of them for it
# %% ex5-code
import os, select
filled_r, filled_w = os.pipe()
go_r, go_w = os.pipe()
children = []
for _ in range(4):
    pid = os.fork()
    if pid == 0:
        os.close(go_w)
        block = b"\x01" * (256 * 2**20)  # filled in C: every page is the process's own
        os.write(filled_w, b"x")
        os.read(go_r, 1)  # held until the parent lets go
        os._exit(0)
    children.append(pid)
os.close(go_r)
filled, ended = 0, {}
while filled + len(ended) < len(children):
    if select.select([filled_r], [], [], 0.05)[0]:
        filled += len(os.read(filled_r, 16))
    for pid in children:
        if pid not in ended:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                ended[pid] = status
os.close(go_w)  # let go: the ones that filled end now
for pid in children:
    if pid not in ended:
        ended[pid] = os.waitpid(pid, 0)[1]
killed = sum(1 for status in ended.values() if os.WIFSIGNALED(status))
print("killed for memory:", killed)
eta_choice = 0.112 if killed else 1e-9
