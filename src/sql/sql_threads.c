/* SPDX-License-Identifier: Apache-2.0 */
/*
** sql_threads.c — ar_threads([n [, min_elements]]): the threads the
** accumulating aggregates (ar_sum, ar_mean, ar_min, ar_max) use on large
** arrays (src/math/pool.h), process-wide. Returns the number of threads set
** before the call.
**
** Unlike every other function of the extension it changes state, so it is
** registered neither deterministic nor innocuous, and direct-only: a view,
** trigger or schema of an untrusted database cannot call it.
*/
#include "sql/sql_modules.h"
#include "sql/sql_util.h"
SQLITE_EXTENSION_INIT3

#include "math/pool.h"

static void ar_threads_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  sqlite3_int64 n = 0, min = 0;
  int i;
  for (i = 0; i < argc; i++) {
    if (sqlite3_value_type(argv[i]) == SQLITE_NULL) return; /* NULL: nothing changes */
  }
  if (argc > 0) {
    if (sql_arg_int64(ctx, argv[0], 0, "a thread count", &n) < 0) return;
    if (n < 1 || n > POOL_MAX_THREADS) {
      sql_error(ctx, "thread count must be 1 to %d, got %lld", POOL_MAX_THREADS, (long long)n);
      return;
    }
  }
  if (argc > 1) {
    if (sql_arg_int64(ctx, argv[1], 1, "a minimum element count", &min) < 0) return;
    if (min < 1) {
      sql_error(ctx, "min_elements must be at least 1, got %lld", (long long)min);
      return;
    }
  }
  sqlite3_result_int(ctx, pool_configure((int)n, (uint64_t)min));
}

static const sql_function threads_functions[] = {
    {"ar_threads", 0, ar_threads_func, NULL, NULL, 0},
    {"ar_threads", 1, ar_threads_func, NULL, NULL, 0},
    {"ar_threads", 2, ar_threads_func, NULL, NULL, 0},
};

int sql_threads_register(sqlite3 *db, char **pzErrMsg) {
  size_t i;
  for (i = 0; i < sizeof(threads_functions) / sizeof(threads_functions[0]); i++) {
    const sql_function *f = &threads_functions[i];
    int rc = sqlite3_create_function_v2(db, f->name, f->nargs, SQLITE_UTF8 | SQLITE_DIRECTONLY, (void *)f, f->xFunc,
                                        NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
      if (pzErrMsg) *pzErrMsg = sqlite3_mprintf("arrayrecord: cannot register %s (%s)", f->name, sqlite3_errstr(rc));
      return rc;
    }
  }
  return SQLITE_OK;
}
