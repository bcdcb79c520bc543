"""Numbers in sentences a person reads: "1 node", "2 nodes".

Messages the reference pins word for word ("2 groups failed across 1 iterations") keep
its words; every other message says its counts with this, so no "1 groups" reaches a reader.
"""

from __future__ import annotations


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` with ``noun`` in the right number (``plural`` for irregular nouns)."""
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"
