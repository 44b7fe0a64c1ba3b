/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_inspect.c — SQL-level harness for ar_describe and ar_inspect on
** arbitrary bytes, on an in-memory database with the extension linked in.
**
** Input: the BLOB, optionally followed by "@@@@" and a control block:
** control[0] + 1 is bins (1..256), control[1] % 256 + 1 the grid (default
** 32 and 32).
**
** Checks: ar_describe never fails and gives NULL or valid JSON text; a BLOB
** it describes, ar_inspect reads without an error, with one row per array
** the description counts; every row's histogram counts add up to its
** finite elements and its heatmap is valid JSON with cell_rows x cell_cols
** values; ar_inspect with each forced kind gives rows or an error of its
** own ("ar_inspect: ..."), valid UTF-8, never another failure.
**
** seeds: tests/data/npy tests/data/bad_npy tests/data/records tests/data/bad_records tests/data/recorddict
*/
#include <sqlite3.h>

#include "fuzz.h"

#include "arrayrecord.h"

#define MAX_ROWS 4000

static sqlite3 *db;
static sqlite3_stmt *describe_st, *expect_st, *inspect_st[4];

static sqlite3_stmt *prepare(const char *sql) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
    fprintf(stderr, "fuzz_inspect: %s: %s\n", sql, sqlite3_errmsg(db));
    abort();
  }
  return st;
}

/* Per row: the histogram's counts add up to the finite elements, the heatmap
** has its cells, and everything else is there to read. */
#define ROW_CHECKS                                                                                     \
  "SELECT histogram IS NULL OR (SELECT sum(value) FROM json_each(histogram, '$.counts')) ="            \
  " numel - nan - coalesce(posinf, 0) - coalesce(neginf, 0),"                                          \
  " heatmap IS NULL OR (json_valid(heatmap) AND json_array_length(heatmap, '$.values') ="              \
  " json_extract(heatmap, '$.cell_rows') AND json_array_length(heatmap, '$.values[0]') ="              \
  " json_extract(heatmap, '$.cell_cols')),"                                                            \
  " position, record, key, dtype, shape, numel, nbytes, min, max, mean, std, l2, nan, posinf, neginf," \
  " histogram, heatmap FROM ar_inspect(?1, ?2, ?3"

static void setup(void) {
  static const char *const kinds[] = {"", ", 'npy'", ", 'arrayrecord'", ", 'recorddict'"};
  char sql[1024];
  int k;
  sqlite3_auto_extension((void (*)(void))sqlite3_arrayrecord_init);
  FUZZ_CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK);
  sqlite3_limit(db, SQLITE_LIMIT_LENGTH, 1 << 24);
  describe_st = prepare("SELECT ar_describe(?1, 1000000), json_valid(ar_describe(?1))");
  /* the rows a description promises */
  expect_st = prepare(
      "SELECT CASE json_extract(?1, '$.kind') WHEN 'npy' THEN 1"
      " WHEN 'arrayrecord' THEN json_extract(?1, '$.count')"
      " ELSE (SELECT coalesce(sum(json_extract(value, '$.count')), 0) FROM json_each(?1, '$.items')"
      " WHERE json_extract(value, '$.kind') = 'array_record') END");
  for (k = 0; k < 4; k++) {
    sqlite3_snprintf(sizeof(sql), sql, "%s%s)", ROW_CHECKS, kinds[k]);
    inspect_st[k] = prepare(sql);
  }
}

/* Run ar_inspect: the number of rows, or -1 after its own error. */
static int run_inspect(sqlite3_stmt *st, const uint8_t *data, size_t size, int bins, int grid) {
  int rc, rows = 0, c;
  sqlite3_bind_blob(st, 1, size ? (const void *)data : "", (int)size, SQLITE_STATIC);
  sqlite3_bind_int(st, 2, bins);
  sqlite3_bind_int(st, 3, grid);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW && rows++ < MAX_ROWS) {
    FUZZ_CHECK(sqlite3_column_int(st, 0) == 1);
    FUZZ_CHECK(sqlite3_column_int(st, 1) == 1);
    FUZZ_CHECK(sqlite3_column_int(st, 2) == rows - 1);
    for (c = 3; c < sqlite3_column_count(st); c++) {
      if (sqlite3_column_type(st, c) == SQLITE_TEXT) {
        const unsigned char *t = sqlite3_column_text(st, c);
        FUZZ_CHECK(t && fuzz_utf8_valid(t, (size_t)sqlite3_column_bytes(st, c)));
      }
    }
  }
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
    const char *msg = sqlite3_errmsg(db);
    if (rc != SQLITE_ERROR || strncmp(msg, "ar_inspect: ", 12) != 0 ||
        !fuzz_utf8_valid((const unsigned char *)msg, strlen(msg))) {
      fprintf(stderr, "fuzz_inspect: rc %d: %s\n", rc, msg);
      abort();
    }
    rows = -1;
  }
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  return rows;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_part parts[2];
  int nparts, bins = 32, grid = 32, rows, k;
  long long want = -1;
  if (!db) setup();
  nparts = fuzz_split(data, size, parts, 2);
  if (nparts > 1 && parts[1].n >= 2) {
    bins = parts[1].p[0] + 1;
    grid = parts[1].p[1] % 256 + 1;
  }
  sqlite3_bind_blob(describe_st, 1, parts[0].n ? (const void *)parts[0].p : "", (int)parts[0].n, SQLITE_STATIC);
  FUZZ_CHECK(sqlite3_step(describe_st) == SQLITE_ROW);
  if (sqlite3_column_type(describe_st, 0) != SQLITE_NULL) {
    FUZZ_CHECK(sqlite3_column_type(describe_st, 0) == SQLITE_TEXT && sqlite3_column_int(describe_st, 1) == 1);
    sqlite3_bind_text(expect_st, 1, (const char *)sqlite3_column_text(describe_st, 0), -1, SQLITE_TRANSIENT);
    FUZZ_CHECK(sqlite3_step(expect_st) == SQLITE_ROW);
    want = sqlite3_column_int64(expect_st, 0);
    sqlite3_reset(expect_st);
  }
  FUZZ_CHECK(sqlite3_step(describe_st) == SQLITE_DONE);
  sqlite3_reset(describe_st);
  rows = run_inspect(inspect_st[0], parts[0].p, parts[0].n, bins, grid);
  if (want >= 0 && want <= MAX_ROWS) FUZZ_CHECK(rows == want);
  if (want < 0) FUZZ_CHECK(rows == -1);
  for (k = 1; k < 4; k++) run_inspect(inspect_st[k], parts[0].p, parts[0].n, bins, grid);
  return 0;
}
