"""The record sources: an append-only JSONL file (partial lines, truncation, replacement, a late file), a JSON
document rewritten whole, and each CLI's reader on top of `JsonlFile` (Codex's used to miss truncation and
replacement, Gemini's a chat file that appeared after it was pinned to skip history)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from litbridge.drivers.claude.transcript import TranscriptTailer
from litbridge.drivers.codex import rollout as ro
from litbridge.drivers.gemini.chat import ChatTailer
from litbridge.drivers.records import JsonDocument, JsonlFile, jsonl

ROLLOUT = "rollout-2026-12-01T01-37-39-01a22f40-19a1-7521-9421-1e69dd7362a3.jsonl"


def _line(n: int) -> bytes:
    return orjson.dumps({"n": n}) + b"\n"


def _ns(entries: list[dict]) -> list[int]:
    return [e["n"] for e in entries]


# ---------------------------------------------------------------------------------------------- JSONL


def test_jsonl_partial_last_line_waits_for_its_newline(tmp_path: Path) -> None:
    f = tmp_path / "r.jsonl"
    f.write_bytes(_line(1) + b'{"n": ')
    src = JsonlFile(f)
    assert _ns(src.poll()) == [1]
    assert src.poll() == []
    with open(f, "ab") as fh:
        fh.write(b"2}")
    assert src.poll() == []  # still no newline
    with open(f, "ab") as fh:
        fh.write(b"\n" + _line(3))
    assert _ns(src.poll()) == [2, 3] and src.corrupt_lines == 0


def test_jsonl_truncated_in_place_is_read_again_from_the_start(tmp_path: Path) -> None:
    f = tmp_path / "r.jsonl"
    f.write_bytes(_line(1) + _line(2) + _line(3))
    src = JsonlFile(f)
    assert _ns(src.poll()) == [1, 2, 3]
    ino = f.stat().st_ino
    with open(f, "r+b") as fh:  # the same file (same inode), cut short and written again
        fh.truncate(0)
        fh.write(_line(7))
    assert f.stat().st_ino == ino
    assert _ns(src.poll()) == [7]


def test_jsonl_replaced_by_a_longer_file_is_read_from_its_start(tmp_path: Path) -> None:
    """A new inode under the pinned name, already longer than what was read: size alone would not tell."""
    f = tmp_path / "r.jsonl"
    f.write_bytes(_line(1))
    src = JsonlFile(f)
    assert _ns(src.poll()) == [1]
    new = tmp_path / "r.jsonl.tmp"
    new.write_bytes(_line(10) + _line(11) + _line(12))
    os.replace(new, f)
    assert _ns(src.poll()) == [10, 11, 12]
    assert src.poll() == []


def test_jsonl_late_file_is_read_from_its_start_even_when_history_is_skipped(tmp_path: Path) -> None:
    f = tmp_path / "later" / "r.jsonl"
    src = JsonlFile(f, from_start=False)  # resume: what the file holds at the pin is history
    assert src.poll() == []
    f.parent.mkdir()
    f.write_bytes(_line(1) + _line(2))  # it appeared after the pin: all of it is new
    assert _ns(src.poll()) == [1, 2]
    existing = JsonlFile(f, from_start=False)
    with open(f, "ab") as fh:
        fh.write(_line(3))
    assert _ns(existing.poll()) == [3]


def test_jsonl_corrupt_lines_are_counted_and_skipped(tmp_path: Path) -> None:
    f = tmp_path / "r.jsonl"
    f.write_bytes(_line(1) + b"{broken\n" + b"[1, 2]\n" + b"\xff\xfe\n" + _line(2))
    src = JsonlFile(f)
    assert _ns(src.poll()) == [1, 2] and src.corrupt_lines == 3


# ---------------------------------------------------------------------------------------------- per CLI


def test_codex_rollout_reader_notices_truncation_and_replacement(tmp_path: Path) -> None:
    f = tmp_path / ROLLOUT
    f.write_bytes(_line(1) + _line(2))
    reader = ro.RolloutReader(f)
    assert _ns(reader.poll()) == [1, 2]
    f.write_bytes(_line(3))  # truncated and rewritten shorter
    assert _ns(reader.poll()) == [3]
    new = tmp_path / "next"
    new.write_bytes(_line(4) + _line(5) + _line(6))
    os.replace(new, f)  # replaced by a longer file
    assert _ns(reader.poll()) == [4, 5, 6]


def test_gemini_chat_tailer_reads_a_file_that_appears_after_the_pin(tmp_path: Path) -> None:
    f = tmp_path / "session-2026-12-01T01-42-8f720737.jsonl"
    tailer = ChatTailer(f, from_start=False)
    assert tailer.poll() == []
    f.write_bytes(b'{"sessionId": "8f720737"}\n{"id": "a", "type": "user", "content": "hi"}\n')
    assert [line.get("id") for line in tailer.poll()] == [None, "a"]


def test_gemini_chat_tailer_notices_a_replaced_file(tmp_path: Path) -> None:
    f = tmp_path / "session-2026-12-01T01-42-8f720737.jsonl"
    f.write_bytes(_line(1))
    tailer = ChatTailer(f)
    assert _ns(tailer.poll()) == [1]
    new = tmp_path / "next"
    new.write_bytes(_line(2) + _line(3))
    os.replace(new, f)
    assert _ns(tailer.poll()) == [2, 3]


def test_claude_tailer_is_a_jsonl_file_pinned_by_session_id(tmp_path: Path) -> None:
    t = TranscriptTailer(tmp_path, "sid", from_start=True)
    assert isinstance(t, JsonlFile) and t.path == tmp_path / "sid.jsonl"
    (tmp_path / "sid.jsonl").write_bytes(_line(1))
    assert _ns(t.poll()) == [1]


# ---------------------------------------------------------------------------------------------- rewritten JSON


def _write_doc(path: Path, messages: list[dict], *, atomic: bool) -> None:
    data = json.dumps({"version": 1, "messages": messages}).encode()
    if atomic:
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    else:
        with open(path, "r+b" if path.exists() else "wb") as fh:
            fh.truncate(0)
            fh.write(data)


def test_document_rewritten_in_place_hands_over_only_new_entries(tmp_path: Path) -> None:
    f = tmp_path / "messages.json"
    doc = JsonDocument(f, entries=lambda d: d["messages"])
    assert doc.poll() == []  # not there yet
    msgs = [{"id": "a", "text": "hi"}]
    _write_doc(f, msgs, atomic=False)
    assert doc.poll() == msgs
    assert doc.poll() == []  # unchanged: not read again
    msgs.append({"id": "b", "text": "hello"})
    _write_doc(f, msgs, atomic=False)  # rewritten whole, same inode
    assert doc.poll() == [{"id": "b", "text": "hello"}]
    msgs.append({"id": "c", "text": "bye"})
    _write_doc(f, msgs, atomic=True)  # an atomic rename over it
    assert doc.poll() == [{"id": "c", "text": "bye"}]
    _write_doc(f, [{"id": "x", "text": "new"}], atomic=True)  # a shorter list: started over
    assert doc.poll() == [{"id": "x", "text": "new"}]


def test_document_half_written_is_read_again_and_keyed_entries_may_update(tmp_path: Path) -> None:
    f = tmp_path / "messages.json"
    full = b'{"messages": [{"id": "a", "text": "par"}]}'
    f.write_bytes(
        full[:20].ljust(len(full))
    )  # caught mid-write (size and time stamp as the finished one will be)
    st = f.stat()
    doc = JsonDocument(f, entries=lambda d: d["messages"], key=lambda m: m["id"], updates=True)
    assert doc.poll() == [] and doc.bad_reads == 1
    with open(f, "r+b") as fh:
        fh.write(full)
    os.utime(
        f, ns=(st.st_atime_ns, st.st_mtime_ns)
    )  # nothing about the file looks changed: read again anyway
    assert doc.poll() == [{"id": "a", "text": "par"}]
    _write_doc(f, [{"id": "a", "text": "partial answer"}, {"id": "b", "text": "x"}], atomic=False)
    assert doc.poll() == [{"id": "a", "text": "partial answer"}, {"id": "b", "text": "x"}]
    resumed = JsonDocument(f, entries=lambda d: d["messages"], key=lambda m: m["id"], from_start=False)
    assert resumed.poll() == []
    _write_doc(f, [{"id": "a", "text": "partial answer"}, {"id": "b", "text": "x"}, {"id": "c"}], atomic=True)
    assert resumed.poll() == [{"id": "c"}]


def test_jsonl_poll_reads_what_is_there_and_nothing_from_a_folder_or_no_file(tmp_path: Path) -> None:
    """A poll reads the new bytes whole (a large append too), and a path that is a folder or not there yet
    gives nothing (never an error)."""
    assert JsonlFile(tmp_path).poll() == []  # a folder
    f = tmp_path / "big.jsonl"
    src = JsonlFile(f)
    assert src.poll() == []  # not there yet
    lines = [{"n": i, "pad": "x" * 1000} for i in range(3000)]  # 3 MB in one append
    f.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    assert src.poll() == lines
    assert src.poll() == []


def _count_opens(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    n = {"opens": 0}
    real = os.open

    def counted(*a: Any, **k: Any) -> int:
        n["opens"] += 1
        return real(*a, **k)

    monkeypatch.setattr(os, "open", counted)
    return n


@pytest.mark.parametrize("keep_open", [True, False], ids=["kept", "per-poll"])
def test_jsonl_keeps_its_descriptor_while_the_path_names_the_same_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keep_open: bool
) -> None:
    """Polls of a growing file open it once (kept open, POSIX) or once per poll (Windows, where an open handle
    would keep the CLI from replacing its file): the same entries either way. A replaced file is opened again
    and read from its start; a deleted one lets its descriptor go."""
    monkeypatch.setattr(jsonl, "KEEP_OPEN", keep_open)
    f = tmp_path / "r.jsonl"
    f.write_bytes(_line(1))
    src = JsonlFile(f)
    n = _count_opens(monkeypatch)
    assert _ns(src.poll()) == [1]
    for i in (2, 3):
        with open(f, "ab") as fh:
            fh.write(_line(i))
        assert _ns(src.poll()) == [i]
    assert src.poll() == []
    assert n["opens"] == (1 if keep_open else 4)
    kept = src._fd
    assert (kept is not None) == keep_open
    new = tmp_path / "r.jsonl.tmp"
    new.write_bytes(_line(7) + _line(8))
    os.replace(new, f)
    assert _ns(src.poll()) == [7, 8]
    if keep_open:
        assert n["opens"] == 2 and src._fd is not None
        assert os.fstat(src._fd).st_ino == f.stat().st_ino  # the new file's
    f.unlink()
    assert src.poll() == [] and src._fd is None and src.stamp is None
    f.write_bytes(_line(9))
    assert _ns(src.poll()) == [9]
    fd = src._fd
    src.close()
    assert src._fd is None
    if fd is not None:
        with pytest.raises(OSError):
            os.fstat(fd)  # closed


def test_jsonl_stamp_is_the_signature_of_what_the_poll_read(tmp_path: Path) -> None:
    """The poll's own stat stamps what it read in `signature()`'s form: the same stamp while nothing was written
    since, another once the file grew (what lets a follower skip its own stat per read)."""
    f = tmp_path / "r.jsonl"
    src = JsonlFile(f)
    assert src.poll() == [] and src.stamp is None and src.signature() is None
    f.write_bytes(_line(1))
    assert _ns(src.poll()) == [1]
    assert src.stamp == src.signature()
    with open(f, "ab") as fh:
        fh.write(_line(2))
    assert src.stamp != src.signature()
    assert _ns(src.poll()) == [2] and src.stamp == src.signature()
