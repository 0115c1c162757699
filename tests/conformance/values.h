/*
 * values.h — the conformance runner's test data: input_K.pb and
 * output_K.pb as a tensor (TensorProto), a sequence (SequenceProto) or an
 * optional (OptionalProto), read as the model's input or output declares
 * (the bytes alone do not say which message they are).
 */
#ifndef ST_TEST_VALUES_H
#define ST_TEST_VALUES_H

#include <stdbool.h>
#include <stddef.h>

#include "graph/graph.h"
#include "strata.h"

typedef struct tvalue {
    st_value_kind kind;
    bool present;             /* an optional holds a value */
    int n;                    /* the tensors held: one for a tensor or an
                                 optional tensor, a sequence's elements */
    st_const **t;
} tvalue;

/* Reads path as kind.  Returns 0, -1 on an error, -2 when the data is
 * valid but of a kind strata does not run (a map, a sparse tensor, a
 * string tensor); msg says which. */
int tvalue_load(const char *path, st_value_kind kind, tvalue *out, char *msg, size_t cap);
void tvalue_free(tvalue *v);

#endif
