"""Models, sessions and their metadata over strata's C API."""
import ctypes
import os
import sys
from collections import namedtuple

import numpy as np

from . import _lib
from ._lib import check, lib

# st_dtype <-> numpy.  bfloat16 has no numpy type: a bfloat16 output is
# read as float32, and float32 (or any float) data feeds a bfloat16 input,
# strata converting it.
ST_DTYPES = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32, 7: np.int64,
             9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64, 16: np.float32}
ST_OF_NUMPY = {np.dtype(t): k for k, t in ST_DTYPES.items() if k != 16}
ST_F32, ST_STRING, ST_BF16 = 1, 8, 16

# the library's registry of backends: name -> st_backend_kind
BACKENDS = {lib.st_backend_name(k).decode(): k for k in range(lib.st_backend_count())}


def memory_usage(backend="cpu"):
    """(live, peak): the bytes strata holds on backend now and at most
    (st_memory_usage: every storage it allocated there, and CUDA's
    workspaces; not the driver's own)."""
    live, peak = ctypes.c_uint64(), ctypes.c_uint64()
    check(lib.st_memory_usage(_choice("backend", backend, BACKENDS), ctypes.byref(live), ctypes.byref(peak)))
    return live.value, peak.value
PRECISIONS = {"f32": 1, "float32": 1, "f16": 10, "float16": 10, "bf16": 16, "bfloat16": 16}
SCHEDULES = {"default": 0, "random": 1}
HAZARD_MODES = {"ranges": 0, "storage": 1, "base-pointer": 2}
PRECISION_POLICIES = {"mixed": 0, "strict": 1}


def _refs(arrays, i):
    """The reference count of arrays[i] as this function sees it."""
    return sys.getrefcount(arrays[i])


# what _refs says of an array that only a list holds: an output array the
# caller has dropped (with every view of it) reads this, one it still
# holds reads more.  Measured rather than assumed, so it stays right
# whatever the interpreter counts of its own temporaries.
_UNHELD = _refs([np.empty(1)], 0)


# numpy asks the kernel for huge pages (madvise) on arrays of 4 MB and
# more.  On a VM the kernel's work to assemble them (compaction, page
# collapses, the TLB flushes they send to every thread of the process)
# made the session's runs 1.5-2.5x slower in a loop that read a
# segmentation model's 12 outputs of 4 MB.  Output arrays are made
# without it; the caller's own arrays are left as numpy makes them.
_set_madvise = getattr(getattr(getattr(np, "core", None), "multiarray", None), "_set_madvise_hugepage", None)


def _empty(shape, dtype):
    if _set_madvise is None:
        return np.empty(shape, dtype=dtype)
    was = _set_madvise(False)
    try:
        return np.empty(shape, dtype=dtype)
    finally:
        _set_madvise(was)


class ValueInfo(namedtuple("ValueInfo", "name dtype shape")):
    """A model input or output.  dtype is strata's name for the element
    type ("float32", "bfloat16", ...); shape is a tuple whose entries are
    ints, or a dim's symbolic name (str), or None for an unnamed unknown
    dim; shape is None when even the rank is unknown."""

    @property
    def numpy_dtype(self):
        """The numpy dtype a run returns for it (float32 for bfloat16,
        object, holding str, for strings)."""
        if self.dtype == "string":
            return np.dtype(object)
        for k, t in ST_DTYPES.items():
            if lib.st_dtype_name(k).decode() == self.dtype:
                return np.dtype(t)
        return None


def _value_info(info):
    if info.rank < 0:
        shape = None
    else:
        shape = tuple(int(info.dims[d]) if info.dims[d] >= 0 else
                      (info.dim_names[d].decode() if info.dim_names[d] else None) for d in range(info.rank))
    return ValueInfo(info.name.decode(), lib.st_dtype_name(info.dtype).decode(), shape)


class Model:
    """A loaded ONNX model: immutable, shared by any number of sessions on
    any threads.  source is a path, or the model's bytes (then base_dir,
    if given, is where external data files are; without it a model with
    external data is refused)."""

    def __init__(self, source, base_dir=None):
        self._m = ctypes.c_void_p()
        if isinstance(source, (bytes, bytearray, memoryview)):
            data = bytes(source)
            check(lib.st_model_load_memory(data, len(data), os.fsencode(base_dir) if base_dir else None,
                                           ctypes.byref(self._m)))
        else:
            check(lib.st_model_load(os.fsencode(source), ctypes.byref(self._m)))
        self.inputs = self._infos(lib.st_model_input_count, lib.st_model_input_info)
        self.outputs = self._infos(lib.st_model_output_count, lib.st_model_output_info)

    def _infos(self, count, get):
        out = []
        for i in range(count(self._m)):
            info = _lib._ValueInfo()
            check(get(self._m, i, ctypes.byref(info)))
            out.append(_value_info(info))
        return out

    def __del__(self):
        if getattr(self, "_m", None):
            lib.st_model_free(self._m)
            self._m = None


def _choice(what, value, table):
    try:
        return table[value]
    except (KeyError, TypeError):
        raise ValueError("%s must be one of %s, got %r" % (what, ", ".join(sorted(table)), value)) from None


def as_input(value):
    """value as an array strata can read in place: the array itself when it
    is already C-contiguous, aligned and in native byte order (no copy),
    else a packed copy."""
    a = np.asarray(value)
    if a.dtype.kind in "UOS":
        return a  # strings: run() passes them as C strings
    if a.dtype not in ST_OF_NUMPY:
        if not a.dtype.isnative and a.dtype.newbyteorder("=") in ST_OF_NUMPY:
            a = a.astype(a.dtype.newbyteorder("="))
        else:
            raise TypeError("strata takes %s arrays, not %s" %
                            (", ".join(sorted(str(d) for d in ST_OF_NUMPY)), a.dtype))
    if not (a.flags.c_contiguous and a.flags.aligned):
        a = np.ascontiguousarray(a)
    return a


class Session:
    """A model ready to run, with its own memory.

        Session(model, backend="cpu", precision="f32", threads=0,
                sanitize=False, schedule="default", seed=0,
                hazard_mode="ranges", device=0, memory_limit=0,
                inter_op=True, profile=None, precision_policy="mixed")

    model is a Model, a path or the model's bytes.  backend: a name in the
    library's registry of backends (strata.BACKENDS: "cpu", "cuda",
    "opencl", ...); precision: "f32", "f16" or "bf16" (what weights and
    activations are stored in; arithmetic accumulates in f32); threads: CPU
    threads, 0 for one per core; sanitize: prove every conflicting pair of
    commands ordered and poison fresh memory; schedule "random" runs ready
    commands in an order seeded by seed; hazard_mode: "ranges" (correct),
    "storage" (coarse) or "base-pointer" (the seed report's bug, to
    reproduce it); device: the GPU's ordinal; memory_limit: bytes the
    session may allocate, 0 for the machine's memory; inter_op: run
    independent commands at the same time.  precision_policy, with
    precision "f16" or "bf16": "mixed" keeps numerically sensitive ops and
    patterns in f32 with casts planned around them, "strict" stores every
    float value in the lower precision (docs/precision.md).

    profile: a path.  Every run is recorded, command by command, and
    write_profile() (or close(), or the end of a with block) writes the
    runs recorded since the last write there as Chrome-trace JSON, which
    ui.perfetto.dev opens (docs/profiling.md).  A path that cannot be
    written raises Error when the session is made.  On CUDA a profiled
    session replays no CUDA graphs, so that each command can be timed.

    A session is driven by one thread at a time (another thread's call
    raises Error with status ST_ERR_BUSY); use one session per thread, all
    sharing one Model.
    """

    def __init__(self, model, backend="cpu", precision="f32", threads=0, sanitize=False, schedule="default", seed=0,
                 hazard_mode="ranges", device=0, memory_limit=0, inter_op=True, profile=None,
                 precision_policy="mixed"):
        self._s = ctypes.c_void_p()
        self.profile = None
        self._unwritten = 0     # runs recorded since the profile was last written
        self.model = model if isinstance(model, Model) else Model(model)
        o = _lib._Options()
        lib.st_session_options_init(ctypes.byref(o))
        o.backend = _choice("backend", backend, BACKENDS)
        o.precision = _choice("precision", precision, PRECISIONS)
        o.schedule = _choice("schedule", schedule, SCHEDULES)
        o.hazard_mode = _choice("hazard_mode", hazard_mode, HAZARD_MODES)
        policy = _choice("precision_policy", precision_policy, PRECISION_POLICIES)
        for name, v, lo in (("threads", threads, 0), ("seed", seed, 0), ("device", device, 0),
                            ("memory_limit", memory_limit, 0)):
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < lo:
                raise ValueError("%s must be a non-negative integer, got %r" % (name, v))
        o.threads, o.seed, o.device, o.memory_limit = int(threads), int(seed), int(device), int(memory_limit)
        o.sanitize = 1 if sanitize else 0
        o.serial = 0 if inter_op else 1
        if profile is not None:
            path = os.fsencode(profile)   # kept alive across the call, which copies it
            if not path:
                raise ValueError("profile must be a file path, got %r" % (profile,))
            o.profile = path
        check(lib.st_session_create(self.model._m, ctypes.byref(o), ctypes.byref(self._s)))
        if policy:
            try:
                check(lib.st_session_set_precision_policy(self._s, policy))
            except _lib.Error:
                lib.st_session_free(self._s)
                self._s = ctypes.c_void_p()
                raise
        if profile is not None:
            self.profile = os.fspath(profile)
        # The arrays the last runs returned.  A run reads an output into
        # one of them that the caller has dropped (same shape and dtype)
        # instead of a new one: fresh memory for every output of every
        # run (48 MB a run for a 1024x1024 segmentation model) went back
        # to the OS and was faulted in again, which cost as much as the
        # run itself on a VM.  At most _KEEP runs' worth are kept.
        self._returned = []

    @property
    def inputs(self):
        """The model's inputs: [ValueInfo(name, dtype, shape)]."""
        return self.model.inputs

    @property
    def outputs(self):
        """The model's outputs: [ValueInfo(name, dtype, shape)]."""
        return self.model.outputs

    def run(self, output_names, feeds):
        """Binds feeds ({input name: array}), runs, and returns the outputs
        named by output_names (None: all of them, in the model's order) as
        a list of new numpy arrays.

        An input array that is C-contiguous and in native byte order is read
        where it is, without a copy on the Python side; strata copies it
        into the session (converting one float dtype to another where the
        model's differs).  Each output is read straight into the array that
        is returned.  An input bound in an earlier run keeps its value until
        it is fed again."""
        if self._s is None:
            raise ValueError("the session is closed")
        if not hasattr(feeds, "items"):
            raise TypeError("feeds must map input names to arrays, got %s" % type(feeds).__name__)
        for name, value in feeds.items():
            a = as_input(value)
            dims = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
            if a.dtype.kind in "UOS":
                # str as UTF-8, bytes as they are
                items = [s if isinstance(s, bytes) else str(s).encode() for s in a.ravel()]
                strs = (ctypes.c_char_p * max(len(items), 1))(*items)
                check(lib.st_session_set_input_strings(self._s, name.encode(), a.ndim, dims, strs, len(items)))
                continue
            check(lib.st_session_set_input_checked(self._s, name.encode(), ST_OF_NUMPY[a.dtype], a.ndim, dims,
                                                   a.ctypes.data_as(ctypes.c_void_p), a.nbytes))
        check(lib.st_session_run(self._s))
        check(lib.st_session_wait(self._s))
        self._unwritten += 1
        names = [o.name for o in self.outputs] if output_names is None else list(output_names)
        return [self._read(n) for n in names]

    def _read(self, name):
        t = ctypes.c_void_p()
        check(lib.st_session_output(self._s, name.encode(), ctypes.byref(t)))
        try:
            st = lib.st_tensor_dtype(t)
            st = ST_F32 if st == ST_BF16 else st
            shape = tuple(lib.st_tensor_dim(t, d) for d in range(lib.st_tensor_rank(t)))
            if st == ST_STRING:
                n = int(np.prod(shape, dtype=np.int64))
                strs = (ctypes.c_char_p * max(n, 1))()
                check(lib.st_tensor_read_strings(t, strs, n))
                out = np.empty(n, dtype=object)
                out[:] = [strs[i].decode("utf-8", "surrogateescape") for i in range(n)]
                return out.reshape(shape)
            out = self._array(shape, np.dtype(ST_DTYPES[st]))
            check(lib.st_tensor_read(t, st, out.ctypes.data_as(ctypes.c_void_p), out.nbytes))
        finally:
            lib.st_tensor_free(t)
        return out

    _KEEP = 3

    def _array(self, shape, dtype):
        """An array for an output: a dropped one of an earlier run, or new."""
        kept = self._returned
        for i in range(len(kept)):
            a = kept[i]
            if a.shape == shape and a.dtype == dtype and a.flags.writeable:
                del a
                if _refs(kept, i) == _UNHELD:
                    a = kept.pop(i)
                    kept.append(a)
                    return a
        a = _empty(shape, dtype)
        if a.nbytes >= 65536:   # small ones cost little to make
            kept.append(a)
            limit = self._KEEP * max(len(self.outputs), 1)
            if len(kept) > limit:
                del kept[:len(kept) - limit]
        return a

    def write_profile(self):
        """Writes the runs recorded since the session was made (or since the
        last write) to the profile path as Chrome-trace JSON, replacing the
        file, and returns the path.  Raises Error when it cannot be
        written, ValueError when the session has no profile."""
        if self._s is None:
            raise ValueError("the session is closed")
        if self.profile is None:
            raise ValueError("the session was made without profile=PATH")
        check(lib.st_session_profile_write(self._s))
        self._unwritten = 0
        return self.profile

    def close(self):
        """Frees the session's memory now rather than when it is collected.
        A profiled session first writes the runs not yet written."""
        if not self._s:
            self._s = None
            return
        try:
            if self.profile is not None and self._unwritten:
                self.write_profile()
        finally:
            lib.st_session_free(self._s)
            self._s = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_s", None):
            try:
                self.close()    # frees the session even when writing the profile fails
            except Exception:  # noqa: BLE001 - a finalizer cannot raise
                pass
