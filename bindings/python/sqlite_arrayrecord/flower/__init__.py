# SPDX-License-Identifier: Apache-2.0
"""Logging a Flower run into an experiment-tracking database
(sql/schema.sql), and resuming it exactly.

    from sqlite_arrayrecord.flower import LoggingStrategy

    strategy = LoggingStrategy(FedAdam(), "/abs/path/runs.db", context=context)
    result = strategy.start(grid=grid, initial_arrays=arrays, num_rounds=10)

See docs/flower-logging.md. A log is checked by sqlite_arrayrecord.check_log
(sqlite_arrayrecord.logcheck), which needs no flwr. This package is the only part of
sqlite_arrayrecord that imports flwr (`pip install 'sqlite-arrayrecord[flower]'`
from the repository: `pip install './bindings/python[flower]'`). Its modules:

    logging_strategy  LoggingStrategy, the wrapper (delegation, start, resume)
    result            read_result: a logged run's Result
    errors            ResumeError, LogWriteError
    _round_log        one round's rows, committed whole
    _runs             a run's row, its default name, its Flower runs (flower_runs)
    _state            the wrapped strategy's settings and state, and back
    _database         opening a log: settings, schema, back-fills
    _wire             Flower's serde bytes of records, and back
"""

from .errors import LogWriteError, ResumeError
from .logging_strategy import LoggingStrategy
from .result import read_result

__all__ = ["LoggingStrategy", "ResumeError", "LogWriteError", "read_result"]
