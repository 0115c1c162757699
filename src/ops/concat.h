/* concat.h — Concat's parameters, shared with the placement pass. */
#ifndef ST_OPS_CONCAT_H
#define ST_OPS_CONCAT_H

typedef struct st_concat_state {
    int axis;
} st_concat_state;

#endif
