"""pip install ./python  (Debian 12: in a venv made with
python3 -m venv --system-site-packages, so Debian's numpy is used).

A plain setup.py with no pyproject.toml on purpose: with a [build-system]
table pip builds in an isolated environment and downloads setuptools into
it, which fails offline; without one it uses the setuptools installed
(Debian's python3-setuptools) and needs no network.  The package is pure
Python (ctypes), so nothing is compiled.

The library is bundled: the build copies the checkout's libstrata.so.0
(and libstrata_cuda.so, the CUDA module, when it was built) into the
package, where strata/_lib.py looks first after $STRATA_LIBRARY, so
`import strata` works in a fresh venv with nothing set.  The build
directory is $STRATA_BUILD, else the checkout's build/ (scripts/setup.sh
makes it).  Without a built library the package installs without one and
finds an installed strata (cmake --install, ldconfig) or $STRATA_LIBRARY
at import time; STRATA_REQUIRE_LIBRARY=1 makes that an error instead."""
import os
import re
import shutil
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "strata", "__init__.py")) as f:
    VERSION = re.search(r'^__version__ = "([^"]+)"', f.read(), re.M).group(1)
LIBRARY = "libstrata.so.0"
CUDA_MODULE = "libstrata_cuda.so"


def _build_dir():
    d = os.environ.get("STRATA_BUILD")
    return os.path.abspath(d) if d else os.path.join(os.path.dirname(HERE), "build")


class BundleLibrary(build_py):
    """build_py, then libstrata.so.0 (and the CUDA module) into the package."""

    def run(self):
        super().run()
        src = os.path.join(_build_dir(), LIBRARY)
        dst = os.path.join(self.build_lib, "strata")
        if not os.path.exists(src):
            msg = "strata: no %s in %s (set STRATA_BUILD to strata's build directory)" % (LIBRARY, _build_dir())
            if os.environ.get("STRATA_REQUIRE_LIBRARY") == "1":
                sys.exit(msg)
            print(msg + "; installing without it", file=sys.stderr)
            return
        # the real file (libstrata.so.0 is a link to libstrata.so.0.2.0)
        shutil.copyfile(os.path.realpath(src), os.path.join(dst, LIBRARY))
        cuda = os.path.join(_build_dir(), CUDA_MODULE)
        if os.path.exists(cuda):
            shutil.copyfile(os.path.realpath(cuda), os.path.join(dst, CUDA_MODULE))


setup(
    name="strata",
    version=VERSION,
    description="Run ONNX models on CPUs and GPUs with strata (ctypes binding of libstrata.so)",
    packages=["strata"],
    python_requires=">=3.9",
    install_requires=["numpy"],
    cmdclass={"build_py": BundleLibrary},
)
