/* SPDX-License-Identifier: Apache-2.0 */
/*
** vtab_ar_rolling.c — the table-valued function ar_rolling_mean(query,
** frame): a rolling FedAvg over the rows of a query, each row's mean over
** itself and the frame - 1 rows before it.
**
**   CREATE TABLE ar_rolling_mean(position INTEGER, label ANY, rows INTEGER,
**     rec BLOB, query HIDDEN, frame HIDDEN);
**
**   SELECT label AS round, rec FROM ar_rolling_mean(
**     'SELECT rec, n, round FROM history WHERE run = 1 ORDER BY round', 5);
**
** query is the text of one read-only SELECT, run on the same connection; its
** columns are the record (a BLOB or NULL), optionally the weight (as
** ar_mean's) and optionally a label passed through (the round, say). Rows
** are taken in the query's order. Output row i (position, from 0) is
** ar_mean(rec, weight) over input rows max(0, i - frame + 1) .. i: rows is
** how many of them have a non-NULL record, rec their mean (NULL when none
** has). A NULL query or frame gives no rows.
**
** The mean is ar_mean's, bit for bit, as a correlated subquery per row
** gives it, by one of two paths. The usual frame (records of float32 or
** float64 arrays in C order, the same keys in the same order in every row,
** numeric weights) is computed from its rows at once by
** rolling_direct_mean (rolling_direct.c): ar_mean's operations in ar_mean's
** order, a block of elements at a time through every row, the result
** written once into the BLOB handed to SQLite. Any other frame is stepped
** through ar_mean itself, by an internal statement SELECT ar_mean(column1,
** column2) FROM (VALUES (?, ?), ...) of as many rows as the frame holds (one
** statement per fill count, prepared when the count changes), the frame's
** BLOBs bound SQLITE_STATIC in frame order. SQLite passes bound values
** through the VALUES co-routine and into the aggregate without copying
** (OP_Variable and OP_Copy copy a static value's pointer); the result is
** ar_mean's BLOB, copied once by xColumn. ar_mean's messages come from that
** path, as the direct one declines every frame ar_mean would refuse.
**
** Memory: the frame - 1 rows before the current one are copied into a ring
** of buffers reused row after row (a buffer grows only for a larger
** record), the current row is bound straight from the query's column, so
** about frame x record size is held, plus the result (and ar_mean's
** accumulators on its path). A frame's mean is computed when its rec is
** read, so position, label and rows never run the arithmetic. The fill count is
** capped by SQLITE_LIMIT_VARIABLE_NUMBER (two parameters a row with
** weights).
**
** ar_mean's errors are the frame's: their row numbers (counted from the
** frame's first row) are turned into input positions, and the message
** becomes "ar_rolling_mean: row 7: key 'w' has shape [3] in row 7 but [2]
** in row 5". Running arbitrary SQL, the table is not innocuous (the schema
** cannot use it under trusted_schema=OFF).
*/
#include "sql/rolling_direct.h"
#include "sql/sql_modules.h"
#include "sql/sql_util.h"
SQLITE_EXTENSION_INIT3

#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum { COL_POSITION, COL_LABEL, COL_ROWS, COL_REC, COL_QUERY, COL_FRAME };

static const char ar_rolling_schema[] =
    "CREATE TABLE x(position INTEGER, label ANY, rows INTEGER, rec BLOB, query HIDDEN, frame HIDDEN)";

static const char fname[] = "ar_rolling_mean";

typedef struct rolling_vtab {
  sqlite3_vtab base;
  sqlite3 *db;
} rolling_vtab;

/* A SQLite value kept across rows: numbers and NULL inline, a BLOB record
** in a buffer reused row after row, anything else (text, a BLOB weight:
** values ar_mean refuses) as a copy. */
typedef struct kept_value {
  int type;
  sqlite3_int64 i;
  double d;
  unsigned char *p; /* BLOB bytes (record only) */
  uint64_t n, cap;
  sqlite3_value *other;
} kept_value;

typedef struct rolling_row {
  kept_value rec, weight;
} rolling_row;

typedef struct rolling_cursor {
  sqlite3_vtab_cursor base;
  sqlite3 *db;
  sqlite3_value *arg_query, *arg_frame; /* read back by the hidden columns */
  sqlite3_stmt *query;                  /* the caller's SELECT */
  int ncols;                            /* its columns: record [, weight [, label]] */
  sqlite3_int64 frame;
  sqlite3_int64 pos; /* the current row's position */
  int eof;
  /* the frame's rows before the current one, oldest at ring[head] */
  rolling_row *ring;
  int ring_n, ring_cap, head;
  int max_rows;       /* the largest fill count the parameters allow */
  sqlite3_stmt *mean; /* ar_mean over VALUES of mean_rows rows */
  int mean_rows;
  int computed; /* mean is on its result row for this position */
} rolling_cursor;

/* --- arguments --------------------------------------------------------- */

static int rolling_connect(sqlite3 *db, void *schema, int argc, const char *const *argv, sqlite3_vtab **ppVtab,
                           char **pzErr) {
  /* Not innocuous: the query may call anything the connection has, so a
  ** view in an untrusted schema must not reach it. */
  int rc = sql_vtab_connect_size(db, (const char *)schema, sizeof(rolling_vtab), 0, ppVtab);
  (void)argc;
  (void)argv;
  (void)pzErr;
  if (rc == SQLITE_OK) ((rolling_vtab *)*ppVtab)->db = db;
  return rc;
}

/* Messages quote the query and SQLite's messages about it, whose bytes may
** be anything: each byte that starts no valid UTF-8 sequence becomes '?'. */
static void utf8_fix(char *s) {
  uint64_t n = strlen(s), i = 0;
  while (i < n) {
    size_t len = codec_utf8_seq((const unsigned char *)s + i, n - i);
    if (len) {
      i += len;
    } else {
      s[i++] = '?';
    }
  }
}

/* A short excerpt of the query for messages: printable UTF-8, cut with "...". */
static const char *excerpt(char *out, const char *sql) { return codec_quote(out, CODEC_QUOTE_MAX, sql, strlen(sql)); }

/* "ar_rolling_mean: <message>" on the table; SQLITE_ERROR (or NOMEM). */
static int rolling_error(sqlite3_vtab_cursor *base, const char *fmt, ...) {
  va_list ap;
  char *msg;
  va_start(ap, fmt);
  msg = sqlite3_vmprintf(fmt, ap);
  va_end(ap);
  sqlite3_free(base->pVtab->zErrMsg);
  base->pVtab->zErrMsg = msg ? sqlite3_mprintf("%s: %s", fname, msg) : NULL;
  sqlite3_free(msg);
  if (base->pVtab->zErrMsg) utf8_fix(base->pVtab->zErrMsg);
  return base->pVtab->zErrMsg ? SQLITE_ERROR : SQLITE_NOMEM;
}

/* An error of a statement of ours: its code, the message for SQLITE_ERROR
** and the like. */
static int stmt_error(sqlite3_vtab_cursor *base, int rc, const char *what, sqlite3 *db) {
  if (rc == SQLITE_NOMEM || rc == SQLITE_TOOBIG || rc == SQLITE_INTERRUPT) return rc;
  return rolling_error(base, "%s: %s", what, sqlite3_errmsg(db)) == SQLITE_NOMEM ? SQLITE_NOMEM : rc;
}

static const char *type_name(int t) {
  switch (t) {
    case SQLITE_INTEGER: return "integer";
    case SQLITE_FLOAT: return "real";
    case SQLITE_TEXT: return "text";
    case SQLITE_BLOB: return "blob";
    default: return "NULL";
  }
}

/* Skip whitespace and SQL comments. */
static const char *skip_space(const char *s) {
  for (;;) {
    while (*s && isspace((unsigned char)*s)) s++;
    if (s[0] == '-' && s[1] == '-') {
      while (*s && *s != '\n') s++;
    } else if (s[0] == '/' && s[1] == '*') {
      const char *end = strstr(s + 2, "*/");
      s = end ? end + 2 : s + strlen(s);
    } else {
      return s;
    }
  }
}

/* Does the statement text start with a query keyword (SELECT, VALUES, WITH)? */
static int starts_as_query(const char *s) {
  static const char *const words[] = {"select", "values", "with"};
  size_t k, n;
  s = skip_space(s);
  for (k = 0; k < sizeof(words) / sizeof(words[0]); k++) {
    n = strlen(words[k]);
    if (sqlite3_strnicmp(s, words[k], (int)n) == 0 && !isalnum((unsigned char)s[n]) && s[n] != '_') return 1;
  }
  return 0;
}

/* Prepare the caller's query: one read-only SELECT of 1 to 3 columns. */
static int prepare_query(rolling_cursor *cur, const char *sql) {
  sqlite3_vtab_cursor *base = &cur->base;
  sqlite3_stmt *more = NULL;
  const char *tail = NULL;
  char q[CODEC_QUOTE_MAX];
  int rc = sqlite3_prepare_v2(cur->db, sql, -1, &cur->query, &tail);
  if (rc != SQLITE_OK) return stmt_error(base, rc, "bad query", cur->db);
  if (!cur->query) return rolling_error(base, "query is empty (one SELECT of record [, weight [, label]])");
  if (!sqlite3_stmt_readonly(cur->query) || sqlite3_stmt_isexplain(cur->query) || !starts_as_query(sql))
    return rolling_error(base, "query must be one read-only SELECT, got: %s", excerpt(q, skip_space(sql)));
  /* what follows may only be whitespace and comments: preparing it gives no statement */
  if (tail && *tail) {
    rc = sqlite3_prepare_v2(cur->db, tail, -1, &more, NULL);
    sqlite3_finalize(more);
    if (rc == SQLITE_NOMEM) return rc;
    if (rc != SQLITE_OK || more)
      return rolling_error(base, "query must be one statement; more follows: %s", excerpt(q, skip_space(tail)));
  }
  cur->ncols = sqlite3_column_count(cur->query);
  if (cur->ncols < 1 || cur->ncols > 3)
    return rolling_error(base, "query gives %d columns; it must give 1 to 3 (record [, weight [, label]])", cur->ncols);
  return SQLITE_OK;
}

/* --- the frame's rows ---------------------------------------------------- */

static void kept_clear(kept_value *v) {
  sqlite3_value_free(v->other);
  v->other = NULL;
}

static void kept_free(kept_value *v) {
  kept_clear(v);
  codec_free(v->p);
  v->p = NULL;
  v->n = v->cap = 0;
}

/* Keep a column's value: a record's BLOB into v's buffer (grown only when
** too small), numbers inline, anything else as a copy. */
static int kept_set(kept_value *v, sqlite3_stmt *st, int col, int is_record) {
  kept_clear(v);
  v->type = sqlite3_column_type(st, col);
  switch (v->type) {
    case SQLITE_NULL: return SQLITE_OK;
    case SQLITE_INTEGER: v->i = sqlite3_column_int64(st, col); return SQLITE_OK;
    case SQLITE_FLOAT: v->d = sqlite3_column_double(st, col); return SQLITE_OK;
    case SQLITE_BLOB:
      if (is_record) {
        const void *p = sqlite3_column_blob(st, col);
        uint64_t n = (uint64_t)sqlite3_column_bytes(st, col);
        if (n && !p) return SQLITE_NOMEM;
        if (n > v->cap) {
          codec_free(v->p);
          v->cap = 0;
          if (!(v->p = codec_malloc(n))) return SQLITE_NOMEM;
          v->cap = n;
        }
        if (n) memcpy(v->p, p, (size_t)n);
        v->n = n;
        return SQLITE_OK;
      }
      break;
    default: break;
  }
  v->other = sqlite3_value_dup(sqlite3_column_value(st, col));
  return v->other ? SQLITE_OK : SQLITE_NOMEM;
}

static int kept_bind(sqlite3_stmt *st, int idx, const kept_value *v) {
  switch (v->type) {
    case SQLITE_NULL: return sqlite3_bind_null(st, idx);
    case SQLITE_INTEGER: return sqlite3_bind_int64(st, idx, v->i);
    case SQLITE_FLOAT: return sqlite3_bind_double(st, idx, v->d);
    default: break;
  }
  if (v->other) return sqlite3_bind_value(st, idx, v->other);
  /* a record: its bytes as they stand, not copied (a NULL pointer would bind NULL) */
  return v->n ? sqlite3_bind_blob64(st, idx, v->p, v->n, SQLITE_STATIC) : sqlite3_bind_zeroblob(st, idx, 0);
}

/* The current row of the query (at cur->pos) joins the ring before the
** query steps on: the ring keeps frame - 1 rows. */
static int ring_push(rolling_cursor *cur) {
  rolling_row *row;
  int rc;
  if (cur->frame < 2) return SQLITE_OK;
  if (cur->ring_n < cur->frame - 1) {
    if (cur->ring_n == cur->ring_cap) {
      sqlite3_int64 want = cur->ring_cap ? 2 * (sqlite3_int64)cur->ring_cap : 4;
      rolling_row *ring;
      if (want > cur->frame - 1) want = cur->frame - 1;
      if (want > cur->max_rows) want = cur->max_rows; /* never more: the frame could not be averaged */
      if (want <= cur->ring_n) return SQLITE_OK;      /* over the limit: ring_check reports it */
      ring = codec_realloc(cur->ring, (uint64_t)want * sizeof(*ring));
      if (!ring) return SQLITE_NOMEM;
      memset(ring + cur->ring_cap, 0, (size_t)(want - cur->ring_cap) * sizeof(*ring));
      cur->ring = ring;
      cur->ring_cap = (int)want;
    }
    row = &cur->ring[cur->ring_n++]; /* filling: head stays 0 */
  } else {
    row = &cur->ring[cur->head]; /* full: the oldest row leaves */
    cur->head = (cur->head + 1) % cur->ring_n;
  }
  if ((rc = kept_set(&row->rec, cur->query, 0, 1)) != SQLITE_OK) return rc;
  if (cur->ncols > 1 && (rc = kept_set(&row->weight, cur->query, 1, 0)) != SQLITE_OK) return rc;
  return SQLITE_OK;
}

/* The rows the current frame holds. */
static sqlite3_int64 frame_rows(const rolling_cursor *cur) {
  return cur->pos + 1 < cur->frame ? cur->pos + 1 : cur->frame;
}

/* Step the query to its next row (cur->pos), or to its end. */
static int query_step(rolling_cursor *cur) {
  int rc = sqlite3_step(cur->query);
  cur->computed = 0;
  if (rc == SQLITE_DONE) {
    cur->eof = 1;
    return SQLITE_OK;
  }
  if (rc != SQLITE_ROW) {
    cur->eof = 1;
    char what[48];
    sqlite3_snprintf(sizeof(what), what, "query failed at row %lld", (long long)cur->pos);
    return stmt_error(&cur->base, rc, what, cur->db);
  }
  if (frame_rows(cur) > cur->max_rows) {
    cur->eof = 1;
    return rolling_error(&cur->base,
                         "row %lld: a frame of more than %d rows is more than SQLITE_LIMIT_VARIABLE_NUMBER allows",
                         (long long)cur->pos, cur->max_rows);
  }
  return SQLITE_OK;
}

/* --- the table ----------------------------------------------------------- */

static void rolling_reset(rolling_cursor *cur) {
  int i;
  sqlite3_finalize(cur->query);
  sqlite3_finalize(cur->mean);
  cur->query = cur->mean = NULL;
  cur->mean_rows = 0;
  for (i = 0; i < cur->ring_cap; i++) {
    kept_free(&cur->ring[i].rec);
    kept_free(&cur->ring[i].weight);
  }
  codec_free(cur->ring);
  cur->ring = NULL;
  cur->ring_n = cur->ring_cap = cur->head = 0;
  sqlite3_value_free(cur->arg_query);
  sqlite3_value_free(cur->arg_frame);
  cur->arg_query = cur->arg_frame = NULL;
  cur->pos = 0;
  cur->eof = 1;
  cur->computed = 0;
}

static int rolling_open(sqlite3_vtab *vtab, sqlite3_vtab_cursor **ppCursor) {
  int rc = sql_vtab_open(sizeof(rolling_cursor), ppCursor);
  if (rc == SQLITE_OK) {
    rolling_cursor *cur = (rolling_cursor *)*ppCursor;
    cur->db = ((rolling_vtab *)vtab)->db;
    cur->eof = 1;
  }
  return rc;
}

static int rolling_close(sqlite3_vtab_cursor *base) {
  rolling_reset((rolling_cursor *)base);
  sqlite3_free(base);
  return SQLITE_OK;
}

/* Both hidden arguments by equality (idxNum bit 0 for query, bit 1 for frame). */
static int rolling_best_index(sqlite3_vtab *vtab, sqlite3_index_info *info) {
  int rc = sql_vtab_best_index_args(info, COL_QUERY, 2);
  (void)vtab;
  if (rc != SQLITE_OK) return rc;
  info->estimatedCost = info->idxNum == 3 ? 1000 : 1e12;
  info->estimatedRows = 100;
  return SQLITE_OK;
}

static int rolling_filter(sqlite3_vtab_cursor *base, int idxNum, const char *idxStr, int argc, sqlite3_value **argv) {
  rolling_cursor *cur = (rolling_cursor *)base;
  sqlite3_value *q, *f;
  int rc, per_row;
  (void)idxStr;
  rolling_reset(cur);
  if (idxNum != 3 || argc != 2) return rolling_error(base, "missing argument (ar_rolling_mean(query, frame))");
  q = argv[0];
  f = argv[1];
  if (!(cur->arg_query = sqlite3_value_dup(q)) || !(cur->arg_frame = sqlite3_value_dup(f))) return SQLITE_NOMEM;
  if (sqlite3_value_type(q) == SQLITE_NULL || sqlite3_value_type(f) == SQLITE_NULL) return SQLITE_OK; /* no rows */
  if (sqlite3_value_type(q) != SQLITE_TEXT)
    return rolling_error(base, "query must be SQL text, got %s", type_name(sqlite3_value_type(q)));
  if (sqlite3_value_type(f) != SQLITE_INTEGER || sqlite3_value_int64(f) < 1) {
    if (sqlite3_value_type(f) == SQLITE_INTEGER)
      return rolling_error(base, "frame must be an integer >= 1, got %lld", (long long)sqlite3_value_int64(f));
    return rolling_error(base, "frame must be an integer >= 1, got %s", type_name(sqlite3_value_type(f)));
  }
  cur->frame = sqlite3_value_int64(f);
  if (!sqlite3_value_text(q)) return SQLITE_NOMEM;
  if ((rc = prepare_query(cur, (const char *)sqlite3_value_text(q))) != SQLITE_OK) return rc;
  per_row = cur->ncols > 1 ? 2 : 1;
  cur->max_rows = sqlite3_limit(cur->db, SQLITE_LIMIT_VARIABLE_NUMBER, -1) / per_row;
  cur->eof = 0;
  return query_step(cur);
}

static int rolling_next(sqlite3_vtab_cursor *base) {
  rolling_cursor *cur = (rolling_cursor *)base;
  int rc;
  /* the mean's bindings point at the ring and at the query's row: let go first */
  if (cur->mean) sqlite3_reset(cur->mean);
  cur->computed = 0;
  if ((rc = ring_push(cur)) != SQLITE_OK) {
    cur->eof = 1;
    return rc;
  }
  cur->pos++;
  return query_step(cur);
}

static int rolling_eof(sqlite3_vtab_cursor *base) { return ((rolling_cursor *)base)->eof; }

static int rolling_rowid(sqlite3_vtab_cursor *base, sqlite3_int64 *rowid) {
  *rowid = ((rolling_cursor *)base)->pos;
  return SQLITE_OK;
}

/* --- the mean ------------------------------------------------------------ */

/* The internal statement for frames of n rows. */
static int prepare_mean(rolling_cursor *cur, int n) {
  buf_t sql;
  int i, rc;
  sqlite3_finalize(cur->mean);
  cur->mean = NULL;
  cur->mean_rows = 0;
  buf_init(&sql, UINT64_MAX);
  buf_puts(&sql,
           cur->ncols > 1 ? "SELECT ar_mean(column1, column2) FROM (VALUES " : "SELECT ar_mean(column1) FROM (VALUES ");
  for (i = 0; i < n; i++) buf_puts(&sql, cur->ncols > 1 ? (i ? ",(?,?)" : "(?,?)") : (i ? ",(?)" : "(?)"));
  buf_puts(&sql, ")");
  buf_putc(&sql, 0);
  if (sql.rc != CODEC_OK) {
    buf_free(&sql);
    return SQLITE_NOMEM;
  }
  rc = sqlite3_prepare_v3(cur->db, (const char *)sql.p, (int)sql.n, SQLITE_PREPARE_PERSISTENT, &cur->mean, NULL);
  buf_free(&sql);
  if (rc == SQLITE_OK) cur->mean_rows = n;
  return rc;
}

/* Bind the frame's rows in frame order: the ring's, then the current one's
** straight from the query (its bytes stay put until the query steps). */
static int bind_frame(rolling_cursor *cur) {
  int j, rc = SQLITE_OK, per = cur->ncols > 1 ? 2 : 1, n = cur->mean_rows - 1, idx;
  for (j = 0; j < n && rc == SQLITE_OK; j++) {
    const rolling_row *row = &cur->ring[(cur->head + j) % cur->ring_n];
    rc = kept_bind(cur->mean, per * j + 1, &row->rec);
    if (rc == SQLITE_OK && per > 1) rc = kept_bind(cur->mean, per * j + 2, &row->weight);
  }
  if (rc != SQLITE_OK) return rc;
  idx = per * n + 1;
  if (sqlite3_column_type(cur->query, 0) == SQLITE_BLOB) {
    const void *p = sqlite3_column_blob(cur->query, 0);
    int bytes = sqlite3_column_bytes(cur->query, 0);
    if (bytes && !p) return SQLITE_NOMEM;
    rc = bytes ? sqlite3_bind_blob64(cur->mean, idx, p, (uint64_t)bytes, SQLITE_STATIC)
               : sqlite3_bind_zeroblob(cur->mean, idx, 0);
  } else {
    rc = sqlite3_bind_value(cur->mean, idx, sqlite3_column_value(cur->query, 0));
  }
  if (rc == SQLITE_OK && per > 1) rc = sqlite3_bind_value(cur->mean, idx + 1, sqlite3_column_value(cur->query, 1));
  return rc;
}

/* ar_mean's message with its row numbers (counted from the frame's first
** row, `start`) turned into positions: "row N" after the message's last
** quote (keys come before the row numbers in ar_mean's messages, and a
** key's text is left alone), or its leading "row N: ". */
static char *frame_message(const char *msg, sqlite3_int64 start, sqlite3_int64 pos) {
  const char *from, *s;
  sqlite3_str *out = sqlite3_str_new(NULL);
  int lead;
  if (strncmp(msg, "ar_mean: ", 9) == 0) msg += 9;
  lead = strncmp(msg, "row ", 4) == 0 && isdigit((unsigned char)msg[4]);
  from = lead ? msg : strrchr(msg, '\'');
  if (!from) from = msg;
  if (!lead) sqlite3_str_appendf(out, "row %lld: ", (long long)pos);
  sqlite3_str_append(out, msg, (int)(from - msg));
  for (s = from; *s;) {
    if (strncmp(s, "row ", 4) == 0 && isdigit((unsigned char)s[4]) && (s == msg || !isalnum((unsigned char)s[-1]))) {
      char *end;
      long long r = strtoll(s + 4, &end, 10);
      sqlite3_str_appendf(out, "row %lld", (long long)start + r);
      s = end;
      if (lead) break; /* the rest is the record's own problem */
    } else {
      sqlite3_str_appendchar(out, 1, *s++);
    }
  }
  sqlite3_str_appendall(out, s);
  return sqlite3_str_finish(out);
}

/* Step the frame's mean (once per row); 1 when the mean statement is on its
** row, 0 after reporting an error on ctx. */
static int compute(rolling_cursor *cur, sqlite3_context *ctx) {
  int n = (int)frame_rows(cur), rc;
  if (cur->computed) return 1;
  if (cur->mean_rows != n)
    rc = prepare_mean(cur, n);
  else
    rc = SQLITE_OK;
  if (rc == SQLITE_OK) rc = bind_frame(cur);
  if (rc == SQLITE_OK) rc = sqlite3_step(cur->mean);
  if (rc == SQLITE_ROW) {
    cur->computed = 1;
    return 1;
  }
  if (rc == SQLITE_NOMEM) {
    sqlite3_result_error_nomem(ctx);
  } else if (rc == SQLITE_TOOBIG) {
    sqlite3_result_error_toobig(ctx);
  } else {
    char *msg = frame_message(sqlite3_errmsg(cur->db), cur->pos - n + 1, cur->pos);
    char *full = msg ? sqlite3_mprintf("%s: %s", fname, msg) : NULL;
    if (full) {
      utf8_fix(full);
      sqlite3_result_error(ctx, full, -1);
      if (rc != SQLITE_ERROR && rc != SQLITE_DONE) sqlite3_result_error_code(ctx, rc);
    } else {
      sqlite3_result_error_nomem(ctx);
    }
    sqlite3_free(msg);
    sqlite3_free(full);
  }
  if (cur->mean) sqlite3_reset(cur->mean);
  return 0;
}

/* A frame row for rolling_direct_mean: a ring row, or the query's current
** row when row is NULL. */
static void direct_in(rolling_in *d, const rolling_row *row, sqlite3_stmt *query, int ncols) {
  if (row) { /* a kept record's BLOB is in rec.p, its number weight inline (kept_set) */
    d->rec_type = row->rec.type;
    d->p = row->rec.p;
    d->n = row->rec.n;
    d->w_type = ncols > 1 ? row->weight.type : SQLITE_INTEGER;
    d->w = ncols < 2 ? 1.0 : d->w_type == SQLITE_INTEGER ? (double)row->weight.i : row->weight.d;
    return;
  }
  d->rec_type = sqlite3_column_type(query, 0);
  d->p = d->rec_type == SQLITE_BLOB ? sqlite3_column_blob(query, 0) : NULL;
  d->n = d->rec_type == SQLITE_BLOB ? (uint64_t)sqlite3_column_bytes(query, 0) : 0;
  if (d->rec_type == SQLITE_BLOB && d->n && !d->p) d->rec_type = SQLITE_TEXT; /* out of memory: let ar_mean say */
  d->w_type = ncols > 1 ? sqlite3_column_type(query, 1) : SQLITE_INTEGER;
  d->w = ncols > 1 ? sqlite3_column_double(query, 1) : 1.0;
}

/* The frame's mean by rolling_direct_mean; 1 when it is on ctx. */
static int direct(rolling_cursor *cur, sqlite3_context *ctx) {
  int j, n = (int)frame_rows(cur), taken;
  rolling_in *in = codec_malloc((uint64_t)n * sizeof(*in));
  if (!in) return 0; /* ar_mean's way then */
  for (j = 0; j < n - 1; j++) direct_in(&in[j], &cur->ring[(cur->head + j) % cur->ring_n], NULL, cur->ncols);
  direct_in(&in[n - 1], NULL, cur->query, cur->ncols);
  taken = rolling_direct_mean(ctx, in, n);
  codec_free(in);
  return taken;
}

static int rolling_column(sqlite3_vtab_cursor *base, sqlite3_context *ctx, int col) {
  rolling_cursor *cur = (rolling_cursor *)base;
  switch (col) {
    case COL_POSITION: sqlite3_result_int64(ctx, cur->pos); break;
    case COL_LABEL:
      if (cur->ncols > 2) sqlite3_result_value(ctx, sqlite3_column_value(cur->query, 2));
      break;
    case COL_ROWS: {
      sqlite3_int64 rows = sqlite3_column_type(cur->query, 0) != SQLITE_NULL;
      int j, n = (int)frame_rows(cur) - 1;
      for (j = 0; j < n; j++) rows += cur->ring[(cur->head + j) % cur->ring_n].rec.type != SQLITE_NULL;
      sqlite3_result_int64(ctx, rows);
      break;
    }
    case COL_REC:
      /* Computed at each read: the direct path hands its BLOB to SQLite
      ** without a copy, so there is nothing kept to read twice. */
      if (!cur->computed && direct(cur, ctx)) break;
      if (!compute(cur, ctx)) break;
      if (sqlite3_column_type(cur->mean, 0) == SQLITE_BLOB && sqlite3_column_bytes(cur->mean, 0) > 0)
        /* a copy from the pool, not SQLite's fresh one */
        sql_result_blob_copy(ctx, sqlite3_column_blob(cur->mean, 0), (uint64_t)sqlite3_column_bytes(cur->mean, 0));
      else
        sqlite3_result_value(ctx, sqlite3_column_value(cur->mean, 0));
      break;
    case COL_QUERY: sqlite3_result_value(ctx, cur->arg_query); break;
    default: sqlite3_result_value(ctx, cur->arg_frame); break;
  }
  return SQLITE_OK;
}

/* xCreate is NULL: an eponymous-only table-valued function. */
static sqlite3_module ar_rolling_module = {
    .iVersion = 0,
    .xConnect = rolling_connect,
    .xBestIndex = rolling_best_index,
    .xDisconnect = sql_vtab_disconnect,
    .xOpen = rolling_open,
    .xClose = rolling_close,
    .xFilter = rolling_filter,
    .xNext = rolling_next,
    .xEof = rolling_eof,
    .xColumn = rolling_column,
    .xRowid = rolling_rowid,
};

int vtab_ar_rolling_register(sqlite3 *db, char **pzErrMsg) {
  return sql_register_module(db, fname, &ar_rolling_module, ar_rolling_schema, pzErrMsg);
}
