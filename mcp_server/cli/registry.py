"""``tunepack registry``: list adapter versions, add an adapter folder as a version, publish one to the Hub.

Usage:
    tunepack registry list [NAME] [--json]
    tunepack registry push ADAPTER_DIR NAME
    tunepack registry publish NAME [--version N] --repo NS/NAME [--public]
"""

from __future__ import annotations

from ..cli_options import YES_HELP
from ..errors import TunepackError
from .common import print_json


def add_parser(sub) -> None:
    p = sub.add_parser("registry", help="list, add or publish adapter versions")
    actions = p.add_subparsers(dest="action", required=True)
    a = actions.add_parser("list", help="adapter versions, oldest first")
    a.add_argument("name", nargs="?")
    a.add_argument("--json", action="store_true")
    a.set_defaults(func=cmd_list)
    a = actions.add_parser("push", help="copy an adapter folder into the registry as a new version")
    a.add_argument("adapter_dir", help="folder with adapter_config.json and adapter_model.safetensors")
    a.add_argument("name", help="registry name of the adapter line")
    a.set_defaults(func=cmd_push)
    a = actions.add_parser("publish", help="push a version to the Hub (private unless --public)")
    a.add_argument("name")
    a.add_argument("--repo", required=True, help="Hub repo id (namespace/name)")
    a.add_argument("--version", type=int, default=None, help="version to publish (default the newest)")
    a.add_argument("--public", action="store_true", help="publish as a public repo (default private)")
    a.add_argument("--yes", action="store_true", help=YES_HELP)
    a.set_defaults(func=cmd_publish)


def cmd_list(args) -> None:
    from ..registry import LocalRegistry

    versions = LocalRegistry().list(args.name)
    if args.json:
        print_json([v.model_dump() for v in versions])
        return
    for v in versions:
        print(f"{v.name} v{v.version}  {v.path}  (run {v.run_name})")


def cmd_push(args) -> None:
    from ..registry.push import push_adapter

    print_json(push_adapter(args.adapter_dir, args.name).model_dump())


def cmd_publish(args) -> None:
    from ..approval import Consent
    from ..registry.hub import publish_approved

    if "/" not in args.repo:
        raise TunepackError(f"--repo {args.repo!r} is not a Hub repo id.", "use namespace/name, e.g. alice/my-adapter")
    done = publish_approved(args.name, args.version, args.repo, private=not args.public,
                            consent=Consent.keyboard(args.yes))  # --public typed by a person is their approval
    assert done.push is not None, "keyboard consent approves: the version was pushed"
    print_json(done.push.model_dump())
