"""`litbridge replay CAPTURE`: run a recorded CLI session through the real session and print its events.

CAPTURE is a capture folder (`chunks.jsonl` + transcript files) or an asciicast v2 `.cast`. The recorded
program's name picks the driver through the registry, as `create` would. Events are the JSON lines the daemon
would emit, each with `t` (seconds since spawn). No daemon and no CLI are involved.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import orjson

from litbridge.cli.common import closed_stdout


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "replay",
        help="replay a recorded session through the real session and driver and print the events",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    p.add_argument("capture", help="capture folder (chunks.jsonl) or asciicast v2 .cast file")
    p.add_argument(
        "--fast", action="store_true", help="as fast as possible (virtual clock) instead of real time"
    )
    p.add_argument("--speed", type=float, default=1.0, help="real-time speed factor (default 1.0)")
    p.add_argument("--no-thinking", action="store_true", help="leave out `thinking` spinner relays")
    p.add_argument(
        "--tail", type=float, default=12.0, help="seconds to keep running after the recording ends"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from litbridge.replay import Capture, replay

    try:
        cap = Capture.load(args.capture)
    except (OSError, ValueError) as exc:
        print(f"litbridge replay: cannot load {args.capture}: {exc}", file=sys.stderr)
        return 2
    if args.speed <= 0:
        print("litbridge replay: --speed must be positive", file=sys.stderr)
        return 2
    out = sys.stdout.buffer
    closed = False

    def show(ev: dict) -> bool:
        """Write one event; False (stop the replay) once the reader of stdout has gone (`| head -1`)."""
        nonlocal closed
        if closed:
            return False
        if args.no_thinking and ev.get("event") == "thinking":
            return True
        try:
            out.write(orjson.dumps(ev) + b"\n")
            out.flush()
        except BrokenPipeError:
            closed = True
        return not closed

    replay(cap, fast=args.fast, speed=args.speed, tail=args.tail, on_event=show)
    if closed:
        return closed_stdout()
    return 0
