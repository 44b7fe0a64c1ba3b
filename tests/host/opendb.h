/* SPDX-License-Identifier: Apache-2.0 */
/*
** opendb.h — what the SQL test hosts (sqlrun, badrun) share: a fresh
** in-memory database with the extension loaded from ext, or, built with
** -DAR_STATIC_EXT, linked in and registered by host_static_ext() once.
*/
#ifndef AR_TEST_OPENDB_H
#define AR_TEST_OPENDB_H

#include <sqlite3.h>
#include <stdio.h>

#ifdef AR_STATIC_EXT
#include "arrayrecord.h"
static void host_static_ext(void) { sqlite3_auto_extension((void (*)(void))sqlite3_arrayrecord_init); }
#else
static void host_static_ext(void) {}
#endif

/* 0 and *db open, or the exit status (2) after saying why on stderr. */
static int host_open(const char *prog, const char *ext, sqlite3 **db) {
  char *err = NULL;
  if (sqlite3_open(":memory:", db) != SQLITE_OK) return 2;
#ifndef AR_STATIC_EXT
  sqlite3_enable_load_extension(*db, 1);
  if (sqlite3_load_extension(*db, ext, "sqlite3_arrayrecord_init", &err) != SQLITE_OK) {
    fprintf(stderr, "%s: cannot load %s: %s\n", prog, ext, err ? err : "?");
    sqlite3_free(err);
    return 2;
  }
#else
  (void)prog;
  (void)ext; /* -e is accepted and ignored: the extension is linked in */
  (void)err;
#endif
  return 0;
}

#endif
