"""pip install ./python  (Debian 12: in a venv made with
python3 -m venv --system-site-packages, so Debian's numpy is used).

A plain setup.py with no pyproject.toml on purpose: with a [build-system]
table pip builds in an isolated environment and downloads setuptools into
it, which fails offline; without one it uses the setuptools installed
(Debian's python3-setuptools) and needs no network.  The package is pure
Python (ctypes), so nothing is compiled; it needs libstrata.so at import
time (strata/_lib.py says where it looks)."""
import re
import os

from setuptools import setup

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "strata", "__init__.py")) as f:
    VERSION = re.search(r'^__version__ = "([^"]+)"', f.read(), re.M).group(1)

setup(
    name="strata",
    version=VERSION,
    description="Run ONNX models on CPUs and GPUs with strata (ctypes binding of libstrata.so)",
    packages=["strata"],
    python_requires=">=3.9",
    install_requires=["numpy"],
)
