/* k_reduce.h — CPU kernels of the reduce family (k_reduce.c). */
#ifndef ST_CPU_K_REDUCE_H
#define ST_CPU_K_REDUCE_H

#include "ops/op.h"

st_status st_cpu_reduce(const st_kctx *k);   /* ReduceMean, ReduceSum, ... ReduceSumSquare */
st_status st_cpu_argminmax(const st_kctx *k);
st_status st_cpu_topk(const st_kctx *k);
st_status st_cpu_cumsum(const st_kctx *k);

#endif
