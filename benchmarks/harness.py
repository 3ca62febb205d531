"""Benchmark bookkeeping: the two implementations under test, the results store and the ratio table.

Kept out of conftest.py so bench modules can import it by name. It measures nothing itself.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass, field
from types import ModuleType

import pytest

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
class Results:
    # (section, metric, input) -> impl name -> value
    values: dict[tuple[str, str, str], dict[str, float]] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    # (section, metric, input) -> median of per-round litbridge/pyte ratios measured interleaved (same round)
    same_round: dict[tuple[str, str, str], float] = field(default_factory=dict)

    def add(self, section: str, metric: str, name: str, impl: Impl, value: float) -> None:
        self.values.setdefault((section, metric, name), {})[impl.name] = value
        self.labels[impl.name] = impl.label


RESULTS = Results()


def _target(section: str, metric: str, name: str, lit: float | None, ratio: float | None) -> tuple[str, str]:
    if section == "throughput" and name.startswith("claude:") and ratio is not None:
        return "≥150x pyte", "pass" if ratio >= 150 else "SHORT"
    if section == "redraw" and lit is not None:
        return "≤100 µs", "pass" if lit <= 100 else "SHORT"
    if section == "display" and lit is not None:
        return "≤20 µs", "pass" if lit <= 20 else "SHORT"
    if section == "memory" and name.startswith("per screen") and lit is not None:
        return "≤200 KB", "pass" if lit <= 200 else "SHORT"
    if section == "memory" and name.startswith("per 1000 history lines") and lit is not None:
        return "≤3072 KB", "pass" if lit <= 3072 else "SHORT"
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
        target, verdict = _target(section, metric, name, lit, ratio)
        rows.append((section, name, metric, _fmt(p), _fmt(lit), f"{ratio:,.0f}x" if ratio and ratio >= 10 else
                     (f"{ratio:.2f}x" if ratio else "-"), target, verdict))
    if ratios_claude:
        geo = math.exp(sum(math.log(r) for r in ratios_claude) / len(ratios_claude))
        rows.append(("throughput", f"geomean of {len(ratios_claude)} claude recordings", "ratio", "", "",
                     f"{geo:,.0f}x", "≥150x pyte", "pass" if geo >= 150 else "SHORT"))
    head = ("section", "input / case", "unit", "pyte", "litbridge", "litbridge vs pyte", "target", "verdict")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    legend = ", ".join(f"{k} = {v}" for k, v in res.labels.items())
    return "\n".join(lines) + (
        f"\n\nImplementations: {legend}. Ratio = speed-up (time or memory: pyte / litbridge); for throughput it is "
        "the median of same-round ratios (pyte and litbridge timed alternately in each round), the MB/s columns "
        "are pytest-benchmark medians.")
