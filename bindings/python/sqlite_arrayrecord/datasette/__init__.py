# SPDX-License-Identifier: Apache-2.0
"""The Datasette plugin of sqlite-arrayrecord (docs/datasette.md).

Datasette finds it by its entry point (``[project.entry-points.datasette]``
in pyproject.toml) once the package is installed with its ``datasette``
extra: ``pip install "./bindings/python[datasette]"``.
"""

from datasette import hookimpl

from .._extension import load


@hookimpl
def prepare_connection(conn):
    """Every connection Datasette opens has the extension loaded."""
    load(conn)
