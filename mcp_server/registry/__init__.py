"""Registry room: versioned adapters (a local folder now, the Hub later) and their model cards."""

from .card import render_card, replace_results
from .local import AdapterVersion, LocalRegistry, read_manifest

__all__ = ["AdapterVersion", "LocalRegistry", "read_manifest", "render_card", "replace_results"]
