/*
 * vec.cuh — a float dtype's element (f32, f16, bf16) to and from f32, and
 * VEC elements as one aligned 16-byte (or narrower) load or store.
 *
 * Device helpers only, no kernels: a file may include it without getting
 * the row kernels of ew_rows.cuh, which every file that includes that
 * header (or rows.cuh) instantiates and carries in its own cubin.
 */
#ifndef ST_CUDA_VEC_CUH
#define ST_CUDA_VEC_CUH

#include "backends/cuda/common.cuh"

template <typename T> __device__ __forceinline__ float st_to_f(T v);
template <> __device__ __forceinline__ float st_to_f<float>(float v) { return v; }
template <> __device__ __forceinline__ float st_to_f<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float st_to_f<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T st_from_f(float v);
template <> __device__ __forceinline__ float st_from_f<float>(float v) { return v; }
template <> __device__ __forceinline__ __half st_from_f<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 st_from_f<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

template <typename T, int VEC> struct alignas(sizeof(T) * VEC) st_vec {
    T v[VEC];
};

#endif
