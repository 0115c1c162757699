/*
 * conv_tune.c — cuDNN's timed convolution choices, kept between runs.
 *
 * With STRATA_CUDA_CONV_TUNE=1, k_conv.cu times cuDNN's algorithms on a
 * conv's first run (cudnnFindConvolutionForwardAlgorithmEx), which costs
 * milliseconds per conv: YOLOv8n at batch 32 on an H200 gave its first
 * result after 1,160 ms with an empty cache and 979 ms with a full one.  The winner is keyed by the
 * device, cuDNN's version and the whole problem (dims, strides, window,
 * groups, dtype, math), so a later process (or a later session in this
 * one) starts from it without timing.  The file is
 * <cache>/cuda/conv_algos.txt (core/cache_dir.h), one "algo math key" line
 * per problem, appended; a line that does not parse is skipped, and a
 * later line for the same key wins.  STRATA_CUDA_TUNE_CACHE=0 keeps the
 * choices in memory only.
 */
#include "backends/cuda/conv_tune.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cache_dir.h"

typedef struct tune_entry {
    char *key;
    int algo, math;
} tune_entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static tune_entry *entries;
static int n_entries, cap_entries;
static bool loaded;
static char path[4200];            /* empty: no file */

/* Adds or replaces key's entry; under lock. */
static void put(const char *key, int algo, int math)
{
    for (int i = 0; i < n_entries; i++)
        if (strcmp(entries[i].key, key) == 0) {
            entries[i].algo = algo;
            entries[i].math = math;
            return;
        }
    if (n_entries == cap_entries) {
        int cap = cap_entries ? 2 * cap_entries : 64;
        tune_entry *e = realloc(entries, (size_t)cap * sizeof *e);
        if (!e) return; /* a choice not remembered is timed again */
        entries = e;
        cap_entries = cap;
    }
    char *k = strdup(key);
    if (!k) return;
    entries[n_entries++] = (tune_entry){k, algo, math};
}

/* The file's lines into memory, once; under lock. */
static void load(void)
{
    if (loaded) return;
    loaded = true;
    char dir[4000];
    if (!st_cache_dir("cuda", "STRATA_CUDA_TUNE_CACHE", dir, sizeof dir)) return;
    snprintf(path, sizeof path, "%s/conv_algos.txt", dir);
    FILE *f = fopen(path, "r");
    if (!f) return;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        size_t n = strlen(line);
        if (n == 0 || line[n - 1] != '\n') continue; /* cut short */
        line[n - 1] = 0;
        int algo, math, used = 0;
        if (sscanf(line, "%d %d %n", &algo, &math, &used) != 2 || used == 0 || !line[used]) continue;
        put(line + used, algo, math);
    }
    fclose(f);
}

bool st_cuda_tune_lookup(const char *key, int *algo, int *math)
{
    bool found = false;
    pthread_mutex_lock(&lock);
    load();
    for (int i = 0; i < n_entries && !found; i++)
        if (strcmp(entries[i].key, key) == 0) {
            *algo = entries[i].algo;
            *math = entries[i].math;
            found = true;
        }
    pthread_mutex_unlock(&lock);
    return found;
}

void st_cuda_tune_store(const char *key, int algo, int math)
{
    pthread_mutex_lock(&lock);
    load();
    put(key, algo, math);
    if (path[0]) {
        /* one short line per write, appended: concurrent processes
         * interleave whole lines */
        FILE *f = fopen(path, "a");
        if (f) {
            fprintf(f, "%d %d %s\n", algo, math, key);
            fclose(f);
        }
    }
    pthread_mutex_unlock(&lock);
}
