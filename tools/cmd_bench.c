/* cmd_bench.c — `strata bench`: median, min and max milliseconds per run,
 * the time to the first result and the peak memory held. */
#include <stdlib.h>
#include <time.h>

#include "tool.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int st_cmd_bench(int argc, char **argv)
{
    tool_opts o;
    if (tool_parse(argc, argv, &o)) return 1;
    /* time to first result: load, session, inputs and the first run (its
     * planning, autotuning and uploads), what a one-shot caller waits */
    double t_start = now_ms(), first_ms = -1;
    st_model *m;
    if (st_model_load(o.model, &m) != ST_OK) return tool_fail_st("");
    st_session *s;
    if (tool_session_create(m, &o.so, &s) != ST_OK) {
        st_model_free(m);
        return tool_fail_st(o.model);
    }
    int rc = tool_bind_inputs(&o, m, s);
    double *t = calloc((size_t)o.runs, sizeof *t);
    if (!rc && !t) rc = tool_fail("out of memory");
    tool_progress bar;
    tool_progress_start(&bar, "bench: warmup", rc ? 0 : o.warmup);
    for (int i = 0; i < o.warmup && !rc; i++) {
        if (st_session_run(s) != ST_OK || st_session_wait(s) != ST_OK) rc = tool_fail_st(o.model);
        if (i == 0) first_ms = now_ms() - t_start;
        tool_progress_step(&bar, i + 1, NULL);
    }
    tool_progress_end(&bar);
    tool_progress_start(&bar, "bench: run", rc ? 0 : o.runs);
    for (int i = 0; i < o.runs && !rc; i++) {
        double t0 = now_ms();
        if (st_session_run(s) != ST_OK || st_session_wait(s) != ST_OK) rc = tool_fail_st(o.model);
        t[i] = now_ms() - t0;
        if (first_ms < 0) first_ms = now_ms() - t_start;
        char last[48];
        snprintf(last, sizeof last, "last %.3f ms", t[i]);
        tool_progress_step(&bar, i + 1, last);
    }
    tool_progress_end(&bar);
    if (!rc) rc = tool_profile_write(&o, s);
    if (!rc) {
        qsort(t, (size_t)o.runs, sizeof *t, cmp_double);
        double med = o.runs % 2 ? t[o.runs / 2] : (t[o.runs / 2 - 1] + t[o.runs / 2]) / 2;
        /* the most memory this process held on the session's backend (and,
         * for a device, in host memory): weights, arenas, inputs, staging */
        uint64_t peak = 0, host_peak = 0;
        st_memory_usage(o.so.backend, NULL, &peak);
        st_memory_usage(ST_BACKEND_CPU, NULL, &host_peak);
        if (o.json)
            printf("{\"model\": \"%s\", \"runs\": %d, \"median_ms\": %.4f, \"min_ms\": %.4f, \"max_ms\": %.4f, "
                   "\"first_result_ms\": %.3f, \"peak_bytes\": %llu, \"host_peak_bytes\": %llu}\n",
                   o.model, o.runs, med, t[0], t[o.runs - 1], first_ms, (unsigned long long)peak,
                   (unsigned long long)host_peak);
        else
            printf("%s: %d runs, median %.3f ms, min %.3f ms, max %.3f ms, first result after %.1f ms, peak memory %.1f MB\n",
                   o.model, o.runs, med, t[0], t[o.runs - 1], first_ms, peak / 1e6);
    }
    free(t);
    st_session_free(s);
    st_model_free(m);
    return rc;
}
