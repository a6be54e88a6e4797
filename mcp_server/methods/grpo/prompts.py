"""Prompt-only rows for GRPO, and the checks a reward needs before money is spent.

    rows = mbpp_rows("mbpp.jsonl", "train")        # {id, prompt, tests, setup, solution, visible_test}
    report = ceiling(rows, mode="auto")            # each reference solution through the tests reward
    leaks(rows)                                    # ids whose scored tests appear in their prompt
    stats = {}
    prompts = tool_rows(trace_rows, stats)         # {id, prompt, tools, reference} per assistant turn

MBPP's splits by task id (the dataset's own): prompt 1-10, test 11-510, validation 511-600, train 601-974.
Train on train, draw the held-out curve (and sweep selection) on validation, and keep test for the final
eval only. A prompt shows the task, the function's signature (from the reference solution) and one visible
test, which is then not scored; the other asserts are the reward.

For the tool_call reward (evals/kit/toolreward.py) every assistant turn of converted agent-trace rows
(``messages`` + ``tools``, or ``prompt`` + ``completion`` turn/window rows) becomes a prompt: the messages
before it, the row's tools, and the reference, the turn's first tool call or None where it answered in text.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ...errors import DataError
from ...evals.kit.problems import mbpp_prompt_row

MBPP_SPLITS = {"prompt": (1, 10), "test": (11, 510), "validation": (511, 600), "train": (601, 974)}


def mbpp_rows(path: str | Path, split: str) -> list[dict]:
    if split not in MBPP_SPLITS:
        raise DataError(f"MBPP has no split '{split}'.", f"use one of: {', '.join(MBPP_SPLITS)}.")
    low, high = MBPP_SPLITS[split]
    rows = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            task = int(raw["task_id"])
            _ = raw["text"], raw["code"], raw["test_list"]
        except (ValueError, KeyError, TypeError) as exc:
            raise DataError(f"{path} is not MBPP's jsonl: line {number} is not an MBPP task "
                            f"({type(exc).__name__}: {str(exc)[:80]}).",
                            "point at MBPP's full jsonl (task_id, text, code, test_list, test_setup_code).") from None
        if low <= task <= high:
            rows.append(mbpp_prompt_row(raw))
    if not rows:
        raise DataError(f"{path} holds no MBPP task of the {split} split (task ids {low}-{high}).",
                        "point at MBPP's full jsonl (task_id, text, code, test_list, test_setup_code).")
    return rows


def write_mbpp_prompts(mbpp: str | Path, split: str, output: str | Path, *, limit: int | None = None,
                       check: bool = False, sandbox: str = "auto", keep_impossible: bool = False) -> dict:
    """MBPP's ``split`` as GRPO prompt rows in ``output`` (JSON Lines, written atomically). ``check`` also runs each
    reference solution through the tests reward in the sandbox and drops the ones that fail (``keep_impossible``
    keeps them): the CLI does; the MCP tool runs no code (the GRPO preflight checks the ceiling)."""
    from ...guard_paths import refuse_credential
    from ...staging import write_text_atomically

    source = refuse_credential(Path(mbpp).expanduser(), "MBPP file")
    if not source.is_file():
        raise DataError(f"{mbpp} is not a file.", "point at MBPP's full jsonl (task_id, text, code, test_list).")
    target = Path(output).expanduser()
    rows, overlap = test_overlap(source, mbpp_rows(source, split), split)
    rows = rows[:limit]
    report = ceiling(rows, mode=sandbox) if check else None
    dropped = [] if report is None or keep_impossible else report["impossible"]
    kept = [r for r in rows if str(r["id"]) not in set(dropped)]
    target.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(target, "".join(json.dumps(r) + "\n" for r in kept))
    warm = target.with_name(target.stem + ".sft.jsonl")  # the same prompts answered by their reference solutions
    write_text_atomically(warm, "".join(json.dumps(sft_row(r)) + "\n" for r in kept if r.get("solution")))
    return {"split": split, "rows": len(rows), "written": len(kept), "output": str(target), "ceiling": report,
            "leaked_tests": leaks(rows), "dropped": dropped, "test_overlap": overlap, "sft_rows": str(warm)}


def sft_row(row: dict) -> dict:
    """A prompt row answered by its reference solution in one Python block, as chat messages: the SFT warm start
    GRPO needs when the starting model never earns the tests reward (data.path of an SFT config)."""
    return {"messages": [{"role": "user", "content": row["prompt"]},
                         {"role": "assistant", "content": f"```python\n{row['solution'].strip()}\n```"}]}


def test_overlap(source: Path, rows: list[dict], split: str) -> tuple[list[dict], dict | None]:
    """Rows of a split other than test that near-duplicate a test problem, left out: MBPP's own splits share
    some problems, and the eval withholds an adapter's whole MBPP score when its training rows overlap the test
    split (its contamination check, with its default n-gram rule, over the rows as written)."""
    from ...evals.kit.contamination import _strings, overlapping_rows
    from ...evals.kit.errors import KitError
    from ...evals.kit.problems import load_problems

    try:
        problems = load_problems("mbpp", str(source)) if split != "test" else []
    except KitError:  # a file without the test split: nothing to overlap
        problems = []
    if not problems:
        return rows, None
    drop, touched = overlapping_rows(problems, ["\n".join(_strings(r)) for r in rows])
    gone = {str(rows[i]["id"]) for i in drop}
    return [r for r in rows if str(r["id"]) not in gone], {
        "dropped": sorted(gone, key=lambda x: int(x.rsplit("/", 1)[-1]) if x.rsplit("/", 1)[-1].isdigit() else 0),
        "test_problems": touched,
        "why": "these rows near-duplicate MBPP test problems; trained on, the eval would withhold the adapter's "
               "whole MBPP score as contaminated"} if gone else None


def leaks(rows: list[dict]) -> list[str]:
    """Ids of rows whose prompt shows a test that is also scored (the answer is handed over)."""
    return [str(r.get("id")) for r in rows if any(t.strip() and t.strip() in r["prompt"] for t in r.get("tests") or [])]


def ceiling(rows: list[dict], mode: str = "auto", workers: int = 2) -> dict:
    """Each row's reference solution through the tests reward in the sandbox: the solvable share (the reward's
    ceiling) and the ids it cannot pass (impossible here: drop them, or the ceiling is below 1)."""
    from ...evals.kit.sandbox import Sandbox
    from ...evals.kit.testreward import tests_fraction

    with_solution = [r for r in rows if r.get("solution") and r.get("tests")]
    box = Sandbox(mode, workers=workers).start()
    try:
        with ThreadPoolExecutor(workers) as pool:
            scores = list(pool.map(lambda r: tests_fraction(box, r, f"```python\n{r['solution']}\n```"), with_solution))
        used = box.mode
    finally:
        box.close()
    impossible = [str(r["id"]) for r, s in zip(with_solution, scores, strict=True) if s < 1.0]
    n = len(with_solution)
    return {"problems": n, "solvable": n - len(impossible), "ceiling": round((n - len(impossible)) / n, 4) if n else None,
            "impossible": impossible, "sandbox": used, "without_solution": len(rows) - n}


def tool_rows(rows: list[dict], stats: dict | None = None) -> list[dict]:
    """One prompt row per model turn (consecutive assistant messages are one turn): {id: "<session>:<turn index>",
    prompt: the messages before the turn, tools, reference: {name, arguments} of its first call, or None for an
    answer}. Turns whose call names a tool the row does not offer are dropped; ``stats``, when given, is filled
    with what was written and dropped."""
    from ...evals.kit.nextaction import row_turns

    out: list[dict] = []
    seen: dict[str, str] = {}
    counts: Counter = Counter()
    unknown: Counter = Counter()
    offered: set[str] = set()
    for row in rows:
        for turn in row_turns(row, _session_id(row)):
            names = {t.get("function", t).get("name") for t in turn.tools}
            offered |= names
            prompt = _tool_prompt(turn, names, unknown)
            if prompt is not None and _unique_id(prompt, seen):
                counts["calls" if prompt["reference"] else "answers"] += 1
                out.append(prompt)
            elif prompt is not None:
                counts["duplicate"] += 1
    if stats is not None:
        stats.update(_tool_stats(rows, out, counts, unknown, offered))
    return out


def _tool_prompt(turn, names: set[str], unknown: Counter) -> dict | None:
    """The prompt row of one turn; None (counted in ``unknown``) when its call names a tool not in ``names``."""
    ref = turn.reference[0] if turn.reference else None
    if ref is not None and ref.name not in names:
        unknown[ref.name] += 1
        return None
    return {"id": f"{turn.session}:{turn.index}", "prompt": turn.context, "tools": turn.tools,
            "reference": {"name": ref.name, "arguments": ref.arguments} if ref else None}


def _session_id(row: dict) -> str:
    """The row's own id, else its session (source file name / session / part), else a hash of the conversation."""
    from ...evals.kit.heldout import heldout_json, heldout_source_name

    if row.get("id") not in (None, ""):
        return str(row["id"])
    session = row.get("session_id") or row.get("session")
    if session not in (None, ""):
        parts = [heldout_source_name(row.get("source")), str(session), str(row.get("part") or "")]
        return "/".join(p for p in parts if p)
    conversation = row.get("messages") or [*(row.get("prompt") or []), *(row.get("completion") or [])]
    return "conversation:" + hashlib.sha256(heldout_json(conversation).encode("utf-8")).hexdigest()[:16]


def _unique_id(prompt: dict, seen: dict[str, str]) -> bool:
    """Make ``prompt["id"]`` unique among ``seen`` (id -> content hash): windows of one session repeat turn indices,
    so a different prompt under a taken id gets its content hash added; False for an exact duplicate."""
    body = json.dumps([prompt["prompt"], prompt["reference"]], sort_keys=True, default=str)
    digest = hashlib.sha256(body.encode("utf-8")).hexdigest()[:8]
    if seen.get(prompt["id"], digest) != digest:
        prompt["id"] += "~" + digest
    if prompt["id"] in seen:
        return False
    seen[prompt["id"]] = digest
    return True


def _tool_stats(rows: list[dict], out: list[dict], counts: Counter, unknown: Counter, offered: set[str]) -> dict:
    called = Counter(p["reference"]["name"] for p in out if p["reference"])
    return {"rows": len(rows), "written": len(out), "calls": counts["calls"], "answers": counts["answers"],
            "dropped": {"unknown_tool": sum(unknown.values()), "duplicate": counts["duplicate"]},
            "unknown_tools": dict(unknown.most_common()),
            "tools_seen": {name: called[name] for name in sorted(offered, key=lambda n: (-called[n], str(n)))}}
