"""The daemon's open-file limit: raised to the hard limit at start, and the CLIs it starts get the limit it
started with back (the compiled vfork spawner and the fork path alike). Run in a child interpreter started
under a low soft limit, so the test's own process keeps its limits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

resource = pytest.importorskip("resource")

LOW = 256

CHILD = textwrap.dedent(
    """
    import json, os, resource, subprocess, sys
    from litbridge.pty import limits, spawner
    from litbridge.pty.base import child_preexec

    def soft_of(method):
        r, w = os.pipe()
        r2, w2 = os.dup(r), os.dup(w)  # fds >= 3 for the spawner's dup2s
        os.close(r), os.close(w)
        cmd = [sys.executable, "-c", "import resource; print(resource.getrlimit(resource.RLIMIT_NOFILE)[0])"]
        if method == "vfork":
            null = os.open(os.devnull, os.O_RDONLY)
            pid = spawner.vfork_spawn(cmd, dict(os.environ), None, (null, w2, w2))
            os.close(null), os.close(w2)
            out = os.read(r2, 100)
            os.waitpid(pid, 0)
        else:
            os.close(w2)
            out = subprocess.run(cmd, preexec_fn=child_preexec(), capture_output=True).stdout
        os.close(r2)
        return int(out)

    before = resource.getrlimit(resource.RLIMIT_NOFILE)
    raised = limits.raise_open_files()
    after = resource.getrlimit(resource.RLIMIT_NOFILE)
    kids = {"fork": soft_of("fork")}
    if spawner.spawn_method() == "vfork":
        kids["vfork"] = soft_of("vfork")
    print(json.dumps({"before": before, "raised": raised, "after": after, "kids": kids}))
    """
)


def test_the_daemon_raises_its_open_file_limit_and_its_clis_get_theirs_back() -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard <= LOW:
        pytest.skip(f"the hard open-file limit is {hard}: nothing to raise")

    def low() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (LOW, hard))

    out = subprocess.run(
        [sys.executable, "-c", CHILD],
        preexec_fn=low,
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ,
    )
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["before"][0] == LOW
    assert got["raised"] is not None and got["raised"][0] == LOW
    assert got["after"][0] > LOW and got["after"][0] == got["raised"][1]
    assert got["after"][1] == got["before"][1]  # the hard limit is left alone
    assert got["kids"]["fork"] == LOW
    if "vfork" in got["kids"]:  # Linux with the compiled spawner
        assert got["kids"]["vfork"] == LOW, "the compiled spawner's child kept the daemon's raised limit"


def test_raising_an_open_file_limit_already_at_its_ceiling_does_nothing() -> None:
    """A second call (or a daemon whose soft limit is its hard one) changes nothing and says so."""
    code = (
        "from litbridge.pty import limits; import resource; limits.raise_open_files(); "
        "print(limits.raise_open_files(), resource.getrlimit(resource.RLIMIT_NOFILE)[0] > 0)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["None", "True"]
