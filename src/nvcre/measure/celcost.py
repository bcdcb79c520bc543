"""A static cost estimate for user CEL expressions, refused before they ever run.

The CEL library we evaluate with (``common-expression-language``) has no cost
tracking and holds the GIL while it evaluates, so an expression cannot be stopped
once started: ``[1,...,10].map(a, [1,...,10].map(b, ...))`` nested five deep is
~200 characters and runs for seconds. Kubernetes solves the same problem for CRD
rules with a static cost estimate at admission; this module does the same for
thresholds and node-health detectors: it parses the expression (CEL's grammar is
small), gives every list, map and string an upper size (literal sizes exactly,
values from a Node at most ``DEFAULT_LIST_SIZE`` items / ``DEFAULT_STRING_SIZE``
characters, the bound the docs state), and charges what the API server's estimator
charges: one unit per operation, comprehensions the size of their range times
their body, string and list operations a tenth of a unit per element.

``check_cost(expression, limit)`` returns why an expression is refused (too long,
nested too deep, or estimated cost over ``limit``) or None. It is pure and total:
any text gives an answer, never an exception.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, TypeVar

T = TypeVar("T")

MAX_EXPRESSION_LEN = 2048
MAX_NESTING = 64  # depth units: each parenthesis, list, call or comprehension opens one or two
DEFAULT_LIST_SIZE = 256  # items in a list/map read from an object (Node conditions, labels, ...)
DEFAULT_STRING_SIZE = 4096  # characters in a string read from an object
_CAP = 1e18
_MACROS = {"all", "exists", "exists_one", "map", "filter"}


@dataclass(frozen=True)
class Shape:
    """Upper bound on a value's size: ``n`` items (or characters), items shaped ``elem``."""

    n: float
    elem: "Shape | None" = None
    unknown: bool = False


SCALAR = Shape(1.0)


def _unknown() -> Shape:
    return _UNKNOWN


_UNKNOWN = Shape(DEFAULT_LIST_SIZE, None, True)  # elem of an unknown value is unknown again


def _elem(shape: Shape) -> Shape:
    if shape.unknown:
        return _UNKNOWN
    return shape.elem or SCALAR


def _merge(a: Shape, b: Shape) -> Shape:
    if a.unknown or b.unknown:
        return _UNKNOWN
    if a.elem is None or b.elem is None:
        return Shape(max(a.n, b.n), a.elem or b.elem)
    return Shape(max(a.n, b.n), _merge(a.elem, b.elem))


class CostError(ValueError):
    """Why an expression is refused by the estimator."""


# --- tokens --------------------------------------------------------------------------------

_PUNCT = ("||", "&&", "==", "!=", "<=", ">=", "<", ">", "+", "-", "*", "/", "%", "!", "?", ":", ".", ",",
          "(", ")", "[", "]", "{", "}")


def _tokens(text: str) -> list[tuple[str, str]]:
    """(kind, text) pairs: num, str (value = content length as text), ident, op."""
    out: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        if ch.isdigit() or (ch == "." and i + 1 < n and text[i + 1].isdigit()):
            j = i + 1
            while j < n and (text[j].isalnum() or text[j] == "." or (text[j] in "+-" and text[j - 1] in "eE"
                                                                      and not text[i:j].lower().startswith("0x"))):
                j += 1
            out.append(("num", text[i:j]))
            i = j
            continue
        if ch in "rRbB" and i + 1 < n and text[i + 1] in "'\"":
            i += 1
            ch = text[i]
        if ch in "'\"":
            quote = text[i:i + 3] if text[i:i + 3] in ("'''", '"""') else ch
            j = i + len(quote)
            while j < n and not text.startswith(quote, j):
                j += 2 if text[j] == "\\" else 1
            if j >= n:
                raise CostError("unterminated string literal")
            out.append(("str", str(j - i - len(quote))))
            i = j + len(quote)
            continue
        if ch.isalpha() or ch == "_":
            j = i + 1
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            out.append(("ident", text[i:j]))
            i = j
            continue
        for op in _PUNCT:
            if text.startswith(op, i):
                out.append(("op", op))
                i += len(op)
                break
        else:
            raise CostError(f"unexpected character {ch!r}")
    return out


# --- parser with cost --------------------------------------------------------------------------


class _Estimator:
    """Recursive descent over CEL's grammar; each rule returns (cost, shape)."""

    def __init__(self, tokens: list[tuple[str, str]], variables: dict[str, Shape]) -> None:
        self.t = tokens
        self.i = 0
        self.scopes: list[dict[str, Shape]] = [dict(variables)]
        self.depth = 0

    # helpers
    def peek(self, value: str | None = None) -> bool:
        if self.i >= len(self.t):
            return False
        return value is None or self.t[self.i][1] == value and self.t[self.i][0] in ("op", "ident")

    def peek_at(self, index: int, value: str) -> bool:
        return index < len(self.t) and self.t[index][1] == value and self.t[index][0] in ("op", "ident")

    def take(self, value: str) -> None:
        if not self.peek(value):
            got = self.t[self.i][1] if self.i < len(self.t) else "end of expression"
            raise CostError(f"expected {value!r}, got {got!r}")
        self.i += 1

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise CostError(f"nested deeper than {MAX_NESTING} levels")

    def lookup(self, name: str) -> Shape:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return _UNKNOWN

    # grammar
    def expr(self) -> tuple[float, Shape]:
        self.enter()
        cost, shape = self.or_()
        if self.peek("?"):
            self.i += 1
            c1, s1 = self.expr()
            self.take(":")
            c2, s2 = self.expr()
            cost, shape = cost + max(c1, c2), _merge(s1, s2)
        self.depth -= 1
        return min(cost, _CAP), shape

    def _binary(self, ops: tuple[str, ...], lower) -> tuple[float, Shape]:
        cost, shape = lower()
        while self.i < len(self.t) and self.t[self.i][0] == "op" and self.t[self.i][1] in ops:
            op = self.t[self.i][1]
            self.i += 1
            c2, s2 = lower()
            cost, shape = self._op(op, cost, shape, c2, s2)
        return cost, shape

    def _op(self, op: str, c1: float, s1: Shape, c2: float, s2: Shape) -> tuple[float, Shape]:
        base = c1 + c2 + 1
        if op == "+" and (s1.n > 1 or s2.n > 1 or s1.elem or s2.elem):
            size = min(s1.n + s2.n, _CAP)
            return base + size / 10, Shape(size, (s1.elem or s2.elem) if not (s1.unknown or s2.unknown) else None)
        if op in ("==", "!=", "<", "<=", ">", ">="):
            return base + min(s1.n, s2.n) / 10, SCALAR
        if op == "in":
            return base + s2.n, SCALAR
        return base, SCALAR

    def or_(self):
        return self._binary(("||",), self.and_)

    def and_(self):
        return self._binary(("&&",), self.rel)

    def rel(self):
        cost, shape = self.add()
        while self.i < len(self.t) and (
            (self.t[self.i][0] == "op" and self.t[self.i][1] in ("==", "!=", "<", "<=", ">", ">="))
            or self.t[self.i] == ("ident", "in")
        ):
            op = self.t[self.i][1]
            self.i += 1
            c2, s2 = self.add()
            cost, shape = self._op(op, cost, shape, c2, s2)
        return cost, shape

    def add(self):
        return self._binary(("+", "-"), self.mul)

    def mul(self):
        return self._binary(("*", "/", "%"), self.unary)

    def unary(self):
        if self.peek("!") or self.peek("-"):
            self.i += 1
            self.enter()
            cost, shape = self.unary()
            self.depth -= 1
            return cost + 1, shape
        return self.member()

    def member(self):
        cost, shape = self.primary()
        while self.i < len(self.t):
            if self.peek("."):
                self.i += 1
                if self.i >= len(self.t) or self.t[self.i][0] != "ident":
                    raise CostError("expected a field or method name after '.'")
                name = self.t[self.i][1]
                self.i += 1
                if self.peek("("):
                    cost, shape = self.method(name, cost, shape)
                else:
                    cost, shape = cost + 1, _elem(shape) if shape.unknown else _UNKNOWN
            elif self.peek("["):
                self.i += 1
                c2, _ = self.expr()
                self.take("]")
                cost, shape = cost + c2 + 1, _elem(shape)
            else:
                break
        return cost, shape

    def args(self) -> list[tuple[float, Shape]]:
        self.take("(")
        out = []
        while not self.peek(")"):
            out.append(self.expr())
            if not self.peek(")"):
                self.take(",")
        self.take(")")
        return out

    def method(self, name: str, cost: float, shape: Shape) -> tuple[float, Shape]:
        if name in _MACROS:
            return self.macro(name, cost, shape)
        args = self.args()
        arg_cost = sum(c for c, _ in args)
        total = cost + arg_cost + 1
        if name in ("contains", "startsWith", "endsWith", "matches", "indexOf", "lastIndexOf", "replace",
                    "split", "lowerAscii", "upperAscii", "trim", "substring", "charAt", "join"):
            total += (shape.n + sum(s.n for _, s in args)) / 10
            if name in ("split",):
                return total, Shape(shape.n, Shape(shape.n))
            if name in ("replace", "lowerAscii", "upperAscii", "trim", "substring", "join"):
                return total, Shape(shape.n * (2 if name == "replace" else 1))
            if name in ("charAt",):
                return total, SCALAR
            return total, SCALAR
        if name == "size":
            return total, SCALAR
        return total + shape.n / 10, _UNKNOWN if shape.unknown else SCALAR

    def macro(self, name: str, cost: float, shape: Shape) -> tuple[float, Shape]:
        self.take("(")
        if self.i >= len(self.t) or self.t[self.i][0] != "ident":
            raise CostError(f"{name}() needs a variable name as its first argument")
        var = self.t[self.i][1]
        self.i += 1
        self.take(",")
        scope = {var: _elem(shape)}
        # the two-variable form (CEL's all/exists/exists_one(k, v, predicate)): index or
        # key first, value second; same range, so the same cost per item
        if (name in ("all", "exists", "exists_one") and self.i + 1 < len(self.t)
                and self.t[self.i][0] == "ident" and self.peek_at(self.i + 1, ",")):
            scope = {var: SCALAR, self.t[self.i][1]: _elem(shape)}
            self.i += 2
        self.scopes.append(scope)
        self.enter()
        bodies = [self.expr()]
        if name == "map" and self.peek(","):
            self.i += 1
            bodies.append(self.expr())
        self.depth -= 1
        self.scopes.pop()
        self.take(")")
        per_item = sum(c for c, _ in bodies) + 1
        total = min(cost + shape.n * per_item + 1, _CAP)
        if name == "map":
            return total, Shape(shape.n, bodies[-1][1])
        if name == "filter":
            return total, Shape(shape.n, _elem(shape)) if not shape.unknown else _UNKNOWN
        return total, SCALAR

    def primary(self) -> tuple[float, Shape]:
        if self.i >= len(self.t):
            raise CostError("the expression ends too early")
        kind, value = self.t[self.i]
        self.i += 1
        if kind == "num":
            return 1, SCALAR
        if kind == "str":
            return 1, Shape(max(1.0, float(value)))
        if kind == "ident":
            if value in ("true", "false", "null"):
                return 1, SCALAR
            if value == "has" and self.peek("("):
                self.take("(")
                self.enter()
                cost, _ = self.expr()
                self.depth -= 1
                self.take(")")
                return cost + 1, SCALAR
            if self.peek("("):
                self.enter()
                args = self.args()
                self.depth -= 1
                cost = sum(c for c, _ in args) + 1 + sum(s.n for _, s in args) / 10
                if value == "string" and args:
                    return cost, Shape(max(s.n for _, s in args) * 8)
                return cost, SCALAR
            return 1, self.lookup(value)
        if value == "(":
            self.enter()
            result = self.expr()
            self.depth -= 1
            self.take(")")
            return result
        if value == "[":
            self.enter()
            cost, items, elem = 1.0, 0, None
            while not self.peek("]"):
                c, s = self.expr()
                cost, items = cost + c, items + 1
                elem = s if elem is None else _merge(elem, s)
                if not self.peek("]"):
                    self.take(",")
            self.take("]")
            self.depth -= 1
            return cost, Shape(max(items, 1), elem or SCALAR)
        if value == "{":
            self.enter()
            cost, items, elem = 1.0, 0, None
            while not self.peek("}"):
                ck, _ = self.expr()
                self.take(":")
                cv, sv = self.expr()
                cost, items = cost + ck + cv, items + 1
                elem = sv if elem is None else _merge(elem, sv)
                if not self.peek("}"):
                    self.take(",")
            self.take("}")
            self.depth -= 1
            return cost, Shape(max(items, 1), elem or SCALAR)
        raise CostError(f"unexpected {value!r}")


def estimate_cost(expression: str, variables: dict[str, Shape] | None = None) -> float:
    """The estimated worst-case cost of ``expression``; CostError when it cannot be read."""
    if len(expression) > MAX_EXPRESSION_LEN:
        raise CostError(f"the expression is longer than {MAX_EXPRESSION_LEN} characters")
    estimator = _Estimator(_tokens(expression), variables or {})
    cost, _ = estimator.expr()
    if estimator.i != len(estimator.t):
        raise CostError(f"unexpected {estimator.t[estimator.i][1]!r} after the expression")
    return cost


def check_cost(expression: str, limit: float, variables: dict[str, Shape] | None = None) -> str | None:
    """Why ``expression`` is refused by the static estimate, or None when it fits ``limit``."""
    if not isinstance(expression, str):
        return "the expression must be a string"
    try:
        cost = estimate_cost(expression, variables)
    except CostError as err:
        return str(err)
    except RecursionError:
        return f"nested deeper than {MAX_NESTING} levels"
    if cost > limit:
        factor = cost / limit
        return (f"estimated cost {cost:.3g} exceeds the limit {limit:.3g} by a factor of {factor:.3g} "
                f"(comprehensions multiply by the size of their list; a list from an object counts "
                f"as {DEFAULT_LIST_SIZE} items)")
    return None


# --- runtime budget --------------------------------------------------------------------------


class RuntimeBudget:
    """Wall-clock seconds the CEL evaluations of one pass may spend, with the static
    estimate above as the first line and this as the second (an estimate can be wrong).

    The library cannot stop an evaluation once started, so the budget is enforced between
    evaluations: ``spend`` times one, ``exhausted`` says the rest must not run. A single
    evaluation over ``limit_s`` is bounded by the static cost limit; the caller remembers
    the expression so that one stall is never repeated.
    """

    def __init__(self, limit_s: float, clock: Callable[[], float] = time.perf_counter) -> None:
        self.limit_s = limit_s
        self.spent_s = 0.0
        self.last_s = 0.0
        self._clock = clock

    @property
    def exhausted(self) -> bool:
        return self.spent_s > self.limit_s

    def spend(self, evaluate: Callable[[], T]) -> T:
        """``evaluate()``'s result; the seconds it took go to ``last_s`` and ``spent_s`` (also when it raises)."""
        start = self._clock()
        try:
            return evaluate()
        finally:
            self.last_s = self._clock() - start
            self.spent_s += self.last_s
