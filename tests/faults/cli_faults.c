/*
 * cli_faults.c — allocation failure for the whole command line
 * (strata_faults: the tools/ sources linked with alloc_wrap.c; tests/faults/README.md,
 * "The command line under allocation failure").
 *
 * STRATA_FAIL_ALLOC=N fails the Nth allocation the process makes from
 * strata's objects or the tool's (malloc and its kin through the linker's
 * --wrap, strata's own host mappings and device allocations through the
 * fault hook); N = 0 fails nothing and only counts.  At exit one line goes
 * to the file STRATA_FAULTS_REPORT (appended):
 *
 *     allocations=A hit=0|1 live=L site=WHERE
 *
 * A is how many allocations were numbered, hit whether number N was reached
 * and failed, L how many of the process's allocations are still live at exit
 * (what the command line should have freed: strata keeps no process-wide
 * heap caches on the CPU, so a clean run must end with 0), WHERE the failed
 * call's return address as MODULE+0xOFFSET.  The sweep (cli_sweep.py) judges each N from that line, the
 * exit status, stderr and the output files.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "alloc_wrap.h"

static const char *report;

static void at_exit(void)
{
    long n = aw_disarm();
    void *site = NULL;
    const char *what = "";
    bool hit = aw_hit(&site, &what);
    /* the table is large: scan it only when something is left */
    long live = aw_live_total() ? aw_live(1, getenv("STRATA_FAULTS_VERBOSE") != NULL) : 0;
    FILE *f = fopen(report, "a");
    if (!f) return;
    char where[512] = "-";
    if (hit) {
        Dl_info info;
        /* module+offset, cheap; the sweep runs addr2line on the ones it prints */
        if (site && dladdr(site, &info) && info.dli_fname)
            snprintf(where, sizeof where, "%s+0x%lx", info.dli_fname,
                     (unsigned long)((char *)site - (char *)info.dli_fbase));
        else snprintf(where, sizeof where, "mapping '%s'", what);
    }
    fprintf(f, "allocations=%ld hit=%d live=%ld site=%s\n", n, hit ? 1 : 0, live, where);
    fclose(f);
}

__attribute__((constructor)) static void cli_faults_init(void)
{
    const char *n = getenv("STRATA_FAIL_ALLOC");
    report = getenv("STRATA_FAULTS_REPORT");
    if (!n || !report) return;
    aw_hook_devices();
    atexit(at_exit);
    aw_arm(atol(n), 1);
}
