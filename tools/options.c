/*
 * options.c — which command takes which option: the table behind
 * `strata help COMMAND` / `COMMAND --help` (every option with its value and
 * default) and behind the error for an option a command does not take,
 * which names the command and the nearest option it does take.
 *
 * The parsers (common.c, cmd_probe.c) ask tool_option_check before they
 * act on an option, so an option is accepted exactly where this table
 * lists it.
 */
#include <string.h>

#include "tool.h"

/* command groups */
#define SESSION "run check inspect bench detect ocr"  /* they create sessions */
#define TENSORS "run check inspect bench"             /* they bind tensor inputs */

typedef struct tool_option {
    const char *name;      /* "--threads" */
    const char *alias;     /* "-i", or NULL */
    const char *value;     /* what follows it ("N"); NULL for a flag */
    const char *commands;  /* the commands that take it, space-separated */
    const char *help;
    const char *def;       /* the default shown in help; NULL: none to show */
} tool_option;

static const tool_option OPTIONS[] = {
    {"--input", "-i", "[NAME=]FILE.npy", TENSORS,
     "an input tensor, by name or filling the inputs in order; repeatable.  Inputs not given are drawn at random "
     "from --seed: floats uniform in [-1, 1), integers in [0, 10)", NULL},
    {"--dim", NULL, "NAME=N", TENSORS, "the size of a symbolic input dim, for random inputs; repeatable", "1"},
    {"--out", "-o", "DIR", "run", "the directory the outputs go to, one NAME.npy each (characters outside "
     "[A-Za-z0-9._-] become _)", "."},
    {"--out", "-o", "OUT.png", "detect ocr", "draw the boxes on a copy of the image", NULL},
    {"--ref", "-r", "NAME=FILE.npy", "check", "the reference for output NAME; repeatable", NULL},
    {"--ref-dir", NULL, "DIR", "check", "references as DIR/NAME.npy, named as run writes them", NULL},
    {"--atol", NULL, "A", "check", "absolute tolerance", "1e-5; 0 with --precision f16|bf16"},
    {"--rtol", NULL, "R", "check", "relative tolerance", "1e-5; 0 with --precision f16|bf16"},
    {"--scale-tol", NULL, "S", "check",
     "absolute tolerance as a fraction of the output's largest |ref|; an element passes when |out - ref| <= "
     "max(atol, S * max|ref|) + rtol * |ref|", "0; 1e-2 with --precision f16|bf16"},
    {"--runs", NULL, "N", "check",
     "run N times and require every output bit-identical across the runs (progress on a terminal)", "1"},
    {"--runs", NULL, "N", "bench", "timed runs (progress on a terminal)", "20"},
    {"--warmup", NULL, "N", "bench", "untimed runs before the timed ones", "3"},
    {"--runs", NULL, "N", "probe", "runs of each experiment", "200"},
    {"--json", NULL, NULL, "inspect", "print JSON", NULL},
    {"--json", NULL, NULL, "bench", "print one JSON object", NULL},
    {"--json", NULL, NULL, "detect ocr", "print the results as JSON", NULL},
    {"--plan", NULL, NULL, "inspect",
     "the plan for the given (or random) inputs: every value's storage, offset, sizes and strides, which nodes "
     "run and which are views, which concats are written in place, the peak arena; each node's device and every "
     "transfer when some nodes fall back to the CPU", NULL},
    {"--dot", NULL, "FILE.dot", "inspect",
     "with --plan: write the plan and its hazard DAG as Graphviz: a box per command (op, device), the DAG's edges "
     "with the hazard behind each, pure views and in-place concats dashed (render: dot -Tsvg FILE.dot -o plan.svg)",
     NULL},
    {"--profile", NULL, "FILE.json", "run check bench",
     "write a Chrome-trace / Perfetto JSON of every run: a slice per command (node, op, device, worker, stream or "
     "queue, bytes and storage ranges), the hazard DAG's edges as flows (docs/profiling.md); on CUDA it turns "
     "CUDA graphs off", NULL},
    {"--ops", NULL, NULL, "inspect",
     "no model: which op runs on which backend in which dtypes, from the kernel tables (with --json: as JSON)", NULL},
    {"--conf", NULL, "T", "detect", "keep boxes scoring at least T (0 to 1)", "0.25"},
    {"--iou", NULL, "T", "detect", "overlap above which NMS drops the lower-scoring box (0 to 1)", "0.45"},
    {"--size", NULL, "N", "detect", "input side for a model without a fixed size (a multiple of 32)", "640"},
    {"--det", NULL, "MODEL", "ocr", "the text detector", "MODELS/ch_PP-OCRv4_det_infer.onnx"},
    {"--rec", NULL, "MODEL", "ocr", "the text recogniser", "MODELS/ch_PP-OCRv4_rec_infer.onnx"},
    {"--cls", NULL, "MODEL", "ocr", "the 0/180 degree direction classifier", "MODELS/ch_ppocr_mobile_v2.0_cls_infer.onnx"},
    {"--keys", NULL, "FILE", "ocr", "the recogniser's character list", "MODELS/ppocr_keys_v1.txt"},
    {"--no-cls", NULL, NULL, "ocr", "skip the direction classifier", NULL},
    {"--quiet", "-q", NULL, "run", "no line per output, no notes on stderr", NULL},
    {"--quiet", "-q", NULL, "check inspect bench detect ocr", "no notes on stderr", NULL},
    {"--backend", NULL, "cpu|cuda|opencl", SESSION, "the device", "cpu"},
    {"--backend", NULL, "opencl", "probe", "the backend with the experiment (the only one)", "opencl"},
    {"--device", NULL, "N", SESSION, "the GPU's ordinal", "0"},
    {"--no-fallback", NULL, NULL, SESSION,
     "a node the backend has no kernel for is an error naming it, instead of running on the CPU", "off"},
    {"--device", NULL, "N", "probe", "the OpenCL device's ordinal", "0"},
    {"--threads", NULL, "N", SESSION, "CPU threads; 0: one per core", "0"},
    {"--precision", NULL, "f32|f16|bf16", SESSION,
     "what weights and activations are stored in (arithmetic accumulates in f32)", "f32"},
    {"--precision-policy", NULL, "mixed|strict", SESSION,
     "with f16|bf16: mixed keeps numerically sensitive ops in f32 with planned casts (docs/precision.md); "
     "strict stores every float value in the lower precision", "mixed"},
    {"--sanitize", NULL, NULL, SESSION,
     "prove every conflicting pair of commands ordered and poison fresh memory (or STRATA_SANITIZE=1)", "off"},
    {"--schedule", NULL, "default|random", SESSION,
     "the order ready commands run in; random: seeded by --seed, each completed late", "default"},
    {"--seed", NULL, "N", SESSION, "seeds random inputs and --schedule random", "0"},
    {"--hazard-mode", NULL, "ranges|extents|storage|base-pointer", SESSION,
     "how conflicts are found: overlapping bytes (a strided view's exact runs); overlapping view extents (coarser); "
     "any use of one storage (coarse); only views starting at one byte (the seed report's bug, to reproduce it)",
     "ranges"},
    {"--memory-limit", NULL, "BYTES", SESSION, "what a session may allocate", "the machine's memory"},
    {"--inter-op", NULL, "on|off", SESSION, "run independent commands at the same time", "on"},
    {"--host", NULL, "ADDR", "serve", "the address to listen on (an IPv4 or IPv6 address; 0.0.0.0 for every "
     "interface)", "127.0.0.1"},
    {"--port", NULL, "N", "serve", "the TCP port; 0: any free one (the line on stdout says which)", "8000"},
    {"--backend", NULL, "cpu|cuda|opencl", "serve", "the device, for models whose config.json does not say", "cpu"},
    {"--threads", NULL, "N", "serve", "CPU threads per instance, where config.json does not say; 0: one per core",
     "0"},
    {"--precision", NULL, "f32|f16|bf16", "serve", "compute precision, where config.json does not say", "f32"},
    {"--max-batch", NULL, "N", "serve", "rows a batch gathers from concurrent requests, where config.json does not "
     "say (\"max_batch\"); 1: no batching", "1"},
    {"--max-delay-us", NULL, "US", "serve", "how long the oldest request waits for a batch to fill "
     "(\"max_delay_us\")", "2000"},
    {"--instances", NULL, "N", "serve", "sessions per model running batches in parallel (\"instances\")", "1"},
    {"--max-body", NULL, "BYTES", "serve", "the largest request body; larger ones get 413", "67108864"},
    {"--max-connections", NULL, "N", "serve", "connections at once (a thread each)", "256"},
    {"--timeout", NULL, "S", "serve", "seconds an idle connection stays open", "30"},
    {"--drain-timeout", NULL, "S", "serve", "after SIGTERM, seconds the requests in flight may take", "30"},
    {"--out", "-o", "OUT.onnx", "quantize", "the quantized model (written only when quantizing succeeded)", NULL},
    {"--calib", NULL, "DIR", "quantize",
     "calibration inputs: DIR's .npy files, each one sample (several inputs: files named INPUT*.npy)",
     "8 random inputs, with a warning"},
    {"--per-channel", NULL, NULL, "quantize", "one weight scale per output channel (needs opset 13)", "per tensor"},
    {"--method", NULL, "minmax|percentile", "quantize",
     "each activation's range: its min and max, or its 0.001% and 99.999% points", "minmax"},
    {"--dim", NULL, "NAME=N", "quantize", "the size of a symbolic input dim, for random inputs; repeatable", "1"},
    {"--threads", NULL, "N", "quantize", "CPU threads; 0: one per core", "0"},
    {"--seed", NULL, "N", "quantize", "seeds the random calibration inputs", "0"},
};
#define N_OPTIONS (int)(sizeof OPTIONS / sizeof OPTIONS[0])

static bool takes(const tool_option *o, const char *cmd)
{
    size_t n = strlen(cmd);
    for (const char *p = o->commands; (p = strstr(p, cmd)); p += n)
        if ((p == o->commands || p[-1] == ' ') && (p[n] == ' ' || !p[n])) return true;
    return false;
}

static bool named(const tool_option *o, const char *arg)
{
    return !strcmp(o->name, arg) || (o->alias && !strcmp(o->alias, arg));
}

/* Levenshtein distance, for names of a few dozen characters at most. */
static int distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63) return 64;
    int row[64];
    for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* The closest of cmd's option names to arg: within a third of its length
 * (at least 2 edits), or one it begins.  One-letter options are too close
 * to each other for a guess to mean anything. */
static const char *nearest(const char *cmd, const char *arg)
{
    const char *best = NULL;
    int best_d = 1 << 30;
    if (strlen(arg) <= 2) return NULL;
    for (int i = 0; i < N_OPTIONS; i++) {
        if (!takes(&OPTIONS[i], cmd)) continue;
        const char *cand[2] = {OPTIONS[i].name, OPTIONS[i].alias};
        for (int k = 0; k < 2 && cand[k] && strlen(cand[k]) > 2; k++) {
            int d = distance(arg, cand[k]);
            bool close = d <= 2 || 3 * d <= (int)strlen(cand[k]);
            if (strlen(arg) >= 4 && !strncmp(cand[k], arg, strlen(arg))) d = 0; /* a prefix: "--sani" */
            else if (!close) continue;
            if (d < best_d) {
                best = cand[k];
                best_d = d;
            }
        }
    }
    return best;
}

int tool_option_check(const char *cmd, const char *arg)
{
    const char *elsewhere = NULL;
    for (int i = 0; i < N_OPTIONS; i++) {
        if (!named(&OPTIONS[i], arg)) continue;
        if (takes(&OPTIONS[i], cmd)) return 0;
        if (!elsewhere) elsewhere = OPTIONS[i].commands;
    }
    if (elsewhere) {
        /* another command's option: say whose ("run check" -> "run, check") */
        char who[128];
        size_t n = 0;
        for (const char *p = elsewhere; *p && n + 3 < sizeof who; p++) {
            if (*p == ' ') who[n++] = ',';
            who[n++] = *p;
        }
        who[n] = 0;
        return tool_fail("%s: option '%s' does not apply to %s (it is for %s; strata help %s lists the options)", cmd, arg,
                         cmd, who, cmd);
    }
    const char *near = nearest(cmd, arg);
    if (near) return tool_fail("%s: unknown option '%s' (did you mean '%s'?)", cmd, arg, near);
    return tool_fail("%s: unknown option '%s' (strata help %s lists the options)", cmd, arg, cmd);
}

const char *tool_nearest_word(const char *word, const char *const *words, int n)
{
    const char *best = NULL;
    int best_d = 1 << 30;
    for (int i = 0; i < n; i++) {
        int d = distance(word, words[i]);
        if ((d <= 2 || 3 * d <= (int)strlen(words[i])) && d < best_d) {
            best = words[i];
            best_d = d;
        }
    }
    return best;
}

/* Prints text from column `indent` on, wrapped before column 80; the first
 * line continues wherever the cursor is (at column `col`). */
static void wrap(FILE *f, const char *text, int col, int indent)
{
    while (*text) {
        size_t word = strcspn(text, " ");
        if (col > indent && col + 1 + (int)word > 79) {
            fprintf(f, "\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            fputc(' ', f);
            col++;
        }
        fwrite(text, 1, word, f);
        col += (int)word;
        text += word;
        while (*text == ' ') text++;
    }
    fputc('\n', f);
}

void tool_help(FILE *f, const char *cmd, const char *args, const char *about)
{
    enum { COL = 34 };
    fprintf(f, "usage: strata %s %s\n\n", cmd, args);
    wrap(f, about, 0, 0);
    fprintf(f, "\noptions:\n");
    for (int i = 0; i <= N_OPTIONS; i++) {
        const tool_option help = {"--help", "-h", NULL, cmd, "this help", NULL};
        const tool_option *o = i < N_OPTIONS ? &OPTIONS[i] : &help;
        if (!takes(o, cmd)) continue;
        char left[96];
        snprintf(left, sizeof left, "  %s%s%s%s%s", o->alias ? o->alias : "", o->alias ? ", " : "", o->name,
                 o->value ? " " : "", o->value ? o->value : "");
        fputs(left, f);
        int col = (int)strlen(left);
        if (col >= COL - 1) {
            fprintf(f, "\n%*s", COL, "");
        } else {
            fprintf(f, "%*s", COL - col, "");
        }
        char text[512];
        if (o->def) snprintf(text, sizeof text, "%s (default: %s)", o->help, o->def);
        else snprintf(text, sizeof text, "%s", o->help);
        wrap(f, text, COL, COL);
    }
}
