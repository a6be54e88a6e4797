"""The loop's cycle table for the README's results section (``tunepack results readme --loop NAME``)."""

from __future__ import annotations


def loop_part(name: str) -> tuple[list[str], str | None]:
    """(markdown lines, the adapter in use as NAME@vN or None) of the loop ``name``; one row per cycle."""
    from ..loop import read_state

    state = read_state(name)
    lines = [f"### Continual learning: loop `{name}`", "",
             f"In use: **{state.current or 'the base model'}**. {len(state.frozen)} frozen session(s), never "
             "trained on; each cycle is scored paired (loss per trained token, in nats) against the adapter in use "
             "on the frozen set and its recent slice, and on the retention set.", "",
             "| cycle | trained on | recent slice | candidate | paired gain (z) | retention change | decision |",
             "|---|---|---|---|---|---|---|"]
    for c in state.cycles:
        gain, retention = c.scores.get("heldout") or {}, c.scores.get("retention") or {}
        z = gain.get("z")
        shown = f"{gain['gain']:+.4f} (z {z:.2f})" if gain and z is not None else (f"{gain['gain']:+.4f}" if gain else "—")
        before, after = retention.get("current"), retention.get("candidate")
        change = f"{after - before:+.4f}" if before is not None and after is not None else "—"
        decision = f"{c.decision}: {c.reason}" if c.decision else c.phase
        lines.append(f"| {c.number} | {len(c.new)} sessions | {len(c.recent)} | {c.candidate or '—'} | {shown} | "
                     f"{change} | {decision} |")
    if not state.cycles:
        lines.append("| — | no cycle has run yet | | | | | |")
    return lines + [""], state.current
