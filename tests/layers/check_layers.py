#!/usr/bin/env python3
"""check_layers.py — fails if any #include "..." under src/ runs against the
layer order (docs/architecture.md, "Layers"):

    core -> graph, io, vision -> ops -> onnx -> plan -> passes -> runtime
         -> backends -> session -> tools

A file may include its own layer and those before it, never one after.
vision/ (image helpers over core only) sits with graph and io; onnx/
(the loader and st_model_load: it resolves each node's op definition)
right after ops.  Inside backends/, a backend's directory may include its
own files, backends/common/ (shared by every backend) and the top-level
backends/*.h, never another backend's directory.  Includes of files that
are not under src/ (strata.h, the generated onnx.pb-c.h and the embedded
OpenCL source) are outside the order.

usage: check_layers.py SRC_DIR     (prints each violation; exit 1 if any)
"""
import os
import re
import sys

ORDER = ["core", ("graph", "io", "vision"), "ops", "onnx", "plan", "passes", "runtime", "backends", "session", "tools"]
RANK = {}
for i, layer in enumerate(ORDER):
    for name in (layer if isinstance(layer, tuple) else (layer,)):
        RANK[name] = i
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
# generated, not under src/: the protobuf-c header and OpenCL's and Vulkan's embedded kernels
GENERATED = {"onnx/onnx.pb-c.h", "opencl/st_cl_source.h", "vulkan/st_vk_spirv.h"}


def layer_of(path):
    return path.split("/", 1)[0]


def backend_dir(path):
    """'cpu' for backends/cpu/x.h, None for backends/x.h or backends/common/."""
    parts = path.split("/")
    if parts[0] != "backends" or len(parts) < 3 or parts[1] == "common":
        return None
    return parts[1]


def check(src):
    bad = []
    n = 0
    for root, _, files in os.walk(src):
        for f in sorted(files):
            if not f.endswith((".c", ".h", ".cu", ".cuh", ".cl")):
                continue
            full = os.path.join(root, f)
            rel = os.path.relpath(full, src).replace(os.sep, "/")
            here = layer_of(rel)
            if here not in RANK:
                bad.append("%s: directory '%s' has no place in the layer order" % (rel, here))
                continue
            with open(full, errors="replace") as fh:
                for lineno, line in enumerate(fh, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    inc = m.group(1)
                    if "/" not in inc or inc in GENERATED:
                        continue  # strata.h, a header beside the file, a generated one
                    n += 1
                    there = layer_of(inc)
                    if there not in RANK:
                        bad.append("%s:%d: includes \"%s\", outside every layer" % (rel, lineno, inc))
                    elif RANK[there] > RANK[here]:
                        bad.append("%s:%d: %s includes \"%s\" of a later layer (%s)" % (rel, lineno, here, inc, there))
                    elif backend_dir(rel) and backend_dir(inc) and backend_dir(rel) != backend_dir(inc):
                        bad.append("%s:%d: backend '%s' includes another backend's \"%s\"" %
                                   (rel, lineno, backend_dir(rel), inc))
    return n, bad


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.stderr.write("usage: check_layers.py SRC_DIR\n")
        return 2
    n, bad = check(sys.argv[1])
    for b in bad:
        print(b)
    print("layers: %d includes checked, %d against the order" % (n, len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
