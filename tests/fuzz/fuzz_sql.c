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
** Then the table part: the data parts (or the single input) become rows of
** a temp table t(i, g, rec, npy, rd, w, p, f, q, k, wk) and every aggregate
** and window function the extension registers (pragma_function_list type
** 'a' or 'w') runs over it: as a plain aggregate, per group (GROUP BY g), and
** each window function OVER several frames (growing, sliding, looking ahead,
** shrinking to the end, empty, GROUPS peers, EXCLUDE CURRENT ROW). Row 1 is
** part 1 (a readable .npy is wrapped as ar('w', npy)); rows 2-4 derive from
** it (a copy with another weight, ar_scale twice), rows 5... are the other
** parts, then each of those ar_add-ed to row 1, so that records agree on
** keys, dtypes and shapes often enough to get past "mismatched keys". npy
** is a record's first array (or the part), rd a RecordDict made of rec and
** a num-examples metric, and o holds ar_objects/rd_objects rows for
** ar_inflate/rd_inflate. Arguments follow each function's documented
** signature (unknown ones get rec or npy, w, f, q). The control block
** continues:
**   control[9]       bits 0-2: keys 'k' || (i % n) for ar_agg/rd_agg (0: i)
**                    bits 3-4: weighting key num-examples, loss, '' or NULL
**                    bits 5-6: which objects ar_inflate/rd_inflate see
**                    bit 7: drop the objects with i % 8 = 3
**   control[10..12]  p (alpha, beta), f, q (Krum's k) for every row
**   control[13..14]  the two ar_scale factors
**   control[15]      which array of a record becomes npy
**   control[16 + r]  row r+1's weight w; >= 0xc0 also sets its own p
** each a code for 1, 0.5, 0, -1, NaN, 1e308, inf, 2, 0.1, 3, '0.25', NULL,
** a subnormal, INT64_MAX, 0.25, -1, a BLOB, -0.0, 5 or 0.49 (code % 20);
** without them, w = i, p = 0.25, f = 0, q = 1. An injected allocation
** failure is armed again for the table part. FUZZ_SQL_TRACE=1 prints how
** each table statement ended (to check that seeds reach rows).
**
** Every statement must end in a row, DONE, SQLITE_TOOBIG, SQLITE_NOMEM (only
** while a failure is injected) or SQLITE_ERROR with a message that starts
** with one of the extension's names followed by ": " and is valid UTF-8.
** Text results must be valid UTF-8 too. Anything else aborts.
**
** The statements use SQL that SQLite 3.31.0 (the oldest release supported)
** understands: CASE rather than iif(), which came in 3.32.
**
** seeds: tests/data/npy tests/data/bad_npy tests/data/records tests/data/bad_records tests/data/fedavg
*/
#include <math.h>
#include <sqlite3.h>

#include "../host/failalloc.h"
#include "fuzz.h"

#include "arrayrecord.h"

#define MAX_PARTS 6
#define MAX_ROWS 2000
#define MAX_STMTS 512
#define MAX_TSTMTS 512
#define MAX_TROWS 12
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
/* The table part: statements that fill t and o, and those that aggregate
** over them (see the header comment). */
static fstmt tstmts[MAX_TSTMTS];
static int ntstmts;
static sqlite3_stmt *clear_st, *clear_o, *ins_part, *ins_copy, *ins_scale, *ins_add, *fix_npy, *fix_rd, *fill_objects;
/* FUZZ_SQL_TRACE=1: print each table statement's outcome (to check that the
** seeds reach rows, not only errors). */
static int trace, in_table;

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

static sqlite3_stmt *prepare(const char *sql) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK || !st) {
    fprintf(stderr, "fuzz_sql: cannot prepare %s: %s\n", sql, sqlite3_errmsg(db));
    abort();
  }
  return st;
}

static void add_stmt(const char *sql) {
  if (nstmts >= MAX_STMTS) return;
  stmts[nstmts].st = prepare(sql);
  stmts[nstmts].nargs = sqlite3_bind_parameter_count(stmts[nstmts].st);
  nstmts++;
}

static void add_tstmt(const char *sql) {
  if (ntstmts >= MAX_TSTMTS) return;
  tstmts[ntstmts].st = prepare(sql);
  tstmts[ntstmts].nargs = sqlite3_bind_parameter_count(tstmts[ntstmts].st);
  ntstmts++;
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
    /* a record against records made from it: same keys, other values or dtypes, a key gone */
    "SELECT c.* FROM ar_compare(?1, ar_scale(?1, -0.5)) c",
    "SELECT c.* FROM ar_compare(ar_cast(?1, 'float16', 'all'), ?1) c",
    "SELECT c.* FROM ar_compare(?1, ar_delete(?1, (SELECT key FROM array_record(?1) LIMIT 1))) c",
    ("SELECT ar_cast_like(?1, ar_cast(?1, 'float64', 'all')), ar_cast_like(ar_cast(?1, 'int16', 'all'), ?1),"
     " ar_exclude(?1, a.key, '*.bias'), ar_check(?1, 'nonempty') FROM array_record(?1) a"),
};

/* --- the table part ---------------------------------------------------------- */

/* Frames every window function runs over: growing, sliding, looking ahead,
** shrinking, empty ones (first row; past the end), peers (g), EXCLUDE. */
static const char *const frames[] = {
    "ORDER BY i",
    "ORDER BY i ROWS BETWEEN 1 PRECEDING AND CURRENT ROW",
    "ORDER BY i ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING",
    "ORDER BY i ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING",
    "PARTITION BY i % 2 ORDER BY i ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING",
    "ORDER BY g GROUPS BETWEEN 1 PRECEDING AND CURRENT ROW",
    "ORDER BY i ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING EXCLUDE CURRENT ROW",
    "ORDER BY i ROWS BETWEEN 1 FOLLOWING AND 3 FOLLOWING",
};

/* Scalars composed with the aggregates. */
static const char *const table_pipelines[] = {
    ("SELECT ar_sum(ar_clip_norm(rec, p)) OVER (ORDER BY i ROWS 1 PRECEDING),"
     " ar_mean(ar_clip_norm(rec, w), w) OVER (ORDER BY i ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM t"),
    ("SELECT npy_to_json(ar_get(ar_mean(rec, w) OVER (ORDER BY i), (SELECT key FROM array_record(rec) LIMIT 1))),"
     " ar_json(ar_median(rec) OVER (ORDER BY i)) FROM t"),
    /* every record against the next: the rows agree on keys often */
    "SELECT x.i, c.* FROM t x JOIN t y ON y.i = x.i + 1, ar_compare(x.rec, y.rec) c",
    "SELECT ar_cast_like(x.rec, y.rec), ar_cast_like(y.rec, x.rec) FROM t x JOIN t y ON y.i = x.i + 1",
    "SELECT ar_cast_like(ar_mean(rec) OVER (ORDER BY i), rec) FROM t",
    /* the rolling mean over the rows, weighted and labelled */
    "SELECT m.* FROM ar_rolling_mean('SELECT rec, w, i FROM t ORDER BY i', 3) m",
};

/* The argument expressions for aggregate `name` (nargs of them), and the
** table it runs on: the arguments each one documents, anything unknown as
** (rec or npy, w, f, q). */
static const char *agg_args(const char *name, int nargs, const char **args) {
  static const char *const dflt[] = {"rec", "w", "f", "q"};
  int j, npy = strncmp(name, "npy_", 4) == 0;
  for (j = 0; j < nargs; j++) args[j] = j < 4 ? dflt[j] : "w";
  if (npy) args[0] = "npy";
  if (strstr(name, "_inflate")) {
    args[0] = "oid";
    args[1] = "content";
    return strncmp(name, "rd_", 3) == 0 ? "o WHERE kind <> ?2 AND i % 8 <> ?3" : "o WHERE kind <> ?1 AND i % 8 <> ?3";
  }
  if (strcmp(name, "ar_agg") == 0)
    args[0] = "k", args[1] = "npy";
  else if (strcmp(name, "ar_agg_list") == 0)
    args[0] = "npy";
  else if (strcmp(name, "rd_mean") == 0)
    args[0] = "rd", args[1] = "wk";
  else if (strcmp(name, "rd_agg") == 0) {
    args[0] = "k";
    args[1] = "CASE i % 4 WHEN 3 THEN 'metric' ELSE 'array' END";
    args[2] = "CASE i % 4 WHEN 3 THEN json_object('x', CASE WHEN typeof(w) = 'blob' THEN NULL ELSE w END) ELSE rec END";
  } else if (strstr(name, "_ema") || strstr(name, "_trimmed_mean")) {
    if (nargs > 1) args[1] = "p";
  } else if (strcmp(name, "ar_krum_scores") == 0 || strcmp(name, "ar_bulyan") == 0) {
    if (nargs > 1) args[1] = "f";
  }
  return "t";
}

static void setup_table(const char *plain_fns) {
  sqlite3_stmt *st;
  char sql[1024], call[512];
  size_t k;
  const char *cols =
      "INSERT INTO t(i, g, rec, w, p, f, q, k, wk) SELECT ?1, ?1 / 2, %s, ?3, ?4, ?6, ?7,"
      " CASE WHEN ?5 > 0 THEN 'k' || (?1 % ?5) ELSE 'k' || ?1 END, ?8 FROM t a, t b WHERE a.i = ?2 AND b.i = ?9";
  FUZZ_CHECK(
      sqlite3_exec(
          db,
          "CREATE TEMP TABLE t(i INTEGER PRIMARY KEY, g INTEGER, rec BLOB, npy BLOB, rd BLOB, w, p, f, q, k, wk);"
          "CREATE TEMP TABLE o(i INTEGER PRIMARY KEY, src INTEGER, kind INTEGER, oid, content)",
          0, 0, 0) == SQLITE_OK);
  clear_st = prepare("DELETE FROM t");
  /* (json_object refuses BLOBs, with an error that is not ours.) */
  /* A part that is a readable .npy becomes a one-array record, so every
  ** part feeds both the ar_ and the npy_ aggregates. */
  ins_part = prepare(
      "INSERT INTO t(i, g, rec, npy, w, p, f, q, k, wk) SELECT ?1, ?1 / 2,"
      " CASE WHEN npy_valid(x) THEN ar('w', x) ELSE x END, CASE WHEN npy_valid(x) THEN x END, ?3, ?4, ?6, ?7,"
      " CASE WHEN ?5 > 0 THEN 'k' || (?1 % ?5) ELSE 'k' || ?1 END, ?8 FROM (SELECT ?2 AS x)");
  snprintf(sql, sizeof(sql), cols, "a.rec");
  ins_copy = prepare(sql);
  snprintf(sql, sizeof(sql), cols, "ar_scale(a.rec, ?10)");
  ins_scale = prepare(sql);
  snprintf(sql, sizeof(sql), cols, "ar_add(a.rec, b.rec)");
  ins_add = prepare(sql);
  fix_npy = prepare(
      "UPDATE t SET npy = CASE WHEN ar_valid(rec) THEN (SELECT ar_get(t.rec, a.key) FROM array_record(t.rec) a"
      " LIMIT 1 OFFSET ?1) ELSE rec END WHERE npy IS NULL");
  fix_rd = prepare(
      "UPDATE t SET rd = rd('arrays', 'array', rec, 'metrics', 'metric', json_object('num-examples', CASE WHEN "
      "typeof(w) = 'blob' THEN hex(w) ELSE w END, 'loss', i))"
      " WHERE i = ?1");
  clear_o = prepare("DELETE FROM o");
  fill_objects = prepare(
      "INSERT INTO o(src, kind, oid, content)"
      " SELECT t.i, 0, a.object_id, a.content FROM t, ar_objects(t.rec) a WHERE ar_valid(t.rec)"
      " UNION ALL SELECT t.i, 1, r.object_id, r.content FROM t, rd_objects(t.rd) r");

  FUZZ_CHECK(sqlite3_prepare_v2(db,
                                "SELECT DISTINCT name, narg, type FROM pragma_function_list WHERE type IN ('a', 'w')"
                                " ORDER BY 1, 2",
                                -1, &st, NULL) == SQLITE_OK);
  while (sqlite3_step(st) == SQLITE_ROW) {
    const char *name = (const char *)sqlite3_column_text(st, 0), *args[8], *from;
    int narg = sqlite3_column_int(st, 1), window = sqlite3_column_text(st, 2)[0] == 'w', lo = narg, hi = narg, n, j;
    char key[256];
    snprintf(key, sizeof(key), "%s/%d", name, narg);
    if (in_list(plain_fns, key)) continue;
    if (narg < 0) lo = 1, hi = 3;
    for (n = lo; n <= hi; n++) {
      int len;
      from = agg_args(name, n, args);
      len = snprintf(call, sizeof(call), "%s(", name);
      for (j = 0; j < n; j++) len += snprintf(call + len, sizeof(call) - (size_t)len, j ? ", %s" : "%s", args[j]);
      snprintf(call + len, sizeof(call) - (size_t)len, ")");
      snprintf(sql, sizeof(sql), "SELECT %s FROM %s", call, from);
      add_tstmt(sql);
      snprintf(sql, sizeof(sql), "SELECT %s, %s FROM %s GROUP BY %s", from[0] == 'o' ? "src" : "g", call, from,
               from[0] == 'o' ? "src" : "g");
      add_tstmt(sql);
      if (!window) continue;
      for (k = 0; k < sizeof(frames) / sizeof(frames[0]); k++) {
        snprintf(sql, sizeof(sql), "SELECT i, %s OVER (%s) FROM %s", call, frames[k], from);
        add_tstmt(sql);
      }
    }
  }
  sqlite3_finalize(st);
  for (k = 0; k < sizeof(table_pipelines) / sizeof(table_pipelines[0]); k++) add_tstmt(table_pipelines[k]);
  FUZZ_CHECK(ntstmts > 20);
}

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
    {
      /* one placeholder per argument (hidden column): ar_compare has two */
      sqlite3_stmt *xi;
      int nargs = 1, len, i;
      snprintf(sql, sizeof(sql), "SELECT count(*) FROM pragma_table_xinfo('%s') WHERE hidden = 1", name);
      FUZZ_CHECK(sqlite3_prepare_v2(db, sql, -1, &xi, NULL) == SQLITE_OK);
      if (sqlite3_step(xi) == SQLITE_ROW && sqlite3_column_int(xi, 0) > 1) nargs = sqlite3_column_int(xi, 0);
      sqlite3_finalize(xi);
      len = snprintf(sql, sizeof(sql), "SELECT * FROM %s(?1", name);
      for (i = 2; i <= nargs && i <= MAX_PARTS; i++) len += snprintf(sql + len, sizeof(sql) - (size_t)len, ", ?%d", i);
      snprintf(sql + len, sizeof(sql) - (size_t)len, ")");
    }
    add_stmt(sql);
  }
  sqlite3_finalize(st);
  for (k = 0; k < sizeof(pipelines) / sizeof(pipelines[0]); k++) add_stmt(pipelines[k]);
  setup_table(plain_fns);
  trace = getenv("FUZZ_SQL_TRACE") != NULL;
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
    {0, "0", 0},   {0, "float32", 0}, {0, "[2,3]", 0},         {1, NULL, 1}, {0, "fc1.*", 0}, {0, "fc1.weight", 0},
    {0, "<i8", 0}, {1, NULL, -1},     {0, "[[1,2],[3,4]]", 0}, {0, "", 0},   {1, NULL, 0},    {0, "complex64", 0},
    {0, "[]", 0},  {0, "bool", 0},
};
#define NTYPICAL (sizeof(typical) / sizeof(typical[0]))

/* Part a as a BLOB, TEXT, INTEGER, NULL or REAL (kind 0 to 4). */
static void bind_part(sqlite3_stmt *st, int idx, const fuzz_part *a, int kind) {
  switch (kind) {
    case 0: sqlite3_bind_blob64(st, idx, a->p, a->n, SQLITE_STATIC); break;
    case 1: sqlite3_bind_text64(st, idx, (const char *)a->p, a->n, SQLITE_STATIC, SQLITE_UTF8); break;
    case 2: {
      uint64_t v = 0;
      size_t k;
      for (k = 0; k < a->n && k < 8; k++) v |= (uint64_t)a->p[k] << (8 * k);
      sqlite3_bind_int64(st, idx, (sqlite3_int64)v);
      break;
    }
    case 3: sqlite3_bind_null(st, idx); break;
    default: {
      double d = 0;
      if (a->n >= 8) memcpy(&d, a->p, 8);
      sqlite3_bind_double(st, idx, d);
    }
  }
}

static void bind_arg(sqlite3_stmt *st, int i, const fuzz_part *parts, int nparts, const unsigned char *ctl, size_t nctl,
                     int offset) {
  if (i >= nparts) {
    size_t t = (size_t)(i - nparts + offset) % NTYPICAL;
    if (typical[t].kind == 0)
      sqlite3_bind_text(st, i + 1, typical[t].text, -1, SQLITE_STATIC);
    else
      sqlite3_bind_int64(st, i + 1, typical[t].i);
    return;
  }
  bind_part(st, i + 1, &parts[i], (size_t)(4 + i) < nctl ? ctl[4 + i] % 5 : (i == 0 ? 0 : 1));
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

/* Step a bound statement to its end, check how it ended, reset it; returns
** the number of rows. */
static int finish_stmt(sqlite3_stmt *st, int injecting) {
  int rc, rows = 0;
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
    /* ar_rolling_mean runs statements of its own: when one fails, SQLite
    ** frees the connection's primed error buffer, and an injected failure
    ** of SQLite's benign copy of the outer message leaves "SQL logic error"
    ** (see tests/host/oomrun.c). */
    int lost = rc == SQLITE_ERROR && injecting && strcmp(msg, "SQL logic error") == 0 &&
               strstr(sqlite3_sql(st), "ar_rolling_mean") != NULL;
    int ok = rc == SQLITE_TOOBIG || (rc == SQLITE_NOMEM && injecting) || lost ||
             (rc == SQLITE_ERROR && our_error(msg) && fuzz_utf8_valid((const unsigned char *)msg, strlen(msg)));
    if (!ok) {
      fprintf(stderr, "fuzz_sql: %s\n  -> rc %d: %s\n", sqlite3_sql(st), rc, msg);
      abort();
    }
  }
  if (trace && in_table)
    fprintf(stderr, "fuzz_sql trace: %d rows, rc %d%s%s: %s\n", rows, rc, rc == SQLITE_DONE ? "" : " ",
            rc == SQLITE_DONE ? "" : sqlite3_errmsg(db), sqlite3_sql(st));
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  return rows;
}

static void run_stmt(fstmt *f, const fuzz_part *parts, int nparts, const unsigned char *ctl, size_t nctl, int offset,
                     int injecting) {
  int i;
  for (i = 0; i < f->nargs; i++) bind_arg(f->st, i, parts, nparts, ctl, nctl, offset);
  finish_stmt(f->st, injecting);
}

/* Weights and parameters: normal, zero, negative, NaN (SQLite makes it
** NULL), huge, infinite, subnormal, text, BLOB. */
static void bind_value(sqlite3_stmt *st, int idx, int code) {
  static const unsigned char one = 1;
  switch (code % 20) {
    case 0: sqlite3_bind_int(st, idx, 1); break;
    case 1: sqlite3_bind_double(st, idx, 0.5); break;
    case 2: sqlite3_bind_int(st, idx, 0); break;
    case 3: sqlite3_bind_double(st, idx, -1.0); break;
    case 4: sqlite3_bind_double(st, idx, NAN); break;
    case 5: sqlite3_bind_double(st, idx, 1e308); break;
    case 6: sqlite3_bind_double(st, idx, INFINITY); break;
    case 7: sqlite3_bind_int(st, idx, 2); break;
    case 8: sqlite3_bind_double(st, idx, 0.1); break;
    case 9: sqlite3_bind_int(st, idx, 3); break;
    case 10: sqlite3_bind_text(st, idx, "0.25", -1, SQLITE_STATIC); break;
    case 11: sqlite3_bind_null(st, idx); break;
    case 12: sqlite3_bind_double(st, idx, 4.9e-324); break;
    case 13: sqlite3_bind_int64(st, idx, INT64_MAX); break;
    case 14: sqlite3_bind_double(st, idx, 0.25); break;
    case 15: sqlite3_bind_int(st, idx, -1); break;
    case 16: sqlite3_bind_blob(st, idx, &one, 1, SQLITE_STATIC); break;
    case 17: sqlite3_bind_double(st, idx, -0.0); break;
    case 18: sqlite3_bind_int(st, idx, 5); break;
    default: sqlite3_bind_double(st, idx, 0.49); break;
  }
}

/* The table control bytes (ctl[9...]); -1 past the end. */
typedef struct tctl {
  const unsigned char *p;
  size_t n;
} tctl;
static int tc(const tctl *c, size_t j) { return j < c->n ? c->p[j] : -1; }

/* Binds code's value, or the default (a REAL if is_real, else an INTEGER)
** when the control block has no byte for it. */
static void bind_code(sqlite3_stmt *st, int idx, int code, double dflt, int is_real) {
  if (code >= 0)
    bind_value(st, idx, code);
  else if (is_real)
    sqlite3_bind_double(st, idx, dflt);
  else
    sqlite3_bind_int64(st, idx, (sqlite3_int64)dflt);
}

/* Insert row i (0-based row r) with st, which reads ?2 (a part, or the row
** it derives from) and ?9 (the second row) and ?10 (a scale). */
static void insert_row(sqlite3_stmt *st, int i, const tctl *c, int injecting) {
  int flags = tc(c, 0) < 0 ? 0 : tc(c, 0), wcode = tc(c, 7 + (size_t)(i - 1)), keymod = flags & 7;
  static const char *const wk[] = {"num-examples", "loss", "", NULL};
  sqlite3_bind_int(st, 1, i);
  bind_code(st, 3, wcode < 0 ? -1 : wcode & 0x3f, i, 0);
  /* A row byte >= 0xc0 also gives the row its own p (alpha may vary). */
  if (wcode >= 0xc0)
    bind_value(st, 4, wcode - 0xc0);
  else
    bind_code(st, 4, tc(c, 1), 0.25, 1);
  sqlite3_bind_int(st, 5, keymod);
  bind_code(st, 6, tc(c, 2), 0, 0);
  bind_code(st, 7, tc(c, 3), 1, 0);
  if (wk[(flags >> 3) & 3]) sqlite3_bind_text(st, 8, wk[(flags >> 3) & 3], -1, SQLITE_STATIC);
  finish_stmt(st, injecting);
}

/* Fill t from the parts and rows derived from them (so that records often
** agree on keys, dtypes and shapes), and o from their objects. */
static void fill_table(const fuzz_part *parts, int nparts, const unsigned char *ctl, size_t nctl, int injecting) {
  tctl c;
  int row = 0, j;
  c.p = nctl > 9 ? ctl + 9 : NULL;
  c.n = nctl > 9 ? nctl - 9 : 0;
  /* Part 1, then rows derived from it (again with another weight, scaled
  ** twice), so that the first frames agree on keys, dtypes and shapes; then
  ** the other parts (rows 5...), then each of them plus row 1. */
  for (j = 0; j < nparts && row < MAX_TROWS; j++) {
    bind_part(ins_part, 2, &parts[j], (size_t)(4 + j) < nctl ? ctl[4 + j] % 5 : 0);
    insert_row(ins_part, j ? 4 + j : 1, &c, injecting);
    row = j ? 4 + j : 4;
    if (j) continue;
    sqlite3_bind_int(ins_copy, 2, 1);
    sqlite3_bind_int(ins_copy, 9, 1);
    insert_row(ins_copy, 2, &c, injecting);
    for (row = 3; row <= 4; row++) {
      sqlite3_bind_int(ins_scale, 2, 1);
      sqlite3_bind_int(ins_scale, 9, 1);
      bind_code(ins_scale, 10, tc(&c, 4 + (size_t)(row - 3)), row == 3 ? 2.0 : -0.5, 1);
      insert_row(ins_scale, row, &c, injecting);
    }
  }
  for (j = 1; j < nparts && row < MAX_TROWS; j++) {
    sqlite3_bind_int(ins_add, 2, 4 + j);
    sqlite3_bind_int(ins_add, 9, 1);
    insert_row(ins_add, ++row, &c, injecting);
  }
  sqlite3_bind_int(fix_npy, 1, tc(&c, 6) < 0 ? 0 : tc(&c, 6) % 4);
  finish_stmt(fix_npy, injecting);
  for (j = 1; j <= row; j++) {
    sqlite3_bind_int(fix_rd, 1, j);
    finish_stmt(fix_rd, injecting);
  }
  finish_stmt(fill_objects, injecting);
}

/* Every aggregate and window statement over t and o. */
static void run_table(const unsigned char *ctl, size_t nctl, int injecting) {
  int i, flags = nctl > 9 ? ctl[9] : 0, sel = (flags >> 5) & 3;
  static const int sel_ar[4] = {1, 0, 2, 1}, sel_rd[4] = {0, 1, 2, 0};
  for (i = 0; i < ntstmts; i++) {
    sqlite3_stmt *st = tstmts[i].st;
    if (tstmts[i].nargs > 0) {
      sqlite3_bind_int(st, 1, sel_ar[sel]);
      sqlite3_bind_int(st, 2, sel_rd[sel]);
      sqlite3_bind_int(st, 3, (flags & 0x80) ? 3 : -1);
    }
    finish_stmt(st, injecting);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_part parts[MAX_PARTS];
  const unsigned char *ctl = NULL;
  size_t nctl = 0;
  int nparts, offset = 0, injecting = 0, i;
  long fail_at = -1;
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
      fail_at = ctl[2] + 256 * ctl[3];
      failalloc_arm(fail_at);
    }
  }
  for (i = 0; i < nstmts; i++) run_stmt(&stmts[i], parts, nparts, ctl, nctl, offset, injecting);
  failalloc_disarm();
  /* The table part counts its own allocations, so a failure lands in it. */
  if (injecting) failalloc_arm(fail_at);
  in_table = 1;
  fill_table(parts, nparts, ctl, nctl, injecting);
  run_table(ctl, nctl, injecting);
  in_table = 0;
  failalloc_disarm();
  FUZZ_CHECK(sqlite3_step(clear_st) == SQLITE_DONE && sqlite3_reset(clear_st) == SQLITE_OK);
  FUZZ_CHECK(sqlite3_step(clear_o) == SQLITE_DONE && sqlite3_reset(clear_o) == SQLITE_OK);
  sqlite3_limit(db, SQLITE_LIMIT_LENGTH, DEFAULT_LIMIT);
  return 0;
}
