# Run by AgentPythonTest with RANK set to another rank than the agent's: init() must refuse, naming the variable.
import xaforward.torch as xaf

try:
    xaf.init()
    print("UNEXPECTED init accepted RANK that disagrees with the agent", flush=True)
except RuntimeError as e:
    print("REFUSED", e, flush=True)
