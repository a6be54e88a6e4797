"""Viewer room: look at a dataset before training (local files through DuckDB; the Hub's Datasets
Viewer follows the same response models)."""

from .local import inspect_dataset
from .models import Column, ConversationStats, DatasetReport

__all__ = ["Column", "ConversationStats", "DatasetReport", "inspect_dataset"]
