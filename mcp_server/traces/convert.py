"""The conversion: sources → conversations → normalised messages → rows → one atomic write.

Usage:
    from mcp_server.traces import ConvertOptions, convert
    report = convert(["~/.pi/agent/sessions"], "data/pi.jsonl", ConvertOptions(thinking="drop"))
    print(report.short())
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from ..errors import TraceError
from .detect import find_sources
from .hub import fetch_sessions, parse_ref, resolve_paths
from .model import ConvertOptions
from .read import read_all
from .rows import TokenCounter, build_all, windowed
from .schemas import ToolCatalog
from .stats import ConvertReport, FileReport, total
from .templates import check_template, has_tools, normalize_name
from .writer import check_output, write_atomic


def _summarize(result: ConvertReport, rows: list[dict], files: list[FileReport], calls: Counter, thinking: Counter,
               redactions: Counter) -> None:
    result.rows = len(rows)
    result.sessions = sum(f.sessions for f in files)
    result.tool_calls = sum(calls.values())
    result.tool_calls_by_name = dict(calls.most_common())
    result.formats = dict(Counter(f.format for f in files))
    result.thinking = {"kept": thinking["kept"], "dropped": thinking["dropped"]}
    result.problems, result.dropped = total(files)
    result.redactions = dict(redactions)
    result.files = files


def _add_notes(result: ConvertReport, skipped: list[str], shaping: Counter, template: str | None) -> None:
    if skipped:
        result.notes.append(f"{len(skipped)} files were not recognised as sessions and skipped, e.g. {skipped[0]}")
    if shaping:
        result.notes.append(f"shaped for template {template}: " + ", ".join(f"{k} {v}" for k, v in shaping.items()))


def _no_rows_error(result: ConvertReport, n_sources: int) -> TraceError:
    """Why nothing is left to write: the commonest reasons rows were dropped."""
    dropped = {**result.dropped, **((result.windows or {}).get("turns_dropped") or {})}
    reasons = ", ".join(f"{k} {v}" for k, v in sorted(dropped.items(), key=lambda kv: -kv[1])[:6])
    problems = "; ".join(f"{k} ({v})" for k, v in list(result.problems.items())[:3])
    return TraceError(f"No rows were left to write from {n_sources} sources ({result.sessions} sessions; "
                      f"dropped: {reasons or 'nothing'}{'; input problems: ' + problems if problems else ''}).",
                      "loosen the filters (--model, --min-assistant-turns, --max-tokens), raise --max-length for "
                      "windows, check the paths and --format, or keep failed turns with --keep-failed-turns.")


def convert(paths: Sequence[str | Path], out: str | Path | None, opts: ConvertOptions | None = None, *,
            allow_empty: bool = False) -> ConvertReport:
    """Convert every session under ``paths`` and write the rows to ``out`` (None: count only, write nothing).
    A path may be a Hub dataset repo of sessions, ``hf://datasets/NS/NAME[@REVISION]`` (downloaded, pinned)."""
    opts = opts or ConvertOptions()
    resolved, source = resolve_paths([str(p) for p in paths])
    template = normalize_name(opts.template)
    opts.check()
    out_path = check_output(out) if out is not None else None
    counter = TokenCounter(opts.tokenizer, template)
    sources, skipped = find_sources(resolved, opts.format)
    verified = None
    if opts.only_verified:  # rejection sampling: the passing rollouts of a GRPO run, deduped and capped
        from .verified import verified_sources

        sources, counts, lineage = verified_sources(sources, opts.per_problem)
        verified = {**counts, "lineage": lineage}

    thinking: Counter = Counter()
    redactions: Counter = Counter()
    catalog = ToolCatalog()
    files, normalized = read_all(sources, opts, catalog, thinking, redactions)

    check_template(template, opts.rows, sum(1 for _, n, _ in normalized if has_tools(n.messages)))
    result = ConvertReport(output=str(out_path) if out_path else None, row_format=opts.rows,
                           token_counter=counter.label, source=source, verified=verified)
    shaping: Counter = Counter()
    calls: Counter = Counter()
    rows = build_all(normalized, catalog, opts, template, counter, result, shaping, calls)

    if opts.rows == "window":
        rows, result.windows = windowed(rows, counter, opts)
    _summarize(result, rows, files, calls, thinking, redactions)
    _add_notes(result, skipped, shaping, template)
    if not rows and not allow_empty:
        raise _no_rows_error(result, len(sources))
    if out_path is not None and (rows or allow_empty):
        result.stats_path = str(write_atomic(rows, out_path, result.model_dump(mode="json")))
    return result


def files_digest(paths: list[str], opts: ConvertOptions, extra: str = "") -> str:
    """A key for converted rows: the options, ``extra`` and every file's path, size and time under ``paths``."""
    import hashlib

    digest = hashlib.sha256((opts.model_dump_json() + extra).encode())
    for entry in paths:
        root = Path(entry)
        for path in sorted([root] if root.is_file() else (p for p in root.rglob("*") if p.is_file())):
            stat = path.stat()
            digest.update(f"{path}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:16]


def local_rows(path: str | Path) -> tuple[Path, str] | None:
    """(chat rows, harness) of a local file or folder of raw agent sessions, converted with the default options
    once per state of its files (under TUNEPACK_HOME/traces); None when it holds no sessions (chat rows, other
    data). What data_inspect and the viewer read for a session folder, as training with data.format traces does."""
    from ..home import home_dir
    from ..sniff import session_format

    root = Path(path).expanduser()
    kind = session_format(root) if root.exists() else None
    if kind is None:
        return None
    opts = ConvertOptions()
    folder = home_dir("traces", "local-" + files_digest([str(root.resolve())], opts))
    rows = folder / "rows.jsonl"
    if not rows.is_file():
        convert([str(root)], rows, opts)
    return rows, kind


def converted_rows(ref: str) -> Path:
    """The chat rows of a Hub repo of sessions (default conversion options), converted once per commit:
    what data_inspect and viewer_traces read for an ``hf://datasets/…`` reference."""
    repo_id, revision = parse_ref(ref) or (None, None)
    if repo_id is None:
        raise TraceError(f"'{ref}' is not a Hub dataset reference.", "write it as hf://datasets/NAMESPACE/NAME[@REVISION].")
    folder, record = fetch_sessions(repo_id, revision)
    rows = folder.parent / f"{folder.name}.rows.jsonl"
    if not rows.is_file():
        convert([str(folder)], rows)
    return rows
