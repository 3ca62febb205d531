"""`litbridge drivers`: each CLI with a dedicated driver, the versions its rules know, the version installed on
this PATH (and whether its rules know it), and the record the driver follows.

Run it in the daemon's environment (the same PATH) to see what a `create` would get; needs no daemon. An
installed version the rules do not know is read with the newest rules, which may misread a changed screen.
"""

from __future__ import annotations

import argparse
import shutil
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from litbridge.cli import common


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "drivers",
        help="list the CLI drivers, the versions their rules know and the version installed here",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    p.add_argument("--json", action="store_true", help="one JSON object per CLI instead of a table")
    p.set_defaults(func=run)


def describe(name: str) -> dict[str, Any]:
    """One CLI's row: driver class, known versions, installed binary and version, record source."""
    from litbridge import drivers
    from litbridge.drivers.versions import binary_version

    cls = drivers.get_driver(name)
    spec = getattr(cls, "CLI", None)
    path = shutil.which(name)
    installed = binary_version(name) if path else None
    row: dict[str, Any] = {
        "cli": name,
        "driver": f"{cls.__module__}.{cls.__qualname__}",
        "versions": spec.known() if spec is not None else [],
        "tested": list(spec.tested) if spec is not None else [],
        "path": path,
        "installed": installed,
        "known": spec.knows(installed) if spec is not None and installed else None,
        "record": None,
    }
    if spec is not None:
        record = spec.pick(installed).record
        row["record"] = {"shape": record.SHAPE, "source": record.SOURCE}
    return row


def _table(rows: list[dict[str, Any]]) -> str:
    out = []
    for r in rows:
        known = ", ".join(r["versions"]) or "-"
        if r["path"] is None:
            here = "not on PATH"
        elif r["installed"] is None:
            here = f"{r['path']} (version unreadable)"
        else:
            verdict = (
                "" if r["known"] is None else (" (known)" if r["known"] else " (NOT known: newest rules)")
            )
            here = f"{r['installed']}{verdict}  {r['path']}"
        record = r["record"]
        tested = ", ".join(r["tested"]) or "-"
        out.append(
            f"{r['cli']}\n  driver:    {r['driver']}\n  rules for: {known}\n  tested:    {tested}\n"
            f"  installed: {here}"
        )
        if record is not None:
            out.append(f"  record:    {record['source']} ({record['shape']})")
    return "\n".join(out) + "\n"


def run(args: argparse.Namespace) -> int:
    from litbridge import drivers

    names = drivers.clis()
    with ThreadPoolExecutor(max_workers=4) as pool:  # each `--version` may take seconds (Node start-up)
        rows = list(pool.map(describe, names))
    if args.json:
        for row in rows:
            common.print_json(row)
    else:
        print(_table(rows), end="")
    return common.EXIT_OK
