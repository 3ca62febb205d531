"""The Rust `vt100` crate (what lit-bridge-rs uses) as a benchmark peer, built offline from Debian's sources.

`benchmarks/vt100_bench/` is a tiny Cargo project (its own source only). It is built with cargo `--offline`
against the crate sources Debian ships (`apt-get install librust-vt100-dev` puts them in
/usr/share/cargo/registry), in a build folder under the test cache, never inside the repository. Where that is
not possible `build()` returns None and `why_not` says why, so the benchmarks skip that column with a reason.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import tempfile
from functools import cache
from pathlib import Path

from fetch_fixtures import CACHE

HERE = Path(__file__).resolve().parent

REGISTRY = Path("/usr/share/cargo/registry")
why_not = ""


@cache
def build() -> Path | None:
    """Path of the release binary, building it on first use; None (see `why_not`) if it cannot be built."""
    global why_not
    cargo = shutil.which("cargo")
    if cargo is None:
        why_not = "cargo not installed"
        return None
    if not any(REGISTRY.glob("vt100-*")):
        why_not = f"no vt100 crate sources in {REGISTRY} (apt-get install librust-vt100-dev)"
        return None
    work = CACHE / "vt100-bench"
    (work / "src").mkdir(parents=True, exist_ok=True)
    (work / ".cargo").mkdir(exist_ok=True)
    for rel in ("Cargo.toml", "src/main.rs"):
        src = (HERE / "vt100_bench" / rel).read_bytes()
        dst = work / rel
        if not dst.exists() or dst.read_bytes() != src:
            dst.write_bytes(src)
    (work / ".cargo" / "config.toml").write_text(
        f'[source.crates-io]\nreplace-with = "debian"\n[source.debian]\ndirectory = "{REGISTRY}"\n'
    )
    proc = subprocess.run(
        [cargo, "build", "--release", "--offline", "--quiet"],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=900,
    )
    binary = work / "target" / "release" / "vt100-bench"
    if proc.returncode != 0 or not binary.exists():
        why_not = f"cargo build failed: {proc.stderr.strip()[-400:]}"
        return None
    return binary


class Vt100Input:
    """PTY reads written once to a temp file in the harness's record format; `time(reps)` runs the binary."""

    def __init__(self, binary: Path, reads: list[bytes]) -> None:
        self.binary = binary
        fd, name = tempfile.mkstemp(prefix="vt100-reads-", suffix=".bin")
        with os.fdopen(fd, "wb") as fh:
            for r in reads:
                fh.write(struct.pack("<I", len(r)))
                fh.write(r)
        self.path = Path(name)

    def time(self, reps: int) -> float:
        """Seconds for `reps` timed passes over all reads (one untimed warm-up pass first)."""
        out = subprocess.run(
            [str(self.binary), str(self.path), str(reps)],
            capture_output=True,
            text=True,
            check=True,
            timeout=600,
        )
        return float(out.stdout.split()[0])

    def close(self) -> None:
        self.path.unlink(missing_ok=True)
