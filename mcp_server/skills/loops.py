"""Agents stuck in loops: the same call failing again and again.

    guard = LoopGuard()
    advice = guard.failed("jobs_logs", {"job_id": "x"}, error)   # None until the 3rd identical failure
    guard.succeeded("jobs_logs")                                    # the tool worked: its streak ends

A call is its tool plus its arguments as canonical JSON (sorted keys, hashed). Each tool keeps one streak: the
failures of one identical call in a row, within ``WINDOW_S``. A failure with other arguments starts a new streak,
a success ends it. From the ``THRESHOLD``-th failure of a streak on, the advice says to change course instead of
retrying and lists the pitfalls, of the skills that name the tool, that share the most words with the error.

The memory is in-process and small (one streak per tool): a stdio server process serves one agent session (over
HTTP its sessions share it), and a restart forgets. The CLI does not share it — a person types those commands.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from .catalog import SkillError, list_skills
from .pitfalls import Pitfall, list_pitfalls

THRESHOLD = 3
WINDOW_S = 600.0
SHOWN = 3
_WORD = re.compile(r"[a-z][a-z0-9_]{3,}")
_COMMON = set("""with that this from your call than then when does have into fix error executing tool again only
there their they what which tunepack pass cannot must should more were been being will would could also each
other some such because before after while where here just like make made same first last over under about
every after needs need want give gives given none none work main""".split())


def call_key(tool: str, arguments: dict | None) -> str:
    """The identity of a call: tool + arguments as canonical JSON, hashed."""
    text = json.dumps({"tool": tool, "arguments": arguments or {}}, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False, default=repr)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def owners(tool: str) -> list[str]:
    """Skills that name the tool (as `tool` or `tool(`): first those whose name shares the tool's room (jobs_* →
    tunepack-hf-jobs, eval_* → tunepack-evaluation), then the one naming it most."""
    named = re.compile(rf"`{re.escape(tool)}[`(]")
    stem = tool.split("_")[0][:4]
    ranked = []
    for skill in list_skills():
        try:
            with open(f"{skill.path}/SKILL.md", encoding="utf-8") as fh:
                hits = len(named.findall(fh.read()))
        except OSError:
            continue
        if hits:
            ranked.append((stem not in skill.name, -hits, skill.name))
    return [name for *_, name in sorted(ranked)]


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower())) - _COMMON


def _entries(skill: str) -> list[Pitfall]:
    try:
        return list_pitfalls(skill)
    except (SkillError, OSError):
        return []


def matching_pitfalls(tool: str, error: str, limit: int = SHOWN) -> list[tuple[str, Pitfall]]:
    """The pitfalls of the tool's skills whose symptom and cause share words with the error's problem (the part
    before its "Fix:"): two words, or one when the pitfall names the tool; rarer shared words rank higher."""
    wanted = _words(error.split(" Fix: ")[0]) - _words(tool.replace("_", " "))
    pool = [(rank, skill, entry) for rank, skill in enumerate(owners(tool)) for entry in _entries(skill)]
    words = [_words(f"{e.symptom} {e.cause}") for *_, e in pool]
    seen = Counter(w for ws in words for w in ws)
    scored = []
    for (rank, skill, entry), ws in zip(pool, words, strict=True):
        shared, named = wanted & ws, tool in f"{entry.symptom} {entry.cause} {entry.fix}"
        if len(shared) >= 2 or (shared and named):
            score = sum(math.log(1 + len(pool) / seen[w]) for w in shared) + (2.0 if named else 0.0)
            scored.append((-score, rank, skill, entry))
    return [(skill, entry) for _, _, skill, entry in sorted(scored, key=lambda s: s[:2])[:limit]]


def advice(tool: str, count: int, error: str) -> str:
    """What to tell an agent whose identical call to ``tool`` failed ``count`` times in a row."""
    skills = owners(tool)
    lines = [f"Loop: this identical {tool} call has now failed {count} times in a row (within "
             f"{WINDOW_S / 60:.0f} minutes). Retrying the same arguments will fail the same way. "
             "Fix: change course — act on the error's own fix, change the argument it names, check the inputs "
             "with another tool, or stop and ask the human."]
    found = matching_pitfalls(tool, error)
    if found:
        lines.append("Known pitfalls that match:")
        lines += [f"- {skill} {p.id}: {p.symptom} — fix: {p.fix}" for skill, p in found]
    if skills:
        lines.append(f"Pitfalls of this tool's skill: skills_read('{skills[0]}')." + (
            "" if found else f" None recorded matches this error; once you know its cause, record it with "
                             f"skills_add_pitfall(skill='{skills[0]}', …)."))
    return "\n".join(lines)


@dataclass
class _Streak:
    key: str
    times: list[float] = field(default_factory=list)


class LoopGuard:
    """The in-process memory of failing calls (thread-safe: sync tools run in worker threads)."""

    def __init__(self, threshold: int = THRESHOLD, window_s: float = WINDOW_S,
                 clock: Callable[[], float] = time.monotonic):
        self.threshold, self.window_s, self.clock = threshold, window_s, clock
        self._streaks: dict[str, _Streak] = {}
        self._lock = threading.Lock()

    def failed(self, tool: str, arguments: dict | None, error: str) -> str | None:
        """Record a failure; the advice once the same call has failed ``threshold`` times in a row."""
        key, now = call_key(tool, arguments), self.clock()
        with self._lock:
            streak = self._streaks.get(tool)
            if streak is None or streak.key != key:
                streak = self._streaks[tool] = _Streak(key)
            streak.times = [t for t in streak.times if now - t <= self.window_s] + [now]
            count = len(streak.times)
        return advice(tool, count, error) if count >= self.threshold else None

    def succeeded(self, tool: str) -> None:
        with self._lock:
            self._streaks.pop(tool, None)
