"""``tunepack export``: serve a registry version from a coding agent, as an adapter or merged into its base.

Usage:
    tunepack export NAME [--version N]                       # vLLM command + OpenCode / Codex / Claude Code config
    tunepack export NAME --merge [-o DIR]                    # + a standalone merged model (tokenizer, card)
    tunepack export NAME --merge --push NS/REPO [--public]   # + uploaded to the Hub (private unless --public)
"""

from __future__ import annotations

import json

from ..cli_options import YES_HELP


def add_parser(sub) -> None:
    p = sub.add_parser("export", help="serve a registry version with vLLM from OpenCode / Codex / Claude Code; "
                                      "--merge writes a standalone merged model")
    p.add_argument("name", help="registry name (tunepack registry list)")
    p.add_argument("--version", type=int, default=None, help="registry version (default the newest)")
    p.add_argument("--merge", action="store_true", help="merge the adapter into its full-precision base")
    p.add_argument("-o", "--output", default=None, help="folder for the merged model (must not exist or be empty; "
                                                        "default ~/.cache/tunepack/exports/NAME-vN)")
    p.add_argument("--push", default=None, metavar="REPO", help="upload the merged model to this Hub repo (NS/NAME)")
    p.add_argument("--public", action="store_true", help="make the pushed repo public (default private)")
    p.add_argument("--base", default=None, help="load the base from this folder or Hub id instead of the run's")
    p.add_argument("--port", type=int, default=8000, help="port of the local vLLM server in the printed configs")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--yes", action="store_true", help=YES_HELP)
    p.set_defaults(func=run)


def run(args) -> None:
    from ..approval import Consent
    from .export import export_version

    done = export_version(args.name, args.version, merge=args.merge, output=args.output, push_repo=args.push,
                          private=not args.public, consent=Consent.keyboard(args.yes),  # a person typed --public
                          base_override=args.base, port=args.port)
    if args.json:
        print(json.dumps(done.model_dump(mode="json"), indent=2))
        return
    lines = [f"# {done.name} v{done.version}: base {done.base_model}, adapter {done.adapter}"]
    if done.merged_dir:
        lines.append(f"# merged model: {done.merged_dir}" + (" (already there: reused)" if done.reused else
                     f" ({done.dtype}, merged in {done.compute_dtype}; max |Δ logits| vs base + adapter "
                     f"{done.max_abs_logit_diff:.3g})"))
    if done.push:
        lines.append(f"# pushed: {done.push.url} (commit {done.push.commit[:12]}, "
                     f"{'private' if done.push.private else 'public'})")
    print("\n".join(lines) + "\n")
    if done.serve:
        print(done.serve.text(), end="")
