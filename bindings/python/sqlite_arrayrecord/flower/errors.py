# SPDX-License-Identifier: Apache-2.0
"""The logger's own exceptions."""

import sqlite3


class ResumeError(ValueError):
    """A run that cannot be started or resumed as asked: its name taken, a
    resumed run's class, settings or state not what it was, its log not what
    was logged, another process logging it, a database of the earlier
    schema."""


class LogWriteError(sqlite3.OperationalError):
    """The log could not be written (the disk full, an I/O error, a
    read-only file): the round under way is rolled back, the complete rounds
    stay, and the run resumes once the cause is gone. The message names the
    database, the run, the round and SQLite's error; the sqlite3 error is
    its __cause__."""
