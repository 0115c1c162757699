/* linalg.h — MatMul and Gemm parameters, and the shared GEMM entry. */
#ifndef ST_OPS_LINALG_H
#define ST_OPS_LINALG_H

#include <stdbool.h>

typedef struct st_matmul_state {
    bool trans_a, trans_b;
    float alpha, beta;
} st_matmul_state;

#endif
