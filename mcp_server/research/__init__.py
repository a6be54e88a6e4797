"""Research room: search the Hub for models, datasets and papers (``huggingface_hub``), short results.

Read-only and token-optional: public listings work anonymously; a saved login or ``HF_TOKEN`` is
sent when present (gated or private repos). ``HF_ENDPOINT`` moves the Hub, as everywhere in tunepack.
"""

from .hub import (
                  DatasetHit,
                  DatasetSearch,
                  ModelHit,
                  ModelSearch,
                  PaperDetail,
                  PaperHit,
                  PaperSearch,
                  ResearchError,
                  paper,
                  search_datasets,
                  search_models,
                  search_papers,
)

__all__ = ["DatasetHit", "DatasetSearch", "ModelHit", "ModelSearch", "PaperDetail", "PaperHit", "PaperSearch",
           "ResearchError", "paper", "search_datasets", "search_models", "search_papers"]
