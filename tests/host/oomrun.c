/* SPDX-License-Identifier: Apache-2.0 */
/*
** oomrun.c — out-of-memory injection over the SQL test files.
**
** SQLite's allocator is replaced (SQLITE_CONFIG_MALLOC) by one that wraps the
** default, counts outstanding allocations and can fail the Nth one; the
** extension allocates through SQLite, so its memory is counted too.
** Lookaside is off, so every allocation goes through the wrapper.
**
** For every statement of every file, on a fresh database where the
** statements before it have run, the statement is run with allocation N
** failing, for N = 0, 1, 2, ... until it completes without reaching N. Each
** run must end in the statement's normal outcome (same rows, or same error)
** or in SQLITE_NOMEM, never in another error or a crash; after the database
** closes no allocation may be outstanding. Opening a database and
** registering the extension is run the same way. Finally every SQL function the
** extension registers must appear in some statement, so each is tested.
**
** Usage: oomrun [-e build/arrayrecord] file.sql ...
** Prints "ok oom/FILE (S statements, R runs)" or "FAIL oom/FILE ...".
*/
#define main sqlrun_main /* reuse the golden-test host's helpers (readfile, slurp) */
#include "sqlrun.c"
#undef main

#include <stdarg.h>

#include "failalloc.h"

/* --- running statements --------------------------------------------------------- */

typedef struct text {
  char *p;
  size_t n, cap;
} text;

static void put(text *t, const char *fmt, ...) {
  va_list ap;
  int len;
  for (;;) {
    size_t room = t->cap - t->n;
    va_start(ap, fmt);
    len = vsnprintf(t->p ? t->p + t->n : NULL, room, fmt, ap);
    va_end(ap);
    if (len < 0) return;
    if ((size_t)len < room) {
      t->n += (size_t)len;
      return;
    }
    t->cap = (t->cap + (size_t)len + 64) * 2;
    t->p = realloc(t->p, t->cap);
    if (!t->p) abort();
  }
}

static const char *ext_path = "build/arrayrecord";

/* SQLite copies a statement's error message to the connection in a "benign"
** allocation: if that one fails, the statement keeps its error code but the
** message becomes the generic "SQL logic error" -- which is also what an
** extension that fails to allocate its own message looks like. A long error
** first gives the connection a buffer that later messages reuse, so any such
** message seen here is the extension's fault. */
static void prime_error_buffer(sqlite3 *db) {
  char sql[1100];
  memset(sql, 'x', sizeof(sql));
  memcpy(sql, "SELECT * FROM ", 14);
  sql[sizeof(sql) - 1] = 0;
  sqlite3_exec(db, sql, 0, 0, 0);
}

static sqlite3 *open_db(void) {
  sqlite3 *db;
  char *err = NULL;
  if (sqlite3_open(":memory:", &db) != SQLITE_OK) {
    fprintf(stderr, "oomrun: cannot open a database\n");
    exit(2);
  }
#ifndef AR_STATIC_EXT
  sqlite3_enable_load_extension(db, 1);
  if (sqlite3_load_extension(db, ext_path, "sqlite3_arrayrecord_init", &err) != SQLITE_OK) {
    fprintf(stderr, "oomrun: cannot load %s: %s\n", ext_path, err ? err : "?");
    exit(2);
  }
#endif
  (void)err;
  sqlite3_create_function(db, "readfile", 1, SQLITE_UTF8, 0, readfile_func, 0, 0);
  sqlite3_create_function(db, "limit_length", 1, SQLITE_UTF8, 0, limit_length_func, 0, 0);
  prime_error_buffer(db);
  return db;
}

/* Run one statement; its outcome (rows, or "error: ...") goes to out.
** Returns the final result code. */
static int run_one(sqlite3 *db, const char *sql, text *out) {
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
  if (rc == SQLITE_OK && st) {
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      int i, n = sqlite3_column_count(st);
      for (i = 0; i < n; i++) {
        const unsigned char *v;
        if (sqlite3_column_type(st, i) == SQLITE_BLOB) {
          const unsigned char *b = sqlite3_column_blob(st, i);
          int k, len = sqlite3_column_bytes(st, i);
          put(out, "%sX'", i ? "|" : "");
          for (k = 0; b && k < len; k++) put(out, "%02X", b[k]);
          put(out, "'");
          continue;
        }
        v = sqlite3_column_text(st, i);
        put(out, "%s%s", i ? "|" : "", v ? (const char *)v : "NULL");
      }
      put(out, "\n");
    }
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
  }
  if (rc != SQLITE_OK) put(out, "error(%d): %s\n", rc, sqlite3_errmsg(db));
  sqlite3_finalize(st);
  return rc;
}

/* ar_rolling_mean runs statements of its own on the connection; when one
** fails, SQLite stores its message as the connection's error in a fresh
** allocation (sqlite3ErrorWithMsg, SQLITE_DYNAMIC), freeing the buffer
** prime_error_buffer left. The outer statement's message, longer, may then
** need a new buffer in SQLite's benign copy, and lose its text to "SQL logic
** error" when that allocation is the one failed. Only that outcome of only
** those errors is let through. */
static int lost_own_statement_error(const text *got, const text *expected) {
  static const char lost[] = "error(1): SQL logic error\n", own[] = "error(1): ar_rolling_mean: ";
  size_t rows = got->n - (sizeof(lost) - 1); /* the rows before the error, the same in both */
  if (got->n < sizeof(lost) - 1 || memcmp(got->p + rows, lost, sizeof(lost) - 1) != 0) return 0;
  return expected->n >= rows + sizeof(own) - 1 && (rows == 0 || memcmp(got->p, expected->p, rows) == 0) &&
         memcmp(expected->p + rows, own, sizeof(own) - 1) == 0 &&
         memchr(expected->p + rows, '\n', expected->n - rows) == expected->p + expected->n - 1;
}

/* SQLite's own json_valid() (json.c before 3.45) answers 0, not an error,
** when parsing runs out of memory; a CHECK (json_valid(col)) constraint
** then fails (sql/schema.sql has several). Only that message, after an
** injected failure, is let through: it is SQLite's, not the extension's
** (whose checks, ar_check and rd_check, fail with SQLITE_NOMEM). SQLite
** names the constraint's expression in the message, or, before 3.32, only
** its table: then any CHECK failure of an SQLite before 3.45 is taken. */
static int json_valid_lost_to_oom(const text *got) {
  static const char check[] = "error(19): CHECK constraint failed: ";
  const char *at = got->p ? strstr(got->p, check) : NULL;
  size_t rest;
  if (!at || memchr(at, '\n', got->n - (size_t)(at - got->p)) != got->p + got->n - 1) return 0;
  rest = got->n - (size_t)(at - got->p) - (sizeof(check) - 1);
  if (strstr(at, "json_valid(") != NULL) return 1;
  return sqlite3_libversion_number() < 3045000 && !memchr(at + sizeof(check) - 1, '(', rest);
}

/* The statements of a file, split the way SQLite parses them. */
static int split(const char *sql, char ***stmts) {
  sqlite3 *db = open_db();
  const char *tail = sql;
  int n = 0;
  *stmts = NULL;
  while (*tail) {
    sqlite3_stmt *st = NULL;
    const char *start = tail;
    size_t len;
    text ignored = {0, 0, 0};
    if (sqlite3_prepare_v2(db, tail, -1, &st, &tail) != SQLITE_OK) {
      if (!tail || tail == start) break;
    }
    len = (size_t)(tail - start);
    if (st) {
      char *copy = malloc(len + 1);
      memcpy(copy, start, len);
      copy[len] = 0;
      *stmts = realloc(*stmts, sizeof(char *) * (size_t)(n + 1));
      (*stmts)[n++] = copy;
      sqlite3_finalize(st);
      /* run it, so later statements that depend on it prepare */
      run_one(db, copy, &ignored);
      free(ignored.p);
    }
  }
  sqlite3_close(db);
  return n;
}

static int scenario_file(const char *path, text *all_sql) {
  char *sql = slurp(path), **stmts;
  int n, k, failures = 0, npre = 0;
  long runs = 0;
  if (!sql) {
    printf("FAIL oom/%s: cannot read\n", path);
    return 1;
  }
  {
    /* a prelude's statements go first, run before each of the file's own
    ** (SQLite's CREATE statements: the file's statements run their triggers) */
    char *pre = prelude_path(sql), *pre_sql = pre ? slurp(pre) : NULL;
    if (pre && !pre_sql) {
      printf("FAIL oom/%s: cannot read its prelude %s\n", path, pre);
      free(pre);
      free(sql);
      return 1;
    }
    if (pre_sql) {
      char **pre_stmts;
      size_t a = strlen(pre_sql), b = strlen(sql);
      int j;
      npre = split(pre_sql, &pre_stmts);
      for (j = 0; j < npre; j++) free(pre_stmts[j]);
      free(pre_stmts);
      char *both = malloc(a + b + 2);
      if (!both) return 1;
      memcpy(both, pre_sql, a);
      both[a] = '\n';
      memcpy(both + a + 1, sql, b + 1);
      free(sql);
      sql = both;
    }
    free(pre_sql);
    free(pre);
  }
  n = split(sql, &stmts);
  for (k = npre; k < n && !failures; k++) {
    text expected = {0, 0, 0};
    long N;
    int i;
    sqlite3 *db;
    put(all_sql, "%s\n", stmts[k]);
    /* The normal outcome. */
    db = open_db();
    for (i = 0; i < k; i++) {
      text ignored = {0, 0, 0};
      run_one(db, stmts[i], &ignored);
      free(ignored.p);
    }
    run_one(db, stmts[k], &expected);
    sqlite3_close(db);
    for (N = 0;; N++) {
      text got = {0, 0, 0};
      int rc, done, injected;
      long before = failalloc_outstanding; /* what the process holds (auto-extension list) */
      db = open_db();
      for (i = 0; i < k; i++) {
        text ignored = {0, 0, 0};
        run_one(db, stmts[i], &ignored);
        free(ignored.p);
      }
      failalloc_arm(N);
      rc = run_one(db, stmts[k], &got);
      injected = failalloc_disarm();
      done = !injected;
      runs++;
      if (sqlite3_close(db) != SQLITE_OK) {
        printf("FAIL oom/%s: statement %d, allocation %ld: database did not close\n    %s\n", path, k + 1, N, stmts[k]);
        failures++;
      } else if (failalloc_outstanding != before) {
        printf("FAIL oom/%s: statement %d, allocation %ld failed: %ld allocation(s) leaked\n    %s\n", path, k + 1, N,
               failalloc_outstanding - before, stmts[k]);
        failures++;
      } else if (!(rc == SQLITE_NOMEM && injected) && !(injected && lost_own_statement_error(&got, &expected)) &&
                 !(injected && json_valid_lost_to_oom(&got)) &&
                 !(got.n == expected.n && (got.n == 0 || memcmp(got.p, expected.p, got.n) == 0))) {
        printf("FAIL oom/%s: statement %d, allocation %ld failed:\n    %s\n    got      %.*s    expected %.*s", path,
               k + 1, N, stmts[k], (int)got.n, got.p ? got.p : "", (int)expected.n, expected.p ? expected.p : "");
        failures++;
      }
      free(got.p);
      if (done || failures) break;
    }
    free(expected.p);
  }
  if (!failures) printf("ok oom/%s (%d statements, %ld runs)\n", path, n - npre, runs);
  for (k = 0; k < n; k++) free(stmts[k]);
  free(stmts);
  free(sql);
  return failures;
}

/* Opening a database and registering the extension, failing allocation N:
** it either works or fails for lack of memory, and leaks nothing. */
static int scenario_init(void) {
  long N, runs = 0;
  for (N = 0;; N++) {
    sqlite3 *db = NULL;
    char *err = NULL;
    long before = failalloc_outstanding;
    int rc, done, injected;
    failalloc_arm(N);
    rc = sqlite3_open(":memory:", &db);
#ifndef AR_STATIC_EXT
    if (rc == SQLITE_OK) {
      sqlite3_enable_load_extension(db, 1);
      rc = sqlite3_load_extension(db, ext_path, "sqlite3_arrayrecord_init", &err);
    }
#endif
    injected = failalloc_disarm();
    done = !injected;
    runs++;
    /* SQLite reports a failed init as SQLITE_ERROR with the extension's
    ** message, which must say why; only SQLite's own copy may be lost. */
    if (rc != SQLITE_OK && !(injected && (rc == SQLITE_NOMEM || !err || strstr(err, "out of memory")))) {
      printf("FAIL oom/init: allocation %ld failed: rc %d (%s)\n", N, rc, err ? err : db ? sqlite3_errmsg(db) : "?");
      return 1;
    }
    sqlite3_free(err);
    sqlite3_close(db);
    if (failalloc_outstanding != before) {
      printf("FAIL oom/init: allocation %ld failed: %ld allocation(s) leaked\n", N, failalloc_outstanding - before);
      return 1;
    }
    if (done) break;
  }
  printf("ok oom/init (%ld runs)\n", runs);
  return 0;
}

/* Every function of the extension appears in some statement. */
static int check_all_functions_tested(const char *all_sql) {
  sqlite3 *plain, *db;
  sqlite3_stmt *st;
  text missing = {0, 0, 0};
  int failures = 0;
  static const char names_sql[] = "SELECT name FROM pragma_function_list UNION SELECT name FROM pragma_module_list";
  if (sqlite3_open(":memory:", &plain) != SQLITE_OK) return 1;
  db = open_db();
  sqlite3_exec(db, "CREATE TEMP TABLE plain(name TEXT)", 0, 0, 0);
  if (sqlite3_prepare_v2(plain, names_sql, -1, &st, NULL) == SQLITE_OK) {
    while (sqlite3_step(st) == SQLITE_ROW) {
      sqlite3_stmt *ins;
      sqlite3_prepare_v2(db, "INSERT INTO plain VALUES (?)", -1, &ins, NULL);
      sqlite3_bind_text(ins, 1, (const char *)sqlite3_column_text(st, 0), -1, SQLITE_TRANSIENT);
      sqlite3_step(ins);
      sqlite3_finalize(ins);
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(plain);
  /* pragma_* tables appear on first use; readfile and limit_length are the host's. */
  if (sqlite3_prepare_v2(
          db,
          "SELECT * FROM (SELECT name FROM pragma_function_list UNION SELECT name FROM pragma_module_list)"
          " WHERE name NOT IN (SELECT name FROM plain) AND name NOT LIKE 'pragma!_%' ESCAPE '!'"
          " AND name NOT IN ('readfile', 'limit_length') ORDER BY 1",
          -1, &st, NULL) == SQLITE_OK) {
    while (sqlite3_step(st) == SQLITE_ROW) {
      const char *name = (const char *)sqlite3_column_text(st, 0);
      char call[160];
      snprintf(call, sizeof(call), "%s(", name);
      if (!strstr(all_sql, call)) {
        put(&missing, " %s", name);
        failures = 1;
      }
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  if (failures)
    printf("FAIL oom/every-function: not called by any scenario:%s\n", missing.p);
  else
    printf("ok oom/every-function\n");
  free(missing.p);
  return failures;
}

int main(int argc, char **argv) {
  text all_sql = {0, 0, 0};
  int i, failures = 0;
  if (failalloc_install() != SQLITE_OK) {
    fprintf(stderr, "oomrun: cannot install the allocator\n");
    return 2;
  }
#ifdef AR_STATIC_EXT
  sqlite3_auto_extension((void (*)(void))sqlite3_arrayrecord_init);
#endif
  put(&all_sql, "");
  for (i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-e") == 0 && i + 1 < argc) {
      ext_path = argv[++i];
      continue;
    }
    if (!all_sql.n) failures += scenario_init();
    failures += scenario_file(argv[i], &all_sql);
  }
  failures += check_all_functions_tested(all_sql.p);
  free(all_sql.p);
  return failures ? 1 : 0;
}
