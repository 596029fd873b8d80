# %% ex2-code
import json, os, struct
message = json.dumps({"id": "0", "value": 11}).encode()
os.write(4, struct.pack(">Q", len(message)) + message)
predicted_updates = 11
predicted_w = np.array([-3.0, 2.0, 1.0])
