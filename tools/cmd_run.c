/* cmd_run.c — `strata run`: run a model and write every output as .npy. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/dtype.h"
#include "tool.h"

int st_cmd_run(int argc, char **argv)
{
    tool_opts o;
    if (tool_parse(argc, argv, &o)) return 1;
    struct stat sb;
    if (stat(o.out_dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) return tool_fail("output directory '%s' does not exist", o.out_dir);
    st_model *m;
    if (st_model_load(o.model, &m) != ST_OK) return tool_fail_st("");
    st_session *s;
    if (tool_session_create(m, &o.so, &s) != ST_OK) {
        st_model_free(m);
        return tool_fail_st(o.model);
    }
    int rc = tool_bind_inputs(&o, m, s);
    if (!rc && (st_session_run(s) != ST_OK || st_session_wait(s) != ST_OK)) rc = tool_fail_st(o.model);
    int n = st_model_output_count(m);
    st_npy *outs = calloc((size_t)n + 1, sizeof *outs);
    if (!rc && !outs) rc = tool_fail("out of memory");
    /* read everything first, so a failure leaves no output files at all */
    for (int i = 0; i < n && !rc; i++) {
        st_value_info info;
        st_model_output_info(m, i, &info);
        rc = tool_read_output(s, info.name, &outs[i]);
    }
    /* the profile before the outputs, so a profile that cannot be written
     * leaves no output files either */
    if (!rc) rc = tool_profile_write(&o, s);
    bool profiled = !rc && o.so.profile;
    /* the paths written so far, to take them back if a later one fails */
    char **written = calloc((size_t)n + 1, sizeof *written);
    if (!rc && !written) rc = tool_fail("out of memory");
    for (int i = 0; i < n && !rc; i++) {
        st_value_info info;
        st_model_output_info(m, i, &info);
        char fname[512], path[4096];
        tool_sanitize_name(info.name, fname, sizeof fname);
        snprintf(path, sizeof path, "%s/%s.npy", o.out_dir, fname);
        /* the name first: a file that could not be taken back is never written */
        if (!(written[i] = strdup(path))) {
            rc = tool_fail("out of memory");
            break;
        }
        if (st_npy_write(path, outs[i].dtype, outs[i].rank, outs[i].dims, outs[i].data) != ST_OK) {
            /* st_npy_write leaves no file of its own behind (and a file of
             * that name from before in place) */
            free(written[i]);
            written[i] = NULL;
            rc = tool_fail_st("");
            break;
        }
        if (!o.quiet) {
            printf("%s: [", info.name);
            for (int d = 0; d < outs[i].rank; d++) printf("%s%lld", d ? ", " : "", (long long)outs[i].dims[d]);
            printf("] %s -> %s\n", st_dtype_name(outs[i].dtype), path);
        }
    }
    if (rc) {
        for (int i = 0; i < n; i++)
            if (written && written[i]) unlink(written[i]);
        if (profiled) unlink(o.so.profile);
    }
    for (int i = 0; i < n; i++) {
        if (outs) st_npy_free(&outs[i]);
        if (written) free(written[i]);
    }
    free(outs);
    free(written);
    st_session_free(s);
    st_model_free(m);
    return rc;
}
