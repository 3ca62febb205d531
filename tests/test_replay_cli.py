"""The benchmarks' replaying fake CLI writes a recording's transcript the way Claude Code does: in batches."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import replay_cli  # tests/fakes (pyproject's pythonpath)

CAPTURES = Path(__file__).parent / "fixtures" / "captures" / "claude"
RECORDINGS = (
    "s02_simple_qa",
    "s03_long_markdown_response",
    "s08a_first_session",
    "s02b_simple_qa_classic_tui",
)


@pytest.mark.parametrize("name", RECORDINGS)
def test_a_turns_end_is_one_write(name: str) -> None:
    """Every `turn_duration` line goes out in the same write as the `end_turn` line the recording saw land with it,
    and no line is lost or reordered by the batching."""
    events, _, _ = replay_cli.load_timeline(CAPTURES / name)
    batches = [e for e in events if e[1].startswith("jsonl:")]
    ends = [e for e in batches if "turn_duration" in e[3].split(",")]
    assert ends, "the recording ends no turn"
    for _, _, lines, tags in ends:
        assert "end_turn" in tags.split(",")
        assert lines.count(b"\n") == len(tags.split(","))  # one tag per line
    watched = [
        json.loads(x) for x in (CAPTURES / name / "transcript_watch.jsonl").read_text().splitlines() if x
    ]
    assert sum(b[2].count(b"\n") for b in batches) == len(watched)
    written = b"".join(b[2] for b in batches if b[1].endswith(batches[0][1][len("jsonl:") :]))
    original = next(
        (CAPTURES / name / "transcripts").glob(f"*/{batches[0][1][len('jsonl:') :]}")
    ).read_bytes()
    assert original.startswith(written)


def test_a_batch_is_written_once_and_logged_per_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "log.jsonl"
    player = replay_cli.Player(str(log), tmp_path, {})
    writes: list[int] = []
    real_write = os.write

    def counting_write(fd: int, data: bytes) -> int:
        if fd != player.log_fd:
            writes.append(fd)
        return real_write(fd, data)

    monkeypatch.setattr(replay_cli.os, "write", counting_write)
    player.jsonl("abc.jsonl", b'{"a":1}\n{"b":2}\n', 1.5, "end_turn,turn_duration")
    assert len(writes) == 1
    assert (tmp_path / "abc.jsonl").read_bytes() == b'{"a":1}\n{"b":2}\n'
    entries = [json.loads(x) for x in log.read_text().splitlines()]
    assert [e["tag"] for e in entries] == ["end_turn", "turn_duration"]
    assert entries[0]["m"] == entries[1]["m"] and entries[0]["k"] == "jsonl"


def test_options_take_both_spellings_and_ignore_the_real_clis_flags() -> None:
    """The fake's own option parsing (not `argparse`, for its start-up cost): `--opt value` and `--opt=value`,
    typed; a flag meant for the real CLI is ignored, as `parse_known_args` did."""
    opts = replay_cli.Options(
        [
            "--capture=/c",
            "--dangerously-skip-permissions",
            "--session-id",
            "u-1",
            "--speed",
            "2.5",
            "--exit-at-end",
        ]
    )
    assert (opts.capture, opts.session_id, opts.speed, opts.exit_at_end) == ("/c", "u-1", 2.5, True)
    assert (opts.ticks, opts.no_transcript) == (0, False)
    assert replay_cli.Options(["--ticks=3", "--interval", "0.5"]).ticks == 3
    with pytest.raises(SystemExit, match="--log needs a value"):
        replay_cli.Options(["--log"])


def test_starting_the_fake_imports_only_what_it_runs() -> None:
    """A scale benchmark starts a thousand fakes: `argparse`, `pathlib` and `typing` were most of a start's CPU."""
    import subprocess
    import sys

    code = "import sys, replay_cli; print(sorted({'argparse', 'pathlib', 'typing'} & set(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-S", "-c", code],
        cwd=Path(replay_cli.__file__).parent,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.strip() == "[]"
