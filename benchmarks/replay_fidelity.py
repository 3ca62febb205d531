"""Replay every recording and save its events, or compare two such dumps event for event.

An optimisation of the screen rules or the engine must not change a single event: run `dump` on the code before
the change and on the code after it, then `compare` the two files. Each recording under
`tests/fixtures/captures/` (any folder with `chunks.jsonl`, a resumed session's too) goes through `litbridge.replay.replay(path,
fast=True)`; the events are kept whole, timestamps included. Whatever `litbridge` is importable is the code
measured (`PYTHONPATH=<other checkout>/src python benchmarks/replay_fidelity.py dump before.json`).

    python benchmarks/replay_fidelity.py dump OUT.json
    python benchmarks/replay_fidelity.py compare BEFORE.json AFTER.json   # exit 1 on any difference
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import orjson

CAPTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "captures"


def recordings() -> list[Path]:
    return sorted(p.parent for p in CAPTURES.rglob("chunks.jsonl"))


def dump(out: Path) -> int:
    from litbridge.replay import replay

    events = {str(p.relative_to(CAPTURES)): replay(p, fast=True) for p in recordings()}
    out.write_bytes(orjson.dumps(events, option=orjson.OPT_SORT_KEYS))
    print(f"{len(events)} recordings, {sum(map(len, events.values()))} events -> {out}")
    return 0


def compare(before: Path, after: Path) -> int:
    a = orjson.loads(before.read_bytes())
    b = orjson.loads(after.read_bytes())
    bad = 0
    for name in sorted(set(a) | set(b)):
        ea, eb = a.get(name), b.get(name)
        if ea == eb:
            continue
        bad += 1
        if ea is None or eb is None:
            print(f"{name}: only in {'after' if ea is None else 'before'}")
            continue
        i = next((i for i, (x, y) in enumerate(zip(ea, eb, strict=False)) if x != y), min(len(ea), len(eb)))
        print(f"{name}: {len(ea)} vs {len(eb)} events, first difference at #{i}")
        print(f"  before: {ea[i] if i < len(ea) else '-'}")
        print(f"  after:  {eb[i] if i < len(eb) else '-'}")
    print(f"{len(set(a) | set(b))} recordings, {bad} differ")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("dump").add_argument("out", type=Path)
    c = sub.add_parser("compare")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    args = ap.parse_args(argv)
    return dump(args.out) if args.cmd == "dump" else compare(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main())
