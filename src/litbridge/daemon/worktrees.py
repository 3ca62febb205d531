"""Git worktrees for sessions: `create{worktree}` runs the CLI in its own checkout on its own branch.

A session's worktree is `<repo toplevel>/.litbridge/worktrees/<name>` (or `$LITBRIDGE_WORKTREE_ROOT/<repo
dir name>/<name>`) on a new branch `litbridge/<name>` (or the branch the client named), made from the
repository's HEAD. It is removed again when its session ends, but only when it is clean (no uncommitted
changes, no untracked files); the branch is always kept, so commits are never lost. Every git call is an
asyncio subprocess: the daemon's loop never waits on git.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
from dataclasses import dataclass
from typing import Any

from litbridge.protocol.spec import ProtocolError

log = logging.getLogger(__name__)

ROOT_ENV = "LITBRIDGE_WORKTREE_ROOT"
IN_REPO_ROOT = os.path.join(".litbridge", "worktrees")  # under the repository's top level
EXCLUDE_LINE = "/.litbridge/"  # added to the repository's .git/info/exclude with the first worktree
BRANCH_PREFIX = "litbridge/"
GIT_TIMEOUT = 300.0  # seconds; a checkout of a large repository is slow, a hung git must not hang a command
ERROR_CODE = "worktree_failed"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_GIT_ENV_DROP = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_PREFIX")


class WorktreeError(ProtocolError):
    """A worktree could not be made (code `worktree_failed`) or was asked for badly (`bad_field`); nothing
    was left behind. A ProtocolError, so the daemon answers it as `error{code,message}`."""

    def __init__(self, message: str, code: str = ERROR_CODE) -> None:
        super().__init__(code, message)


@dataclass
class Worktree:
    path: str
    branch: str
    repo: str  # the main checkout's top level, where git worktree commands run
    base: str  # the commit the branch was made at
    excluded: str | None = None  # the info/exclude file this create added our line to (undone by discard)

    def info(self) -> dict[str, str]:
        """The wire form (`ready.worktree`, `list[].worktree`)."""
        return {"path": self.path, "branch": self.branch}


async def _git(*args: str, cwd: str, check: bool = True) -> tuple[int, str]:
    """Run git; -> (exit status, stdout). stderr becomes the error message when `check` is set."""
    env = {k: v for k, v in os.environ.items() if k not in _GIT_ENV_DROP}
    env.update(GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    try:
        proc = await asyncio.create_subprocess_exec(
            "git",
            *args,
            cwd=cwd,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except FileNotFoundError as exc:
        if not _is_dir(cwd):
            raise WorktreeError(f"working directory {cwd} does not exist", "bad_field") from exc
        raise WorktreeError("git is not installed (not found on the daemon's PATH)") from exc
    except OSError as exc:
        raise WorktreeError(f"cannot run git in {cwd}: {exc}") from exc
    try:
        out, err = await asyncio.wait_for(proc.communicate(), GIT_TIMEOUT)
    except BaseException:  # timeout or cancelled: never leave a git running on its own
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        raise
    rc = proc.returncode if proc.returncode is not None else -1
    if check and rc != 0:
        text = err.decode(errors="replace").strip() or out.decode(errors="replace").strip()
        raise WorktreeError(f"git {args[0]} failed: {text or f'exit status {rc}'}")
    return rc, out.decode(errors="replace")


def worktree_name(key: str) -> str:
    """The session key as a path and branch component; `bad_field` when it cannot be one (so `../x`, `a/b`
    or `a:b` never become paths outside the root)."""
    if not _NAME.fullmatch(key) or ".." in key or key.endswith((".lock", ".")):
        raise WorktreeError(
            f"create: session '{key}' cannot name a worktree: a worktree's session name uses only letters, "
            "digits, '.', '_' and '-', starts with a letter or digit, and has no '..' (and no channel id)",
            "bad_field",
        )
    return key


async def _branch_ok(branch: str, cwd: str) -> None:
    if not branch or branch.startswith("-") or branch.strip() != branch:
        raise WorktreeError(f"create: worktree branch '{branch}' is not a valid branch name", "bad_field")
    rc, _ = await _git("check-ref-format", f"refs/heads/{branch}", cwd=cwd, check=False)
    if rc != 0:
        raise WorktreeError(f"create: worktree branch '{branch}' is not a valid branch name", "bad_field")


def root_for(toplevel: str) -> str:
    """Where a repository's session worktrees go: `$LITBRIDGE_WORKTREE_ROOT/<repo dir name>` when set, else
    `<toplevel>/.litbridge/worktrees`."""
    configured = os.environ.get(ROOT_ENV)
    if configured:
        return os.path.join(os.path.abspath(os.path.expanduser(configured)), os.path.basename(toplevel))
    return os.path.join(toplevel, IN_REPO_ROOT)


class Worktrees:
    """Makes and removes session worktrees; one git operation per repository at a time (git's own locks
    would otherwise fail concurrent creates, and the exclude file is read-modify-write)."""

    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}

    def _lock(self, repo: str) -> asyncio.Lock:
        return self._locks.setdefault(repo, asyncio.Lock())

    async def create(self, working_dir: str, key: str, request: Any, allow_dirty: bool = False) -> Worktree:
        """A worktree for session `key` of the repository at `working_dir`; `request` is the create's
        `worktree` field (true, or the branch name). Raises WorktreeError; on error nothing is left."""
        name = worktree_name(key)
        if isinstance(request, str):
            branch = request
        else:
            branch = BRANCH_PREFIX + name
        if not _is_dir(working_dir):
            raise WorktreeError(f"create: working_dir {working_dir} is not a directory", "bad_field")
        rc, out = await _git("rev-parse", "--show-toplevel", cwd=working_dir, check=False)
        if rc != 0:
            raise WorktreeError(
                f"create: a worktree was asked for, but {working_dir} is not in a git repository"
            )
        toplevel = out.strip()
        if not toplevel:
            raise WorktreeError(f"{working_dir} is inside a git directory, not a working tree")
        await _branch_ok(branch, toplevel)
        root = root_for(toplevel)
        path = os.path.join(root, name)
        async with self._lock(toplevel):
            rc, _ = await _git("rev-parse", "--verify", "--quiet", "HEAD^{commit}", cwd=toplevel, check=False)
            if rc != 0:
                raise WorktreeError(f"the repository at {toplevel} has no commit yet to branch from")
            _, base = await _git("rev-parse", "HEAD", cwd=toplevel)
            base = base.strip()
            rc, _ = await _git(
                "show-ref", "--verify", "--quiet", f"refs/heads/{branch}", cwd=toplevel, check=False
            )
            if rc == 0:
                raise WorktreeError(
                    f"branch '{branch}' already exists in {toplevel}; name another branch (`--worktree "
                    "BRANCH`) or delete it"
                )
            if _exists(path):
                raise WorktreeError(
                    f"worktree path {path} already exists (kept from an earlier session?); remove it "
                    f"(`git worktree remove {path}`) or use another session name"
                )
            in_repo = root == os.path.join(toplevel, IN_REPO_ROOT)
            if not allow_dirty:
                changes = await _changes(toplevel, skip_ours=in_repo)
                if changes:
                    raise WorktreeError(
                        f"{toplevel} has uncommitted changes or untracked files ({_count(changes)}); the "
                        "worktree is made from HEAD and would not have them: commit or stash them, or "
                        "allow it (create `worktree_allow_dirty`, `litbridge create --allow-dirty`)"
                    )
            excluded = await self._exclude(toplevel) if in_repo else None
            wt = Worktree(path, branch, toplevel, base, excluded)
            try:
                await _git("worktree", "add", "-b", branch, "--", path, base, cwd=toplevel)
            except BaseException:
                _tidy(wt)
                raise
        log.info("worktree %s made on branch %s (from %s)", path, branch, base[:12])
        return wt

    async def _exclude(self, toplevel: str) -> str | None:
        """Add `/.litbridge/` to the repository's info/exclude (once), so its worktrees are not untracked files
        in the main checkout. -> the file, when this call added the line."""
        _, out = await _git("rev-parse", "--git-path", "info/exclude", cwd=toplevel)
        return _add_exclude(os.path.join(toplevel, out.strip()))

    async def discard(self, wt: Worktree) -> None:
        """Undo a create whose CLI did not start: remove the worktree (when clean) and its branch (when it
        still points where it was made), so nothing of the failed create is left."""
        async with self._lock(wt.repo):
            try:
                await _git("worktree", "remove", "--", wt.path, cwd=wt.repo)
                await _git("update-ref", "-d", f"refs/heads/{wt.branch}", wt.base, cwd=wt.repo)
            except WorktreeError as exc:
                log.warning("worktree %s of a failed create kept: %s", wt.path, exc.message)
                return
            _tidy(wt)

    async def release(self, wt: Worktree) -> dict[str, Any]:
        """The session ended: remove the worktree when clean, else keep it. The branch stays either way.
        -> the wire form with `removed` (and `reason` when kept)."""
        out: dict[str, Any] = {**wt.info(), "removed": False}
        try:
            async with self._lock(wt.repo):
                if not _is_dir(wt.path):
                    out["reason"] = "the worktree directory no longer exists"
                    await _git("worktree", "prune", cwd=wt.repo, check=False)
                    return out
                changes = await _changes(wt.path)
                if changes:
                    out["reason"] = f"it has uncommitted changes or untracked files ({_count(changes)})"
                    return out
                await _git("worktree", "remove", "--", wt.path, cwd=wt.repo)
                _tidy(wt, keep_exclude=True)
        except WorktreeError as exc:
            out["reason"] = exc.message
            return out
        except OSError as exc:
            out["reason"] = str(exc)
            return out
        out["removed"] = True
        log.info("worktree %s removed (clean); branch %s kept", wt.path, wt.branch)
        return out


_EXCLUDE_BLOCK = f"# litbridge session worktrees\n{EXCLUDE_LINE}\n"

# Local file-system calls on small files and single stats (microseconds): kept synchronous, unlike git.


def _is_dir(path: str) -> bool:
    return os.path.isdir(path)


def _exists(path: str) -> bool:
    return os.path.lexists(path)


def _add_exclude(exclude: str) -> str | None:
    """Append our block to `exclude` unless the line is there; -> `exclude` when added. Best effort: a
    read-only .git only costs the main checkout's listing."""
    try:
        try:
            with open(exclude, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except FileNotFoundError:
            text = ""
        if EXCLUDE_LINE in (line.strip() for line in text.splitlines()):
            return None
        os.makedirs(os.path.dirname(exclude), exist_ok=True)
        with open(exclude, "a", encoding="utf-8") as f:
            if text and not text.endswith("\n"):
                f.write("\n")
            f.write(_EXCLUDE_BLOCK)
        return exclude
    except OSError as exc:
        log.warning("could not add %s to %s: %s", EXCLUDE_LINE, exclude, exc)
        return None


def _tidy(wt: Worktree, keep_exclude: bool = False) -> None:
    """After a worktree is gone: the directories we made for it when now empty (`.litbridge/worktrees` and
    `.litbridge`, or the configured root's repository directory), and, for an undone create, the exclude
    line it added."""
    root = os.path.dirname(wt.path)
    ours = [root, os.path.dirname(root)] if root == os.path.join(wt.repo, IN_REPO_ROOT) else [root]
    for d in ours:
        try:
            os.rmdir(d)  # only when empty
        except OSError:
            return  # other worktrees are there: they still need the exclude line
    if wt.excluded and not keep_exclude:
        try:
            with open(wt.excluded, encoding="utf-8") as f:
                text = f.read()
            if text.endswith(_EXCLUDE_BLOCK):
                with open(wt.excluded, "w", encoding="utf-8") as f:
                    f.write(text[: -len(_EXCLUDE_BLOCK)])
        except OSError as exc:
            log.debug("exclude line left in %s: %s", wt.excluded, exc)


async def _changes(tree: str, skip_ours: bool = False) -> list[str]:
    """`git status` lines of a checkout: modified, staged, deleted, untracked (ignored files do not count).
    `skip_ours`: leave out `.litbridge/` (our worktrees, before the exclude line is there)."""
    _, out = await _git("status", "--porcelain", "--untracked-files=normal", cwd=tree)
    entries = [line for line in out.splitlines() if line.strip()]
    if skip_ours:
        entries = [e for e in entries if not e[3:].strip('"').startswith(".litbridge/")]
    return entries


def _count(entries: list[str]) -> str:
    return f"{len(entries)} path" + ("" if len(entries) == 1 else "s")
