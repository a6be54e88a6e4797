"""MCP tools over training data: inspect a dataset's shape, preview which tokens of a row are trained. Both show
parts of a file, so both answers are redacted (``mcp_server.shown``); credential files are refused."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Annotated

from pydantic import BaseModel, Field

from .. import settings
from ..config import load_config
from ..errors import DataError
from ..jobs import LocalBackend
from ..shown import redact_error, shown
from ..viewer import DatasetReport, inspect_dataset
from .common import ConfigPath, guarded

PREVIEW_TIMEOUT_S = 18


class MaskPreview(BaseModel):
    row: int
    chat_template: str
    tokens: int
    trained_tokens: int
    max_length: int
    fits_max_length: bool
    problems: list[str]
    preview: str
    legend: str


@guarded
def data_inspect(path: Annotated[str, Field(description="A .jsonl/.json/.parquet file or folder, a folder of raw "
                                            "agent sessions, or a Hub repo of them: hf://datasets/NS/NAME[@REV].")],
                 messages_column: Annotated[str, Field(description="Column holding the conversations.")]
                 = "messages",
                 tools_column: Annotated[str, Field(description="Column holding tool schemas.")] = "tools"
                 ) -> DatasetReport:
    """Columns, row count, message roles, tool-call structure and problems of a dataset; raw sessions are read as
    the chat rows they convert to (secrets redacted; credential files refused)."""
    return inspect_dataset([path], messages_column, tools_column)


@guarded
def data_mask_preview(config_path: ConfigPath,
                      row: Annotated[int, Field(description="Row index to preview.", ge=0)] = 0) -> MaskPreview:
    """Which tokens of one row SFT would train (⟦…⟧) under the config's tokenizer and chat template,
    and any mask problem."""
    load_config(config_path)  # a config that does not load fails here, not after the preview process imported torch
    python = settings.job_python() or LocalBackend().python or sys.executable
    try:
        done = subprocess.run([python, "-m", "mcp_server.pipeline.preview", config_path, "--row", str(row)],
                              capture_output=True, text=True, timeout=PREVIEW_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise DataError(f"The mask preview took longer than {PREVIEW_TIMEOUT_S} s (first use builds or downloads "
                        "the tokenizer).", "call it again (the tokenizer is cached now), or run "
                        f"`python -m mcp_server.pipeline.preview {config_path} --row {row}`.") from None
    if done.returncode != 0 or not done.stdout.strip():
        tail = " ".join(done.stderr.strip().splitlines()[-3:])
        raise redact_error(DataError(f"The mask preview process failed: {tail}",
                                     f"run `tunepack data preview {config_path} --row {row}` to see the whole error."))
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if "error" in result:
        raise redact_error(DataError(result["error"]["problem"], result["error"]["fix"]))
    return shown(MaskPreview(**result))  # the preview shows a row's text


TOOLS = [data_inspect, data_mask_preview]
