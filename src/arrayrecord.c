/* SPDX-License-Identifier: Apache-2.0 */
/*
** arrayrecord.c — entry point of the sqlite-arrayrecord extension.
**
**   .load ./build/arrayrecord              (sqlite3 CLI)
**   conn.load_extension("./build/arrayrecord")   (Python)
**   sqlite3_auto_extension(sqlite3_arrayrecord_init)   (linked in; arrayrecord.h)
**
** sqlite3_arrayrecord_init checks the SQLite it runs on, then calls every
** SQL binding file's registrar in turn; each file keeps its own table of
** functions. ar_version() returns the extension version (the VERSION file);
** ar_debug() the build details.
*/
#include "sqlite3ext.h"
SQLITE_EXTENSION_INIT1

#include "arrayrecord.h"
#include "sql/sql_modules.h"
#include "sql/sql_util.h"

#ifndef AR_VERSION
#error "AR_VERSION must be defined (the Makefile passes the VERSION file's contents)"
#endif

/* Tests build the library against a future SQLite to check the refusal. */
#ifndef AR_SQLITE_MIN_NUMBER
#define AR_SQLITE_MIN_NUMBER SQLITE_ARRAYRECORD_MIN_SQLITE_NUMBER
#endif

static void ar_version_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  (void)argv;
  sqlite3_result_text(ctx, AR_VERSION, -1, SQLITE_STATIC);
}

static void ar_debug_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  (void)argv;
  sqlite3_result_text(ctx,
                      "version=" AR_VERSION " sqlite_header=" SQLITE_VERSION
#if defined(__clang__)
                      " compiler=clang-" __clang_version__
#elif defined(__GNUC__)
                      " compiler=gcc-" __VERSION__
#endif
#if defined(__SANITIZE_ADDRESS__)
                      " asan"
#endif
                      ,
                      -1, SQLITE_STATIC);
}

static const sql_function core_functions[] = {
    {"ar_version", 0, ar_version_func, NULL, NULL, 0},
    {"ar_debug", 0, ar_debug_func, NULL, NULL, 0},
};

static int core_register(sqlite3 *db, char **pzErrMsg) { return SQL_REGISTER_TABLE(db, core_functions, pzErrMsg); }

/* Every registrar, in registration order. The last two own per-connection
** state with a destructor (ar_pool's counts the connection for the pool of
** freed blocks, ar_unpack's holds its cache), which must not outlive a
** failed load: SQLite unloads the library then. sql_pack_register removes
** its own functions when it fails, and the loop below removes ar_pool's
** (their destructors run while the library is still there). */
static int (*const registrars[])(sqlite3 *, char **) = {
    core_register,          sql_npy_register,           sql_record_register,
    sql_build_register,     vtab_array_record_register, vtab_npy_each_register,
    sql_flower_register,    vtab_ar_objects_register,   sql_formats_register,
    sql_math_register,      sql_record_math_register,   sql_aggregate_register,
    vtab_ar_stats_register, sql_repr_register,          sql_threads_register,
    sql_robust_register,    sql_recorddict_register,    vtab_record_dict_register,
    sql_message_register,   sql_strategy_register,      vtab_ar_compare_register,
    sql_inspect_register,   vtab_ar_inspect_register,   vtab_ar_rolling_register,
    sql_pool_register,      sql_pack_register,
};

/* SQLITE_EXTENSION_INIT2 is a plain store to the library's global
** sqlite3_api on every load, and connections load the library on several
** threads at once while others already call through the pointer: a data
** race (make tsan reports it). Every load from one SQLite passes the same
** table, so it is published once, atomically; later loads only read it.
** Returns 0 when another SQLite library in the process got there first. */
static int publish_api(const sqlite3_api_routines *pApi) {
#if !defined(SQLITE_CORE) && defined(__GNUC__)
  /* a plain atomic load first: TSan counts even a failed exchange as a write */
  const sqlite3_api_routines *seen = __atomic_load_n(&sqlite3_api, __ATOMIC_ACQUIRE);
  if (seen == NULL && __atomic_compare_exchange_n(&sqlite3_api, &seen, pApi, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return 1;
  return seen == pApi;
#else
  SQLITE_EXTENSION_INIT2(pApi);
  return 1;
#endif
}

int sqlite3_arrayrecord_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi) {
  size_t i;
  int rc;
  if (!publish_api(pApi)) {
    /* its functions would call into the other library with this db */
    if (pzErrMsg && pApi)
      *pzErrMsg = pApi->mprintf("arrayrecord: already loaded by another SQLite library in this process");
    return SQLITE_ERROR;
  }
  /* Registering on an older SQLite would fail on flags it does not know
  ** (SQLITE_INNOCUOUS) with a less helpful message, or not at all. */
  if (sqlite3_libversion_number() < AR_SQLITE_MIN_NUMBER) {
    if (pzErrMsg)
      *pzErrMsg = sqlite3_mprintf("arrayrecord: needs SQLite %d.%d.%d or later, this is SQLite %s",
                                  AR_SQLITE_MIN_NUMBER / 1000000, AR_SQLITE_MIN_NUMBER / 1000 % 1000,
                                  AR_SQLITE_MIN_NUMBER % 1000, sqlite3_libversion());
    return SQLITE_ERROR;
  }
  for (i = 0; i < sizeof(registrars) / sizeof(registrars[0]); i++)
    if ((rc = registrars[i](db, pzErrMsg)) != SQLITE_OK) {
      if (registrars[i] == sql_pack_register) sql_pool_unregister(db);
      return rc;
    }
  return SQLITE_OK;
}
