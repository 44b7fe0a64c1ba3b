/* SPDX-License-Identifier: Apache-2.0 */
/*
** sqlrun.c — the SQL test host. Runs .sql files statement by statement on an
** in-memory database with the extension loaded, and prints each statement
** followed by its rows (or its error) in a stable format that the golden
** files under tests/sql/ record:
**
**   > SELECT npy_dtype(readfile('tests/data/npy/dtype_le_f4.npy'));
**   float32
**   > SELECT ar_len(x'0a');
**   error: ar_len: record blob truncated at byte 1 (item 0)
**
** Values: NULL as "NULL", blobs as X'hex' (first 32 bytes, then the length),
** integers and text as sqlite3_column_text gives them, reals as SQLite
** prints them ("%!.15g") but converted by the C library (print_real), columns
** joined by '|'.
**
** Usage: sqlrun [-e build/arrayrecord.so] file.sql ...   ("-" reads stdin)
** Built with -DAR_STATIC_EXT the extension is linked in and registered with
** sqlite3_auto_extension instead of loaded (sanitizer and OOM builds).
**
** A file whose first line is "-- prelude: PATH" (say, sql/schema.sql) has
** PATH's statements run first, quietly (only an error is printed), so that
** its golden file holds its own statements alone; oomrun runs them as part
** of the file, under allocation failures too.
**
** Test-only helpers registered here: readfile(path) and writefile(path, blob),
** as in the sqlite3 CLI, and limit_length(n), which sets SQLITE_LIMIT_LENGTH.
*/
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opendb.h"

static void readfile_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const char *path = (const char *)sqlite3_value_text(argv[0]);
  FILE *f;
  long n;
  char *buf;
  (void)argc;
  if (!path) return;
  f = fopen(path, "rb");
  if (!f) return;
  if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return;
  }
  buf = sqlite3_malloc64((sqlite3_uint64)n + 1);
  if (!buf) {
    fclose(f);
    sqlite3_result_error_nomem(ctx);
    return;
  }
  if (n && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    fclose(f);
    sqlite3_free(buf);
    return;
  }
  fclose(f);
  sqlite3_result_blob64(ctx, buf, (sqlite3_uint64)n, sqlite3_free);
}

static void writefile_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const char *path = (const char *)sqlite3_value_text(argv[0]);
  const void *data = sqlite3_value_blob(argv[1]);
  int n = sqlite3_value_bytes(argv[1]);
  FILE *f;
  (void)argc;
  if (!path) return;
  f = fopen(path, "wb");
  if (!f) {
    sqlite3_result_error(ctx, "writefile: cannot open file", -1);
    return;
  }
  if (n) fwrite(data, 1, (size_t)n, f);
  fclose(f);
  sqlite3_result_int(ctx, n);
}

/* limit_length(n): set SQLITE_LIMIT_LENGTH (for the limits tests); returns
** the previous value. */
static void limit_length_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  sqlite3_result_int(ctx,
                     sqlite3_limit(sqlite3_context_db_handle(ctx), SQLITE_LIMIT_LENGTH, sqlite3_value_int(argv[0])));
}

/* SQLite 3.40 converts reals to text with long double arithmetic, which
** valgrind emulates in 64 bits: the 15th digit then differs under
** `make valgrind`. The C library converts exactly in every build, so the
** golden files hold one answer. Spelled as SQLite spells it: "2.0", "1.0e+20",
** "Inf", "-Inf", and -0.0 as "0.0". */
static void print_real(double v) {
  char s[64], *e;
  if (v == 0) v = 0; /* drops the sign of -0.0 */
  snprintf(s, sizeof(s), "%.15g", v);
  if (strcmp(s, "inf") == 0 || strcmp(s, "-inf") == 0) {
    fputs(v < 0 ? "-Inf" : "Inf", stdout);
    return;
  }
  if (strchr(s, '.')) {
    fputs(s, stdout);
    return;
  }
  e = strchr(s, 'e');
  if (e)
    printf("%.*s.0%s", (int)(e - s), s, e);
  else
    printf("%s.0", s);
}

static void print_value(sqlite3_stmt *st, int i) {
  switch (sqlite3_column_type(st, i)) {
    case SQLITE_NULL: fputs("NULL", stdout); break;
    case SQLITE_BLOB: {
      const unsigned char *p = sqlite3_column_blob(st, i);
      int n = sqlite3_column_bytes(st, i), k, shown = n > 32 ? 32 : n;
      fputs("X'", stdout);
      for (k = 0; k < shown; k++) printf("%02X", p[k]);
      fputs("'", stdout);
      if (n > shown) printf("...(%d bytes)", n);
      break;
    }
    case SQLITE_FLOAT: print_real(sqlite3_column_double(st, i)); break;
    default: fputs((const char *)sqlite3_column_text(st, i), stdout); break;
  }
}

/* Print the statement without the comments and blank lines before it. */
static void echo_sql(const char *start, const char *end) {
  for (;;) {
    while (start < end && (*start == ' ' || *start == '\t' || *start == '\n' || *start == '\r')) start++;
    if (end - start >= 2 && start[0] == '-' && start[1] == '-') {
      while (start < end && *start != '\n') start++;
      continue;
    }
    break;
  }
  while (end > start && (end[-1] == ' ' || end[-1] == '\n' || end[-1] == '\t' || end[-1] == '\r')) end--;
  printf("> %.*s\n", (int)(end - start), start);
}

static int run_sql(sqlite3 *db, const char *sql) {
  const char *tail = sql;
  int failures = 0;
  while (*tail) {
    sqlite3_stmt *st = NULL;
    const char *start = tail;
    int rc = sqlite3_prepare_v2(db, tail, -1, &st, &tail);
    if (rc != SQLITE_OK) {
      echo_sql(start, tail && tail > start ? tail : start + strlen(start));
      printf("error: %s\n", sqlite3_errmsg(db));
      failures++;
      if (!tail || tail == start) break;
      continue;
    }
    if (!st) continue; /* only comments or whitespace */
    echo_sql(start, tail);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      int i, n = sqlite3_column_count(st);
      for (i = 0; i < n; i++) {
        if (i) putchar('|');
        print_value(st, i);
      }
      putchar('\n');
    }
    if (rc != SQLITE_DONE) {
      printf("error: %s\n", sqlite3_errmsg(db));
      failures++;
    }
    sqlite3_finalize(st);
  }
  return failures;
}

static char *slurp(const char *path) {
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  size_t cap = 4096, n = 0;
  char *buf;
  if (!f) return NULL;
  buf = malloc(cap);
  while (buf) {
    size_t got = fread(buf + n, 1, cap - n - 1, f);
    n += got;
    if (got == 0) break;
    if (n + 1 == cap) {
      char *bigger = realloc(buf, cap * 2);
      if (!bigger) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = bigger;
      cap *= 2;
    }
  }
  if (f != stdin) fclose(f);
  if (buf) buf[n] = 0;
  return buf;
}

/* The PATH of a first line "-- prelude: PATH" (malloc'd), else NULL. */
static char *prelude_path(const char *sql) {
  static const char tag[] = "-- prelude: ";
  size_t n;
  char *path;
  if (strncmp(sql, tag, sizeof(tag) - 1) != 0) return NULL;
  sql += sizeof(tag) - 1;
  n = strcspn(sql, "\r\n");
  while (n && sql[n - 1] == ' ') n--;
  if (!(path = malloc(n + 1))) return NULL;
  memcpy(path, sql, n);
  path[n] = 0;
  return path;
}

/* The prelude of sql, run quietly; 0, or 1 when it failed (said on stdout). */
static int run_prelude(sqlite3 *db, const char *sql) {
  char *path = prelude_path(sql), *text, *err = NULL;
  int failed = 0;
  if (!path) return 0;
  if (!(text = slurp(path))) {
    printf("error: prelude %s: cannot read it\n", path);
    failed = 1;
  } else if (sqlite3_exec(db, text, NULL, NULL, &err) != SQLITE_OK) {
    printf("error: prelude %s: %s\n", path, err ? err : "?");
    failed = 1;
  }
  sqlite3_free(err);
  free(text);
  free(path);
  return failed;
}

int main(int argc, char **argv) {
  const char *ext = "build/arrayrecord";
  sqlite3 *db;
  int i, rc, status = 0;
  host_static_ext();
  for (i = 1; i < argc; i++) {
    char *sql;
    if (strcmp(argv[i], "-e") == 0 && i + 1 < argc) {
      ext = argv[++i];
      continue;
    }
    if ((rc = host_open("sqlrun", ext, &db)) != 0) return rc;
    sqlite3_create_function(db, "readfile", 1, SQLITE_UTF8, 0, readfile_func, 0, 0);
    sqlite3_create_function(db, "writefile", 2, SQLITE_UTF8, 0, writefile_func, 0, 0);
    sqlite3_create_function(db, "limit_length", 1, SQLITE_UTF8, 0, limit_length_func, 0, 0);
    sql = slurp(argv[i]);
    if (!sql) {
      fprintf(stderr, "sqlrun: cannot read %s\n", argv[i]);
      return 2;
    }
    if (!run_prelude(db, sql)) run_sql(db, sql);
    free(sql);
    if (sqlite3_close(db) != SQLITE_OK) {
      fprintf(stderr, "sqlrun: database did not close cleanly\n");
      status = 3;
    }
  }
  return status;
}
