"""`litbridge explain --cli X FILE`: what a CLI's rules see in a saved screen or a recording, offline.

FILE is a screen saved as text (one row per line, e.g. a `dump`'s capture or a recording's `screens/*.txt`; a
first line starting with `# ` is a header and skipped) or a recording folder (`chunks.jsonl`, as `litbridge
replay` reads). For each frame whose reading changes: the state (blank, idle, busy, dialog, other), the question
the driver would relay (kind, text, options, detail), the spinner and any draft in the input box. This is how to
report "wrong state" with evidence. Needs no daemon and no CLI.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from litbridge.cli import common
from litbridge.client.client import question_detail_text


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "explain",
        help="show what a CLI's screen rules read in a saved screen or a recording, frame by frame",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    p.add_argument("file", metavar="FILE", help="a screen saved as text, or a recording folder")
    p.add_argument(
        "--cli", help="which CLI's rules (claude, codex, gemini); default: the recording's program"
    )
    p.add_argument(
        "--cli-version", help="read as this CLI version (default: the version the recording shows)"
    )
    p.add_argument("--json", action="store_true", help="one JSON object per frame")
    p.set_defaults(func=run)


def screen_rows(text: str, lines: int = 50) -> list[str]:
    """The rows of a screen saved as text (a leading `# ...` header line skipped), padded to `lines`."""
    rows = text.split("\n")
    if rows and rows[0].startswith("# "):
        rows = rows[1:]
    return (rows + [""] * lines)[: max(lines, len(rows))]


def reading_of(rules: Any, rows: list[str], title: str | None = None) -> dict[str, Any]:
    """What the rules see in one frame, as plain data (the question as the driver would relay it)."""
    reading = rules.read(rows, title)
    dialog = reading.dialog if reading.state in ("dialog", "other") else None
    out: dict[str, Any] = {"state": reading.state, "question": None}
    if dialog is not None:
        out["question"] = {
            "kind": rules.question_kind(dialog),
            "dialog": dialog.kind,
            "text": dialog.text,
            "options": [o.as_dict() for o in dialog.options],
            "detail": dialog.wire_detail(),
        }
    elif reading.state == "other":
        excerpt = rules.modal_excerpt(rows)
        if excerpt:
            out["unknown_dialog"] = excerpt
    out["spinner"] = reading.spinner
    out["draft"] = reading.draft or None
    version = getattr(reading, "version", None)
    if version:
        out["version"] = version
    return out


def explain_recording(spec: Any, folder: Path, version: str | None) -> list[dict[str, Any]]:
    """The frames of a recording where the reading changes, each with `t` (seconds since spawn)."""
    from litbridge.drivers.versions import recorded_version
    from litbridge.replay import Capture
    from litbridge.term import Terminal

    capture = Capture.load(folder)
    version = version or recorded_version(capture.chunks, spec.logo)
    rules = spec.pick(version).rules()
    term = Terminal(200, 50)
    frames: list[dict[str, Any]] = []
    last: dict[str, Any] | None = None
    for t, data in capture.chunks:
        term.feed(data)
        if getattr(term, "in_sync_frame", False):
            continue  # half a synchronized frame: the CLI has not finished drawing it
        seen = reading_of(rules, list(term.display), term.title or None)
        seen.pop("version", None)
        if seen != last:
            frames.append({"t": round(t, 3), **seen})
            last = seen
    return frames


def _print_frame(frame: dict[str, Any]) -> None:
    t = frame.get("t")
    head = f"t={t:.3f}s " if isinstance(t, (int, float)) else ""
    line = f"{head}{frame['state']}"
    if frame.get("spinner"):
        line += f"  spinner: {frame['spinner']}"
    if frame.get("draft"):
        line += f"  draft: {frame['draft']!r}"
    print(line)
    q = frame.get("question")
    if q is not None:
        print(f"  question ({q['kind']}, the rules' {q['dialog']}): {q['text']}")
        for o in q["options"]:
            print(f"    {'>' if o['selected'] else ' '} {o['digit']}. {o['label']}")
        detail = question_detail_text(q["detail"])
        if detail:
            print("  detail: " + detail.replace("\n", "\n          "))
    if frame.get("unknown_dialog"):
        print("  unknown dialog: " + frame["unknown_dialog"].replace("\n", "\n                  "))


def run(args: argparse.Namespace) -> int:
    from litbridge import drivers

    path = Path(args.file)
    cli = args.cli
    if cli is None and path.is_dir():
        from litbridge.replay import Capture

        try:
            cli = Capture.load(path).cli
        except (OSError, ValueError) as exc:
            common.eprint(f"litbridge explain: cannot load {path}: {exc}")
            return common.EXIT_USAGE
    if cli is None:
        common.eprint("litbridge explain: --cli is needed for a screen file (claude, codex, gemini)")
        return common.EXIT_USAGE
    spec = getattr(drivers.get_driver(cli), "CLI", None)
    if spec is None:
        screens = ", ".join(
            n for n in drivers.clis() if getattr(drivers.get_driver(n), "CLI", None) is not None
        )
        common.eprint(f"litbridge explain: {cli} has no screen rules (CLIs with rules: {screens})")
        return common.EXIT_USAGE
    try:
        if path.is_dir():
            frames = explain_recording(spec, path, args.cli_version)
        else:
            rows = screen_rows(path.read_text(encoding="utf-8"))
            frames = [reading_of(spec.pick(args.cli_version).rules(), rows)]
    except (OSError, ValueError) as exc:
        common.eprint(f"litbridge explain: cannot read {path}: {exc}")
        return common.EXIT_USAGE
    try:
        for frame in frames:
            if args.json:
                common.print_json(frame)
            else:
                _print_frame(frame)
        sys.stdout.flush()
    except BrokenPipeError:
        return common.closed_stdout()
    return common.EXIT_OK
