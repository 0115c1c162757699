/*
 * cmd_serve.c — `strata serve REPO`: options, start, and a graceful stop.
 *
 * SIGTERM (or SIGINT) drains: from then on every new request gets 503
 * (a load balancer's readiness probe sees it first), requests already
 * being answered finish (up to --drain-timeout seconds), then the
 * listener closes, the models unload, and the command exits 0.  The
 * signals are blocked before any thread starts and taken with sigwait
 * on the main thread, so no handler runs inside the server's threads.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "serve.h"
#include "tool.h"

#ifdef ST_HAVE_MHD

static int int_arg(const char *opt, const char *v, long long lo, long long hi, long long *out)
{
    char *end;
    long long x = strtoll(v, &end, 10);
    if (!*v || *end || x < lo || x > hi) return tool_fail("serve: %s takes an integer from %lld to %lld, got '%s'", opt, lo, hi, v);
    *out = x;
    return 0;
}

int st_cmd_serve(int argc, char **argv)
{
    const char *repo_dir = NULL, *host = "127.0.0.1";
    long long port = 8000, max_conn = 256, timeout = 30, drain = 30;
    srv_config cfg = {ST_BACKEND_CPU, ST_F32, 0, 1, 2000, 1, 0};
    srv_limits lim = {64u << 20, 1LL << 28};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-') {
            if (repo_dir) return tool_fail("serve: one repository, got '%s' and '%s'", repo_dir, a);
            repo_dir = a;
            continue;
        }
        if (tool_option_check("serve", a)) return 1;
        if (i + 1 >= argc) return tool_fail("serve: option %s needs a value", a);
        const char *v = argv[++i];
        long long x = 0;
        if (!strcmp(a, "--host")) host = v;
        else if (!strcmp(a, "--port")) { if (int_arg(a, v, 0, 65535, &port)) return 1; }
        else if (!strcmp(a, "--max-connections")) { if (int_arg(a, v, 1, 10000, &max_conn)) return 1; }
        else if (!strcmp(a, "--timeout")) { if (int_arg(a, v, 1, 3600, &timeout)) return 1; }
        else if (!strcmp(a, "--drain-timeout")) { if (int_arg(a, v, 0, 3600, &drain)) return 1; }
        else if (!strcmp(a, "--max-body")) { if (int_arg(a, v, 1024, 1LL << 34, &x)) return 1; lim.max_body = (size_t)x; }
        else if (!strcmp(a, "--threads")) { if (int_arg(a, v, 0, 1024, &x)) return 1; cfg.threads = (int)x; }
        else if (!strcmp(a, "--max-batch")) { if (int_arg(a, v, 1, 1024, &x)) return 1; cfg.max_batch = (int)x; }
        else if (!strcmp(a, "--max-delay-us")) { if (int_arg(a, v, 0, 10000000, &x)) return 1; cfg.max_delay_us = x; }
        else if (!strcmp(a, "--instances")) { if (int_arg(a, v, 1, 64, &x)) return 1; cfg.instances = (int)x; }
        else if (!strcmp(a, "--backend")) {
            if (!strcmp(v, "cpu")) cfg.backend = ST_BACKEND_CPU;
            else if (!strcmp(v, "cuda")) cfg.backend = ST_BACKEND_CUDA;
            else if (!strcmp(v, "opencl")) cfg.backend = ST_BACKEND_OPENCL;
            else return tool_fail("serve: --backend takes cpu, cuda or opencl, got '%s'", v);
        } else if (!strcmp(a, "--precision")) {
            if (!strcmp(v, "f32")) cfg.precision = ST_F32;
            else if (!strcmp(v, "f16")) cfg.precision = ST_F16;
            else if (!strcmp(v, "bf16")) cfg.precision = ST_BF16;
            else return tool_fail("serve: --precision takes f32, f16 or bf16, got '%s'", v);
        } else return tool_fail("serve: option %s is not handled", a);
    }
    if (!repo_dir) return tool_fail("serve: which model repository? (strata serve REPO; REPO/NAME/VERSION/model.onnx)");

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    static srv_repo repo;
    srv_repo_init(&repo, repo_dir, &cfg, &lim);
    int failed = srv_repo_load_all(&repo);
    if (failed < 0) return 1;
    char err[512];
    srv_server *s = srv_http_start(&repo, host, (int)port, (int)max_conn, (int)timeout, err, sizeof err);
    if (!s) {
        srv_repo_unload_all(&repo);
        return tool_fail("serve: %s", err);
    }
    int loaded = 0;
    for (int i = 0; i < SRV_MAX_MODELS; i++) loaded += repo.models[i] != NULL;
    printf("strata serve: listening on http://%s%s%s:%d (%d models loaded, %d failed)\n", strchr(host, ':') ? "[" : "",
           host, strchr(host, ':') ? "]" : "", srv_http_port(s), loaded, failed);
    fflush(stdout);

    int sig = 0;
    sigwait(&set, &sig);
    srv_http_drain(s);
    fprintf(stderr, "strata serve: %s: draining (%d requests in flight)\n", sig == SIGTERM ? "SIGTERM" : "SIGINT",
            srv_http_inflight(s));
    struct timespec nap = {0, 10 * 1000 * 1000};
    for (long long waited = 0; srv_http_inflight(s) > 0 && waited < drain * 100; waited++) nanosleep(&nap, NULL);
    int left = srv_http_inflight(s);
    srv_http_stop(s);
    srv_repo_unload_all(&repo);
    fprintf(stderr, "strata serve: stopped%s\n", left ? " (drain timeout: requests were cut off)" : "");
    return left ? 1 : 0;
}

#else

int st_cmd_serve(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return tool_fail("serve: this strata was built without libmicrohttpd (scripts/setup.sh installs libmicrohttpd-dev)");
}

#endif
