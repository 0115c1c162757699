/*
 * cmd_check.c — `strata check`: run a model and compare every output with
 * a reference .npy, elementwise: |out - ref| <= atol + rtol * |ref|, where
 * atol is at least scale_tol * max|ref| (the "relative to the output's
 * scale" tolerance lower precisions need).  Prints max_atol and max_rtol
 * per output with PASS or FAIL; exits 0 only if all pass.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "tool.h"

static const char *find_ref(const tool_opts *o, const char *name, char *buf, size_t cap)
{
    for (int k = 0; k < o->n_refs; k++)
        if (!strcmp(o->refs[k].name, name)) return o->refs[k].path;
    if (!o->ref_dir) return NULL;
    char fname[512];
    tool_sanitize_name(name, fname, sizeof fname);
    snprintf(buf, cap, "%s/%s.npy", o->ref_dir, fname);
    return buf;
}

int st_cmd_check(int argc, char **argv)
{
    tool_opts o;
    if (tool_parse(argc, argv, &o)) return 1;
    if (!o.n_refs && !o.ref_dir) return tool_fail("check needs references: -r NAME=FILE.npy or --ref-dir DIR");
    bool low = o.so.precision == ST_F16 || o.so.precision == ST_BF16;
    if (low && !o.scale_set) o.scale_tol = 1e-2;
    if (low && !o.atol_set) o.atol = 0;
    if (low && !o.rtol_set) o.rtol = 0;
    st_model *m;
    if (st_model_load(o.model, &m) != ST_OK) return tool_fail_st("");
    st_session *s;
    if (tool_session_create(m, &o.so, &s) != ST_OK) {
        st_model_free(m);
        return tool_fail_st(o.model);
    }
    int rc = tool_bind_inputs(&o, m, s);
    if (!rc && (st_session_run(s) != ST_OK || st_session_wait(s) != ST_OK)) rc = tool_fail_st(o.model);
    int n = st_model_output_count(m), failed = 0;
    for (int k = 0; k < o.n_refs && !rc; k++) {
        bool known = false;
        for (int i = 0; i < n; i++) {
            st_value_info info;
            st_model_output_info(m, i, &info);
            known |= !strcmp(info.name, o.refs[k].name);
        }
        if (!known) rc = tool_fail("the model has no output named '%s'", o.refs[k].name);
    }
    for (int i = 0; i < n && !rc; i++) {
        st_value_info info;
        st_model_output_info(m, i, &info);
        char buf[4096];
        const char *rp = find_ref(&o, info.name, buf, sizeof buf);
        if (!rp) {
            printf("%s: no reference given, skipped\n", info.name);
            continue;
        }
        st_npy out, ref;
        if (tool_read_output(s, info.name, &out)) {
            rc = 1;
            break;
        }
        if (st_npy_read(rp, &ref) != ST_OK) {
            st_npy_free(&out);
            rc = tool_fail_st("");
            break;
        }
        bool same_shape = out.rank == ref.rank;
        for (int d = 0; d < out.rank && same_shape; d++) same_shape = out.dims[d] == ref.dims[d];
        if (!same_shape) {
            printf("%s: shape [", info.name);
            for (int d = 0; d < out.rank; d++) printf("%s%lld", d ? ", " : "", (long long)out.dims[d]);
            printf("] but the reference is [");
            for (int d = 0; d < ref.rank; d++) printf("%s%lld", d ? ", " : "", (long long)ref.dims[d]);
            printf("]  FAIL\n");
            failed++;
            st_npy_free(&out);
            st_npy_free(&ref);
            continue;
        }
        if (out.dtype == ST_STRING || ref.dtype == ST_STRING) {
            /* text: equal or not, element by element */
            size_t cnt = out.bytes / sizeof(char *), bad = 0, first_bad = 0;
            bool both = out.dtype == ref.dtype;
            for (size_t e = 0; e < cnt && both; e++)
                if (strcmp(((char **)out.data)[e], ((char **)ref.data)[e]) && !bad++) first_bad = e;
            if (!both)
                printf("%s: %s but the reference is %s  FAIL\n", info.name, st_dtype_name(out.dtype), st_dtype_name(ref.dtype));
            else
                printf("%s: %zu of %zu strings differ  %s\n", info.name, bad, cnt, bad ? "FAIL" : "PASS");
            if (both && bad)
                printf("  first at flat index %zu: got \"%s\", expected \"%s\"\n", first_bad, ((char **)out.data)[first_bad],
                       ((char **)ref.data)[first_bad]);
            failed += !both || bad;
            st_npy_free(&out);
            st_npy_free(&ref);
            continue;
        }
        size_t cnt = out.bytes / st_dtype_size(out.dtype);
        size_t eo = st_dtype_size(out.dtype), er = st_dtype_size(ref.dtype);
        double scale = 0, max_a = 0, max_r = 0;
        for (size_t e = 0; e < cnt; e++) {
            double r = st_load_f64(ref.dtype, (char *)ref.data + e * er);
            if (fabs(r) > scale) scale = fabs(r);
        }
        double atol = o.atol > o.scale_tol * scale ? o.atol : o.scale_tol * scale;
        size_t bad = 0, first_bad = 0;
        for (size_t e = 0; e < cnt; e++) {
            double a = st_load_f64(out.dtype, (char *)out.data + e * eo);
            double r = st_load_f64(ref.dtype, (char *)ref.data + e * er);
            double diff = fabs(a - r);
            bool both_nan = isnan(a) && isnan(r), same_inf = isinf(a) && a == r;
            if (both_nan || same_inf) diff = 0;
            else if (isnan(diff)) diff = INFINITY;
            if (diff > max_a) max_a = diff;
            if (r != 0 && diff / fabs(r) > max_r) max_r = diff / fabs(r);
            if (!(diff <= atol + o.rtol * fabs(r))) {
                if (!bad) first_bad = e;
                bad++;
            }
        }
        printf("%s: max_atol=%.3g max_rtol=%.3g (atol %.3g, rtol %.3g, %zu elements)  %s\n", info.name, max_a, max_r, atol,
               o.rtol, cnt, bad ? "FAIL" : "PASS");
        if (bad) {
            printf("  %zu elements out of tolerance; first at flat index %zu: got %.9g, expected %.9g\n", bad, first_bad,
                   st_load_f64(out.dtype, (char *)out.data + first_bad * eo), st_load_f64(ref.dtype, (char *)ref.data + first_bad * er));
            failed++;
        }
        st_npy_free(&out);
        st_npy_free(&ref);
    }
    /* --runs N: run again and again (a device backend replays its captured
     * graph) and require every output bit-identical to the first run's */
    if (!rc && o.runs_set && o.runs > 1) {
        st_npy *first = calloc((size_t)n + 1, sizeof *first);
        if (!first) rc = tool_fail("out of memory");
        for (int i = 0; i < n && !rc && first; i++) {
            st_value_info info;
            st_model_output_info(m, i, &info);
            rc = tool_read_output(s, info.name, &first[i]);
        }
        int differ = 0;
        tool_progress bar;
        /* the first of the N runs is the one compared above */
        tool_progress_start(&bar, "check: run", first ? o.runs : 0);
        tool_progress_step(&bar, 1, NULL);
        for (int r = 1; r < o.runs && !rc && first; r++) {
            if (st_session_run(s) != ST_OK || st_session_wait(s) != ST_OK) {
                tool_progress_end(&bar);
                rc = tool_fail_st(o.model);
                break;
            }
            for (int i = 0; i < n && !rc; i++) {
                st_value_info info;
                st_npy again;
                st_model_output_info(m, i, &info);
                rc = tool_read_output(s, info.name, &again);
                if (!rc && !tool_npy_equal(&again, &first[i])) differ++;
                st_npy_free(&again);
            }
            char seen[48];
            snprintf(seen, sizeof seen, "%d output%s differed", differ, differ == 1 ? "" : "s");
            tool_progress_step(&bar, r + 1, seen);
        }
        tool_progress_end(&bar);
        if (!rc) printf("repeat: %d runs, %s\n", o.runs, differ ? "outputs DIFFER between runs  FAIL" : "outputs bit-identical  PASS");
        if (differ) failed++;
        for (int i = 0; i < n && first; i++) st_npy_free(&first[i]);
        free(first);
    }
    /* a failing comparison still ran: its profile is written */
    if (!rc) rc = tool_profile_write(&o, s);
    if (!rc) printf("%s\n", failed ? "FAIL" : "PASS");
    st_session_free(s);
    st_model_free(m);
    return rc ? rc : failed ? 1 : 0;
}
