"""Size inference: every dim's size from the equations a program implies.

Sizes belong to symbols.  Each tensor contributes equations (``Eq``):

``fix``   ``|s| = v``: data of a known shape, ``Tensor(128)``, ``set_size``.
``lin``   ``|s| = c + sum(a_i |t_i|)``: pads (``|n'| = |n| + 2``), concatenation
          (``|nk| = |n| + |k|``), renames, explicit ``(Size(s), expr)`` constraints.
``idx``   an index relation ``s = c + sum(a_i t_i)`` of a view (``Ni = No + K``):
          the largest index decides the size, ``|s| = 1 + c + sum(a_i (|t_i| - 1))``.
          Solved for one ``t_j`` by flooring, so strided windows (``2*yo + wy``)
          keep whole steps only; checked as ``|s|`` in
          ``[1 + max_index, max_index + max(a_i)]`` (equality for unit strides).

``solve`` propagates until nothing changes, in both directions (setting an
output's size fixes its inputs'), and raises ``SizeError`` at the first
equation its sizes contradict, naming where each side came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import SizeError


@dataclass
class Eq:
    kind: str  # "fix" | "lin" | "idx"
    target: object  # Symbol
    const: int = 0
    terms: list = field(default_factory=list)  # [(coef, Symbol)]
    origin: str = ""

    def symbols(self) -> list:
        return [self.target] + [t for _, t in self.terms]


def fix(sym, value: int, origin: str) -> Eq:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SizeError(f"sizes are integers: {origin} gives {value!r} for {sym.describe()}")
    if value <= 0:
        raise SizeError(f"sizes must be positive: {origin} gives {value} for {sym.describe()}")
    return Eq("fix", sym, value, [], origin)


def _name(s) -> str:
    return s.describe()


class _Solver:
    def __init__(self, eqs):
        self.eqs = list(eqs)
        self.size: dict = {}
        self.why: dict = {}

    def set(self, sym, value: int, eq: Eq) -> None:
        if value <= 0:
            raise SizeError(
                f"size of {_name(sym)} would be {value} ({eq.origin}); sizes must be positive"
                + self._context(eq, sym)
            )
        self.size[sym] = value
        self.why[sym] = eq.origin

    def _context(self, eq: Eq, skip=None) -> str:
        known = [f"{_name(s)} = {self.size[s]} ({self.why[s]})" for s in dict.fromkeys(eq.symbols()) if s in self.size and s is not skip]
        return "; given " + ", ".join(known) if known else ""

    def run(self) -> dict:
        pending = list(self.eqs)
        while pending:
            progress = False
            rest = []
            for eq in pending:
                unknown = [s for s in dict.fromkeys(eq.symbols()) if s not in self.size]
                if not unknown:
                    self.check(eq)
                    progress = True
                elif len(unknown) == 1 and self.solve(eq, unknown[0]):
                    self.check(eq)
                    progress = True
                else:
                    rest.append(eq)
            pending = rest
            if not progress:
                break
        return self.size

    # ------------------------------------------------------------ one equation
    def solve(self, eq: Eq, u) -> bool:
        if eq.kind == "fix":
            self.set(u, eq.const, eq)
            return True
        if eq.kind == "lin":
            # as sum(A_x |x|) = const:  A_target += 1, A_t -= a_t
            coef: dict = {}
            coef[eq.target] = coef.get(eq.target, 0) + 1
            for c, t in eq.terms:
                coef[t] = coef.get(t, 0) - c
            a = coef.get(u, 0)
            if a == 0:
                return False
            rhs = eq.const - sum(c * self.size[x] for x, c in coef.items() if x is not u)
            if rhs % a:
                raise SizeError(f"no integer size of {_name(u)} satisfies {eq.origin}" + self._context(eq, u))
            self.set(u, rhs // a, eq)
            return True
        # idx
        occurrences = (eq.target is u) + sum(1 for _, t in eq.terms if t is u)
        if occurrences != 1:
            return False
        if eq.target is u:
            if not eq.terms or any(c < 0 for c, _ in eq.terms):
                return False  # a constant index only bounds the size
            self.set(u, 1 + eq.const + sum(c * (self.size[t] - 1) for c, t in eq.terms), eq)
            return True
        coef = next(c for c, t in eq.terms if t is u)
        if coef <= 0 or any(c < 0 for c, _ in eq.terms):
            return False
        room = self.size[eq.target] - 1 - eq.const - sum(c * (self.size[t] - 1) for c, t in eq.terms if t is not u)
        if room < 0:
            raise SizeError(
                f"{eq.origin} does not fit: {_name(eq.target)} has {self.size[eq.target]} elements"
                + self._context(eq, None)
            )
        self.set(u, room // coef + 1, eq)
        return True

    def check(self, eq: Eq) -> None:
        s = self.size
        if eq.kind == "fix":
            if s[eq.target] != eq.const:
                raise SizeError(
                    f"contradictory sizes for {_name(eq.target)}: {s[eq.target]} ({self.why[eq.target]}) "
                    f"but {eq.const} ({eq.origin})"
                )
            return
        if eq.kind == "lin":
            want = eq.const + sum(c * s[t] for c, t in eq.terms)
            if s[eq.target] != want:
                raise SizeError(
                    f"contradictory sizes for {_name(eq.target)}: {s[eq.target]} ({self.why[eq.target]}) "
                    f"but {eq.origin} makes it {want}" + self._context(eq, eq.target)
                )
            return
        lo_index = eq.const + sum(min(0, c) * (s[t] - 1) for c, t in eq.terms)
        hi_index = eq.const + sum(max(0, c) * (s[t] - 1) for c, t in eq.terms)
        steps = [c for c, _ in eq.terms if c > 0]
        size = s[eq.target]
        if lo_index < 0:
            raise SizeError(f"{eq.origin} reaches index {lo_index} of {_name(eq.target)}" + self._context(eq, None))
        if not steps:
            ok = hi_index < size
            want = f"at least {hi_index + 1}"
        else:
            ok = hi_index + 1 <= size <= hi_index + max(steps)
            want = str(hi_index + 1) if max(steps) == 1 else f"{hi_index + 1}..{hi_index + max(steps)}"
        if not ok:
            raise SizeError(
                f"contradictory sizes for {_name(eq.target)}: {size} ({self.why.get(eq.target, '?')}) "
                f"but {eq.origin} needs {want}" + self._context(eq, eq.target)
            )


def solve(eqs) -> dict:
    """Symbol -> size for every symbol the equations determine."""
    return _Solver(eqs).run()
