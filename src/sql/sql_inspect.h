/* SPDX-License-Identifier: Apache-2.0 */
/*
** sql_inspect.h — what ar_describe (sql_inspect.c) and ar_inspect
** (vtab_ar_inspect.c) share: telling a .npy, an ArrayRecord and a
** RecordDict apart by their headers.
*/
#ifndef AR_SQL_INSPECT_H
#define AR_SQL_INSPECT_H

#include "sql/sql_util.h"

/* What a BLOB is. */
enum { INSPECT_NONE, INSPECT_NPY, INSPECT_RECORD, INSPECT_RECORDDICT };

/* Which of them p[0..n) is, by these rules in this order (headers only, no
** pass over array payloads): a .npy by its magic and a valid header; a
** RecordDict that rd_valid accepts and that has an item; an ArrayRecord that
** ar_valid accepts, with an item, every array of a NumPy dtype; otherwise
** INSPECT_NONE. CODEC_OK, or CODEC_NOMEM. */
int sql_inspect_detect(const unsigned char *p, uint64_t n, int *kind);

/* "npy", "arrayrecord", "recorddict"; and back (INSPECT_NONE for another
** name). */
const char *sql_inspect_kind_name(int kind);
int sql_inspect_kind_from_name(const unsigned char *s, uint64_t n);

#endif
