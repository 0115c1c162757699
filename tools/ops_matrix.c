/*
 * ops_matrix.c — `strata inspect --ops [--json]`: which op runs on which
 * backend in which dtypes, read from the backends' kernel tables
 * (ops/kernel.h) and the op table's type constraints.  The README's
 * coverage table is this output (scripts/gen_ops_table.sh), and a test
 * keeps the two the same.
 *
 * A backend's dtypes for an op are its entries' masks, within what the op
 * is defined on ("body" for If, Loop, Scan and SequenceMap, which planning
 * expands into their bodies' nodes, each placed on its own; "plan" for the
 * sequence and optional ops, which planning lowers into the nodes that do
 * what they do to the list of tensors); a node may still be refused at plan time by an entry's
 * accepts (a float64 tensor on an OpenCL device without cl_khr_fp64, a
 * stride cuDNN cannot describe), and then runs on the CPU.
 */
#include <stdio.h>
#include <string.h>

#include "backends/registry.h"
#include "tool.h"

static const struct {
    st_dtype t;
    const char *name;
} SHORT[] = {{ST_F32, "f32"}, {ST_F16, "f16"}, {ST_BF16, "bf16"}, {ST_F64, "f64"}, {ST_I8, "i8"},   {ST_U8, "u8"},
             {ST_I16, "i16"}, {ST_U16, "u16"}, {ST_I32, "i32"},   {ST_U32, "u32"}, {ST_I64, "i64"}, {ST_U64, "u64"},
             {ST_BOOL, "bool"}, {ST_STRING, "string"}};
#define N_SHORT ((int)(sizeof SHORT / sizeof *SHORT))

/* "f32 f16 bf16", "float" (all four float types), "int" (all eight
 * integer types), "all" (numbers and bool), "all string", or "-". */
static void dtype_list(uint32_t m, char *out, size_t cap)
{
    size_t at = 0;
    out[0] = 0;
    if (!m) {
        snprintf(out, cap, "-");
        return;
    }
    if ((m & ST_DT_ALL) == ST_DT_ALL) {
        snprintf(out, cap, "all%s", m & ST_DT(ST_STRING) ? " string" : "");
        return;
    }
    if ((m & ST_DT_ALL_FLOATS) == ST_DT_ALL_FLOATS) {
        at += (size_t)snprintf(out + at, cap - at, "float");
        m &= ~ST_DT_ALL_FLOATS;
    }
    if ((m & ST_DT_INTS) == ST_DT_INTS) {
        at += (size_t)snprintf(out + at, cap - at, "%sint", at ? " " : "");
        m &= ~ST_DT_INTS;
    }
    for (int i = 0; i < N_SHORT && at < cap; i++)
        if (m & ST_DT(SHORT[i].t)) at += (size_t)snprintf(out + at, cap - at, "%s%s", at ? " " : "", SHORT[i].name);
}

int tool_ops_matrix(bool json)
{
    /* one column per registered backend (backends/registry.c) */
    enum { MAX_BACKENDS = 32 };
    int nb = st_backend_count() < MAX_BACKENDS ? st_backend_count() : MAX_BACKENDS;
    const st_kernel_table *t[MAX_BACKENDS];
    for (int b = 0; b < nb; b++) {
        t[b] = st_backend_kernels((st_backend_kind)b);
        if (!t[b]) fprintf(stderr, "strata: %s: %s\n", st_backend_name((st_backend_kind)b), st_last_error());
    }
    FILE *f = stdout;
    if (json) {
        fputs("{\"backends\": [", f);
        for (int b = 0; b < nb; b++) fprintf(f, "%s\"%s\"", b ? ", " : "", st_backend_name((st_backend_kind)b));
        fputs("], \"available\": [", f);
        for (int b = 0; b < nb; b++) fprintf(f, "%s%s", b ? ", " : "", t[b] ? "true" : "false");
        fputs("], \"ops\": [", f);
    } else {
        fputs("| op | domain |", f);
        for (int b = 0; b < nb; b++) fprintf(f, " %s |", st_backend_name((st_backend_kind)b));
        fputs("\n| --- | --- |", f);
        for (int b = 0; b < nb; b++) fputs(" --- |", f);
        fputc('\n', f);
    }
    for (int i = 0; i < st_op_count(); i++) {
        const st_op_def *op = st_op_at(i);
        /* an op without a type constraint of its own (a view) may take strings */
        uint32_t within = op->types ? op->types : ST_DT_ALL | ST_DT(ST_STRING);
        if (json) {
            fprintf(f, "%s\n  {\"op\": ", i ? "," : "");
            tool_json_string(f, op->name);
            fprintf(f, ", \"domain\": ");
            tool_json_string(f, op->domain[0] ? op->domain : "ai.onnx");
            for (int b = 0; b < nb; b++) {
                fprintf(f, ", \"%s\": ", st_backend_name((st_backend_kind)b));
                if (!t[b]) {
                    fputs("null", f);
                    continue;
                }
                uint32_t m = st_kernel_dtypes(t[b], op) & within;
                fputc('[', f);
                int n = 0;
                for (int k = 0; k < N_SHORT; k++)
                    if (m & ST_DT(SHORT[k].t)) fprintf(f, "%s\"%s\"", n++ ? ", " : "", st_dtype_name(SHORT[k].t));
                fputc(']', f);
            }
            fputc('}', f);
        } else {
            fprintf(f, "| %s | %s |", op->name, op->domain[0] ? op->domain : "");
            if (op->flags & ST_OP_CONTROL) {
                /* no kernel: planning expands it into its body's nodes */
                for (int b = 0; b < nb; b++) fputs(" body |", f);
                fputc('\n', f);
                continue;
            }
            if (op->flags & ST_OP_SEQUENCE) {
                /* no kernel: planning lowers it into views, Concat, Split,
                 * constants (passes/sequence.c) */
                for (int b = 0; b < nb; b++) fputs(" plan |", f);
                fputc('\n', f);
                continue;
            }
            for (int b = 0; b < nb; b++) {
                char list[128];
                if (t[b]) dtype_list(st_kernel_dtypes(t[b], op) & within, list, sizeof list);
                else snprintf(list, sizeof list, "(not built)");
                fprintf(f, " %s |", list);
            }
            fputc('\n', f);
        }
    }
    if (json) fprintf(f, "\n]}\n");
    return 0;
}
