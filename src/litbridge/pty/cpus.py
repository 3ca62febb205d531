"""Which CPUs the daemon and the CLIs it starts run on (`serve --cpus`, `serve --cli-cpus`; Linux).

A daemon that shares its CPUs with a few hundred busy CLIs is woken, many times a second, on a CPU whose caches
they have just filled, and spends more of its own CPU per event. Kept apart (the daemon on some CPUs, the CLIs
on the others) it does the same work for 13 % less CPU per turn on average in the scale benchmark at N=300 (2
cores: `benchmarks/README.md`). The cost is the CLIs': they share only the CPUs they are given.

`parse` reads a list as `taskset -c` and the kernel's `cpuset` files write it ("0", "1-3", "0,2-3"); `check`
refuses CPUs this process may not use. `pin_daemon` moves every thread of the daemon (threads started later
inherit it); `use_for_clis` sets the CLIs' CPUs, which every spawn path gives the CLI right after its exec
(`apply(pid)`: its main thread, then any thread it started already; the threads it starts later inherit them).
Not before the exec: a child bound there first has to wait for a CPU the CLIs keep busy, and the spawn waits
with it (35 creates a second at N=300 instead of 120-145, when the vfork child did so).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterable

log = logging.getLogger(__name__)

MAX_CPU = 8191
"""The highest CPU number a list may name (the kernel's largest `NR_CPUS`): a longer range names no machine's
CPUs, and is refused before a set of it is built."""

_cli: frozenset[int] | None = None


class CpusError(ValueError):
    """A CPU list that cannot be used: malformed, empty, or naming CPUs this process may not run on."""


def supported() -> bool:
    """True where processes can be bound to CPUs (Linux)."""
    return hasattr(os, "sched_setaffinity") and hasattr(os, "sched_getaffinity")


def parse(text: str) -> frozenset[int]:
    """ "0,2-3" -> {0, 2, 3}. Raises CpusError on anything else (an empty list, a reversed range, a word)."""
    cpus: set[int] = set()
    for part in text.replace(" ", "").split(","):
        first, sep, last = part.partition("-")
        try:
            lo = int(first)
            hi = int(last) if sep else lo
        except ValueError:
            raise CpusError(f"not a CPU list: {text!r} (write it as 0 or 1-3 or 0,2-3)") from None
        if lo < 0 or hi < lo or hi > MAX_CPU:
            raise CpusError(f"not a CPU range: {part!r} in {text!r}")
        cpus.update(range(lo, hi + 1))
    return frozenset(cpus)


def fmt(cpus: Iterable[int]) -> str:
    """{0, 2, 3} -> "0,2-3" (the form `parse` reads)."""
    out: list[str] = []
    last = -2
    for cpu in sorted(cpus):
        if out and cpu == last + 1:
            out[-1] = f"{out[-1].split('-')[0]}-{cpu}"
        else:
            out.append(str(cpu))
        last = cpu
    return ",".join(out)


def check(cpus: frozenset[int]) -> frozenset[int]:
    """`cpus`, if this process may run on every one of them; else CpusError naming the ones it may use."""
    allowed = frozenset(os.sched_getaffinity(0))
    missing = cpus - allowed
    if missing:
        raise CpusError(f"CPU {fmt(missing)} is not available to the daemon (it may use {fmt(allowed)})")
    return cpus


def _bind(pid: int, cpus: frozenset[int]) -> None:
    """Every thread of process `pid` onto `cpus`: its main thread first (a thread's affinity is its own, and the
    threads started from then on inherit their starter's), then those already running. Raises OSError
    (ProcessLookupError: the process is gone)."""
    os.sched_setaffinity(pid, cpus)
    for tid in os.listdir(f"/proc/{pid}/task"):
        if int(tid) != pid:
            with contextlib.suppress(ProcessLookupError):  # a thread that ended meanwhile
                os.sched_setaffinity(int(tid), cpus)


def pin_daemon(cpus: frozenset[int]) -> None:
    """Every thread of this process onto `cpus`. Raises OSError if the kernel refuses."""
    _bind(os.getpid(), cpus)


def use_for_clis(cpus: frozenset[int] | None) -> None:
    """Start every CLI on `cpus` from now on (None: on the daemon's own CPUs, inherited, the default)."""
    global _cli
    _cli = cpus


def apply(pid: int) -> None:
    """Move a CLI that has just started, every thread of it, onto the CLIs' CPUs. Best effort: a refusal is
    logged and the CLI runs where it is; a CLI already gone is left alone."""
    if _cli is None:
        return
    try:
        _bind(pid, _cli)
    except (ProcessLookupError, FileNotFoundError):  # gone before its threads were listed
        return
    except OSError as exc:
        log.warning("cannot bind pid %d to CPU %s: %s", pid, fmt(_cli), exc)
