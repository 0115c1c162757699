/*
 * reduce.h — the parameter block of the reduce family (reduce.c's shape
 * rules fill it, backends/cpu/k_reduce.c reads it).
 */
#ifndef ST_OPS_REDUCE_H
#define ST_OPS_REDUCE_H

#include <stdbool.h>
#include <stdint.h>

typedef enum st_reduce_kind {
    ST_R_SUM,
    ST_R_MEAN,
    ST_R_MAX,
    ST_R_MIN,
    ST_R_PROD,
    ST_R_L1,
    ST_R_L2,
    ST_R_LOG_SUM,
    ST_R_LOG_SUM_EXP,
    ST_R_SUM_SQUARE
} st_reduce_kind;

typedef struct st_reduce_state {
    int kind;                /* st_reduce_kind (ReduceX); ArgMax: ST_R_MAX, ArgMin: ST_R_MIN */
    uint32_t mask;           /* ReduceX: the input axes reduced (0: none, each output one element) */
    bool keepdims;
    int axis;                /* ArgMax/ArgMin, TopK */
    bool select_last;        /* ArgMax/ArgMin */
    bool largest;            /* TopK */
    int64_t k;               /* TopK */
    bool exclusive, reverse; /* CumSum */
} st_reduce_state;

#endif
