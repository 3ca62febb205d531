"""`create{worktree}`: a session's CLI runs in its own git worktree on its own branch, over a real daemon and
real git in temporary repositories. The generic driver runs bash, so `pwd` in the session proves where it
runs. Kill removes a clean worktree (the branch stays) and keeps a dirty one; every bad input is a clear
error that leaves nothing behind (worktrees, branches, directories).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from lbd_helpers import WAIT, Conn, DaemonProc, bash_create, check_event, start_daemon

BASH = shutil.which("bash") or "/bin/bash"


def git(repo: Path | str, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True, timeout=WAIT
    ).stdout


def make_repo(base: Path, name: str = "repo") -> Path:
    """A repository with one commit (real path: git reports resolved paths)."""
    repo = base.resolve() / name
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.invalid")
    git(repo, "config", "user.name", "t")
    (repo / "README").write_text("hello\n")
    git(repo, "add", "README")
    git(repo, "commit", "-q", "-m", "first")
    return repo


def snapshot(repo: Path) -> tuple[str, str, list[str], str]:
    """What a failed create must not change: worktrees, branches, the .litbridge tree, the exclude file."""
    ours = repo / ".litbridge"
    files = sorted(str(p.relative_to(repo)) for p in ours.rglob("*")) if ours.exists() else []
    exclude = repo / ".git" / "info" / "exclude"
    return (
        git(repo, "worktree", "list", "--porcelain"),
        git(repo, "branch", "--list", "--format=%(refname)"),
        files,
        exclude.read_text() if exclude.exists() else "",
    )


def bash(key: str, cwd: Path | str, **extra: Any) -> dict[str, Any]:
    return bash_create(key, cli=BASH, working_dir=str(cwd), **extra)


@pytest.fixture(scope="module")
def wt_daemon(tmpdir_short: str) -> Iterator[DaemonProc]:
    d = start_daemon(os.path.join(tmpdir_short, "w.sock"), env={"LITBRIDGE_WORKTREE_ROOT": ""})
    yield d
    assert d.stop() == 0, d.log()


@pytest.fixture
def base() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="lbwt-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


async def connect(d: DaemonProc) -> tuple[Conn, dict[str, Any]]:
    c = await Conn.open(d.socket)
    return c, await c.wait("monitor_ready")


async def run(c: Conn, key: str, command: str) -> str:
    """Run a shell command in the session as a turn; its output."""
    acc = await c.request({"cmd": "send", "session": key, "content": command}, "accepted")
    assert acc["event"] == "accepted", acc
    done = await c.wait("complete", turn_id=acc["turn_id"])
    return str(done["content"])


@pytest.mark.asyncio
async def test_create_runs_in_a_worktree_and_clean_kill_removes_it(wt_daemon: DaemonProc, base: Path) -> None:
    repo = make_repo(base)
    c, hello = await connect(wt_daemon)
    assert "create.worktree" in hello["features"]
    ready = await c.request(bash("wt1", repo / ".", worktree=True), "ready")
    path = repo / ".litbridge" / "worktrees" / "wt1"
    assert ready["event"] == "ready", ready
    assert ready["worktree"] == {"path": str(path), "branch": "litbridge/wt1"}
    assert (await run(c, "wt1", "pwd")).strip() == str(path)
    assert (await run(c, "wt1", "git rev-parse --abbrev-ref HEAD")).strip() == "litbridge/wt1"
    items = {s["name"]: s for s in (await c.request({"cmd": "list"}, "sessions"))["sessions"]}
    assert items["wt1"]["worktree"] == {"path": str(path), "branch": "litbridge/wt1"}
    assert items["wt1"]["working_dir"] == str(path)
    again = await c.request(bash("wt1", repo, worktree="other"), "ready")  # a live key is reused as is
    assert again["reused"] is True and again["worktree"]["branch"] == "litbridge/wt1", again
    assert "refs/heads/other" not in git(repo, "branch", "--list", "--format=%(refname)")
    # the main checkout stays clean: .litbridge/ is excluded, and only once
    assert "/.litbridge/" in (repo / ".git" / "info" / "exclude").read_text().splitlines()
    assert git(repo, "status", "--porcelain") == ""
    # a commit made in the session survives the kill on its branch
    await run(c, "wt1", "echo x > made.txt && git add made.txt && git commit -qm made && echo ok")
    killed = await c.request({"cmd": "kill", "session": "wt1"}, "killed")
    assert killed["event"] == "killed", killed
    assert killed["worktree"] == {"path": str(path), "branch": "litbridge/wt1", "removed": True}
    assert not path.exists()
    assert str(path) not in git(repo, "worktree", "list")
    assert "made.txt" in git(repo, "ls-tree", "--name-only", "litbridge/wt1")
    await c.close()


@pytest.mark.asyncio
async def test_named_branch_dirty_kill_keeps_the_worktree(wt_daemon: DaemonProc, base: Path) -> None:
    repo = make_repo(base)
    (repo / "sub").mkdir()
    c, _ = await connect(wt_daemon)
    ready = await c.request(bash("wt2", repo / "sub", worktree="feature/x"), "ready")
    path = repo / ".litbridge" / "worktrees" / "wt2"
    assert ready["worktree"] == {"path": str(path), "branch": "feature/x"}
    assert (await run(c, "wt2", "pwd")).strip() == str(path)
    await run(c, "wt2", "echo draft > notes.txt; echo changed >> README; echo done")
    lines = (repo / ".git" / "info" / "exclude").read_text().splitlines()
    assert lines.count("/.litbridge/") == 1  # the second worktree of the repository adds no second line
    killed = await c.request({"cmd": "kill", "session": "wt2"}, "killed")
    wt = killed["worktree"]
    assert wt["removed"] is False and wt["path"] == str(path) and wt["branch"] == "feature/x"
    assert "uncommitted changes or untracked files (2 paths)" in wt["reason"]
    assert (path / "notes.txt").read_text() == "draft\n"
    assert str(path) in git(repo, "worktree", "list")
    assert "refs/heads/feature/x" in git(repo, "branch", "--list", "--format=%(refname)")
    # the same name again: the kept worktree is in the way, and the error says so
    again = await c.request(bash("wt2", repo, worktree="feature/y"), "ready")
    assert again["event"] == "error" and again["code"] == "worktree_failed", again
    assert str(path) in again["message"] and "already exists" in again["message"]
    await c.close()


@pytest.mark.asyncio
async def test_bad_inputs_are_refused_and_leave_nothing(wt_daemon: DaemonProc, base: Path) -> None:
    repo = make_repo(base)
    plain = base / "plain"
    plain.mkdir()
    git(repo, "branch", "taken")
    c, _ = await connect(wt_daemon)
    before = snapshot(repo)
    cases: list[tuple[dict[str, Any], str, str]] = [
        (bash("np", plain, worktree=True), "worktree_failed", "not in a git repository"),
        (bash("bx", repo, worktree="taken"), "worktree_failed", "branch 'taken' already exists"),
        (bash("../x", repo, worktree=True), "bad_field", "cannot name a worktree"),
        (bash("a/../../x", repo, worktree=True), "bad_field", "cannot name a worktree"),
        (bash(".hidden", repo, worktree=True), "bad_field", "cannot name a worktree"),
        (bash("ch", repo, worktree=True, channel_id="c1"), "bad_field", "cannot name a worktree"),
        (bash("bn", repo, worktree="bad..name"), "bad_field", "not a valid branch name"),
        (bash("bd", repo, worktree="-f"), "bad_field", "not a valid branch name"),
        (bash("be", repo, worktree=""), "bad_field", "not a valid branch name"),
        (bash("bt", repo, worktree=3), "bad_field", "must be boolean or string"),
        ({**bash("nf", repo, worktree=True), "cli": "/nonexistent/prog"}, "cli_not_found", "CLI not found"),
    ]
    for cmd, code, text in cases:
        err = await c.request(cmd, "ready")
        assert err["event"] == "error" and err["code"] == code, (cmd, err)
        assert text in err["message"], (cmd, err)
        assert snapshot(repo) == before, cmd
        assert not (base / "x").exists() and not (repo / ".litbridge" / "x").exists()
    # a worktree path already present
    (repo / ".litbridge" / "worktrees" / "here").mkdir(parents=True)
    err = await c.request(bash("here", repo, worktree=True), "ready")
    assert err["code"] == "worktree_failed" and "already exists" in err["message"], err
    assert git(repo, "worktree", "list", "--porcelain") == before[0]
    assert git(repo, "branch", "--list", "--format=%(refname)") == before[1]
    shutil.rmtree(repo / ".litbridge")
    # a dirty main checkout is refused unless allowed
    (repo / "README").write_text("edited\n")
    err = await c.request(bash("dirty", repo, worktree=True), "ready")
    assert err["code"] == "worktree_failed" and "uncommitted changes" in err["message"], err
    assert "worktree_allow_dirty" in err["message"]
    assert snapshot(repo) == before
    ready = await c.request(bash("dirty", repo, worktree=True, worktree_allow_dirty=True), "ready")
    assert ready["event"] == "ready" and ready["worktree"]["branch"] == "litbridge/dirty", ready
    assert (await run(c, "dirty", "cat README")).strip() == "hello"  # made from HEAD
    await c.request({"cmd": "kill", "session": "dirty"}, "killed")
    sessions = (await c.request({"cmd": "list"}, "sessions"))["sessions"]
    assert sessions == []
    await c.close()


@pytest.mark.asyncio
async def test_git_not_installed(tmpdir_short: str, base: Path) -> None:
    repo = make_repo(base)
    empty = base / "nobin"
    empty.mkdir()
    d = start_daemon(os.path.join(tmpdir_short, "g.sock"), env={"PATH": str(empty)})
    try:
        c, _ = await connect(d)
        err = await c.request(bash("nogit", repo, worktree=True), "ready")
        assert err["event"] == "error" and err["code"] == "worktree_failed", err
        assert "git is not installed" in err["message"]
        assert not (repo / ".litbridge").exists()
        ok = await c.request(bash("nogit", repo), "ready")  # without a worktree the create still works
        assert ok["event"] == "ready" and "worktree" not in ok
        await c.request({"cmd": "kill", "session": "nogit"}, "killed")
        await c.close()
    finally:
        assert d.stop() == 0, d.log()


@pytest.mark.asyncio
async def test_exited_session_worktree_removed_at_reap_when_clean(tmpdir_short: str, base: Path) -> None:
    repo = make_repo(base)
    root = base / "trees"
    d = start_daemon(
        os.path.join(tmpdir_short, "r.sock"),
        env={"LITBRIDGE_REAP_AFTER": "0.5", "LITBRIDGE_WORKTREE_ROOT": str(root)},
    )
    try:
        c, _ = await connect(d)
        clean = await c.request(bash("gone", repo, worktree=True), "ready")
        dirty = await c.request(bash("stays", repo, worktree=True), "ready")
        clean_path, dirty_path = root / "repo" / "gone", root / "repo" / "stays"
        assert clean["worktree"]["path"] == str(clean_path)
        assert dirty["worktree"]["path"] == str(dirty_path)
        assert not (repo / ".git" / "info" / "exclude").read_text().count("litbridge")  # root is outside
        await run(c, "stays", "touch scratch; echo ok")
        for key in ("gone", "stays"):
            await c.send({"cmd": "input", "session": key, "content": "exit"})
        reaped = {}
        for _ in range(2):
            ev = await c.wait("reaped_idle", timeout=WAIT)
            reaped[ev["session"]] = ev["worktree"]
        assert reaped["gone"]["removed"] is True and not clean_path.exists()
        assert reaped["stays"]["removed"] is False and (dirty_path / "scratch").exists()
        branches = git(repo, "branch", "--list", "--format=%(refname)")
        assert "refs/heads/litbridge/gone" in branches and "refs/heads/litbridge/stays" in branches
        # the daemon stopping treats its sessions' worktrees as kill does
        last = await c.request(bash("last", repo, worktree=True), "ready")
        assert last["event"] == "ready", last
        await c.close()
    finally:
        assert d.stop() == 0, d.log()
    assert not (root / "repo" / "last").exists()
    assert "refs/heads/litbridge/last" in git(repo, "branch", "--list", "--format=%(refname)")


def lb(d: DaemonProc, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "litbridge", *args, "--socket", d.socket],
        capture_output=True,
        text=True,
        timeout=WAIT * 3,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
    )


def test_cli_create_worktree_list_kill(wt_daemon: DaemonProc, base: Path) -> None:
    repo = make_repo(base)
    path = repo / ".litbridge" / "worktrees" / "clitree"
    shell = ["--cli", BASH, "--arg=--norc", "--arg=--noprofile", "--env", "PS1=$ "]
    out = lb(wt_daemon, "create", "clitree", *shell, "--worktree", "--json", cwd=repo)
    assert out.returncode == 0, out.stderr
    ready = orjson.loads(out.stdout)
    check_event(ready)
    assert ready["worktree"] == {"path": str(path), "branch": "litbridge/clitree"}
    out = lb(wt_daemon, "create", "clinamed", *shell, "--worktree=topic", cwd=repo)
    assert out.returncode == 0, out.stderr
    assert f"in worktree {repo / '.litbridge' / 'worktrees' / 'clinamed'} (branch topic)" in out.stdout
    table = lb(wt_daemon, "list")
    header, *rows = table.stdout.splitlines()
    assert header.split()[-1] == "BRANCH"
    branches = {r.split()[0]: r.split()[-1] for r in rows}
    assert branches["clitree"] == "litbridge/clitree" and branches["clinamed"] == "topic"
    (path / "wip.txt").write_text("wip\n")
    out = lb(wt_daemon, "kill", "clitree")
    assert out.returncode == 0, out.stderr
    assert f"worktree {path} kept: it has uncommitted changes or untracked files (1 path)" in out.stdout
    out = lb(wt_daemon, "kill", "clinamed")
    assert "removed (branch topic kept)" in out.stdout, out.stdout
    # a refused create exits non-zero with the daemon's message
    out = lb(wt_daemon, "create", "clitree", *shell, "--worktree", cwd=repo)
    assert out.returncode != 0 and "already exists" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.asyncio
async def test_client_refuses_worktree_on_a_daemon_without_the_feature(tmp_path: Path) -> None:
    """An older daemon ignores `worktree` and would start the CLI in the main checkout: the client refuses
    instead, sending nothing."""
    from litbridge.client import Client, LitbridgeError

    c = Client(str(tmp_path / "none.sock"))
    c.server_info = {"event": "monitor_ready", "commands": ["create"], "events": ["ready"]}
    with pytest.raises(LitbridgeError) as err:
        await c.create("x", "bash", worktree=True)
    assert err.value.code == "unsupported" and "too old for create worktree" in err.value.message
    c.server_info["features"] = ["create.worktree"]
    assert c.supports("create.worktree")
