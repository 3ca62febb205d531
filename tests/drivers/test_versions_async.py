"""A `create` never stalls the event loop on `<cli> --version`: the version is read in the driver's `prepare`,
in a worker thread, once per binary file (real path, size, mtime); concurrent creates share the one run."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from litbridge.drivers import versions
from litbridge.session import Session


def _slow_claude(tmp_path: Path, delay: float = 2.0) -> tuple[Path, Path]:
    calls = tmp_path / "calls"
    fake = tmp_path / "bin" / "claude"
    fake.parent.mkdir()
    fake.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = "--version" ]; then echo x >> "{calls}"; sleep {delay}; echo "2.1.328 (Claude Code)"; exit 0; fi\n'
        "exec sleep 30\n"
    )
    fake.chmod(0o755)
    return fake, calls


@pytest.mark.asyncio
async def test_create_keeps_the_loop_running_while_the_cli_prints_its_version(tmp_path: Path) -> None:
    fake, calls = _slow_claude(tmp_path)
    loop = asyncio.get_running_loop()
    gaps: list[float] = []
    stop = asyncio.Event()

    async def heartbeat() -> None:
        last = loop.time()
        while not stop.is_set():
            await asyncio.sleep(0.05)
            now = loop.time()
            gaps.append(now - last)
            last = now

    beat = asyncio.ensure_future(heartbeat())
    await asyncio.sleep(0.2)  # ticking before the create starts
    options = {"session": "v", "cli": str(fake), "working_dir": str(tmp_path), "env": {"HOME": str(tmp_path)}}
    s = Session("v", options, lambda ev: None)
    started = loop.time()
    try:
        await s.spawn_async()
        took = loop.time() - started
    finally:
        stop.set()
        await beat
        await s.kill()
    assert took >= 1.9  # the version was really waited for ...
    assert max(gaps) < 1.0, max(gaps)  # ... while the loop kept ticking
    assert s.driver.cli_version == "2.1.328"  # type: ignore[attr-defined]
    assert calls.read_text().count("x") == 1


@pytest.mark.asyncio
async def test_concurrent_creates_of_one_binary_run_its_version_once(tmp_path: Path) -> None:
    fake, calls = _slow_claude(tmp_path, delay=0.5)
    got = await asyncio.gather(*(versions.detect_version(str(fake)) for _ in range(4)))
    assert got == ["2.1.328"] * 4
    assert await versions.detect_version(str(fake)) == "2.1.328"  # cached
    assert versions.cached_version(str(fake)) == "2.1.328"
    assert calls.read_text().count("x") == 1
    assert await versions.detect_version(str(tmp_path / "missing")) is None
