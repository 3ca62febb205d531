"""`litbridge web --nats URL`: the read-only fleet view (sessions grouped by daemon) and its guards, against a
real nats-server and daemons."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import pytest
from test_fleet_client import BASH, joined, until

from litbridge.fleet.client import Fleet

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(240)]


async def test_fleet_web_view_lists_sessions_by_daemon(nats_server: Any, fleet_daemons: Any) -> None:
    _, d1 = await joined(nats_server.url, fleet_daemons, 2)
    async with Fleet.connect(nats_server.url) as fleet:
        await fleet.create("web-a", on="d0", **BASH)
        await fleet.create("web-b", on="d1", **BASH)
        await until(fleet.list, lambda s: len(s) == 2, "both sessions listed")
    proc = subprocess.Popen(  # noqa: ASYNC220 (a server that runs beside the test)
        [sys.executable, "-m", "litbridge", "web", "--nats", nats_server.url, "--print"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        link = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), 60)  # type: ignore[union-attr]
        assert "#code=" in link, (link, proc.stderr.read() if proc.poll() is not None else "")  # type: ignore[union-attr]
        base, code = link.strip().split("#code=")
        origin = base.rstrip("/")
        host = urlsplit(base).netloc
        async with aiohttp.ClientSession() as http:
            async with http.get(base) as page:
                assert page.status == 200 and "Content-Security-Policy" in page.headers
                assert "fleet.js" in await page.text()
            async with http.get(base, headers={"Host": f"evil.example:{urlsplit(base).port}"}) as rebound:
                assert rebound.status == 421  # DNS rebinding refused
            async with http.get(f"{origin}/fleet.json") as anon:
                assert anon.status == 401
            async with http.post(
                f"{origin}/login", json={"code": code}, headers={"Origin": "http://evil.example"}
            ) as x:
                assert x.status == 403  # cross-origin login refused
            async with http.post(f"{origin}/login", json={"code": code}, headers={"Origin": origin}) as ok:
                credential = (await ok.json())["credential"]
            async with http.post(f"{origin}/login", json={"code": code}, headers={"Origin": origin}) as again:
                assert again.status == 401  # the code is spent
            auth = {"X-Litbridge-Credential": credential, "Host": host}

            async def state() -> dict[str, Any]:
                async with http.get(f"{origin}/fleet.json", headers=auth) as r:
                    assert r.status == 200
                    return await r.json()

            body = await state()
            assert body["fleet"] == "default"
            by = {d["daemon"]: d for d in body["daemons"]}
            assert [s["name"] for s in by["d0"]["session_list"]] == ["web-a"]
            assert [s["name"] for s in by["d1"]["session_list"]] == ["web-b"]
            assert by["d0"]["available"] and by["d1"]["available"] and by["d1"]["host"]

            d1.kill()
            gone = await until(
                state,
                lambda b: not {d["daemon"]: d for d in b["daemons"]}["d1"]["available"],
                "d1 shown as gone",
            )
            d1_entry = {d["daemon"]: d for d in gone["daemons"]}["d1"]
            assert d1_entry["session_list"][0]["available"] is False
    finally:
        proc.terminate()
        proc.wait(30)
