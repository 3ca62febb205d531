"""Benchmark bookkeeping: the two implementations under test, the results store and the ratio table.

Kept out of conftest.py so bench modules can import it by name. It measures nothing itself.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass, field
from types import ModuleType

import pytest

from report import verdict  # type: ignore[import-not-found]

# ----------------------------------------------------------------------------------------------------------------
# Implementations under test.
# ----------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Impl:
    name: str  # "pyte" | "litbridge"
    pyte: ModuleType  # a module with Screen / HistoryScreen / ByteStream
    terminal: type | None  # a litbridge.term-style Terminal class
    label: str


def load_impl(name: str) -> Impl:
    import pyte

    if name == "pyte":
        try:
            from litbridge.term import PyteTerminal as term_cls  # the fallback Terminal over real pyte
        except ImportError:
            term_cls = None
        return Impl("pyte", pyte, term_cls, "pyte 0.8.2")
    try:
        mod = importlib.import_module("litbridge.pyte")
    except ImportError as exc:
        pytest.skip(f"litbridge.pyte not importable: {exc}")
    from litbridge import term

    native = mod.Screen is not pyte.Screen
    label = "litbridge" if native else "litbridge (pyte fallback: extension not built)"
    return Impl("litbridge", mod, getattr(term, "Terminal", None), label)


# ----------------------------------------------------------------------------------------------------------------
# Results and the ratio table.
# ----------------------------------------------------------------------------------------------------------------


@dataclass
class Recording:
    """Same-round figures for one Claude recording (keys like "terminal real x pyte", "vt100 4k MB/s")."""

    size: int
    reads: int
    median_read: int
    values: dict[str, float] = field(default_factory=dict)


@dataclass
class Results:
    # (section, metric, input) -> impl name -> value
    values: dict[tuple[str, str, str], dict[str, float]] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    # (section, metric, input) -> median of per-round litbridge/pyte ratios measured interleaved (same round)
    same_round: dict[tuple[str, str, str], float] = field(default_factory=dict)
    recordings: dict[str, Recording] = field(default_factory=dict)
    notes: set[str] = field(default_factory=set)

    def add(self, section: str, metric: str, name: str, impl: Impl, value: float) -> None:
        self.values.setdefault((section, metric, name), {})[impl.name] = value
        self.labels[impl.name] = impl.label


RESULTS = Results()


def _target(section: str, metric: str, name: str, lit: float | None, ratio: float | None) -> tuple[str, str]:
    if section == "throughput" and name.startswith("claude:") and ratio is not None:
        return "≥150x pyte", verdict(ratio >= 150)
    if section == "fixed" and name.startswith("alt screen") and lit is not None:
        return "≤1 µs", verdict(lit <= 1)
    if section == "redraw" and lit is not None:
        return "≤40 µs", verdict(lit <= 40)
    if section == "display" and lit is not None:
        return "≤15 µs", verdict(lit <= 15)
    if section == "memory" and name.startswith("per screen") and lit is not None:
        return "≤200 KB", verdict(lit <= 200)
    if section == "memory" and name.startswith("per 1000 history lines") and lit is not None:
        return "≤3072 KB", verdict(lit <= 3072)
    return "", ""


def _fmt(v: float | None) -> str:
    if v is None:
        return "-"
    if v >= 100:
        return f"{v:,.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.3g}"


def render_table(res: Results) -> str:
    rows = []
    ratios_claude = []
    for (section, metric, name), by_impl in res.values.items():
        p, lit = by_impl.get("pyte"), by_impl.get("litbridge")
        higher_better = metric == "MB/s"
        ratio = None
        if p and lit:
            ratio = lit / p if higher_better else p / lit
        if (section, metric, name) in res.same_round:
            ratio = res.same_round[(section, metric, name)]
        if section == "throughput" and name.startswith("claude:") and name != "claude:all" and ratio:
            ratios_claude.append(ratio)
        target, judged = _target(section, metric, name, lit, ratio)
        rows.append(
            (
                section,
                name,
                metric,
                _fmt(p),
                _fmt(lit),
                f"{ratio:,.0f}x" if ratio and ratio >= 10 else (f"{ratio:.2f}x" if ratio else "-"),
                target,
                judged,
            )
        )
    if ratios_claude:
        geo = math.exp(sum(math.log(r) for r in ratios_claude) / len(ratios_claude))
        rows.append(
            (
                "throughput",
                f"geomean of {len(ratios_claude)} claude recordings",
                "ratio",
                "",
                "",
                f"{geo:,.0f}x",
                "≥150x pyte",
                verdict(geo >= 150),
            )
        )
    head = ("section", "input / case", "unit", "pyte", "litbridge", "litbridge vs pyte", "target", "verdict")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    legend = ", ".join(f"{k} = {v}" for k, v in res.labels.items())
    return "\n".join(lines) + (
        f"\n\nImplementations: {legend}. Ratio = speed-up (time or memory: pyte / litbridge); for throughput it is "
        "the median of same-round ratios (pyte and litbridge timed alternately in each round), the MB/s columns "
        "are pytest-benchmark medians."
    )


_REC_COLS = [
    ("bytestream real x pyte", "ByteStream x pyte, real reads", 150.0),
    ("terminal real x pyte", "Terminal x pyte, real reads", 150.0),
    ("bytestream 4k x pyte", "ByteStream x pyte, 4 KiB", 150.0),
    ("terminal 4k x pyte", "Terminal x pyte, 4 KiB", 150.0),
    ("bytestream real x vt100", "ByteStream x vt100, real reads", 1.5),
    ("terminal real x vt100", "Terminal x vt100, real reads", 1.5),
    ("bytestream 4k x vt100", "ByteStream x vt100, 4 KiB", None),
    ("terminal 4k x vt100", "Terminal x vt100, 4 KiB", None),
]


def _x(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:,.0f}x" if v >= 10 else f"{v:.2f}x"


def render_recordings(res: Results) -> str:
    """Per-recording same-round ratios, then geomean and minimum per column with the targets' verdicts."""
    if not res.recordings:
        return ""
    cols = [c for c in _REC_COLS if any(c[0] in r.values for r in res.recordings.values())]
    head = ["recording", "KB", "reads (median B)", "pyte MB/s real", "Terminal MB/s real"] + [
        c[1] for c in cols
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, r in res.recordings.items():
        cells = [
            name,
            f"{r.size / 1000:.1f}",
            f"{r.reads} ({r.median_read})",
            _fmt(r.values.get("pyte real MB/s")),
            _fmt(r.values.get("terminal real MB/s")),
        ]
        cells += [_x(r.values.get(c[0])) for c in cols]
        lines.append("| " + " | ".join(cells) + " |")
    for label, agg in (("geomean", "geo"), ("minimum", "min")):
        cells = [f"**{label}** of {len(res.recordings)}", "", "", "", ""]
        for key, _, target in cols:
            vals = [r.values[key] for r in res.recordings.values() if key in r.values]
            v = math.exp(sum(map(math.log, vals)) / len(vals)) if agg == "geo" else min(vals)
            goal = target if agg == "geo" or target is None or target < 10 else 100.0
            judged = "" if goal is None else f" {verdict(v >= goal)} (≥{goal:g}x)"
            cells.append(f"**{_x(v)}**{judged}")
        lines.append("| " + " | ".join(cells) + " |")
    notes = "".join(f"\n- {n}" for n in sorted(res.notes))
    return "\n".join(lines) + (
        "\n\nSame-round ratios (median of 5 rounds; each engine timed alternately on its own screen). Targets: "
        "geomean ≥150x pyte and no recording under 100x; ≥1.5x vt100 on real reads." + notes
    )
