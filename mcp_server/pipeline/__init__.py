"""Pipeline room: one run of a config from data to registered adapter, on any backend.

``run`` validates, pre-checks the data, renders and submits the pipeline job; ``job`` is that job's
body (train, register, card, optional eval); ``remote`` is what a remote backend adds (data upload,
pushed checkpoints, timeout bounds, recording the Hub result); ``preflight`` checks a config before
money is spent; ``settle`` records what a finished job produced, whoever looks at it. ``records`` types the
files the starter hands to a job.
"""

from .placement import Placement, placement
from .preflight import Check, PreflightReport, preflight, smoke_config
from .run import (
                  RunResult,
                  StartedRun,
                  data_size,
                  precheck_data,
                  remote_timeout,
                  result_of,
                  run_pipeline,
                  start_pipeline,
                  submit_script,
)
from .settle import settle

__all__ = ["Check", "Placement", "PreflightReport", "RunResult", "StartedRun", "data_size", "placement",
           "precheck_data", "preflight", "remote_timeout", "result_of", "run_pipeline", "settle",
           "smoke_config", "start_pipeline", "submit_script"]
