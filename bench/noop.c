/* SPDX-License-Identifier: Apache-2.0 */
/*
** noop.c — a SQLite extension with one function, noop(x), that returns 0
** without looking at its argument: the baseline for metadata queries in
** `make bench` (SQLite still loads the BLOB column to pass it).
*/
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1

static void noop_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  (void)argv;
  sqlite3_result_int(ctx, 0);
}

int sqlite3_noop_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi) {
  SQLITE_EXTENSION_INIT2(pApi);
  (void)pzErrMsg;
  return sqlite3_create_function(db, "noop", 1, SQLITE_UTF8, 0, noop_func, 0, 0);
}
