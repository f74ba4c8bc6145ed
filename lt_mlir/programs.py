"""Reference ``lt`` programs as textual IR, with any split of their dims.

Used by the demo, the benchmarks, ``lt-opt`` examples and the tests.  A
dim's schedule is a list of block sizes from outer to inner: ``m=[8]`` over
33 elements gives the levels ``4 r 1`` over ``8`` (``levels(33, 8)``).
"""

from __future__ import annotations

from collections.abc import Sequence


def levels(extent: int, *blocks: int) -> list[tuple[int, int]]:
    """(size, tail) per level, outer to inner, for ``extent`` split by ``blocks``.

    >>> levels(33, 8)
    [(4, 1), (8, 0)]
    >>> levels(100, 16, 4)
    [(6, 4), (4, 0), (4, 0)]
    """
    if extent <= 0:
        raise ValueError(f"extent must be positive, got {extent}")
    chunks = [extent, *blocks]
    out = []
    for i, chunk in enumerate(chunks):
        step = chunks[i + 1] if i + 1 < len(chunks) else 1
        if step <= 0 or step > chunk:
            raise ValueError(f"block sizes must be positive and decreasing, got {list(blocks)} for {extent}")
        out.append((chunk // step, chunk % step))
    return out


class Nest:
    """Emits nested ``lt.loop`` text; ``Nest.loops`` wraps body lines."""

    def __init__(self):
        self._arg = 0

    def loops(self, dim: str, extent: int, blocks: Sequence[int], body: list[str]) -> list[str]:
        for size, tail in reversed(levels(extent, *blocks)):
            body = self.loop(dim, size, tail, body)
        return body

    def loop(self, dim: str, size: int, tail: int, body: list[str]) -> list[str]:
        arg = f"%i{self._arg}"
        self._arg += 1
        attrs = f'{{dim = "{dim}", size = {size} : i64, tail = {tail} : i64}}'
        return (
            ['"lt.loop"() ({', f"^bb0({arg}: index):"]
            + ["  " + line for line in body]
            + [f"}}) {attrs} : () -> ()"]
        )


def _func(name: str, args: list[str], body: list[str]) -> str:
    # "%A: memref<...>" -> "%A: memref<...> {lt.name = "A"}": the loop tree prints the name.
    args = [f'{a} {{lt.name = "{a.split(":")[0][1:]}"}}' for a in args]
    lines = [f"func.func @{name}({', '.join(args)}) {{"]
    lines += ["  " + line for line in body]
    lines += ["  return", "}", ""]
    return "\n".join(lines)


def _dim(d: str) -> str:
    return f'%{d} = "lt.dim"() {{dim = "{d}"}} : () -> index'


def pointwise_add(n: int, blocks: Sequence[int] = (), dtype: str = "f32") -> str:
    """C[i] = A[i] + B[i]."""
    t = f"memref<{n}x{dtype}>"
    add = "arith.addf" if dtype.startswith("f") else "arith.addi"
    body = [
        _dim("i"),
        f"%a = memref.load %A[%i] : {t}",
        f"%b = memref.load %B[%i] : {t}",
        f"%c = {add} %a, %b : {dtype}",
        f"memref.store %c, %C[%i] : {t}",
    ]
    return _func("add", [f"%A: {t}", f"%B: {t}", f"%C: {t}"], Nest().loops("i", n, blocks, body))


_IDENTITY = {"add": "0.0", "mul": "1.0", "max": "0xFF800000"}  # f32 constants: 0, 1 and -inf


def _row_reduce(name: str, kind: str, m: int, n: int, m_blocks: Sequence[int], n_blocks: Sequence[int]) -> str:
    a, s = f"memref<{m}x{n}xf32>", f"memref<{m}xf32>"
    nest = Nest()
    inner = nest.loops(
        "n",
        n,
        n_blocks,
        [_dim("n"), f"%a = memref.load %A[%m, %n] : {a}", f'"lt.reduce"(%a, %S, %m) {{kind = "{kind}"}} : (f32, {s}, index) -> ()'],
    )
    body = [_dim("m"), f"memref.store %init, %S[%m] : {s}"] + inner
    init = f"%init = arith.constant {_IDENTITY[kind]} : f32"
    return _func(name, [f"%A: {a}", f"%S: {s}"], [init] + nest.loops("m", m, m_blocks, body))


def row_sum(m: int, n: int, m_blocks: Sequence[int] = (), n_blocks: Sequence[int] = ()) -> str:
    """S[m] = sum_n A[m, n]."""
    return _row_reduce("row_sum", "add", m, n, m_blocks, n_blocks)


def row_max(m: int, n: int, m_blocks: Sequence[int] = (), n_blocks: Sequence[int] = ()) -> str:
    """S[m] = max_n A[m, n] (the accumulator starts from -inf)."""
    return _row_reduce("row_max", "max", m, n, m_blocks, n_blocks)


def row_prod(m: int, n: int, m_blocks: Sequence[int] = (), n_blocks: Sequence[int] = ()) -> str:
    """S[m] = prod_n A[m, n]."""
    return _row_reduce("row_prod", "mul", m, n, m_blocks, n_blocks)


def lower_row_sum(m: int, n: int, m_blocks: Sequence[int] = (), n_blocks: Sequence[int] = ()) -> str:
    """S[m] = sum_{n <= m} A[m, n]: the row sums of A's lower triangle, a
    loop over every n with a guard inside (as ``range(m + 1)`` is written
    in lt: ``scf.if n < m + 1``)."""
    a, s = f"memref<{m}x{n}xf32>", f"memref<{m}xf32>"
    nest = Nest()
    guarded = [
        _dim("n"),
        "%one = arith.constant 1 : index",
        "%hi = arith.addi %m, %one : index",
        "%in = arith.cmpi slt, %n, %hi : index",
        "scf.if %in {",
        f"  %a = memref.load %A[%m, %n] : {a}",
        f'  "lt.reduce"(%a, %S, %m) {{kind = "add"}} : (f32, {s}, index) -> ()',
        "}",
    ]
    inner = nest.loops("n", n, n_blocks, guarded)
    body = [_dim("m"), f"memref.store %init, %S[%m] : {s}"] + inner
    return _func("lower_row_sum", [f"%A: {a}", f"%S: {s}"], ["%init = arith.constant 0.0 : f32"] + nest.loops("m", m, m_blocks, body))


def col_sum(m: int, n: int) -> str:
    """S[n] = sum_m A[m, n] (columns outside: each column's sum is one chain)."""
    a, s = f"memref<{m}x{n}xf32>", f"memref<{n}xf32>"
    nest = Nest()
    inner = nest.loops(
        "m", m, (), [_dim("m"), f"%a = memref.load %A[%m, %n] : {a}", f'"lt.reduce"(%a, %S, %n) {{kind = "add"}} : (f32, {s}, index) -> ()']
    )
    body = [_dim("n"), f"memref.store %init, %S[%n] : {s}"] + inner
    return _func("col_sum", [f"%A: {a}", f"%S: {s}"], ["%init = arith.constant 0.0 : f32"] + nest.loops("n", n, (), body))


def total_sum(m: int, n: int) -> str:
    """S[] = sum_{m,n} A[m, n], columns outside rows (a GPU maps the columns
    to threads, each walking its column: coalesced, with one partial sum a
    thread)."""
    a = f"memref<{m}x{n}xf32>"
    nest = Nest()
    inner = nest.loops(
        "m", m, (), [_dim("m"), f"%a = memref.load %A[%m, %n] : {a}", '"lt.reduce"(%a, %S) {kind = "add"} : (f32, memref<f32>) -> ()']
    )
    body = nest.loops("n", n, (), [_dim("n")] + inner)
    return _func("total_sum", [f"%A: {a}", "%S: memref<f32>"], ["%init = arith.constant 0.0 : f32", "memref.store %init, %S[] : memref<f32>"] + body)


def matmul(
    m: int,
    n: int,
    k: int,
    m_blocks: Sequence[int] = (),
    n_blocks: Sequence[int] = (),
    k_blocks: Sequence[int] = (),
    clipped: bool = False,
    name: str | None = None,
) -> str:
    """C[m, n] = sum_k A[m, k] * B[k, n]; ``clipped`` sums max(A*B, 0).

    Loop order m, n, k, with C initialised under n, before the k loops."""
    a, b, c = f"memref<{m}x{k}xf32>", f"memref<{k}x{n}xf32>", f"memref<{m}x{n}xf32>"
    nest = Nest()
    value = "%p"
    product = [
        _dim("k"),
        f"%a = memref.load %A[%m, %k] : {a}",
        f"%b = memref.load %B[%k, %n] : {b}",
        "%p = arith.mulf %a, %b : f32",
    ]
    if clipped:
        product.append("%q = arith.maximumf %p, %zero : f32")
        value = "%q"
    product.append(f'"lt.reduce"({value}, %C, %m, %n) {{kind = "add"}} : (f32, {c}, index, index) -> ()')
    k_nest = nest.loops("k", k, k_blocks, product)
    n_nest = nest.loops("n", n, n_blocks, [_dim("n"), f"memref.store %zero, %C[%m, %n] : {c}"] + k_nest)
    m_nest = nest.loops("m", m, m_blocks, [_dim("m")] + n_nest)
    fname = name or ("clipped_matmul" if clipped else "matmul")
    return _func(fname, [f"%A: {a}", f"%B: {b}", f"%C: {c}"], ["%zero = arith.constant 0.0 : f32"] + m_nest)


def conv1d(n: int, w: int, blocks: Sequence[int] = ()) -> str:
    """Y[i] = sum_j X[i + j] * W[j] for i < n (X has n + w - 1 elements)."""
    x, wt, y = f"memref<{n + w - 1}xf32>", f"memref<{w}xf32>", f"memref<{n}xf32>"
    nest = Nest()
    window = nest.loops(
        "j",
        w,
        (),
        [
            _dim("j"),
            "%ij = arith.addi %i, %j : index",
            f"%x = memref.load %X[%ij] : {x}",
            f"%w = memref.load %W[%j] : {wt}",
            "%p = arith.mulf %x, %w : f32",
            f'"lt.reduce"(%p, %Y, %i) {{kind = "add"}} : (f32, {y}, index) -> ()',
        ],
    )
    body = [_dim("i"), f"memref.store %zero, %Y[%i] : {y}"] + window
    return _func("conv1d", [f"%X: {x}", f"%W: {wt}", f"%Y: {y}"], ["%zero = arith.constant 0.0 : f32"] + nest.loops("i", n, blocks, body))



def conv2d(
    c: int,
    h: int,
    w: int,
    kh: int,
    kw: int,
    y_blocks: Sequence[int] = (),
    x_blocks: Sequence[int] = (),
    c_blocks: Sequence[int] = (),
) -> str:
    """Y[y, x] = sum_{c, i, j} X[c, y + i, x + j] * W[c, i, j] for y < h, x < w.

    A channel-reduced 2-D correlation: X is ``c x (h + kh - 1) x (w + kw - 1)``,
    W is ``c x kh x kw``.  Loop order y, x, c, i, j, with Y initialised under
    x, before the reduction loops."""
    x_t = f"memref<{c}x{h + kh - 1}x{w + kw - 1}xf32>"
    w_t, y_t = f"memref<{c}x{kh}x{kw}xf32>", f"memref<{h}x{w}xf32>"
    nest = Nest()
    j_nest = nest.loops(
        "j",
        kw,
        (),
        [
            _dim("j"),
            "%xj = arith.addi %x, %j : index",
            f"%xv = memref.load %X[%c, %yi, %xj] : {x_t}",
            f"%wv = memref.load %W[%c, %i, %j] : {w_t}",
            "%p = arith.mulf %xv, %wv : f32",
            f'"lt.reduce"(%p, %Y, %y, %x) {{kind = "add"}} : (f32, {y_t}, index, index) -> ()',
        ],
    )
    i_nest = nest.loops("i", kh, (), [_dim("i"), "%yi = arith.addi %y, %i : index"] + j_nest)
    c_nest = nest.loops("c", c, c_blocks, [_dim("c")] + i_nest)
    x_nest = nest.loops("x", w, x_blocks, [_dim("x"), f"memref.store %zero, %Y[%y, %x] : {y_t}"] + c_nest)
    y_nest = nest.loops("y", h, y_blocks, [_dim("y")] + x_nest)
    return _func("conv2d", [f"%X: {x_t}", f"%W: {w_t}", f"%Y: {y_t}"], ["%zero = arith.constant 0.0 : f32"] + y_nest)


def softmax(m: int, n: int, m_blocks: Sequence[int] = (), n_blocks: Sequence[int] = ()) -> str:
    """Y[m, n] = exp(X[m, n] - max_n X[m, :]) / sum_n exp(X[m, n] - max_n X[m, :]).

    One loop over m holds three nests over n: the row maximum into a scratch
    ``lt.alloc`` over [m] (from -inf), the sum of exponentials into a second
    one (from 0), then the normalised outputs."""
    x_t, s_t = f"memref<{m}x{n}xf32>", f"memref<{m}xf32>"
    nest = Nest()
    row = [_dim("n"), f"%x = memref.load %X[%m, %n] : {x_t}"]
    shifted = row + [f"%mx = memref.load %MX[%m] : {s_t}", "%d = arith.subf %x, %mx : f32", "%e = math.exp %d : f32"]
    max_nest = nest.loops("n", n, n_blocks, row + [f'"lt.reduce"(%x, %MX, %m) {{kind = "max"}} : (f32, {s_t}, index) -> ()'])
    sum_nest = nest.loops("n", n, n_blocks, shifted + [f'"lt.reduce"(%e, %SUM, %m) {{kind = "add"}} : (f32, {s_t}, index) -> ()'])
    out_nest = nest.loops(
        "n",
        n,
        n_blocks,
        shifted + [f"%s = memref.load %SUM[%m] : {s_t}", "%y = arith.divf %e, %s : f32", f"memref.store %y, %Y[%m, %n] : {x_t}"],
    )
    body = [_dim("m"), f"memref.store %ninf, %MX[%m] : {s_t}", f"memref.store %zero, %SUM[%m] : {s_t}"]
    body += max_nest + sum_nest + out_nest
    head = [
        "%ninf = arith.constant 0xFF800000 : f32",
        "%zero = arith.constant 0.0 : f32",
        f'%MX = "lt.alloc"() {{dims = ["m"]}} : () -> {s_t}',
        f'%SUM = "lt.alloc"() {{dims = ["m"]}} : () -> {s_t}',
    ]
    return _func("softmax", [f"%X: {x_t}", f"%Y: {x_t}"], head + nest.loops("m", m, m_blocks, body))
