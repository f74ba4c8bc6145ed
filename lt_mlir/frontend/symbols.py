"""Named dimensions and the affine expressions built from them.

A ``Symbol`` is a dimension name with an identity: two ``Symbol("m")`` are
two different dims; a ``SymbolGenerator`` hands out one symbol per
attribute name (``s.m is s.m``).  Symbols combine into ``Expr``s, affine
forms with integer coefficients that describe

* index relations in views: ``X[s.No + s.K]``, ``Expr(2) * s.yo + s.wy``;
* size relations in constraints: ``(Size(s.Y), Size(s.X) + Expr(2))``.

An ``Expr`` keeps its terms in insertion order, so the dims it names come
out in the order the program wrote them.
"""

from __future__ import annotations

import itertools
import re

from .errors import FrontendError

_ids = itertools.count()

IDX = "idx"  # a term over a dim's index
SIZE = "size"  # a term over a dim's size


class Symbol:
    """A named dimension.  Identity matters, not the name."""

    __slots__ = ("name", "id", "origin", "__weakref__")

    def __init__(self, name: str = "X", origin: str | None = None):
        if not isinstance(name, str) or not name:
            raise FrontendError(f"a Symbol needs a non-empty name, got {name!r}")
        self.name = name
        self.id = next(_ids)
        # an unnamed dim (Tensor(array), Tensor(128, 7)): where it came from,
        # for messages ("axis 1 of Tensor(128, 7)")
        self.origin = origin

    def describe(self) -> str:
        """How messages name the dim: its name, or for an unnamed dim its
        axis and tensor."""
        return f"'{self.name}'" if self.origin is None else self.origin

    def __repr__(self) -> str:
        return f"Symbol{{{self.name}}}"

    # Symbols hash and compare by identity (the default), so they can key dicts.

    def _expr(self) -> "Expr":
        return Expr._term(IDX, self)

    def __add__(self, other):
        return self._expr() + other

    def __radd__(self, other):
        return self._expr() + other

    def __sub__(self, other):
        return self._expr() - other

    def __rsub__(self, other):
        return as_expr(other) - self._expr()

    def __mul__(self, other):
        return self._expr() * other

    def __rmul__(self, other):
        return self._expr() * other

    def __neg__(self):
        return -self._expr()


class Expr:
    """``const + sum(coef * term)``; a term is a dim's index or its size."""

    __slots__ = ("terms", "const")

    def __init__(self, value: int = 0):
        if isinstance(value, Expr):
            self.terms, self.const = dict(value.terms), value.const
            return
        if isinstance(value, Symbol):
            self.terms, self.const = {(IDX, value): 1}, 0
            return
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            else:
                raise FrontendError(f"Expr takes an integer, got {value!r}")
        self.terms: dict = {}
        self.const = int(value)

    @classmethod
    def _term(cls, kind: str, sym: Symbol, coef: int = 1) -> "Expr":
        e = cls(0)
        e.terms[(kind, sym)] = coef
        return e

    # ------------------------------------------------------------ algebra
    def __add__(self, other) -> "Expr":
        other = as_expr(other)
        out = Expr(self)
        for k, c in other.terms.items():
            out.terms[k] = out.terms.get(k, 0) + c
        out.terms = {k: c for k, c in out.terms.items() if c != 0}
        out.const += other.const
        return out

    __radd__ = __add__

    def __neg__(self) -> "Expr":
        out = Expr(0)
        out.terms = {k: -c for k, c in self.terms.items()}
        out.const = -self.const
        return out

    def __sub__(self, other) -> "Expr":
        return self + (-as_expr(other))

    def __rsub__(self, other) -> "Expr":
        return as_expr(other) - self

    def __mul__(self, other) -> "Expr":
        other = as_expr(other)
        if other.terms and self.terms:
            raise FrontendError(
                f"index expressions must be affine: cannot multiply ({self}) by ({other})"
            )
        if other.terms:
            return other * self
        k = other.const
        out = Expr(0)
        out.terms = {t: c * k for t, c in self.terms.items() if c * k != 0}
        out.const = self.const * k
        return out

    __rmul__ = __mul__

    # ------------------------------------------------------------ queries
    @property
    def is_constant(self) -> bool:
        """Whether the expression has no dim terms."""
        return not self.terms

    def symbols(self, kind: str = IDX) -> list:
        """The symbols of ``kind`` terms, in the order they were written."""
        return [s for (k, s) in self.terms if k == kind]

    def coefficient(self, sym: Symbol, kind: str = IDX) -> int:
        """The coefficient of ``sym``'s index (or size, ``kind``) term; 0 if absent."""
        return self.terms.get((kind, sym), 0)

    def kinds(self) -> set:
        """The kinds of terms present (index, size)."""
        return {k for (k, _) in self.terms}

    def single_symbol(self, kind: str = IDX):
        """The symbol when the expression is exactly ``sym`` (else None)."""
        if self.const == 0 and len(self.terms) == 1:
            (k, s), c = next(iter(self.terms.items()))
            if k == kind and c == 1:
                return s
        return None

    def __repr__(self) -> str:
        parts = []
        for (kind, sym), c in self.terms.items():
            if kind.startswith("digit:"):
                _, stride, radix = kind.split(":")
                name = f"({sym.name}//{stride})" if stride != "1" else sym.name
                name = f"{name}%{radix}" if radix != "0" else name
            else:
                name = sym.name if kind == IDX else f"|{sym.name}|"
            parts.append(name if c == 1 else f"-{name}" if c == -1 else f"{c}*{name}")
        if self.const or not parts:
            parts.append(str(self.const))
        text = "+".join(parts)
        return text.replace("+-", "-")


def as_expr(value) -> Expr:
    """Symbols, ints and Exprs as an Expr."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, Symbol):
        return value._expr()
    if isinstance(value, int) and not isinstance(value, bool):
        return Expr(value)
    raise FrontendError(f"expected a Symbol, an Expr or an int, got {type(value).__name__} {value!r}")


def Size(sym: Symbol) -> Expr:  # noqa: N802 (loop_tool's spelling)
    """The size of ``sym`` as an expression, for size constraints:
    ``(Size(s.Y), Size(s.X) + Expr(2))``."""
    if not isinstance(sym, Symbol):
        raise FrontendError(f"Size takes a Symbol, got {type(sym).__name__} {sym!r}")
    return Expr._term(SIZE, sym)


class SymbolGenerator:
    """``s = SymbolGenerator(); s.m`` makes (once) and returns the symbol ``m``.

    Usable as a context manager: ``with SymbolGenerator() as s: ...``."""

    def __init__(self):
        object.__setattr__(self, "_symbols", {})

    def __getattr__(self, name: str) -> Symbol:
        if name.startswith("__"):
            raise AttributeError(name)
        table = object.__getattribute__(self, "_symbols")
        if name not in table:
            table[name] = Symbol(name)
        return table[name]

    def __setattr__(self, name, value):
        raise FrontendError("SymbolGenerator attributes are symbols made on access; they cannot be assigned")

    def __enter__(self) -> "SymbolGenerator":
        return self

    def __exit__(self, *exc) -> None:
        return None

    def __repr__(self) -> str:
        names = ", ".join(object.__getattribute__(self, "_symbols"))
        return f"SymbolGenerator({names})"


def symbols(names: str) -> list:
    """``symbols("m n k")`` -> three new symbols (spaces or commas separate)."""
    if not isinstance(names, str):
        raise FrontendError(f"symbols takes a string of names, got {type(names).__name__}")
    parts = [p for p in re.split(r"[\s,]+", names) if p]
    if not parts:
        raise FrontendError("symbols() needs at least one name")
    return [Symbol(p) for p in parts]
