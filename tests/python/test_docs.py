# SPDX-License-Identifier: Apache-2.0
"""Nothing undocumented slips in: every registered SQL function and table has
an entry in docs/reference.md with an example and its errors, and every
entry names something registered (tests/python/check_docs.py)."""

import contextlib
import io

import check_docs


def test_every_registered_name_is_documented():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = check_docs.main()
    assert status == 0, out.getvalue()
