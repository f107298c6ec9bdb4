"""A against B in words: each side's model, configuration and median, and how many times faster B is."""

from __future__ import annotations

from ..model.flags import UNSET_WORDS
from .text import ops_words


def settings(config: dict) -> str:
    """'cpu · TF_ENABLE_ONEDNN_OPTS=0 · remapping=off' (TensorFlow's defaults where nothing is set)."""
    parts = [config.get("device", "cpu")]
    parts += [f"{k}={v}" for k, v in sorted((config.get("env") or {}).items())]
    parts += [f"{k}={v}" for k, v in sorted((config.get("grappler") or {}).items())]
    return " · ".join(parts) if len(parts) > 1 else f"{parts[0]} · TensorFlow's defaults"


def config_changes(a: dict, b: dict) -> list[str]:
    """What configuration ``b`` changes from ``a`` (Config.to_dict's), as NAME: a's → b's; a flag or switch left
    at TensorFlow's default is said as the sidebar says it ("unset", "default")."""
    out = [f"device: {a.get('device')} → {b.get('device')}"] if a.get("device") != b.get("device") else []
    for part, unset in UNSET_WORDS.items():
        x, y = a.get(part) or {}, b.get(part) or {}
        out += [f"{k}: {x.get(k, unset)} → {y.get(k, unset)}" for k in sorted(set(x) | set(y)) if x.get(k) != y.get(k)]
    return out


def changed(result: dict) -> list[str]:
    """What B changes from A, as NAME: A's → B's."""
    a, b = result["a"], result["b"]
    out = config_changes(a["config"], b["config"])
    x, y = a["spec"].get("params") or {}, b["spec"].get("params") or {}
    out += [f"{k}: {x.get(k)} → {y.get(k)}" for k in sorted(set(x) | set(y)) if x.get(k) != y.get(k)]
    return out or ["the model"]


def speedup_words(sp: dict) -> str:
    ci = "" if sp.get("ci_low") is None else f" (95% CI {sp['ci_low']:.2f}–{sp['ci_high']:.2f})"
    return f"{sp['estimate']:.2f}×{ci}"


def how(result: dict) -> str:
    sp = result["speedup"]
    if sp.get("n_processes", 1) < 2:
        return (f"quick: one round ({result['reps']} calls a side): the interval covers the noise inside those two "
                "processes only; --processes 3 or more for a repeatable figure")
    per = ", ".join(f"{x:.2f}" for x in sp.get("per_process_speedup") or [])
    return (f"replicated over {sp['n_processes']} rounds, each a fresh worker process per side ({result['reps']} "
            f"calls a side after {result['warmup']} warm-up); per round {per}; geometric mean, Student-t interval")


def words(result: dict) -> str:
    lines = [f"A against B: {', '.join(changed(result))}"]
    for side in ("a", "b"):
        s = result[side]
        median = result["summary"][side.upper()]["median_ms"]
        lines.append(f"  {side.upper()}  {s['label']} | {settings(s['config'])} | median {median:.4f} ms")
        ops = (result["proof"][side.upper()][0] or {}).get("executed_ops") or []
        lines.append(f"     ran: {ops_words(ops) or '(nothing)'}")
    sp = result["speedup"]
    lines.append(f"  B against A  {speedup_words(sp)}: {sp['verdict']}")
    lines.append(f"  {how(result)}")
    if not result.get("same_graphs", True):
        lines.append("  WARNING: the rounds did not all execute the same graphs")
    lines.append(f"  measured {result['measured_at']}, load average {result['load']['before']} → "
                 f"{result['load']['after']}")
    return "\n".join(lines) + "\n"
