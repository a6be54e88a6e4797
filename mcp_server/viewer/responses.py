"""Pydantic models of the Datasets Viewer responses (shapes from the dataset-viewer service).

Both backends return these: the HF backend parses the service's JSON into them, the local twin builds
them, so ``model_dump(mode="json")`` of either equals the JSON the service would send. Models accept
extra keys so fields the service adds later pass through unchanged.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

MAX_ROWS_PER_PAGE = 100  # the service's page size limit (length ≤ 100) and num_rows_per_page


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class IsValidResponse(_Open):
    viewer: bool
    preview: bool
    search: bool
    filter: bool
    statistics: bool


class SplitItem(_Open):
    dataset: str
    config: str
    split: str


class SplitsResponse(_Open):
    splits: list[SplitItem]
    pending: list[dict[str, Any]] = Field(default_factory=list)
    failed: list[dict[str, Any]] = Field(default_factory=list)


class FeatureItem(_Open):
    feature_idx: int
    name: str
    type: dict[str, Any] = Field(description='datasets feature, e.g. {"_type": "Value", "dtype": "string"}')


class RowItem(_Open):
    row_idx: int = Field(description="index of the row in the split (the original index in search/filter)")
    row: dict[str, Any]
    truncated_cells: list[str] = Field(default_factory=list)


class RowsResponse(_Open):
    """/rows, /search and /filter."""

    features: list[FeatureItem]
    rows: list[RowItem]
    num_rows_total: int
    num_rows_per_page: int = MAX_ROWS_PER_PAGE
    partial: bool = False


class FirstRowsResponse(_Open):
    dataset: str
    config: str
    split: str
    features: list[FeatureItem]
    rows: list[RowItem]
    truncated: bool = False


class Histogram(_Open):
    hist: list[int]
    bin_edges: list[float | int | str]


class NumericalStatistics(_Open):
    """int, float, list (over lengths) and string_text (over string lengths) columns."""

    nan_count: int
    nan_proportion: float
    min: float | int | str | None
    max: float | int | str | None
    mean: float | str | None
    median: float | str | None
    std: float | str | None
    histogram: Histogram | None


class CategoricalStatistics(_Open):
    """string_label and class_label columns."""

    nan_count: int
    nan_proportion: float
    no_label_count: int = 0
    no_label_proportion: float = 0.0
    n_unique: int
    frequencies: dict[str, int]


class BoolStatistics(_Open):
    nan_count: int
    nan_proportion: float
    frequencies: dict[str, int]


class ColumnStatisticsItem(_Open):
    column_name: str
    column_type: str = Field(description="int | float | bool | list | string_label | string_text | class_label | …")
    column_statistics: NumericalStatistics | CategoricalStatistics | BoolStatistics


class StatisticsResponse(_Open):
    num_examples: int
    statistics: list[ColumnStatisticsItem]
    partial: bool = False


class SizeDataset(_Open):
    dataset: str
    num_bytes_original_files: int | None = None
    num_bytes_parquet_files: int
    num_bytes_memory: int
    num_rows: int
    estimated_num_rows: int | None = None


class SizeConfig(SizeDataset):
    config: str
    num_columns: int


class SizeSplit(SizeConfig):
    split: str


class SizeBody(_Open):
    dataset: SizeDataset
    configs: list[SizeConfig]
    splits: list[SizeSplit]


class SizeResponse(_Open):
    size: SizeBody
    pending: list[dict[str, Any]] = Field(default_factory=list)
    failed: list[dict[str, Any]] = Field(default_factory=list)
    partial: bool = False
