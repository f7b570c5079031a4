"""A guard against requests that cannot fit in memory: refused before anything is compiled,
naming what to lower, instead of the out-of-memory killer ending the process with nothing
said.

Restarts hold their starting tables, estimates and a trace of the objective over the
iterations at once, about ``8 (max_iter + 8 E)`` bytes each for ``E`` table entries.
"""

from __future__ import annotations

import os

from .errors import ArgumentError

__all__ = ["MEMORY_SHARE", "check_memory", "check_restarts_memory", "physical_memory",
           "restart_bytes"]

#: The share of the machine's memory one request may plan to hold.
MEMORY_SHARE = 0.5


def physical_memory() -> int | None:
    """Bytes of memory of this machine (``None`` where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def restart_bytes(table_entries: int, max_iter: int) -> int:
    """Bytes one restart holds (module docstring)."""
    return 8 * (max_iter + 8 * table_entries)


def check_memory(needed: int, request: str, fix: str) -> None:
    """Refuse ``request`` (e.g. ``"restarts=10000000"``) where it would hold ``needed`` bytes,
    more than :data:`MEMORY_SHARE` of the machine's memory, saying what to lower (``fix``)."""
    total = physical_memory()
    if total is not None and needed > MEMORY_SHARE * total:
        raise ArgumentError(f"{request} would hold about {needed / 2**30:.1f} GiB, more than "
                            f"half of this machine's {total / 2**30:.1f} GiB: {fix}")


def check_restarts_memory(structure, restarts: int, max_iter: int) -> None:
    """:func:`check_memory` of EM's or VBEM's ``restarts`` (and a start from ``init``)."""
    entries = sum(rows * cols for rows, cols in structure.table_shapes)
    check_memory((restarts + 1) * restart_bytes(entries, max_iter), f"restarts={restarts}",
                 "use fewer restarts (10 to 100 find the optimum of most models), or a smaller "
                 "max_iter")
