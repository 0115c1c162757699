// rows.glsl — the row split of k_rows.c (the CPU's st_rows): outer
// positions x row elements, each with its own sizes and per-operand
// strides, so a row is the same elements in the same order as on the CPU.
//   p: [0] n_outer, [1] row_len, [2] outer_rank, [3] row_rank,
//      [4..11] outer sizes, [12..19] row sizes,
//      x: [20] off, [21..28] outer strides, [29..36] row strides
//      y: [37] off, [38..45] outer strides, [46..53] row strides
//      [54..] the shader's own
int outer_off(int o, int op)
{
    int b = op == 0 ? 20 : 37;
    int idx = p[b];
    for (int d = p[2] - 1; d >= 0; d--) {
        int n = p[4 + d], q = o / n;
        idx += (o - q * n) * p[b + 1 + d];
        o = q;
    }
    return idx;
}
int row_off(int r, int op)
{
    int b = op == 0 ? 29 : 46;
    int idx = 0;
    for (int d = p[3] - 1; d >= 0; d--) {
        int n = p[12 + d], q = r / n;
        idx += (r - q * n) * p[b + d];
        r = q;
    }
    return idx;
}
int row_id() { return int(gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x); }
