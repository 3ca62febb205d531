"""`litbridge events`: print the event stream, optionally replayed from a seq.

Locally: `hello{subscribe:"*", since_seq}` on the daemon's socket (what the daemon still buffers). With --nats:
the fleet's JetStream stream (everything it retains): `--daemon D --since SEQ` replays D's events after SEQ
(seqs are per daemon) with no gap and no duplicate, then follows; `--no-follow` stops once caught up.
"""

from __future__ import annotations

import argparse
from typing import Any

from litbridge.cli import common


def _line(ev: dict[str, Any]) -> str:
    """One event as a short text line: [daemon] #seq event session detail."""
    parts = []
    if ev.get("daemon"):
        parts.append(common.shown(str(ev["daemon"])))
    parts.append(f"#{ev['seq']}" if isinstance(ev.get("seq"), int) else "#-")
    parts.append(str(ev.get("event")))
    if ev.get("session") is not None:
        parts.append(common.shown(str(ev["session"])))
    for key in ("to", "turn_id", "text", "content", "message", "code"):
        if ev.get(key) not in (None, ""):
            value = " ".join(str(ev[key]).split())
            parts.append(f"{key}={common.shown(value[:80])}")
    return " ".join(parts)


def _show(args: argparse.Namespace, ev: dict[str, Any]) -> None:
    if args.json:
        common.print_json(ev)
    else:
        print(_line(ev), flush=True)


async def _fleet_main(args: argparse.Namespace) -> int:
    async with common.connect_fleet(args) as fleet:
        stream = await fleet.events(
            args.daemon, since=args.since, session=args.session, follow=not args.no_follow
        )
        async with stream:
            async for ev in stream:
                _show(args, ev)
    return common.EXIT_OK


async def _main(args: argparse.Namespace) -> int:
    if common.fleet_config(args) is not None:
        if args.session is not None and args.daemon is None:
            common.eprint("litbridge: --session with --nats needs --daemon")
            return common.EXIT_USAGE
        return await _fleet_main(args)
    if args.daemon is not None or args.no_follow:
        common.eprint("litbridge: --daemon and --no-follow are for a fleet: give --nats URL")
        return common.EXIT_USAGE
    async with common.connect(args) as client:
        stream = client.events(args.session)
        await client.hello(subscribe=args.session or "*", since_seq=args.since)
        async with stream:
            async for ev in stream:
                _show(args, ev)
    return common.EXIT_OK


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "events",
        help="print the event stream (replayed from a seq)",
        description="Print events as they come (Ctrl-C stops). --since SEQ first replays the events after SEQ: "
        "locally from the daemon's buffer; with --nats from the fleet's JetStream stream (with --daemon: seqs "
        "are per daemon).",
    )
    p.add_argument("--since", type=int, metavar="SEQ", help="replay the events after SEQ first")
    p.add_argument("--session", metavar="KEY", help="only this session key's events")
    p.add_argument("--daemon", metavar="D", help="with --nats: only daemon D's events")
    p.add_argument(
        "--no-follow", action="store_true", help="with --nats: stop once the stored events are printed"
    )
    common.add_connection_args(p, json_help="print the events as JSON lines (with --nats: plus `daemon`)")
    common.add_fleet_args(p)
    p.set_defaults(func=lambda args: common.run(lambda: _main(args)))
