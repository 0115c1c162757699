# env.sh — sourced on the GPU machine: unpacks the carried libraries and
# points the loader at them and at the machine's own CUDA, cuBLAS and cuDNN
# (cuDNN there comes with PyTorch's wheels, not with the toolkit).
D=${D:-.device}
mkdir -p /tmp/st && tar -xJf "$D/lib.tar.xz" -C /tmp/st
# the binaries, packed by pack.sh (an older pack left bin/ as it was)
[ -f "$D/bin.tar.xz" ] && [ ! -d "$D/bin" ] && tar -xJf "$D/bin.tar.xz" -C "$D"
[ -f "$D/node.tar.xz" ] && [ ! -d "$D/node" ] && tar -xJf "$D/node.tar.xz" -C "$D"
dirs=/tmp/st/lib
for name in libcudnn.so.9 libcublasLt.so.13 libcudart.so.13; do
  f=$(find /usr/local /opt /usr/lib -name "$name" 2>/dev/null | head -n 1)
  [ -n "$f" ] && dirs=$dirs:$(dirname "$f")
done
export LD_LIBRARY_PATH=$dirs:${LD_LIBRARY_PATH:-}
export STRATA_CUDA_MODULE=$PWD/$D/bin/libstrata_cuda.so
# the GPU's own OpenCL beside PoCL (the image registers only PoCL's ICD):
# strata picks a GPU device first, so --backend opencl runs on the H200
mkdir -p /etc/OpenCL/vendors
[ -f /etc/OpenCL/vendors/nvidia.icd ] || [ ! -e /usr/local/nvidia/lib64/libnvidia-opencl.so.1 ] ||
  echo /usr/local/nvidia/lib64/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
