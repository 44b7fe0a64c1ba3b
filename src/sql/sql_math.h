/* SPDX-License-Identifier: Apache-2.0 */
/*
** sql_math.h — what the array-math bindings (sql_math.c, sql_record_math.c,
** sql_aggregate.c, vtab_ar_stats.c, vtab_ar_inspect.c) share: scratch
** memory and the SQL values of reductions. The helpers live in sql_math.c.
*/
#ifndef AR_SQL_MATH_H
#define AR_SQL_MATH_H

#include "math/arraymath.h"
#include "sql/sql_util.h"

/* AM_SCRATCH bytes (free with codec_free), or NULL after reporting SQLITE_NOMEM. */
unsigned char *sql_math_scratch(sqlite3_context *ctx);

/* A REAL, or for complex values the JSON text "[re,im]" (as npy_item gives
** complex elements). A NaN REAL comes back as NULL: SQLite has no NaN. */
void sql_result_number(sqlite3_context *ctx, double re, double im, int is_complex);

/* Reduction results from am_stats: min/max in the array's own kind (INTEGER
** for bool and integers, REAL for floats), mean and population std; NULL for
** an empty array (and for min/max of complex arrays, which have no order). */
void sql_result_minmax(sqlite3_context *ctx, const am_stats *st, int want_max);
void sql_result_mean(sqlite3_context *ctx, const am_stats *st);
void sql_result_std(sqlite3_context *ctx, const am_stats *st);

/* The optional rtol and atol arguments from argv[first] on, with NumPy's
** defaults 1e-05 and 1e-08. Returns 1, or 0 (NULL) / -1 (error) as the
** sql_arg_* helpers do. */
int sql_math_tolerances(sqlite3_context *ctx, int argc, sqlite3_value **argv, int first, double *rtol, double *atol);

#endif
