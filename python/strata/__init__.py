"""strata: run ONNX models on CPUs and GPUs, from Python.

    import numpy as np
    import strata

    sess = strata.Session("model.onnx", backend="cpu", threads=2)
    print(sess.inputs)     # [ValueInfo(name='x', dtype='float32', shape=('batch', 64))]
    y0, = sess.run(["y0"], {"x": np.random.rand(5, 64).astype(np.float32)})

A thin layer over libstrata's C API (include/strata.h) through ctypes:
strata.library_path says which libstrata.so it loaded (see _lib.py for
where it looks, and STRATA_LIBRARY).  Errors raise strata.Error, whose
message is strata's.
"""
from ._lib import Error
from ._lib import path as library_path
from ._lib import version as library_version
from ._session import BACKENDS, Model, Session, ValueInfo, memory_usage

# the package's own version; strata.library_version is the loaded library's
__version__ = "0.2.0"

__all__ = ["BACKENDS", "Error", "Model", "Session", "ValueInfo", "library_path", "library_version", "memory_usage", "__version__"]
