"""Kubernetes resource quantities (``500Gi``, ``64``, ``250m``) as exact numbers.

Needed so ``requests <= limits`` is checked the same way in Python as the API
server's CEL ``quantity()`` does, without the kubernetes client.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_QUANTITY = re.compile(QUANTITY_PATTERN)
_NUMBER = re.compile(r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))")

_SUFFIX = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20,
    "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50,
    "Ei": Decimal(2) ** 60,
}


def parse_quantity(value: int | str) -> Decimal:
    """The exact value of a quantity; ValueError naming the accepted forms when malformed."""
    if isinstance(value, bool):
        raise ValueError("a quantity must be a number or a string like 500Gi, 64 or 250m")
    if isinstance(value, int):
        return Decimal(value)
    if not isinstance(value, str) or not _QUANTITY.fullmatch(value):
        raise ValueError(f"{value!r} is not a quantity; write e.g. 64, 500Gi, 1.5 or 250m")
    number = _NUMBER.match(value)
    assert number is not None  # guaranteed by the full pattern above
    digits, suffix = number.group(0), value[number.end():]
    try:
        base = Decimal(digits)
    except InvalidOperation as err:  # pragma: no cover - the pattern admits only decimals
        raise ValueError(f"{value!r} is not a quantity") from err
    if suffix[:1] in ("e", "E"):
        return base * (Decimal(10) ** Decimal(suffix[1:]))
    return base * _SUFFIX[suffix]
