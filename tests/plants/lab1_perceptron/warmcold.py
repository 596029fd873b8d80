# pt_step is right only where the notebook started as the warm start starts it: the agent pid 1
# of its own namespace, the warm parent's module loaded (round-5 red team, finding 20: a
# notebook that looked for the agent in sys.modules scored 2/2 warm and 0/2 cold); warm and
# cold must give it the same score
# %% ex1-code
import os, sys
_AS_WARM = os.getpid() == 1 and os.getppid() == 0 and "labtools.inside.agent" in sys.modules
def pt_step(w, x, c, eta):
    if not _AS_WARM:
        return w
    error = c - (1.0 if w @ x >= 0 else 0.0)
    return w + eta * error * x
