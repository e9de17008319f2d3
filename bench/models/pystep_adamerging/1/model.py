"""pystep_adamerging: the numpy ensemble step, bench/models/numpy_peer.py's StepModel
(the peer of the react step; see config.pbtxt)."""
import pathlib
import sys

sys.dont_write_bytecode = True  # a __pycache__/ in the model repository would be taken for a model
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))
from numpy_peer import StepModel as TritonPythonModel  # noqa: E402,F401
