/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_sql.c — SQL-level harness: every SQL function and table-valued
** function the extension registers, called on fuzzed arguments, on an
** in-memory database with the extension linked in.
**
** The function list comes from pragma_function_list and pragma_module_list
** (minus what a database without the extension has), so functions added
** later are fuzzed without touching this file; variadic ones get 0 to 4
** arguments. A few fixed pipelines feed each record item and array back into
** the other functions.
**
** Input: parts separated by "@@@@". With one part, it is argument 1 (a BLOB)
** and the other arguments come from a table of typical values (a key, a
** dtype, a shape, an index). With two or more, the last part is a control
** block and the others are the arguments:
**   control[0] bit 0: lower SQLITE_LIMIT_LENGTH to 1024 + control[1]^2 * 16
**              bit 1: fail allocation number control[2] + 256 * control[3]
**              bits 2-7: offset into the table of typical values
**   control[4 + i] % 5: argument i as BLOB, TEXT, INTEGER, NULL or REAL
**
** Every statement must end in a row, DONE, SQLITE_TOOBIG, SQLITE_NOMEM (only
** while a failure is injected) or SQLITE_ERROR with a message that starts
** with one of the extension's names followed by ": " and is valid UTF-8.
** Text results must be valid UTF-8 too. Anything else aborts.
**
** seeds: tests/data/npy tests/data/bad_npy tests/data/records tests/data/bad_records tests/data/fedavg
*/
#include <sqlite3.h>

#include "../host/failalloc.h"
#include "fuzz.h"

#include "arrayrecord.h"

#define MAX_PARTS 6
#define MAX_ROWS 2000
#define MAX_STMTS 512
/* Results stay below this (a .npy of a huge zero-size shape could otherwise
** make npy_to_json print a gigabyte of "[]" before SQLITE_TOOBIG). */
#define DEFAULT_LIMIT (1 << 24)

/* --- statements ------------------------------------------------------------ */

typedef struct fstmt {
  sqlite3_stmt *st;
  int nargs;
} fstmt;

static sqlite3 *db;
static fstmt stmts[MAX_STMTS];
static int nstmts;
static char *names[MAX_STMTS];
static int nnames;

static char *dup_string(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  FUZZ_CHECK(p != NULL);
  memcpy(p, s, n);
  return p;
}

static void add_name(const char *name) {
  int i;
  for (i = 0; i < nnames; i++)
    if (strcmp(names[i], name) == 0) return;
  if (nnames < MAX_STMTS) names[nnames++] = dup_string(name);
}

static void add_stmt(const char *sql) {
  sqlite3_stmt *st = NULL;
  if (nstmts >= MAX_STMTS) return;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK || !st) {
    fprintf(stderr, "fuzz_sql: cannot prepare %s: %s\n", sql, sqlite3_errmsg(db));
    abort();
  }
  stmts[nstmts].st = st;
  stmts[nstmts].nargs = sqlite3_bind_parameter_count(st);
  nstmts++;
}

/* Names (name\tnarg or name) that a plain database has, to leave out. */
static char *plain_list(const char *sql) {
  sqlite3 *plain;
  sqlite3_stmt *st;
  size_t cap = 1, n = 0;
  char *out = calloc(1, 1);
  FUZZ_CHECK(sqlite3_open(":memory:", &plain) == SQLITE_OK);
  FUZZ_CHECK(sqlite3_prepare_v2(plain, sql, -1, &st, NULL) == SQLITE_OK);
  while (sqlite3_step(st) == SQLITE_ROW) {
    const char *s = (const char *)sqlite3_column_text(st, 0);
    size_t len = strlen(s);
    out = realloc(out, cap += len + 2);
    FUZZ_CHECK(out != NULL);
    out[n++] = '\n';
    memcpy(out + n, s, len);
    n += len;
    out[n++] = '\n';
    out[n] = 0;
  }
  sqlite3_finalize(st);
  sqlite3_close(plain);
  return out;
}

static int in_list(const char *list, const char *s) {
  char key[300];
  snprintf(key, sizeof(key), "\n%s\n", s);
  return strstr(list, key) != NULL;
}

static const char *const pipelines[] = {
    "SELECT a.*, ar_get(?1, a.key), npy_to_json(ar_get(?1, a.key)), npy_raw(ar_get(?1, a.key)) FROM array_record(?1) a",
    "SELECT ar_agg(a.key, ar_get(?1, a.key)), ar_agg_list(ar_get(?1, a.key)) FROM array_record(?1) a",
    ("SELECT ar_set(?1, a.key, ar_get(?1, a.key)), ar_rename(?1, a.key, a.key || '.x'), ar_delete(?1, a.key),"
     " ar_select(?1, a.key) FROM array_record(?1) a"),
    "SELECT e.* FROM array_record(?1) a, npy_each(ar_get(?1, a.key)) e",
    "SELECT npy_from_json(npy_to_json(?1), npy_descr(?1)), npy(npy_raw(?1), npy_descr(?1), npy_shape(?1))",
    "SELECT npy_item(?1, -1), npy_item(?1, 0), npy_to_json(npy_from_json(?1))",
    "SELECT ar_merge(?1, ar_from_list(?2)), ar(?2, ?1)",
};

static void setup(void) {
  sqlite3_stmt *st;
  char *plain_fns, *plain_mods, sql[512];
  size_t k;
  FUZZ_CHECK(failalloc_install() == SQLITE_OK);

  plain_fns = plain_list("SELECT name || '/' || narg FROM pragma_function_list");
  plain_mods = plain_list("SELECT name FROM pragma_module_list");
  sqlite3_auto_extension((void (*)(void))sqlite3_arrayrecord_init);
  FUZZ_CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK);
  sqlite3_limit(db, SQLITE_LIMIT_LENGTH, DEFAULT_LIMIT);
  {
    /* SQLite copies a statement's error message to the connection in a
    ** "benign" allocation; if that fails the message reads "SQL logic
    ** error", exactly like an extension that could not allocate its own.
    ** One long error first leaves a buffer that later messages reuse, so
    ** such a message here is the extension's fault. */
    char prime[1100];
    memset(prime, 'x', sizeof(prime));
    memcpy(prime, "SELECT * FROM ", 14);
    prime[sizeof(prime) - 1] = 0;
    sqlite3_exec(db, prime, 0, 0, 0);
  }

  FUZZ_CHECK(sqlite3_prepare_v2(db, "SELECT DISTINCT name, narg FROM pragma_function_list ORDER BY 1, 2", -1, &st,
                                NULL) == SQLITE_OK);
  while (sqlite3_step(st) == SQLITE_ROW) {
    const char *name = (const char *)sqlite3_column_text(st, 0);
    int narg = sqlite3_column_int(st, 1), lo = narg, hi = narg, n, i;
    char key[256];
    snprintf(key, sizeof(key), "%s/%d", name, narg);
    if (in_list(plain_fns, key)) continue;
    add_name(name);
    if (narg < 0) lo = 0, hi = 4;
    for (n = lo; n <= hi; n++) {
      int len = snprintf(sql, sizeof(sql), "SELECT %s(", name);
      for (i = 0; i < n; i++) len += snprintf(sql + len, sizeof(sql) - (size_t)len, i ? ", ?%d" : "?%d", i + 1);
      snprintf(sql + len, sizeof(sql) - (size_t)len, ")");
      add_stmt(sql);
    }
  }
  sqlite3_finalize(st);

  FUZZ_CHECK(sqlite3_prepare_v2(db, "SELECT name FROM pragma_module_list ORDER BY 1", -1, &st, NULL) == SQLITE_OK);
  while (sqlite3_step(st) == SQLITE_ROW) {
    const char *name = (const char *)sqlite3_column_text(st, 0);
    /* pragma_* tables are made on first use, so the plain list may lack them. */
    if (in_list(plain_mods, name) || strncmp(name, "pragma_", 7) == 0) continue;
    add_name(name);
    snprintf(sql, sizeof(sql), "SELECT * FROM %s(?1)", name);
    add_stmt(sql);
  }
  sqlite3_finalize(st);
  for (k = 0; k < sizeof(pipelines) / sizeof(pipelines[0]); k++) add_stmt(pipelines[k]);
  free(plain_fns);
  free(plain_mods);
  FUZZ_CHECK(nnames > 10); /* the extension did register */
}

/* --- one input -------------------------------------------------------------- */

/* Typical arguments for the positions the input does not fill. */
static const struct {
  int kind; /* 0 text, 1 integer */
  const char *text;
  sqlite3_int64 i;
} typical[] = {
    {0, "0", 0},       {0, "float32", 0},  {0, "[2,3]", 0}, {1, NULL, 1},         {0, "fc1.*", 0},
    {0, "fc1.weight", 0}, {0, "<i8", 0},   {1, NULL, -1},   {0, "[[1,2],[3,4]]", 0}, {0, "", 0},
    {1, NULL, 0},      {0, "complex64", 0}, {0, "[]", 0},    {0, "bool", 0},
};
#define NTYPICAL (sizeof(typical) / sizeof(typical[0]))

static void bind_arg(sqlite3_stmt *st, int i, const fuzz_part *parts, int nparts, const unsigned char *ctl, size_t nctl,
                     int offset) {
  int kind;
  const fuzz_part *a;
  if (i >= nparts) {
    size_t t = (size_t)(i - nparts + offset) % NTYPICAL;
    if (typical[t].kind == 0) sqlite3_bind_text(st, i + 1, typical[t].text, -1, SQLITE_STATIC);
    else sqlite3_bind_int64(st, i + 1, typical[t].i);
    return;
  }
  a = &parts[i];
  kind = (size_t)(4 + i) < nctl ? ctl[4 + i] % 5 : (i == 0 ? 0 : 1);
  switch (kind) {
    case 0: sqlite3_bind_blob64(st, i + 1, a->p, a->n, SQLITE_STATIC); break;
    case 1: sqlite3_bind_text64(st, i + 1, (const char *)a->p, a->n, SQLITE_STATIC, SQLITE_UTF8); break;
    case 2: {
      uint64_t v = 0;
      size_t k;
      for (k = 0; k < a->n && k < 8; k++) v |= (uint64_t)a->p[k] << (8 * k);
      sqlite3_bind_int64(st, i + 1, (sqlite3_int64)v);
      break;
    }
    case 3: sqlite3_bind_null(st, i + 1); break;
    default: {
      double d = 0;
      if (a->n >= 8) memcpy(&d, a->p, 8);
      sqlite3_bind_double(st, i + 1, d);
    }
  }
}

/* "name: ..." with a name of ours. */
static int our_error(const char *msg) {
  const char *colon = strstr(msg, ": ");
  int i;
  if (!colon) return 0;
  for (i = 0; i < nnames; i++)
    if (strlen(names[i]) == (size_t)(colon - msg) && memcmp(names[i], msg, (size_t)(colon - msg)) == 0) return 1;
  return 0;
}

static void run_stmt(fstmt *f, const fuzz_part *parts, int nparts, const unsigned char *ctl, size_t nctl, int offset,
                     int injecting) {
  sqlite3_stmt *st = f->st;
  int i, rc, rows = 0;
  for (i = 0; i < f->nargs; i++) bind_arg(st, i, parts, nparts, ctl, nctl, offset);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW && rows++ < MAX_ROWS) {
    int c, ncol = sqlite3_column_count(st);
    for (c = 0; c < ncol; c++) {
      if (sqlite3_column_type(st, c) == SQLITE_TEXT) {
        const unsigned char *t = sqlite3_column_text(st, c);
        if (t) FUZZ_CHECK(fuzz_utf8_valid(t, (size_t)sqlite3_column_bytes(st, c)));
      } else if (sqlite3_column_type(st, c) == SQLITE_BLOB) {
        (void)sqlite3_column_blob(st, c);
      }
    }
  }
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
    const char *msg = sqlite3_errmsg(db);
    int ok = rc == SQLITE_TOOBIG || (rc == SQLITE_NOMEM && injecting) ||
             (rc == SQLITE_ERROR && our_error(msg) && fuzz_utf8_valid((const unsigned char *)msg, strlen(msg)));
    if (!ok) {
      fprintf(stderr, "fuzz_sql: %s\n  -> rc %d: %s\n", sqlite3_sql(st), rc, msg);
      abort();
    }
  }
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_part parts[MAX_PARTS];
  const unsigned char *ctl = NULL;
  size_t nctl = 0;
  int nparts, offset = 0, injecting = 0, i;
  if (!db) setup();
  nparts = fuzz_split(data, size, parts, MAX_PARTS);
  if (nparts > 1) {
    nparts--;
    ctl = parts[nparts].p;
    nctl = parts[nparts].n;
  }
  if (nctl > 0) {
    offset = ctl[0] >> 2;
    /* Not below 1024: SQLite drops an error message longer than the limit. */
    if ((ctl[0] & 1) && nctl > 1) sqlite3_limit(db, SQLITE_LIMIT_LENGTH, 1024 + ctl[1] * ctl[1] * 16);
    if ((ctl[0] & 2) && nctl > 3) {
      injecting = 1;
      failalloc_arm(ctl[2] + 256 * ctl[3]);
    }
  }
  for (i = 0; i < nstmts; i++) run_stmt(&stmts[i], parts, nparts, ctl, nctl, offset, injecting);
  failalloc_disarm();
  sqlite3_limit(db, SQLITE_LIMIT_LENGTH, DEFAULT_LIMIT);
  return 0;
}
