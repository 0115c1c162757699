"""Finding libstrata.so and declaring the C API to ctypes.

The library is looked for, in order:
  1. $STRATA_LIBRARY: the library file, or a directory holding it;
  2. beside this package (the libstrata.so.0 that `pip install ./python`
     bundles from the checkout's build, see setup.py);
  3. the dynamic loader's search path (an installed strata: /usr/local/lib
     after ldconfig, or LD_LIBRARY_PATH);
  4. the build directory of the source checkout this package sits in
     (python/strata -> ../../build), for running from a checkout.
The first that loads wins; a $STRATA_LIBRARY that does not load is an
error rather than a reason to look elsewhere.

ctypes releases the GIL around every call, so sessions on several Python
threads run at once; strata's error message is per thread, and every call
and its st_last_error() happen on the caller's thread.
"""
import ctypes
import os

# The SONAME this package speaks to, and the oldest library with every
# function it calls (st_session_set_input_checked and the string functions
# arrived in 0.2.0).
ABI_MAJOR = 0
MIN_VERSION = (0, 2, 0)
MAX_RANK = 8

_NAME = "libstrata.so.%d" % ABI_MAJOR


# st_status, in strata.h's order (existing values never change within a
# major version; a code a newer library adds shows as its number)
STATUS = ["ST_OK", "ST_ERR_INVALID_ARG", "ST_ERR_IO", "ST_ERR_MODEL", "ST_ERR_UNSUPPORTED", "ST_ERR_SHAPE",
          "ST_ERR_DTYPE", "ST_ERR_NOMEM", "ST_ERR_BACKEND", "ST_ERR_HAZARD", "ST_ERR_BUSY", "ST_ERR_INTERNAL",
          "ST_ERR_CANCELLED", "ST_ERR_TIMEOUT"]


class Error(Exception):
    """A strata call failed.  str(e) is strata's message, which says what
    was wrong and where; e.status is the st_status's name (for example
    "ST_ERR_SHAPE") and e.code its number."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.status = STATUS[code] if 0 <= code < len(STATUS) else "st_status %d" % code
        self.message = message


class _Options(ctypes.Structure):
    # st_session_options, field for field (strata.h: its layout never
    # changes within a major version)
    _fields_ = [("backend", ctypes.c_int), ("threads", ctypes.c_int), ("precision", ctypes.c_int),
                ("sanitize", ctypes.c_int), ("schedule", ctypes.c_int), ("seed", ctypes.c_uint64),
                ("hazard_mode", ctypes.c_int), ("device", ctypes.c_int), ("memory_limit", ctypes.c_uint64),
                ("serial", ctypes.c_int), ("no_fallback", ctypes.c_int), ("profile", ctypes.c_char_p)]


class _ValueInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int),
                ("dims", ctypes.c_int64 * MAX_RANK), ("dim_names", ctypes.c_char_p * MAX_RANK)]


def _candidates():
    env = os.environ.get("STRATA_LIBRARY")
    if env:
        yield os.path.join(env, _NAME) if os.path.isdir(env) else env, True
        return
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, _NAME), False
    yield _NAME, False
    yield os.path.join(here, "..", "..", "build", _NAME), False


def _load():
    tried = []
    for path, explicit in _candidates():
        if os.sep in path and not os.path.exists(path):
            if explicit:
                raise ImportError("strata: STRATA_LIBRARY=%s: no such file" % path)
            tried.append(path)
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            if explicit:
                raise ImportError("strata: STRATA_LIBRARY=%s does not load: %s" % (path, e)) from None
            tried.append("%s (%s)" % (path, e))
    raise ImportError("strata: %s not found; set STRATA_LIBRARY to the library (or its directory), or install "
                      "strata where the loader finds it.  Tried: %s" % (_NAME, "; ".join(tried)))


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p), ("dli_sname", ctypes.c_char_p),
                ("dli_saddr", ctypes.c_void_p)]


def _file_of(lib, fallback):
    """The file the loader mapped lib from (dladdr), which is where strata
    looks for its CUDA module."""
    dladdr = ctypes.CDLL(None).dladdr
    dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
    info = _DlInfo()
    if dladdr(ctypes.cast(lib.st_last_error, ctypes.c_void_p), ctypes.byref(info)) and info.dli_fname:
        return os.path.realpath(info.dli_fname.decode())
    return fallback


lib, path = _load()
path = _file_of(lib, path)


def _declare(name, restype, *argtypes):
    try:
        f = getattr(lib, name)
    except AttributeError:
        raise ImportError("strata: %s has no %s: it is older than %d.%d.%d, which this package needs" %
                          (path, name, *MIN_VERSION)) from None
    f.restype = restype
    f.argtypes = argtypes


P = ctypes.c_void_p
_declare("st_version", ctypes.c_char_p)
_declare("st_version_number", ctypes.c_int)
_declare("st_last_error", ctypes.c_char_p)
_declare("st_dtype_name", ctypes.c_char_p, ctypes.c_int)
_declare("st_backend_count", ctypes.c_int)
_declare("st_backend_name", ctypes.c_char_p, ctypes.c_int)
_declare("st_model_load", ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(P))
_declare("st_model_load_memory", ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.POINTER(P))
_declare("st_model_free", None, P)
_declare("st_model_input_count", ctypes.c_int, P)
_declare("st_model_output_count", ctypes.c_int, P)
_declare("st_model_input_info", ctypes.c_int, P, ctypes.c_int, ctypes.POINTER(_ValueInfo))
_declare("st_model_output_info", ctypes.c_int, P, ctypes.c_int, ctypes.POINTER(_ValueInfo))
_declare("st_session_options_init", None, ctypes.POINTER(_Options))
_declare("st_session_create", ctypes.c_int, P, ctypes.POINTER(_Options), ctypes.POINTER(P))
_declare("st_session_free", None, P)
_declare("st_session_set_precision_policy", ctypes.c_int, P, ctypes.c_int)
_declare("st_session_set_input_checked", ctypes.c_int, P, ctypes.c_char_p, ctypes.c_int, ctypes.c_int,
         ctypes.POINTER(ctypes.c_int64), P, ctypes.c_size_t)
_declare("st_session_run", ctypes.c_int, P)
_declare("st_session_wait", ctypes.c_int, P)
_declare("st_session_profile_write", ctypes.c_int, P)
_declare("st_session_output", ctypes.c_int, P, ctypes.c_char_p, ctypes.POINTER(P))
_declare("st_tensor_dtype", ctypes.c_int, P)
_declare("st_tensor_rank", ctypes.c_int, P)
_declare("st_tensor_dim", ctypes.c_int64, P, ctypes.c_int)
_declare("st_tensor_read", ctypes.c_int, P, ctypes.c_int, P, ctypes.c_size_t)
_declare("st_session_set_input_strings", ctypes.c_int, P, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int64),
         ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t)
_declare("st_tensor_read_strings", ctypes.c_int, P, ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t)
_declare("st_tensor_free", None, P)
_declare("st_memory_usage", ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint64))

version = lib.st_version().decode()
_n = lib.st_version_number()
if _n // 10000 != ABI_MAJOR or _n < MIN_VERSION[0] * 10000 + MIN_VERSION[1] * 100 + MIN_VERSION[2]:
    raise ImportError("strata: %s is version %s; this package needs %d.%d.%d or a later %d.x" %
                      (path, version, *MIN_VERSION, ABI_MAJOR))


def check(status):
    """Raises Error with strata's message unless status is ST_OK."""
    if status != 0:
        raise Error(status, lib.st_last_error().decode(errors="replace"))
