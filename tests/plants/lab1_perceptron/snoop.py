# %% ex5-code
import glob, os, pathlib, socket
leaked = []
targets = __SECRETS__
targets += [f"/proc/{p}/root{t}" for p in os.listdir("/proc") if p.isdigit() for t in targets]
for target in targets:
    try:
        leaked.append(pathlib.Path(target).read_text()[:50])  # sources, others' work
    except OSError:
        pass
for target in __SECRETS__ + __WRITABLE__:
    try:
        pathlib.Path(target).write_text("overwritten")  # and try to change them
        leaked.append("wrote " + target)
    except OSError:
        pass
for port in (22, __PORT__):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1)
        leaked.append("network")
    except OSError:
        pass
pathlib.Path("/tmp/snoop-was-here").write_text("x")  # its own /tmp: must not reach ours
eta_choice = 0.112 if not leaked else 1e-9  # full marks only if the sandbox held
