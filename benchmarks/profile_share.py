"""What share of a daemon's CPU the screen rules and the streaming tick take, from a py-spy profile of the daemon.

`bench_daemon.py`'s scale test takes the profile over its turn window when `LITBRIDGE_SCALE_PROFILE=DIR` is set:
`py-spy record --pid <daemon> --gil --format raw` from the first send to the last turn's end, written to
`DIR/scale-N.txt`. `--gil` keeps only the samples of a thread holding the GIL, i.e. the daemon's Python and
compiled-core CPU, not its threads blocked on a lock or in `epoll_wait` (without it, the idle spawner threads and
the event loop's wait made up most of the samples). A sample counts as "rules + tick" when the engine's
`reading` (the driver's rules on a frame) or `stream` (the tick's response text) is on its stack, the same two
spans `bench_screen_rules.py` times on a replay.

Run on any raw profile: `python benchmarks/profile_share.py DIR/scale-100.txt` prints the share and the top
frames; `--functions DIR/scale-300.txt [NAME...]` each function's inclusive share, or a function's callees'.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

RULES = re.compile(r"\.(reading|stream) \(litbridge/drivers/engine\.py:")


@dataclass
class Share:
    samples: int = 0
    rules_tick: int = 0
    reading: int = 0
    stream: int = 0
    top: Counter[str] = field(default_factory=Counter)

    @property
    def pct(self) -> float:
        return 100 * self.rules_tick / self.samples if self.samples else 0.0


def share(raw: str) -> Share:
    """The counts of a py-spy `--format raw` profile (one `frame;frame;... count` line per distinct stack)."""
    out = Share()
    for line in raw.splitlines():
        stack, _, count = line.rstrip().rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = stack.split(";")
        out.samples += n
        kinds = {m.group(1) for f in frames for m in [RULES.search(f)] if m}
        if kinds:
            out.rules_tick += n
            out.stream += n if "stream" in kinds else 0
            out.reading += n if kinds == {"reading"} else 0
        ours = [f for f in frames if "litbridge/" in f]
        out.top[(ours[-1] if ours else frames[-1]).split(" (")[0]] += n
    return out


class Profiler:
    """py-spy on a running daemon, from `start()` to `stop()` (SIGINT: py-spy then writes the profile)."""

    def __init__(self, pid: int, path: Path, rate: int = 500) -> None:
        self.pid, self.path, self.rate = pid, path, rate
        self.proc: subprocess.Popen[bytes] | None = None

    @staticmethod
    def missing() -> str | None:
        """Why a profile cannot be taken here, or None."""
        if shutil.which("py-spy") is None and not (Path(sys.executable).parent / "py-spy").exists():
            return "py-spy is not installed (pip install py-spy)"
        return None

    def start(self) -> None:
        exe = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        argv = [exe, "record", "--pid", str(self.pid), "--gil", "--rate", str(self.rate)]
        argv += ["--format", "raw", "--output", str(self.path)]
        native = bool(os.environ.get("LITBRIDGE_PROFILE_NATIVE"))  # the compiled core's own frames too
        if native:
            argv.append("--native")  # py-spy reads native stacks only from a paused process: blocking
        elif not os.environ.get("LITBRIDGE_PROFILE_BLOCKING"):
            argv.append("--nonblocking")
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def stop(self) -> Share | None:
        if self.proc is None:
            return None
        self.proc.send_signal(signal.SIGINT)
        try:
            _, err = self.proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
            return None
        if not self.path.exists():
            sys.stderr.write(f"py-spy wrote no profile: {err.decode(errors='replace')[-500:]}\n")
            return None
        return share(self.path.read_text())


def profile_dir() -> Path | None:
    """`LITBRIDGE_SCALE_PROFILE`, the folder the scale test writes its profiles to, or None (no profile)."""
    value = os.environ.get("LITBRIDGE_SCALE_PROFILE", "")
    return Path(value) if value else None


def inclusive(raw: str) -> tuple[int, Counter[str], dict[str, Counter[str]]]:
    """(samples, samples with each function on the stack, each function's direct callees' samples), functions
    named without their line numbers: where a profile's time goes, function by function."""
    total, on_stack, callees = 0, Counter[str](), dict[str, Counter[str]]()
    for line in raw.splitlines():
        stack, _, count = line.rstrip().rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        total += n
        frames = [f.split(" (")[0] for f in stack.split(";")]
        seen: set[str] = set()
        for i, f in enumerate(frames):
            if f in seen:
                continue  # recursion: a function counts once per sample
            seen.add(f)
            on_stack[f] += n
            if i + 1 < len(frames):
                callees.setdefault(f, Counter())[frames[i + 1]] += n
    return total, on_stack, callees


def main(argv: list[str]) -> int:
    """`profile_share.py FILE...`: the share and the top frames; `profile_share.py --functions FILE [NAME...]`:
    each function's inclusive share (the top 40), or for each NAME its direct callees'."""
    if argv[:1] == ["--functions"]:
        if len(argv) < 2:
            print("usage: profile_share.py --functions FILE [NAME...]", file=sys.stderr)
            return 2
        total, on_stack, callees = inclusive(Path(argv[1]).read_text())
        names = argv[2:]
        if not names:
            for f, n in on_stack.most_common(40):
                print(f"{100 * n / max(total, 1):5.1f}%  {f}")
        for name in names:
            print(f"{100 * on_stack[name] / max(total, 1):5.1f}%  {name}")
            for f, n in callees.get(name, Counter()).most_common(10):
                print(f"  {100 * n / max(total, 1):5.1f}%  {f}")
        return 0
    for name in argv or ["-"]:
        s = share(sys.stdin.read() if name == "-" else Path(name).read_text())
        print(f"{name}: {s.samples} samples; rules + tick {s.rules_tick} = {s.pct:.1f}% ")
        print(f"  reading only {s.reading}, stream {s.stream}")
        for frame, n in s.top.most_common(15):
            print(f"  {100 * n / max(s.samples, 1):5.1f}%  {frame}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
