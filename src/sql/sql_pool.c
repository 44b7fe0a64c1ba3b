/* SPDX-License-Identifier: Apache-2.0 */
/*
** sql_pool.c — ar_pool([bytes]) and ar_pool_held(): the bound on the
** memory the extension keeps between statements (the pool of large freed
** blocks, alloc_pool.c), process-wide, and what it holds now.
**
**   SELECT ar_pool();            -- the bound, in bytes
**   SELECT ar_pool(256 << 20);   -- set it (0: keep nothing); returns the bound before
**   SELECT ar_pool_held();       -- bytes kept now
**
** Like ar_threads, ar_pool changes process-wide state: registered neither
** deterministic nor innocuous, and direct-only. Registering it also counts
** the connection for the pool (its destructor runs when the connection
** closes), so the last connection to close empties the pool.
*/
#include "sql/alloc_pool.h"
#include "sql/sql_modules.h"
#include "sql/sql_util.h"
SQLITE_EXTENSION_INIT3

static void ar_pool_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  sqlite3_int64 n;
  if (argc > 1) {
    sql_error(ctx, "takes at most one argument (a byte count)");
    return;
  }
  if (argc == 0) {
    sqlite3_result_int64(ctx, apool_bound(-1));
    return;
  }
  if (sql_arg_int64(ctx, argv[0], 0, "a byte count", &n) <= 0) return; /* NULL: nothing changes, NULL */
  if (n < 0) {
    sql_error(ctx, "the bound must be 0 or more bytes, got %lld", (long long)n);
    return;
  }
  sqlite3_result_int64(ctx, apool_bound(n));
}

static void ar_pool_held_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  (void)argv;
  sqlite3_result_int64(ctx, (sqlite3_int64)apool_held());
}

static void connection_closed(void *p) {
  (void)p;
  apool_detach();
}

/* ar_pool last: it carries the destructor (below). */
static const sql_function pool_functions[] = {
    {"ar_pool_held", 0, ar_pool_held_func, NULL, NULL, 0},
    {"ar_pool", -1, ar_pool_func, NULL, NULL, 0},
};

int sql_pool_register(sqlite3 *db, char **pzErrMsg) {
  size_t i;
  for (i = 0; i < sizeof(pool_functions) / sizeof(pool_functions[0]); i++) {
    const sql_function *f = &pool_functions[i];
    int rc;
    int last = i + 1 == sizeof(pool_functions) / sizeof(pool_functions[0]);
    /* ar_pool's destructor runs when the connection closes (or at once, when
    ** registering fails): the attach it balances comes first. It is the
    ** extension's last registration but ar_unpack's, whose failure removes
    ** it again (sql_pool_unregister): a failure after it would make SQLite
    ** unload the library while the connection still holds a destructor
    ** pointing into it. */
    if (last) apool_attach();
    rc = sqlite3_create_function_v2(db, f->name, f->nargs, SQLITE_UTF8 | SQLITE_DIRECTONLY, (void *)f, f->xFunc, NULL,
                                    NULL, last ? connection_closed : NULL);
    if (rc != SQLITE_OK) {
      if (pzErrMsg) *pzErrMsg = sqlite3_mprintf("arrayrecord: cannot register %s (%s)", f->name, sqlite3_errstr(rc));
      return rc;
    }
  }
  return SQLITE_OK;
}

void sql_pool_unregister(sqlite3 *db) {
  size_t i;
  /* deleting ar_pool runs its destructor (the detach) now, while the
  ** library is still loaded */
  for (i = 0; i < sizeof(pool_functions) / sizeof(pool_functions[0]); i++)
    sqlite3_create_function_v2(db, pool_functions[i].name, pool_functions[i].nargs, SQLITE_UTF8 | SQLITE_DIRECTONLY,
                               NULL, NULL, NULL, NULL, NULL);
}
