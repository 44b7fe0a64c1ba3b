/* SPDX-License-Identifier: Apache-2.0 */
/*
** noop.c — a SQLite extension with one function, noop(x), that returns 0
** without looking at its argument: the baseline for metadata queries in
** `make bench` (SQLite still loads the BLOB column to pass it); and
** noop_window(x), an aggregate and window function that keeps nothing and
** returns 0: the floor of a window aggregate (SQLite moving the rows through
** its window machinery and calling xStep, xInverse and xValue).
*/
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1

static void noop_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  (void)argv;
  sqlite3_result_int(ctx, 0);
}

static void noop_step(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)ctx;
  (void)argc;
  (void)argv;
}

static void noop_value(sqlite3_context *ctx) { sqlite3_result_int(ctx, 0); }

int sqlite3_noop_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi) {
  SQLITE_EXTENSION_INIT2(pApi);
  (void)pzErrMsg;
  int rc = sqlite3_create_function(db, "noop", 1, SQLITE_UTF8, 0, noop_func, 0, 0);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_window_function(db, "noop_window", 1, SQLITE_UTF8, 0, noop_step, noop_value, noop_value,
                                        noop_step, 0);
  return rc;
}
