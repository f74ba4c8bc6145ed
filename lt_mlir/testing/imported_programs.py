"""Fuzz programs imported from linalg on tensors (``lt_mlir.importers``):
the unscheduled modules the importer makes (one nest per op), so random
schedules meet what only imported models have — views read through index
arithmetic (a transposed input, a slice, a reshape), a padded copy with its
bounds test, a strided convolution window, a gather clamped into its table,
unit dims without loops, reductions after their initial store.

Each program is a linalg-on-tensors text written here by hand, in the form
torch-mlir's output takes (named ops and ``linalg.generic``), with every
tensor an argument (no weights), and a float64 NumPy reference.
"""

from __future__ import annotations

import numpy as np

from ..importers.linalg import import_linalg


def _t(shape, element="f32") -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{element}>" if shape else f"tensor<{element}>"


def linear_relu(m: int, n: int, k: int) -> str:
    """relu(x @ w.T + b): a matmul reading a transposed input (a view), its epilogue."""
    return f"""
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @main(%x: {_t([m, k])}, %w: {_t([n, k])}, %b: {_t([n])}) -> {_t([m, n])} {{
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : {_t([k, n])}
  %wt = linalg.transpose ins(%w : {_t([n, k])}) outs(%e : {_t([k, n])}) permutation = [1, 0]
  %o = tensor.empty() : {_t([m, n])}
  %f = linalg.fill ins(%zero : f32) outs(%o : {_t([m, n])}) -> {_t([m, n])}
  %mm = linalg.matmul ins(%x, %wt : {_t([m, k])}, {_t([k, n])}) outs(%f : {_t([m, n])}) -> {_t([m, n])}
  %r = linalg.generic {{indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}}
      ins(%mm, %b : {_t([m, n])}, {_t([n])}) outs(%o : {_t([m, n])}) {{
  ^bb0(%a: f32, %c: f32, %out: f32):
    %s = arith.addf %a, %c : f32
    %y = arith.maximumf %s, %zero : f32
    linalg.yield %y : f32
  }} -> {_t([m, n])}
  return %r : {_t([m, n])}
}}
"""


def linear_relu_inputs(rng, size):
    m, n, k = size
    return [rng.uniform(-1, 1, (m, k)).astype(np.float32), rng.uniform(-1, 1, (n, k)).astype(np.float32),
            rng.uniform(-1, 1, n).astype(np.float32)]


def linear_relu_reference(xs, size):
    x, w, b = (a.astype(np.float64) for a in xs)
    y = x @ w.T + b
    return [(np.maximum(y, 0.0), np.abs(x) @ np.abs(w).T + np.abs(b), size[2] + 1)]


def conv_pad_stride(c: int, h: int, w: int, f: int) -> str:
    """A 3x3 convolution, padding 1, stride 2, NCHW (batch 1: a unit dim), then its channel max."""
    oh, ow = (h + 2 - 3) // 2 + 1, (w + 2 - 3) // 2 + 1
    x, xp, k, y = [1, c, h, w], [1, c, h + 2, w + 2], [f, c, 3, 3], [1, f, oh, ow]
    return f"""
#red = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
#all = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @main(%x: {_t(x)}, %k: {_t(k)}) -> ({_t(y)}, {_t([1, oh, ow])}) {{
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {{
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %zero : f32
  }} : {_t(x)} to {_t(xp)}
  %o = tensor.empty() : {_t(y)}
  %f = linalg.fill ins(%zero : f32) outs(%o : {_t(y)}) -> {_t(y)}
  %conv = linalg.conv_2d_nchw_fchw {{dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}}
      ins(%p, %k : {_t(xp)}, {_t(k)}) outs(%f : {_t(y)}) -> {_t(y)}
  %mo = tensor.empty() : {_t([1, oh, ow])}
  %mf = linalg.fill ins(%ninf : f32) outs(%mo : {_t([1, oh, ow])}) -> {_t([1, oh, ow])}
  %mx = linalg.generic {{indexing_maps = [#all, #red], iterator_types = ["parallel", "reduction", "parallel", "parallel"]}}
      ins(%conv : {_t(y)}) outs(%mf : {_t([1, oh, ow])}) {{
  ^bb0(%a: f32, %out: f32):
    %r = arith.maximumf %a, %out : f32
    linalg.yield %r : f32
  }} -> {_t([1, oh, ow])}
  return %conv, %mx : {_t(y)}, {_t([1, oh, ow])}
}}
"""


def conv_pad_stride_inputs(rng, size):
    c, h, w, f = size
    return [rng.uniform(-1, 1, (1, c, h, w)).astype(np.float32), rng.uniform(-1, 1, (f, c, 3, 3)).astype(np.float32)]


def _conv(x, k):
    c, h, w = x.shape[1:]
    xp = np.zeros((c, h + 2, w + 2))
    xp[:, 1:-1, 1:-1] = x[0]
    oh, ow = (h - 1) // 2 + 1, (w - 1) // 2 + 1
    y = np.zeros((k.shape[0], oh, ow))
    for i in range(3):
        for j in range(3):
            patch = xp[:, i: i + 2 * oh: 2, j: j + 2 * ow: 2]  # c, oh, ow
            y += np.einsum("chw,fc->fhw", patch, k[:, :, i, j])
    return y[None]


def conv_pad_stride_reference(xs, size):
    x, k = (a.astype(np.float64) for a in xs)
    y = _conv(x, k)
    bound = _conv(np.abs(x), np.abs(k))
    mx = y.max(axis=1)
    return [(y, bound, size[0] * 9), (mx, bound.max(axis=1), size[0] * 9)]


def softmax_rows(m: int, n: int) -> str:
    """torch-mlir's softmax: a max into a 1-D buffer, expanded to m x 1, exp, a sum into m x 1, a divide."""
    return f"""
#id = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
#col0 = affine_map<(d0, d1) -> (d0, 0)>
func.func @main(%x: {_t([m, n])}) -> {_t([m, n])} {{
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e1 = tensor.empty() : {_t([m])}
  %f1 = linalg.fill ins(%ninf : f32) outs(%e1 : {_t([m])}) -> {_t([m])}
  %mx = linalg.generic {{indexing_maps = [#id, #rows], iterator_types = ["parallel", "reduction"]}}
      ins(%x : {_t([m, n])}) outs(%f1 : {_t([m])}) {{
  ^bb0(%a: f32, %out: f32):
    %r = arith.maximumf %a, %out : f32
    linalg.yield %r : f32
  }} -> {_t([m])}
  %mx2 = tensor.expand_shape %mx [[0, 1]] output_shape [{m}, 1] : {_t([m])} into {_t([m, 1])}
  %e = tensor.empty() : {_t([m, n])}
  %ex = linalg.generic {{indexing_maps = [#id, #col0, #id], iterator_types = ["parallel", "parallel"]}}
      ins(%x, %mx2 : {_t([m, n])}, {_t([m, 1])}) outs(%e : {_t([m, n])}) {{
  ^bb0(%a: f32, %b: f32, %out: f32):
    %d = arith.subf %a, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  }} -> {_t([m, n])}
  %e2 = tensor.empty() : {_t([m, 1])}
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : {_t([m, 1])}) -> {_t([m, 1])}
  %sum = linalg.generic {{indexing_maps = [#id, #col0], iterator_types = ["parallel", "reduction"]}}
      ins(%ex : {_t([m, n])}) outs(%f2 : {_t([m, 1])}) {{
  ^bb0(%a: f32, %out: f32):
    %r = arith.addf %a, %out : f32
    linalg.yield %r : f32
  }} -> {_t([m, 1])}
  %y = linalg.generic {{indexing_maps = [#id, #col0, #id], iterator_types = ["parallel", "parallel"]}}
      ins(%ex, %sum : {_t([m, n])}, {_t([m, 1])}) outs(%e : {_t([m, n])}) {{
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  }} -> {_t([m, n])}
  return %y : {_t([m, n])}
}}
"""


def softmax_rows_inputs(rng, size):
    x = rng.uniform(-1, 1, size).astype(np.float32)
    return [x - np.float32(2.0 if rng.random() < 0.5 else 0.0)]


def softmax_rows_reference(xs, size):
    x = xs[0].astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    y = e / e.sum(axis=1, keepdims=True)
    return [(y, y, size[1] + 8)]


def layer_norm(m: int, n: int) -> str:
    """torch-mlir's layer norm (no affine) of a scaled input: ``h = x / 2``
    (an element-wise nest several nests read), a row sum of ``h`` into
    m x 1 divided by n, the squared deviations summed likewise, then (h -
    mean) * rsqrt(var + eps).  ``text`` gives it with its producers fused,
    as ``Model``'s start is before its row loops are merged: ``h`` a nest
    of its own, the mean a row loop that allocates its sum's accumulator."""
    return f"""
#id = affine_map<(d0, d1) -> (d0, d1)>
#col0 = affine_map<(d0, d1) -> (d0, 0)>
func.func @main(%x: {_t([m, n])}) -> {_t([m, n])} {{
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %nf = arith.constant {float(n)} : f32
  %eps = arith.constant 1.0e-05 : f32
  %e = tensor.empty() : {_t([m, n])}
  %h = linalg.generic {{indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}}
      ins(%x : {_t([m, n])}) outs(%e : {_t([m, n])}) {{
  ^bb0(%a: f32, %out: f32):
    %s = arith.mulf %a, %half : f32
    linalg.yield %s : f32
  }} -> {_t([m, n])}
  %e1 = tensor.empty() : {_t([m, 1])}
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : {_t([m, 1])}) -> {_t([m, 1])}
  %sum = linalg.generic {{indexing_maps = [#id, #col0], iterator_types = ["parallel", "reduction"]}}
      ins(%h : {_t([m, n])}) outs(%f1 : {_t([m, 1])}) {{
  ^bb0(%a: f32, %out: f32):
    %s = arith.addf %a, %out : f32
    linalg.yield %s : f32
  }} -> {_t([m, 1])}
  %mean = linalg.generic {{indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}}
      ins(%sum : {_t([m, 1])}) outs(%e1 : {_t([m, 1])}) {{
  ^bb0(%a: f32, %out: f32):
    %d = arith.divf %a, %nf : f32
    linalg.yield %d : f32
  }} -> {_t([m, 1])}
  %f2 = linalg.fill ins(%zero : f32) outs(%e1 : {_t([m, 1])}) -> {_t([m, 1])}
  %sq = linalg.generic {{indexing_maps = [#id, #col0, #col0], iterator_types = ["parallel", "reduction"]}}
      ins(%h, %mean : {_t([m, n])}, {_t([m, 1])}) outs(%f2 : {_t([m, 1])}) {{
  ^bb0(%a: f32, %mu: f32, %out: f32):
    %d = arith.subf %a, %mu : f32
    %q = arith.mulf %d, %d : f32
    %s = arith.addf %q, %out : f32
    linalg.yield %s : f32
  }} -> {_t([m, 1])}
  %y = linalg.generic {{indexing_maps = [#id, #col0, #col0, #id], iterator_types = ["parallel", "parallel"]}}
      ins(%h, %mean, %sq : {_t([m, n])}, {_t([m, 1])}, {_t([m, 1])}) outs(%e : {_t([m, n])}) {{
  ^bb0(%a: f32, %mu: f32, %v: f32, %out: f32):
    %var = arith.divf %v, %nf : f32
    %ve = arith.addf %var, %eps : f32
    %rs = math.rsqrt %ve : f32
    %d = arith.subf %a, %mu : f32
    %o = arith.mulf %d, %rs : f32
    linalg.yield %o : f32
  }} -> {_t([m, n])}
  return %y : {_t([m, n])}
}}
"""


def layer_norm_inputs(rng, size):
    return [rng.uniform(-1, 1, size).astype(np.float32) + np.float32(rng.uniform(-2, 2))]


def layer_norm_reference(xs, size):
    x = xs[0].astype(np.float64) / 2
    d = x - x.mean(axis=1, keepdims=True)
    y = d / np.sqrt((d * d).mean(axis=1, keepdims=True) + 1e-5)
    return [(y, np.abs(y) + 1.0, 4 * size[1])]


def gather(v: int, d: int, t: int) -> str:
    """An embedding: rows of a table picked by int64 indices (clamped into it), then scaled by a slice of it."""
    return f"""
#ids = affine_map<(d0, d1) -> (d0)>
#out = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @main(%idx: {_t([t], "i64")}, %table: {_t([v, d])}) -> {_t([t, d])} {{
  %e = tensor.empty() : {_t([t, d])}
  %first = tensor.extract_slice %table[0, 0] [1, {d}] [1, 1] : {_t([v, d])} to {_t([d])}
  %g = linalg.generic {{indexing_maps = [#ids, #col, #out], iterator_types = ["parallel", "parallel"]}}
      ins(%idx, %first : {_t([t], "i64")}, {_t([d])}) outs(%e : {_t([t, d])}) {{
  ^bb0(%i: i64, %s: f32, %out: f32):
    %row = arith.index_cast %i : i64 to index
    %col = linalg.index 1 : index
    %x = tensor.extract %table[%row, %col] : {_t([v, d])}
    %y = arith.mulf %x, %s : f32
    linalg.yield %y : f32
  }} -> {_t([t, d])}
  return %g : {_t([t, d])}
}}
"""


def gather_inputs(rng, size):
    v, d, t = size
    return [rng.integers(-2, v + 2, t).astype(np.int64), rng.uniform(-1, 1, (v, d)).astype(np.float32)]


def gather_reference(xs, size):
    idx, table = xs[0], xs[1].astype(np.float64)
    rows = table[np.clip(idx, 0, size[0] - 1)]
    y = rows * table[0]
    return [(y, np.abs(y), 1)]


def batched_qk(h: int, m: int, n: int, d: int) -> str:
    """Attention's scores per head, q @ k^T: a batch_matmul reading k through a
    transpose, which the importer lays out in a copy nest ([h, d, n]) first."""
    return f"""
func.func @main(%q: {_t([h, m, d])}, %k: {_t([h, n, d])}) -> {_t([h, m, n])} {{
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : {_t([h, d, n])}
  %kt = linalg.transpose ins(%k : {_t([h, n, d])}) outs(%e : {_t([h, d, n])}) permutation = [0, 2, 1]
  %o = tensor.empty() : {_t([h, m, n])}
  %f = linalg.fill ins(%zero : f32) outs(%o : {_t([h, m, n])}) -> {_t([h, m, n])}
  %s = linalg.batch_matmul ins(%q, %kt : {_t([h, m, d])}, {_t([h, d, n])}) outs(%f : {_t([h, m, n])}) -> {_t([h, m, n])}
  return %s : {_t([h, m, n])}
}}
"""


def batched_qk_inputs(rng, size):
    h, m, n, d = size
    return [rng.uniform(-1, 1, (h, m, d)).astype(np.float32), rng.uniform(-1, 1, (h, n, d)).astype(np.float32)]


def batched_qk_reference(xs, size):
    q, k = (a.astype(np.float64) for a in xs)
    return [(q @ k.transpose(0, 2, 1), np.abs(q) @ np.abs(k).transpose(0, 2, 1), size[3])]


PROGRAMS = {
    "i_linear_relu": (linear_relu, linear_relu_inputs, linear_relu_reference, ((7, 9, 13), (5, 16, 3))),
    "i_conv_pad_stride": (conv_pad_stride, conv_pad_stride_inputs, conv_pad_stride_reference, ((2, 7, 9, 3), (3, 8, 5, 2))),
    "i_softmax": (softmax_rows, softmax_rows_inputs, softmax_rows_reference, ((7, 33), (5, 8))),
    "i_gather": (gather, gather_inputs, gather_reference, ((5, 9, 7), (11, 4, 13))),
    "i_layer_norm": (layer_norm, layer_norm_inputs, layer_norm_reference, ((6, 35), (3, 16))),
    "i_batched_qk": (batched_qk, batched_qk_inputs, batched_qk_reference, ((3, 7, 20, 5), (2, 9, 6, 11))),
}


FUSED = ("i_layer_norm",)  # given with their producers fused (``text``)


def text(name: str, *size) -> str:
    """The importer's unscheduled lt module of program ``name`` at ``size``
    (for the programs of ``FUSED``, after ``fusion.fuse``: the form
    ``Model``'s start has before its row loops are merged)."""
    imported = import_linalg(PROGRAMS[name][0](*size))
    if name not in FUSED:
        return imported.text
    from ..kernel import fusion
    from ..schedule import Schedule

    nodes = {op: object() for op in imported.owners}
    s = Schedule(imported.text)
    fusion.fuse(s, [nodes[op] for op in imported.owners], set(), recompute=False)
    return s.text
