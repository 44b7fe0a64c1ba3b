/*
** arrayrecord.c — entry point of the sqlite-arrayrecord extension.
**
**   .load ./build/arrayrecord              (sqlite3 CLI)
**   conn.load_extension("./build/arrayrecord")   (Python)
**
** sqlite3_arrayrecord_init registers every SQL function and table-valued
** function, file by file; each file keeps its own registration table.
** ar_version() returns the extension version; ar_debug() the build details.
*/
#include "sqlite3ext.h"
SQLITE_EXTENSION_INIT1

#include "sql_modules.h"
#include "sql_util.h"

#define AR_VERSION "0.1.0"

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

/* A table that failed to register: say which and why (SQLite shows
** "error during initialization: " followed by this). */
static int module_error(int rc, const char *name, char **pzErrMsg) {
  if (pzErrMsg) *pzErrMsg = sqlite3_mprintf("arrayrecord: cannot register %s (%s)", name, sqlite3_errstr(rc));
  return rc;
}

#ifdef _WIN32
__declspec(dllexport)
#elif defined(__GNUC__)
__attribute__((visibility("default"))) /* the one exported symbol */
#endif
int sqlite3_arrayrecord_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi) {
  int rc;
  SQLITE_EXTENSION_INIT2(pApi);
  if ((rc = SQL_REGISTER_TABLE(db, core_functions, pzErrMsg)) != SQLITE_OK) return rc;
  if ((rc = sql_npy_register(db, pzErrMsg)) != SQLITE_OK) return rc;
  if ((rc = sql_record_register(db, pzErrMsg)) != SQLITE_OK) return rc;
  if ((rc = sql_build_register(db, pzErrMsg)) != SQLITE_OK) return rc;
  if ((rc = vtab_array_record_register(db)) != SQLITE_OK) return module_error(rc, "array_record", pzErrMsg);
  if ((rc = vtab_npy_each_register(db)) != SQLITE_OK) return module_error(rc, "npy_each", pzErrMsg);
  if ((rc = sql_flower_register(db, pzErrMsg)) != SQLITE_OK) return rc;
  if ((rc = vtab_ar_objects_register(db)) != SQLITE_OK) return module_error(rc, "ar_objects", pzErrMsg);
  if ((rc = sql_formats_register(db, pzErrMsg)) != SQLITE_OK) return rc;
  if ((rc = sql_math_register(db, pzErrMsg)) != SQLITE_OK) return rc;
  if ((rc = sql_record_math_register(db, pzErrMsg)) != SQLITE_OK) return rc;
  if ((rc = sql_aggregate_register(db, pzErrMsg)) != SQLITE_OK) return rc;
  if ((rc = vtab_ar_stats_register(db)) != SQLITE_OK) return module_error(rc, "ar_stats", pzErrMsg);
  return SQLITE_OK;
}
