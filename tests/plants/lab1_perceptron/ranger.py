# %% ex2-code
import labtools.inside.protocol as _wire  # the agent's side of the wire
_wire.MAX_ITEMS = 10**15  # the agent's budget, in the student's own process
predicted_updates = range(2 * 10**8)  # three numbers on the wire, 200 million items later
predicted_w = np.array([-3.0, 2.0, 1.0])
