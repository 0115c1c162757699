/*
 * test_device_faults.c — device faults give clean errors, and the session
 * and the device stay usable (issue 18.2).
 *
 * usage: test_device_faults --backend opencl|cuda [--timeout S] CASE
 *
 * Each fault is made through strata's fault hook (core/fault.h), which
 * fails the operation through the driver's own path, or, for CUDA's out
 * of memory, for real: the test takes the device's free memory for itself
 * until less is left than the case needs.
 *   OpenCL: a program build that fails (before any session, so the build
 *     is this process's first); CL_OUT_OF_RESOURCES from an enqueue (the
 *     first launch, and one in the middle of the run, which on a CPU
 *     device is queued from the host thread); a buffer allocation that
 *     fails.
 *   CUDA: out of device memory; a kernel launch the runtime refuses (a run
 *     launched directly, and the run that is captured into a graph); a
 *     device allocation that fails.
 * After each: the call that failed returned the right code with a message
 * that names the fault, nothing of the run is pending, the same session
 * runs exactly once the fault is gone, st_session_free works, and a new
 * session runs exactly.  A fault that hangs host or device trips the
 * watchdog (--timeout, 300 s by default) and fails the test.  Exits 77
 * without a device of the kind.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#ifdef ST_TEST_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include "core/fault.h"
#include "harness.h"

static int failures;
#define CHECK(cond, ...) TH_CHECK(failures, cond, __VA_ARGS__)

static th_case cs;
static th_outputs out;
static st_model *model;
static st_session_options opt;
static const char *fault_name = "";

/* ---- the hook: fail the k-th operation at one site ---- */

static _Atomic int fail_site = -1;
static atomic_long fail_k, seen;

static bool hook(st_fault_site site, const char *what, uint64_t bytes)
{
    (void)what;
    (void)bytes;
    if ((int)site != atomic_load(&fail_site)) return false;
    return atomic_fetch_add(&seen, 1) + 1 == atomic_load(&fail_k);
}

static void arm(st_fault_site site, long k)
{
    atomic_store(&seen, 0);
    atomic_store(&fail_k, k);
    atomic_store(&fail_site, (int)site);
}

/* How many operations at site one clean run makes. */
static long count_run(st_session *s, st_fault_site site)
{
    arm(site, 0);
    st_status r = st_session_run(s);
    if (r == ST_OK) r = st_session_wait(s);
    long n = atomic_load(&seen);
    atomic_store(&fail_site, -1);
    return r == ST_OK ? n : -1;
}

static void on_alarm(int sig)
{
    (void)sig;
    char buf[256];
    int n = snprintf(buf, sizeof buf, "\ntest_device_faults: a hang: no progress within the timeout, during '%s'\n", fault_name);
    if (n > 0) (void)!write(2, buf, (size_t)n);
    _exit(4);
}

/* ---- checks ---- */

static bool exact_run(st_session *s)
{
    st_status r = st_session_run(s);
    if (r == ST_OK) r = th_read(s, &cs, &out);
    return r == ST_OK && th_compare(&cs, &out) < 0;
}

static bool any_of(const char *msg, const char *const *words)
{
    for (; *words; words++)
        if (strcasestr(msg, *words)) return true;
    return false;
}

/* A run of s with the fault armed must fail with want (and a message
 * holding one of words); then nothing is pending, s runs exactly without
 * the fault, frees, and a new session runs exactly. */
static void expect_fault(st_session *s, st_status want, const char *const *words)
{
    st_status r = st_session_run(s);
    if (r == ST_OK) r = th_read(s, &cs, &out);
    atomic_store(&fail_site, -1);
    char msg[1100];
    snprintf(msg, sizeof msg, "%s", st_last_error());
    printf("  %s: %s: %s\n", fault_name, st_status_name(r), msg);
    CHECK(r == want, "%s gave %s, expected %s", fault_name, st_status_name(r), st_status_name(want));
    CHECK(any_of(msg, words), "%s: the message does not name the fault", fault_name);
    CHECK(!strchr(msg, '\n'), "%s: the message is not one line", fault_name);
    CHECK(st_session_pending(s) == 0, "%s: %d commands pending after the failure", fault_name, st_session_pending(s));
    CHECK(exact_run(s), "%s: the session does not run exactly after the fault", fault_name);
    st_session_free(s);
    st_session *s2 = NULL;
    CHECK(st_session_create(model, &opt, &s2) == ST_OK && th_bind(s2, &cs) == ST_OK && exact_run(s2),
          "%s: a new session does not run exactly", fault_name);
    st_session_free(s2);
}

static st_session *fresh(void)
{
    st_session *s = NULL;
    if (st_session_create(model, &opt, &s) != ST_OK || th_bind(s, &cs) != ST_OK) {
        fprintf(stderr, "creating a session: %s\n", st_last_error());
        exit(1);
    }
    return s;
}

/* ---- OpenCL ---- */

static const char *const w_build[] = {"clBuildProgram", "injected", NULL};
static const char *const w_oor[] = {"CL_OUT_OF_RESOURCES", NULL};
static const char *const w_mem[] = {"memory", "alloc", NULL};

static void opencl_faults(void)
{
    st_session *s = fresh();
    long launches = count_run(s, ST_FAULT_CL_RESOURCES);
    printf("  a clean run: %ld kernel launches\n", launches);
    CHECK(launches > 0, "a clean run launched nothing");
    st_session_free(s);
    long ks[2] = {1, launches / 2 + 1};
    for (int i = 0; i < 2; i++) {
        fault_name = i ? "CL_OUT_OF_RESOURCES from a launch in the middle of the run" : "CL_OUT_OF_RESOURCES from the first launch";
        s = fresh();
        arm(ST_FAULT_CL_RESOURCES, ks[i]);
        expect_fault(s, ST_ERR_BACKEND, w_oor);
    }
    fault_name = "an OpenCL buffer allocation failing";
    s = fresh();
    arm(ST_FAULT_DEVICE_ALLOC, 1);
    expect_fault(s, ST_ERR_NOMEM, w_mem);
}

/* ---- CUDA ---- */

static const char *const w_launch[] = {"launch", "configuration", "capture", NULL};

#ifdef ST_TEST_HAVE_CUDA
/* Takes device memory until about `leave` bytes are free; returns the blocks. */
static int hog(void **blocks, int max, size_t leave)
{
    int n = 0;
    size_t free_b = 0, total = 0;
    while (n < max && cudaMemGetInfo(&free_b, &total) == cudaSuccess && free_b > leave + (64u << 20)) {
        size_t take = free_b - leave;
        if (take > ((size_t)8 << 30)) take = (size_t)8 << 30;
        while (take >= (16u << 20) && cudaMalloc(&blocks[n], take) != cudaSuccess) take /= 2;
        cudaGetLastError();
        if (take < (16u << 20)) break;
        n++;
    }
    return n;
}

static void cuda_oom(void)
{
    fault_name = "CUDA out of memory (a device memory limit below the model's need)";
    size_t before = 0, after = 0, total = 0;
    cudaMemGetInfo(&before, &total);
    st_session *s = fresh();
    CHECK(exact_run(s), "a clean CUDA run");
    cudaMemGetInfo(&after, &total);
    st_session_free(s);
    size_t need = before > after ? before - after : (64u << 20);
    printf("  a session of the case takes %.1f MiB of the device's %.1f GiB\n", (double)need / 1048576, (double)total / 1073741824);
    void *blocks[256];
    int n = hog(blocks, 256, need / 4);
    cudaMemGetInfo(&after, &total);
    printf("  the test holds the rest: %.1f MiB left\n", (double)after / 1048576);
    st_session *s2 = NULL;
    st_status r = st_session_create(model, &opt, &s2);
    if (r == ST_OK) r = th_bind(s2, &cs);
    if (r == ST_OK) r = st_session_run(s2);
    if (r == ST_OK) r = th_read(s2, &cs, &out);
    printf("  %s: %s: %s\n", fault_name, st_status_name(r), st_last_error());
    CHECK(r == ST_ERR_NOMEM, "%s gave %s", fault_name, st_status_name(r));
    CHECK(any_of(st_last_error(), w_mem), "%s: the message does not say memory", fault_name);
    for (int i = 0; i < n; i++) cudaFree(blocks[i]);
    if (s2) {
        CHECK(st_session_pending(s2) == 0, "%s: commands pending", fault_name);
        CHECK(exact_run(s2), "%s: the session does not run exactly once memory is free", fault_name);
    }
    st_session_free(s2);
    s2 = fresh();
    CHECK(exact_run(s2), "%s: a new session does not run exactly", fault_name);
    st_session_free(s2);
}
#endif

static void cuda_faults(void)
{
#ifdef ST_TEST_HAVE_CUDA
    cuda_oom();
#else
    printf("  CUDA out of memory: not built (the test is built with CUDA where nvcc is found)\n");
#endif
    st_session *s = fresh();
    long cmds = count_run(s, ST_FAULT_LAUNCH);
    st_session_free(s);
    printf("  a clean run: %ld launches\n", cmds);
    fault_name = "a kernel launch refused (a run launched directly)";
    s = fresh();
    arm(ST_FAULT_LAUNCH, cmds / 2 + 1);
    expect_fault(s, ST_ERR_BACKEND, w_launch);
    fault_name = "a kernel launch refused (the run captured into a graph)";
    s = fresh();
    CHECK(exact_run(s), "the first run");
    arm(ST_FAULT_LAUNCH, cmds / 2 + 1);
    expect_fault(s, ST_ERR_BACKEND, w_launch);
    fault_name = "a CUDA device allocation failing";
    s = fresh();
    arm(ST_FAULT_DEVICE_ALLOC, 1);
    expect_fault(s, ST_ERR_NOMEM, w_mem);
}

int main(int argc, char **argv)
{
    st_session_options_init(&opt);
    opt.threads = 2;
    int timeout = 300, i = 1;
    for (; i + 1 < argc && !strncmp(argv[i], "--", 2); i += 2) {
        if (!strcmp(argv[i], "--backend")) {
            if (!th_backend(argv[i + 1], &opt.backend)) return 2;
        } else if (!strcmp(argv[i], "--timeout")) timeout = atoi(argv[i + 1]);
        else return 2;
    }
    if (i + 1 != argc || opt.backend == ST_BACKEND_CPU) {
        fprintf(stderr, "usage: test_device_faults --backend opencl|cuda [--timeout S] CASE\n");
        return 2;
    }
    signal(SIGALRM, on_alarm);
    alarm((unsigned)timeout);
    st_fault_set_hook(hook);
    if (!th_case_parse(&cs, argv[i])) return 1;
    if (st_model_load(cs.model, &model) != ST_OK) {
        fprintf(stderr, "%s\n", st_last_error());
        return 1;
    }
    /* the build failure first: the program is built once per process, and
     * a session made before it would have built it (its reference run is
     * made right after, with the same model) */
    printf("%s on %s:\n", cs.label, opt.backend == ST_BACKEND_OPENCL ? "opencl" : "cuda");
    bool have_th = opt.backend != ST_BACKEND_OPENCL;
    if (opt.backend == ST_BACKEND_OPENCL) {
        /* exact_run needs the reference: check the build failure's
         * session afterwards */
        fault_name = "an OpenCL program build failure";
        arm(ST_FAULT_CL_BUILD, 1);
        st_session *s = NULL;
        st_status r = st_session_create(model, &opt, &s);
        atomic_store(&fail_site, -1);
        if (r != ST_OK && strstr(st_last_error(), "no OpenCL")) {
            printf("skipped: %s\n", st_last_error());
            return 77;
        }
        char msg[1100];
        snprintf(msg, sizeof msg, "%.200s", st_last_error());
        printf("  %s: %s: %s...\n", fault_name, st_status_name(r), msg);
        CHECK(r == ST_ERR_BACKEND && s == NULL, "%s gave %s", fault_name, st_status_name(r));
        CHECK(any_of(st_last_error(), w_build), "%s: the message does not name the build", fault_name);
        st_session_free(s); /* NULL: nothing to free, and no crash */
        have_th = true;
    }
    if (!have_th || !th_case_reference(&cs, opt.backend)) {
        const char *m = st_last_error();
        if (strstr(m, "no CUDA device") || strstr(m, "not available") || strstr(m, "no OpenCL")) {
            printf("skipped: %s\n", m);
            return 77;
        }
        return 1;
    }
    if (!th_outputs_alloc(&cs, &out)) return 1;
    if (opt.backend == ST_BACKEND_OPENCL) {
        /* the reference run's session built the program again */
        fault_name = "an OpenCL program build failure";
        st_session *s = fresh();
        CHECK(exact_run(s), "%s: the next session (which builds again) does not run exactly", fault_name);
        st_session_free(s);
        opencl_faults();
    }
    else cuda_faults();
    st_model_free(model);
    th_outputs_free(&cs, &out);
    th_case_free(&cs);
    printf("%s\n", failures ? "FAIL" : "PASS");
    return failures ? 1 : 0;
}
