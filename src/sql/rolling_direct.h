/* SPDX-License-Identifier: Apache-2.0 */
/*
** rolling_direct.h — ar_rolling_mean's direct path (rolling_direct.c): a
** frame's mean computed from the frame's bytes at once, for the frames
** where that gives ar_mean's result without asking ar_mean.
*/
#ifndef AR_ROLLING_DIRECT_H
#define AR_ROLLING_DIRECT_H

#include "sql/sql_util.h"

/* One row of a frame: its record column (type and, for a BLOB, its bytes)
** and its weight column (type and value; SQLITE_INTEGER 1 when the query
** has no weight column). */
typedef struct rolling_in {
  int rec_type;
  const unsigned char *p;
  uint64_t n;
  int w_type;
  double w;
} rolling_in;

/* The mean of the frame's rows in[0..n), as ar_mean(rec, weight) over them
** in this order gives it, into ctx; or nothing. Taken here only when every
** non-NULL record is a valid ArrayRecord of the same keys in the same order,
** each array native float32 or float64 in C order with elements, of the same
** dtype and shape in every row, every weight of such a row a finite number,
** their sum positive and the result within SQLITE_LIMIT_LENGTH: frames where
** ar_mean cannot fail and its arithmetic is am_rows_mean's. Returns 1 when the
** result (or an out-of-memory error) is on ctx, 0 when the frame is not one
** of those (ctx untouched: ar_mean then computes it, and reports its
** errors). */
int rolling_direct_mean(sqlite3_context *ctx, const rolling_in *in, int n);

#endif
