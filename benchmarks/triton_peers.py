"""Triton kernels for ``bench_cuda.py``'s workloads, written the way Triton's
tutorials write them: the peer a GPU user would write instead of lt_mlir.

* ``add``: a program per 1024 elements, masked.
* ``total_sum``: a program per 4096 elements, ``tl.sum`` then one
  ``tl.atomic_add`` a program (the output is zeroed first, inside the
  timed call).
* ``softmax``: a program a row, the whole row in registers (the fused
  softmax tutorial).
* ``row_sum``/``row_max``: a program a row, as the softmax (``tl.sum``,
  ``tl.max``).
* ``matmul``: the tutorial's blocked GEMM (128 x 128 x 32, grouped program
  order, ``tl.dot`` with ``input_precision="ieee"``: fp32, no TF32, as
  cuBLAS with TF32 off).
* ``clipped_matmul``: ``C = sum_k max(A[m, k] B[k, n], 0)`` has no ``tl.dot``
  form; a 64 x 64 block of C a program, one outer product a ``k``.

Each wrapper takes torch tensors on the GPU and writes ``out``.
``compile_all()`` compiles every kernel for sm_90 without a GPU (Triton's
own compiler and ptxas), which is how they were checked off the GPU
machine.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _add(a, b, c, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(c + offs, tl.load(a + offs, mask=mask) + tl.load(b + offs, mask=mask), mask=mask)


@triton.jit
def _total_sum(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x + offs, mask=offs < n, other=0.0)
    tl.atomic_add(out, tl.sum(v, axis=0))


@triton.jit
def _softmax(x, y, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    v = tl.load(x + row * stride + cols, mask=mask, other=-float("inf"))
    v = v - tl.max(v, axis=0)
    e = tl.exp(v)
    tl.store(y + row * stride + cols, e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def _row_reduce(x, y, n_cols, stride, BLOCK: tl.constexpr, MAX: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    if MAX:
        v = tl.load(x + row * stride + cols, mask=mask, other=-float("inf"))
        tl.store(y + row, tl.max(v, axis=0))
    else:
        v = tl.load(x + row * stride + cols, mask=mask, other=0.0)
        tl.store(y + row, tl.sum(v, axis=0))


@triton.jit
def _matmul(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
    pid = tl.program_id(0)
    blocks_m = tl.cdiv(M, BM)
    blocks_n = tl.cdiv(N, BN)
    in_group = GROUP * blocks_n
    group = pid // in_group
    first_m = group * GROUP
    size = min(blocks_m - first_m, GROUP)
    pm = first_m + (pid % in_group) % size
    pn = (pid % in_group) // size
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        kk = k * BK + rk
        ta = tl.load(a + rm[:, None] * K + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        tb = tl.load(b + kk[:, None] * N + rn[None, :], mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(ta, tb, acc, input_precision="ieee")
    tl.store(c + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def _clipped(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K):
        col = tl.load(a + rm * K + k, mask=rm < M, other=0.0)
        row = tl.load(b + k * N + rn, mask=rn < N, other=0.0)
        acc += tl.maximum(col[:, None] * row[None, :], 0.0)
    tl.store(c + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def add(a, b, out) -> None:
    n = a.numel()
    _add[(triton.cdiv(n, 1024),)](a, b, out, n, BLOCK=1024)


def total_sum(x, out) -> None:
    out.zero_()
    n = x.numel()
    _total_sum[(triton.cdiv(n, 4096),)](x, out, n, BLOCK=4096)


def softmax(x, out) -> None:
    rows, cols = x.shape
    block = triton.next_power_of_2(cols)
    _softmax[(rows,)](x, out, cols, x.stride(0), BLOCK=block, num_warps=16 if block >= 4096 else 8)


def _rows(x, out, is_max: bool) -> None:
    rows, cols = x.shape
    block = triton.next_power_of_2(cols)
    _row_reduce[(rows,)](x, out, cols, x.stride(0), BLOCK=block, MAX=is_max, num_warps=16 if block >= 4096 else 8)


def row_sum(x, out) -> None:
    _rows(x, out, False)


def row_max(x, out) -> None:
    _rows(x, out, True)


def matmul(a, b, out) -> None:
    (m, k), n = a.shape, b.shape[1]
    grid = (triton.cdiv(m, 128) * triton.cdiv(n, 128),)
    _matmul[grid](a, b, out, m, n, k, BM=128, BN=128, BK=32, GROUP=8, num_warps=8, num_stages=3)


def clipped_matmul(a, b, out) -> None:
    (m, k), n = a.shape, b.shape[1]
    _clipped[(triton.cdiv(m, 64), triton.cdiv(n, 64))](a, b, out, m, n, k, BM=64, BN=64, num_warps=4)


def compile_all(arch: int = 90) -> dict:
    """Kernel name -> PTX for ``sm_<arch>``, compiled without a GPU."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    target = GPUTarget("cuda", arch, 32)
    f32 = "*fp32"
    specs = {
        "add": (_add, {"a": f32, "b": f32, "c": f32, "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": 1024}, {}),
        "total_sum": (_total_sum, {"x": f32, "out": f32, "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": 4096}, {}),
        "softmax": (_softmax, {"x": f32, "y": f32, "n_cols": "i32", "stride": "i32", "BLOCK": "constexpr"}, {"BLOCK": 4096}, {"num_warps": 16}),
        "row_sum": (_row_reduce, {"x": f32, "y": f32, "n_cols": "i32", "stride": "i32", "BLOCK": "constexpr", "MAX": "constexpr"}, {"BLOCK": 4096, "MAX": False}, {"num_warps": 16}),
        "matmul": (
            _matmul,
            {"a": f32, "b": f32, "c": f32, "M": "i32", "N": "i32", "K": "i32", "BM": "constexpr", "BN": "constexpr", "BK": "constexpr", "GROUP": "constexpr"},
            {"BM": 128, "BN": 128, "BK": 32, "GROUP": 8},
            {"num_warps": 8, "num_stages": 3},
        ),
        "clipped_matmul": (
            _clipped,
            {"a": f32, "b": f32, "c": f32, "M": "i32", "N": "i32", "K": "i32", "BM": "constexpr", "BN": "constexpr"},
            {"BM": 64, "BN": 64},
            {"num_warps": 4},
        ),
    }
    out = {}
    for name, (fn, signature, constexprs, options) in specs.items():
        compiled = triton.compile(ASTSource(fn=fn, signature=signature, constexprs=constexprs), target=target, options=options)
        out[name] = compiled.asm["ptx"]
    return out


if __name__ == "__main__":
    for name, ptx in compile_all().items():
        print(f"{name}: {len(ptx.splitlines())} lines of PTX")
