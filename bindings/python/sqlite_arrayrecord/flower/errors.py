# SPDX-License-Identifier: Apache-2.0
"""The logger's own exception."""


class ResumeError(ValueError):
    """A run that cannot be started or resumed as asked: its name taken, a
    resumed run's class, settings or state not what it was, a database of
    the earlier schema."""
