"""Two sessions of one daemon created at once on a user's fresh opencode data folder: the second one's opencode
starts only once the first one's start (which creates and migrates the database) is over. Driver only, no
binary: the real race is intermittent (a second opencode started during the migration can hang at its start)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from litbridge.drivers.opencode.driver import OpencodeDriver

pytestmark = pytest.mark.asyncio


def driver(home: Path) -> OpencodeDriver:
    loop = asyncio.get_running_loop()
    host: Any = SimpleNamespace(
        key="s", loop=loop, log=logging.getLogger("test"), terminal=None, call_later=loop.call_later
    )
    return OpencodeDriver(host, {"cli": "opencode", "working_dir": str(home), "env": {"HOME": str(home)}})


async def test_a_second_start_on_a_database_being_created_waits_for_the_first(tmp_path: Path) -> None:
    first, second, other = driver(tmp_path), driver(tmp_path), driver(tmp_path / "elsewhere")
    await asyncio.wait_for(first.prepare(), 5)  # no database yet: this one creates it
    waiting = asyncio.create_task(second.prepare())
    await asyncio.wait_for(other.prepare(), 5)  # another HOME's database is not waited for
    await asyncio.sleep(0.3)
    assert not waiting.done(), "the second start must wait for the first one's"
    first.on_exit(0)  # the first start is over (here: it exited; `startup` ending does the same)
    await asyncio.wait_for(waiting, 5)
    third = driver(tmp_path)
    await asyncio.wait_for(third.prepare(), 5)  # nobody is creating it now
    for d in (second, third, other):
        d.on_exit(0)
