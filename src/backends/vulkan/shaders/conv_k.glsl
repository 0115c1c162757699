// conv_k.glsl — the K index of conv.comp's and conv_cm.comp's implicit
// GEMM as (input channel, kernel row, kernel column), which their loaders
// divide out once and then step by counters: integer division costs a
// GPU some twenty instructions, and a load needs all three digits.  The
// includer declares the globals KH, KW and KK = KH KW first.

void split_k(int k, out int c, out int a, out int b)
{
    c = k / KK;
    int r = k - c * KK;
    a = r / KW;
    b = r - a * KW;
}

// (c, a, b) on by the step (dc, da, db), split_k of a step below KK: each
// digit wraps at most once
void advance(inout int c, inout int a, inout int b, int dc, int da, int db)
{
    b += db;
    if (b >= KW) {
        b -= KW;
        a++;
    }
    a += da;
    if (a >= KH) {
        a -= KH;
        c++;
    }
    c += dc;
}
