"""conv_ref.py — the float64 reference convolution the tests in this
folder compare strata with: NCHW, square padding and stride, groups,
computed tap by tap with numpy (no library convolution, so it is
independent of every backend strata has)."""
import numpy as np


def conv(a, w, b=None, pad=0, stride=1, group=1):
    """y = conv(a, w) + b for a [N, C, H, W] and w [CO, C / group, KH, KW],
    in the dtype of a (the tests pass float64)."""
    n, c, h, wd = a.shape
    co, cg, kh, kw = w.shape
    a = np.pad(a, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, co, oh, ow))
    opg = co // group
    for g in range(group):
        for ky in range(kh):
            for kx in range(kw):
                patch = a[:, g * cg:(g + 1) * cg, ky:ky + stride * oh:stride, kx:kx + stride * ow:stride]
                out[:, g * opg:(g + 1) * opg] += np.einsum("nchw,oc->nohw", patch, w[g * opg:(g + 1) * opg, :, ky, kx])
    return out + (b.reshape(1, -1, 1, 1) if b is not None else 0)
