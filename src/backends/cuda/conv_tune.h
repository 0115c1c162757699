/* conv_tune.h — cuDNN's timed convolution choices kept on disk (conv_tune.c). */
#ifndef ST_CUDA_CONV_TUNE_H
#define ST_CUDA_CONV_TUNE_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The algorithm and math type stored for `key`; false when none is. */
bool st_cuda_tune_lookup(const char *key, int *algo, int *math);
/* Records them in memory and appends them to the cache file. */
void st_cuda_tune_store(const char *key, int algo, int math);

#ifdef __cplusplus
}
#endif

#endif
