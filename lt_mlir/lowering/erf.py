"""``math.erf`` on f32 (scalars and vectors) as inline polynomials.

glibc's libmvec ``erff`` (``_ZGVeN16v_erff``) took 58% of a layernorm +
GELU kernel (512 x 1024: 0.32 of 0.55 ms on a 2-core Xeon): about 60
cycles a 16-lane vector.  Two polynomials evaluated side by side and a
selection take about a third of that, and are the same code on every x86
CPU (and in AOT objects, which cannot call libmvec).

On a = |x| (the sign is copied back: erf is odd):

* a < 1: ``fma(a, P1(a*a), a)`` with P1 of degree 6 (erf(a)/a - 1 in a²);
* 1 <= a < 3.9192059: ``P2(a - 2.4596)``, degree 12;
* a >= 3.9192059 (from there on every float's erf rounds to 1): 1.

The coefficients are least-squares fits on Chebyshev nodes, in float64,
rounded to float32 (``benchmarks/fit_erf.py`` makes and checks them); every
step is an ``math.fma`` (one rounding; ``llvm.fma``, an instruction on
every x86 CPU with FMA3), so results are bit for bit the same on every
host.  Largest error over every float32 (checked exhaustively by
``fit_erf.py --exhaustive``): 1.45 ulp, inside the 4 ulp of the README's
contract (glibc's bound for libmvec).  NaN gives NaN (the ordered compares
send it to P2, which propagates it), ±inf gives ±1, ±0 gives ±0.  (Three
polynomials, with [1, 3.92) cut at 2.2, came to 1.11 ulp and took 1.2x
as long.)

``erf(x / c)`` with a constant c (GELU's ``x / sqrt(2)``, as torch-mlir
writes it), the quotient used by nothing else: computed as ``erf(x *
fl(1/c))``, the division (a ``vdivps``, about a tenth of a layernorm +
GELU kernel) gone.  The product is within 1.5 ulp of the rounded quotient,
which moves erf by at most as much relative to itself (``a erf'(a) /
erf(a) <= 1``): within 3 ulp of ``erf(fl(x / c))`` in all, inside the same
contract (``tests/test_vector_math.py`` checks it over sampled floats).

Functions in ``strict`` mode keep libm's ``erff`` and the division; f64
keeps libmvec/libm.
"""

from __future__ import annotations

import numpy as np

from ..mlir import arith, ir, math

# erf(a)/a - 1 as a polynomial in a*a on [0, 1]
P1 = (0.12837916612625122, -0.3761262595653534, 0.11283597350120544, -0.02685432881116867,
      0.005189312156289816, -0.0008018855005502701, 7.882497448008507e-05)
# erf(M2 + t) on [1, B2]
M2 = 2.4596028327941895
P2 = (0.9994956254959106, 0.0026614058297127485, -0.006547470577061176, 0.009848566725850105,
      -0.009918494150042534, 0.006805239710956812, -0.0029643531888723373, 0.0004602984117809683,
      0.0003917077847290784, -0.00030155814602039754, 5.180777225177735e-05, 2.5404067855561152e-05,
      -9.17071974981809e-06)
B1, B2 = 1.0, 3.919205904006958  # B2: from there on every float's erf rounds to 1


def expand_erf(module, skip: set = frozenset()) -> int:
    """Replace every f32 ``math.erf`` (scalar or vector) outside the
    functions named in ``skip`` by the polynomials above.  Returns how
    many it replaced."""
    op = getattr(module, "operation", module)
    found = []

    def visit(o):
        if o.name == "func.func" and ir.StringAttr(o.attributes["sym_name"]).value in skip:
            return ir.WalkResult.SKIP
        if o.name == "math.erf" and _is_f32(o.results[0].type):
            found.append(o)
        return ir.WalkResult.ADVANCE

    op.walk(visit, ir.WalkOrder.PRE_ORDER)
    with op.context:
        for o in found:
            x, quotient = o.operands[0], None
            c = _divisor(x)
            if c is not None:
                quotient, (x, _) = x.owner, list(x.owner.operands)
            with ir.InsertionPoint(o), o.location:
                if c is not None:
                    x = arith.mulf(x, _splat(x.type, float(np.float32(1.0 / c))))
                result = _erf(x)
            o.results[0].replace_all_uses_with(result)
            o.erase()
            if quotient is not None:
                quotient.erase()
    return len(found)


def _divisor(x) -> float | None:
    """c when ``x`` is ``arith.divf(y, c)``, c a constant (a scalar or a
    splat, possibly broadcast) finite and nonzero with a finite float32
    reciprocal, and ``x`` is used once (by the erf); else None."""
    owner = x.owner
    if not hasattr(owner, "name") or owner.name != "arith.divf" or len(list(x.uses)) != 1:  # a block has no name
        return None
    c = _constant(list(owner.operands)[1])
    if c is None or not np.isfinite(c) or c == 0 or not np.isfinite(np.float32(1.0 / c)) or np.float32(1.0 / c) == 0:
        return None
    return c


def _constant(v) -> float | None:
    """The value of a float constant, a splat constant or the broadcast of
    one, else None."""
    owner = v.owner
    if not hasattr(owner, "name"):
        return None  # a block argument
    if owner.name == "vector.broadcast":
        return _constant(owner.operands[0])
    if owner.name != "arith.constant":
        return None
    attr = owner.attributes["value"]  # the bindings give the attribute's own class
    if isinstance(attr, ir.DenseElementsAttr) and attr.is_splat:
        attr = attr.get_splat_value()
    return attr.value if isinstance(attr, ir.FloatAttr) else None


def _splat(t, value: float):
    """A float32 constant of type ``t`` (f32 or a vector of f32)."""
    f32 = ir.F32Type.get()
    if isinstance(t, ir.VectorType):
        return arith.ConstantOp(t, ir.DenseElementsAttr.get_splat(t, ir.FloatAttr.get(f32, value))).result
    return arith.ConstantOp(f32, ir.FloatAttr.get(f32, value)).result


def _is_f32(t) -> bool:
    if isinstance(t, ir.VectorType):
        t = ir.VectorType(t).element_type
    return isinstance(t, ir.F32Type)


def _erf(x):
    t = x.type

    def const(v):
        return _splat(t, v)

    def horner(coefficients, u):
        acc = const(coefficients[-1])
        for c in coefficients[-2::-1]:
            acc = math.fma(acc, u, const(c))
        return acc

    def compare(predicate, a, b):
        return arith.CmpFOp(getattr(arith.CmpFPredicate, predicate), a, b).result

    a = math.absf(x)
    p1 = math.fma(a, horner(P1, arith.mulf(a, a)), a)
    p2 = horner(P2, arith.subf(a, const(M2)))
    r = arith.select(compare("OGE", a, const(B2)), const(1.0), p2)  # NaN: not >= B2, so P2(NaN) = NaN
    r = arith.select(compare("OLT", a, const(B1)), p1, r)
    return math.copysign(r, x)
