/* SPDX-License-Identifier: Apache-2.0 */
/*
** statichost.c — an application that links build/libarrayrecord.a (make
** static) and registers it with sqlite3_auto_extension, as README "Linking it
** into a program" shows. It opens a database, runs FedAvg over two records
** and checks the result; prints "ok static/..." lines for tests/run. The
** first line names the SQLite it runs on, so a run's output shows which one
** was tested (the system's, or make test-amalgamation's).
*/
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "arrayrecord.h"

static int failures;

static void check(const char *name, int ok, const char *detail) {
  printf("%s static/%s%s%s\n", ok ? "ok" : "FAIL", name, ok ? "" : ": ", ok ? "" : detail);
  if (!ok) failures++;
}

/* The first column of the first row as text ("" on none, the error on one). */
static void query(sqlite3 *db, const char *sql, char *out, size_t cap) {
  sqlite3_stmt *st = NULL;
  out[0] = 0;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
    snprintf(out, cap, "error: %s", sqlite3_errmsg(db));
    return;
  }
  if (sqlite3_step(st) == SQLITE_ROW) {
    const unsigned char *t = sqlite3_column_text(st, 0);
    snprintf(out, cap, "%s", t ? (const char *)t : "NULL");
  } else if (sqlite3_errcode(db) != SQLITE_DONE && sqlite3_errcode(db) != SQLITE_OK) {
    snprintf(out, cap, "error: %s", sqlite3_errmsg(db));
  }
  sqlite3_finalize(st);
}

int main(void) {
  sqlite3 *db = NULL;
  char got[256];
  /* The library linked is the one whose header the program was built with. */
  if (strcmp(sqlite3_libversion(), SQLITE_VERSION) == 0 && sqlite3_libversion_number() == SQLITE_VERSION_NUMBER)
    printf("ok static/sqlite_version %s\n", sqlite3_libversion());
  else
    printf("FAIL static/sqlite_version: library %s, header %s\n", sqlite3_libversion(), SQLITE_VERSION), failures++;
  if (sqlite3_auto_extension((void (*)(void))sqlite3_arrayrecord_init) != SQLITE_OK) {
    printf("FAIL static/auto_extension\n");
    return 1;
  }
  if (sqlite3_open(":memory:", &db) != SQLITE_OK) {
    printf("FAIL static/open: %s\n", sqlite3_errmsg(db));
    return 1;
  }
  query(db, "SELECT ar_version()", got, sizeof got);
  check("registered", got[0] != 0 && strncmp(got, "error", 5) != 0, got);
  query(db,
        "WITH u(rec, n) AS (VALUES (ar('w', npy_from_json('[1.0, 2.0]', 'float32')), 1),"
        "                          (ar('w', npy_from_json('[3.0, 6.0]', 'float32')), 3))"
        "SELECT npy_to_json(ar_get(ar_mean(rec, n), 'w')) FROM u",
        got, sizeof got);
  check("fedavg", strcmp(got, "[2.5,5.0]") == 0, got);
  sqlite3_close(db);
  /* A second connection gets it too: registered once for the process. */
  if (sqlite3_open(":memory:", &db) != SQLITE_OK) return 1;
  query(db, "SELECT ar_len(ar('a', npy_from_json('[1]'), 'b', npy_from_json('[2]')))", got, sizeof got);
  check("second_connection", strcmp(got, "2") == 0, got);
  sqlite3_close(db);
  return failures != 0;
}
