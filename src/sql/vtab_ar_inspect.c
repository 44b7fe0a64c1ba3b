/* SPDX-License-Identifier: Apache-2.0 */
/*
** vtab_ar_inspect.c — the table-valued function ar_inspect(blob [, bins
** [, grid [, kind]]]): one row per array of a .npy, an ArrayRecord or a
** RecordDict with everything a viewer shows of it, the BLOB read once.
**
**   CREATE TABLE ar_inspect(position INTEGER, record TEXT, key TEXT,
**     dtype TEXT, shape TEXT, numel INTEGER, nbytes INTEGER, min ANY,
**     max ANY, mean ANY, std REAL, l2 REAL, nan INTEGER, posinf INTEGER,
**     neginf INTEGER, histogram TEXT, heatmap TEXT,
**     arg HIDDEN, bins HIDDEN, grid HIDDEN, kind HIDDEN);
**
**   SELECT key, shape, histogram FROM ar_inspect(readfile('model.pb'), 16);
**
** Rows: the .npy's one array; a record's arrays; a RecordDict's arrays, its
** ArrayRecords in order (record names the ArrayRecord, key the array; both
** NULL for a .npy). kind ('npy', 'arrayrecord', 'recorddict') forces how
** the BLOB is read; by default it is told as ar_describe tells it
** (sql_inspect.h). nbytes is numel times the item size; min ... l2 are
** ar_stats' numbers from the same code (am_reduce); nan, posinf and neginf
** count elements (a complex element with a NaN part is a NaN; its
** infinity counts are NULL). An array with no NumPy dtype (a safetensors
** BF16 tensor, which a RecordDict may hold) has the dtype, shape and data
** bytes its Array message gives and NULL numbers, as in ar_compare.
** histogram and heatmap are inspect.h's, as JSON:
**   {"lo":L,"hi":H,"counts":[...]}  NULL for complex arrays and when no
**                                   element is finite;
**   {"rows":R,"cols":C,"layout":"matrix"|"kernels","cell_rows":r,
**    "cell_cols":c,"min":m,"max":M,"values":[[...],...]}  NULL below 2-D,
**                                   for empty and complex arrays.
** bins defaults to 32 (1..1024), grid to 32 (1..256).
**
** Lazy like ar_stats: a row's array is opened when a column other than
** position, record and key is read; the statistics (am_reduce, plus a
** counting pass only when it found NaN or infinity) when one of min ...
** neginf is; the histogram and heatmap when read, in one pass together when
** the query reads both (xBestIndex's colUsed says so). The argument's views
** stay valid during the scan for the reason given in vtab_array_record.c.
*/
#include "sql/sql_inspect.h"
#include "sql/sql_math.h"
#include "sql/sql_modules.h"
SQLITE_EXTENSION_INIT3

#include <math.h>
#include <string.h>

#include "codec/array.h"
#include "codec/json.h"
#include "codec/packed.h"
#include "codec/recorddict.h"
#include "math/inspect.h"

enum {
  COL_POSITION,
  COL_RECORD,
  COL_KEY,
  COL_DTYPE,
  COL_SHAPE,
  COL_NUMEL,
  COL_NBYTES,
  COL_MIN, /* the statistics: computed on first read */
  COL_MAX,
  COL_MEAN,
  COL_STD,
  COL_L2,
  COL_NAN,
  COL_POSINF,
  COL_NEGINF,
  COL_HISTOGRAM,
  COL_HEATMAP,
  COL_ARG, /* hidden arguments */
  COL_BINS,
  COL_GRID,
  COL_KIND
};

/* idxNum: bits 0-3 say which of arg, bins, grid, kind are given (in that
** order in argv); these say which costly columns the query reads. */
#define IDX_HISTOGRAM 16
#define IDX_HEATMAP 32

static const char ar_inspect_schema[] =
    "CREATE TABLE x(position INTEGER, record TEXT, key TEXT, dtype TEXT, shape TEXT, numel INTEGER,"
    " nbytes INTEGER, min ANY, max ANY, mean ANY, std REAL, l2 REAL, nan INTEGER, posinf INTEGER,"
    " neginf INTEGER, histogram TEXT, heatmap TEXT, arg HIDDEN, bins HIDDEN, grid HIDDEN, kind HIDDEN)";

typedef struct inspect_cursor {
  sqlite3_vtab_cursor base;
  codec_span arg; /* the argument BLOB, read back by the hidden column */
  int kind, bins, grid, idx;
  npy_array npy;       /* INSPECT_NPY */
  recorddict_t rd;     /* INSPECT_RECORDDICT */
  record_t *recs;      /* the ArrayRecords: one, or the RecordDict's */
  int *rd_item;        /* recs[k] is rd's item rd_item[k] */
  int nrecs, nrows;    /* records; rows in all */
  int row, rec, first; /* the row, its record, and that record's first row */
  int opened, computed, scanned, hist_done, heat_done;
  int numeric; /* the opened array has a NumPy dtype (else only its message's dtype and shape) */
  npy_array a;
  am_stats st;
  in_scan sc;
  int hist_ok, heat_ok;
  in_hist hist;
  in_heat heat;
  unsigned char *scratch;
} inspect_cursor;

static void inspect_reset(inspect_cursor *cur) {
  int k;
  for (k = 0; k < cur->nrecs; k++) record_clear(&cur->recs[k]);
  codec_free(cur->recs);
  codec_free(cur->rd_item);
  recorddict_clear(&cur->rd);
  in_heat_free(&cur->heat);
  cur->recs = NULL;
  cur->rd_item = NULL;
  cur->nrecs = cur->nrows = cur->row = cur->rec = cur->first = 0;
  cur->opened = cur->computed = cur->scanned = cur->hist_done = cur->heat_done = 0;
}

static int inspect_open(sqlite3_vtab *vtab, sqlite3_vtab_cursor **ppCursor) {
  int rc = sql_vtab_open(sizeof(inspect_cursor), ppCursor);
  (void)vtab;
  if (rc == SQLITE_OK) recorddict_init(&((inspect_cursor *)*ppCursor)->rd);
  return rc;
}

static int inspect_close(sqlite3_vtab_cursor *base) {
  inspect_cursor *cur = (inspect_cursor *)base;
  inspect_reset(cur);
  codec_free(cur->scratch);
  sqlite3_free(cur);
  return SQLITE_OK;
}

/* The hidden arguments by equality (idxNum bits 0-3), and which of the
** histogram and heatmap the query reads. */
static int inspect_best_index(sqlite3_vtab *vtab, sqlite3_index_info *info) {
  int rc = sql_vtab_best_index_args(info, COL_ARG, 4);
  (void)vtab;
  if (rc != SQLITE_OK) return rc;
  if (sqlite3_libversion_number() < 3010000) { /* no colUsed: assume both */
    info->idxNum |= IDX_HISTOGRAM | IDX_HEATMAP;
  } else {
    if (info->colUsed & ((sqlite3_uint64)1 << COL_HISTOGRAM)) info->idxNum |= IDX_HISTOGRAM;
    if (info->colUsed & ((sqlite3_uint64)1 << COL_HEATMAP)) info->idxNum |= IDX_HEATMAP;
  }
  info->estimatedCost = (info->idxNum & 1) ? 10 : 1e12;
  info->estimatedRows = 10;
  return SQLITE_OK;
}

/* "ar_inspect: <msg>" on the vtab. */
static int inspect_fail(sqlite3_vtab_cursor *base, const char *msg) {
  codec_err err;
  codec_fail(&err, CODEC_CORRUPT, "%s", msg);
  return sql_vtab_error(base, "ar_inspect", CODEC_CORRUPT, &err);
}

/* bins or grid: NULL keeps *out; otherwise an INTEGER in [1, max]. */
static int int_arg(sqlite3_vtab_cursor *base, sqlite3_value *v, const char *name, int max, int *out) {
  char got[32], msg[96];
  sqlite3_int64 x;
  int t = sqlite3_value_type(v);
  if (t == SQLITE_NULL) return SQLITE_OK;
  x = sqlite3_value_int64(v);
  if (t == SQLITE_INTEGER && x >= 1 && x <= max) {
    *out = (int)x;
    return SQLITE_OK;
  }
  if (t == SQLITE_INTEGER)
    sqlite3_snprintf(sizeof(got), got, "%lld", (long long)x);
  else
    sqlite3_snprintf(sizeof(got), got, "%s", t == SQLITE_FLOAT ? "a real" : t == SQLITE_TEXT ? "text" : "a blob");
  sqlite3_snprintf(sizeof(msg), msg, "%s must be an integer from 1 to %d, got %s", name, max, got);
  return inspect_fail(base, msg);
}

/* Why a BLOB fits no rule (kind detection failed): the .npy's problem for a
** BLOB with its magic, otherwise the record reader's. */
static int undetected(sqlite3_vtab_cursor *base, codec_span arg) {
  static const char magic[] = "\x93NUMPY";
  record_t rec;
  npy_array a;
  codec_err err;
  int rc, i;
  if (arg.n >= 6 && memcmp(arg.p, magic, 6) == 0) {
    rc = npy_parse(arg.p, arg.n, &a, &err);
    if (rc == CODEC_OK) codec_fail(&err, CODEC_CORRUPT, "unreadable .npy"); /* not reached: detected */
    return inspect_fail(base, err.msg);
  }
  if (packed_is(arg.p, arg.n)) { /* what it is, and what unpacks it */
    char msg[sizeof(err.msg)], hint[PACKED_HINT_MAX];
    int kind;
    packed_hint(hint, sizeof(hint), arg.p, arg.n, &kind);
    return inspect_fail(base, packed_misread(msg, sizeof(msg), arg.p, arg.n, kind));
  }
  record_init(&rec);
  rc = record_parse(&rec, arg.p, arg.n, &err);
  for (i = 0; rc == CODEC_OK && i < rec.n; i++) {
    if ((rc = array_validate(&rec.items[i], i, &err)) == CODEC_OK) rc = array_open(&rec.items[i], i, &a, &err);
  }
  record_clear(&rec);
  if (rc == CODEC_NOMEM) return SQLITE_NOMEM;
  {
    char msg[sizeof(err.msg) + 64];
    sqlite3_snprintf(sizeof(msg), msg, "not a .npy, ArrayRecord or RecordDict (as a record: %s)",
                     rc == CODEC_OK ? (arg.n ? "an empty record" : "an empty BLOB") : err.msg);
    return inspect_fail(base, msg);
  }
}

/* The RecordDict's ArrayRecords, each parsed. */
static int parse_recorddict(inspect_cursor *cur, sqlite3_vtab_cursor *base) {
  codec_err err;
  char label[CODEC_QUOTE_MAX + 32], msg[sizeof(err.msg) + CODEC_QUOTE_MAX + 64];
  int rc, i, n = 0;
  if ((rc = recorddict_parse(&cur->rd, cur->arg.p, cur->arg.n, &err)) != CODEC_OK)
    return sql_vtab_error(base, "ar_inspect", rc, &err);
  for (i = 0; i < cur->rd.n; i++) n += cur->rd.items[i].kind == RECORDDICT_ARRAY;
  cur->recs = codec_malloc((uint64_t)(n ? n : 1) * sizeof(record_t));
  cur->rd_item = codec_malloc((uint64_t)(n ? n : 1) * sizeof(int));
  if (!cur->recs || !cur->rd_item) return SQLITE_NOMEM;
  for (i = 0; i < cur->rd.n; i++) {
    const recorddict_item *it = &cur->rd.items[i];
    record_t *rec;
    if (it->kind != RECORDDICT_ARRAY) continue;
    rec = &cur->recs[cur->nrecs];
    record_init(rec);
    cur->rd_item[cur->nrecs++] = i;
    if ((rc = record_parse(rec, it->record.p, it->record.n, &err)) != CODEC_OK) {
      if (rc != CODEC_CORRUPT && rc != CODEC_UNSUPPORTED) return sql_vtab_error(base, "ar_inspect", rc, &err);
      recorddict_item_label(label, sizeof(label), it->name, it->kind);
      sqlite3_snprintf(sizeof(msg), msg, "%s (at byte %llu): %s", label, (unsigned long long)it->record_at, err.msg);
      return inspect_fail(base, msg);
    }
    cur->nrows += rec->n;
  }
  return SQLITE_OK;
}

/* Move rec and first to the record that holds the current row. */
static void settle(inspect_cursor *cur) {
  while (cur->rec < cur->nrecs && cur->row - cur->first >= cur->recs[cur->rec].n) {
    cur->first += cur->recs[cur->rec].n;
    cur->rec++;
  }
}

static int inspect_filter(sqlite3_vtab_cursor *base, int idxNum, const char *idxStr, int argc, sqlite3_value **argv) {
  inspect_cursor *cur = (inspect_cursor *)base;
  codec_err err;
  int rc, ai = 1;
  (void)idxStr;
  inspect_reset(cur);
  cur->idx = idxNum;
  cur->bins = cur->grid = 32;
  cur->kind = INSPECT_NONE;
  rc = sql_vtab_blob_arg(base, "ar_inspect", "a .npy, record or record dict", idxNum & 1, (idxNum & 1) && argc > 0,
                         argv, &cur->arg);
  if (rc != SQLITE_OK) return rc;
  if ((idxNum & 2) && (rc = int_arg(base, argv[ai++], "bins", IN_MAX_BINS, &cur->bins)) != SQLITE_OK) return rc;
  if ((idxNum & 4) && (rc = int_arg(base, argv[ai++], "grid", IN_MAX_GRID, &cur->grid)) != SQLITE_OK) return rc;
  if ((idxNum & 8) && sqlite3_value_type(argv[ai]) != SQLITE_NULL) {
    const unsigned char *s = sqlite3_value_text(argv[ai]);
    char q[CODEC_QUOTE_MAX], msg[CODEC_QUOTE_MAX + 80];
    if (!s) return SQLITE_NOMEM;
    cur->kind = sql_inspect_kind_from_name(s, (uint64_t)sqlite3_value_bytes(argv[ai]));
    if (cur->kind == INSPECT_NONE || sqlite3_value_type(argv[ai]) != SQLITE_TEXT) {
      cur->kind = INSPECT_NONE;
      sqlite3_snprintf(sizeof(msg), msg, "kind must be 'npy', 'arrayrecord' or 'recorddict', got '%s'",
                       codec_quote(q, sizeof(q), s, (uint64_t)sqlite3_value_bytes(argv[ai])));
      return inspect_fail(base, msg);
    }
  }
  if (!cur->arg.p) return SQLITE_OK; /* NULL: no rows */
  if (cur->kind == INSPECT_NONE) {
    if (sql_inspect_detect(cur->arg.p, cur->arg.n, &cur->kind) != CODEC_OK) return SQLITE_NOMEM;
    if (cur->kind == INSPECT_NONE) return undetected(base, cur->arg);
  }
  if (cur->kind == INSPECT_NPY) {
    if ((rc = sql_npy_parse(cur->arg.p, cur->arg.n, &cur->npy, &err)) != CODEC_OK)
      return sql_vtab_error(base, "ar_inspect", rc, &err);
    cur->nrows = 1;
  } else if (cur->kind == INSPECT_RECORD) {
    if (!(cur->recs = codec_malloc(sizeof(record_t)))) return SQLITE_NOMEM;
    record_init(cur->recs);
    cur->nrecs = 1;
    if ((rc = record_parse(cur->recs, cur->arg.p, cur->arg.n, &err)) != CODEC_OK)
      return sql_vtab_error(base, "ar_inspect", rc, &err);
    cur->nrows = cur->recs->n;
  } else {
    if ((rc = parse_recorddict(cur, base)) != SQLITE_OK) {
      cur->nrows = 0;
      return rc;
    }
  }
  settle(cur);
  return SQLITE_OK;
}

static int inspect_next(sqlite3_vtab_cursor *base) {
  inspect_cursor *cur = (inspect_cursor *)base;
  cur->row++;
  settle(cur);
  cur->opened = cur->computed = cur->scanned = cur->hist_done = cur->heat_done = 0;
  in_heat_free(&cur->heat);
  return SQLITE_OK;
}

static int inspect_eof(sqlite3_vtab_cursor *base) {
  inspect_cursor *cur = (inspect_cursor *)base;
  return cur->row >= cur->nrows;
}

static int inspect_rowid(sqlite3_vtab_cursor *base, sqlite3_int64 *rowid) {
  *rowid = ((inspect_cursor *)base)->row;
  return SQLITE_OK;
}

/* The current row's record item (NULL for a .npy). */
static const record_item *row_item(const inspect_cursor *cur) {
  if (cur->kind == INSPECT_NPY) return NULL;
  return &cur->recs[cur->rec].items[cur->row - cur->first];
}

/* Open the current array (on failure the error is the column's result). */
static int open_row(inspect_cursor *cur, sqlite3_context *ctx) {
  codec_err err;
  int rc;
  if (cur->opened) return 1;
  cur->numeric = 1;
  if (cur->kind == INSPECT_NPY) {
    cur->a = cur->npy;
  } else if ((rc = array_open(row_item(cur), cur->row - cur->first, &cur->a, &err)) != CODEC_OK) {
    /* no NumPy dtype (a safetensors BF16 tensor): a row without numbers,
    ** as ar_compare gives one; broken bytes are an error */
    if (rc != CODEC_UNSUPPORTED) return sql_vtab_column_error(ctx, "ar_inspect", rc, &err);
    cur->numeric = 0;
  }
  cur->opened = 1;
  return 1;
}

/* dtype, shape, numel and nbytes of an array without a NumPy dtype, from
** its Array message; its numbers are NULL. */
static void result_not_numeric(sqlite3_context *ctx, const record_item *it, int col) {
  int64_t shape[RECORD_MAX_DIMS];
  uint64_t numel;
  int ndim = record_item_shape(it, shape);
  switch (col) {
    case COL_DTYPE:
      sqlite3_result_text64(ctx, (const char *)it->dtype.p, it->dtype.n, SQLITE_TRANSIENT, SQLITE_UTF8);
      break;
    case COL_SHAPE: sql_result_shape(ctx, ndim, shape); break;
    case COL_NUMEL:
      if (npy_shape_numel(ndim, shape, &numel, NULL) == CODEC_OK && numel <= (uint64_t)INT64_MAX)
        sqlite3_result_int64(ctx, (sqlite3_int64)numel);
      break;
    case COL_NBYTES: sqlite3_result_int64(ctx, (sqlite3_int64)it->data.n); break;
    default: break;
  }
}

static int need_scratch(inspect_cursor *cur, sqlite3_context *ctx) {
  return cur->scratch || (cur->scratch = sql_math_scratch(ctx)) != NULL;
}

/* ar_stats' reduction. */
static int compute_stats(inspect_cursor *cur, sqlite3_context *ctx) {
  if (!open_row(cur, ctx) || !need_scratch(cur, ctx)) return 0;
  if (cur->computed) return 1;
  sql_math_stats(&cur->a, &cur->st, cur->scratch);
  cur->computed = 1;
  return 1;
}

/* The counts and the finite range: from am_reduce's results when it saw
** no NaN or infinity (its min and max are then the finite ones), otherwise
** a pass of their own. */
static int compute_scan(inspect_cursor *cur, sqlite3_context *ctx) {
  const am_stats *st = &cur->st;
  if (!open_row(cur, ctx) || !need_scratch(cur, ctx)) return 0;
  if (cur->scanned) return 1;
  if (cur->computed && st->nonfinite == 0 && !st->is_complex) {
    memset(&cur->sc, 0, sizeof(cur->sc));
    cur->sc.finite = cur->a.numel;
    if (st->min_kind == DT_KIND_FLOAT) {
      cur->sc.lo = st->fmin;
      cur->sc.hi = st->fmax;
    } else if (st->min_kind == DT_KIND_UINT) {
      cur->sc.lo = (double)st->umin;
      cur->sc.hi = (double)st->umax;
    } else {
      cur->sc.lo = (double)st->imin;
      cur->sc.hi = (double)st->imax;
    }
  } else {
    in_scan_array(&cur->a, &cur->sc, cur->scratch);
  }
  cur->scanned = 1;
  return 1;
}

static int real_array(const inspect_cursor *cur) { return dt_kind(cur->a.dtype.type) != DT_KIND_COMPLEX; }

/* Plan the histogram (hist_ok says whether it has one). */
static int plan_hist(inspect_cursor *cur, sqlite3_context *ctx) {
  if (!compute_scan(cur, ctx)) return 0;
  cur->hist_ok = real_array(cur) && cur->sc.finite > 0 && in_hist_plan(&cur->hist, cur->bins, cur->sc.lo, cur->sc.hi);
  return 1;
}

/* Plan the heatmap (heat_ok says whether it has one). */
static int plan_heat(inspect_cursor *cur, sqlite3_context *ctx) {
  cur->heat_ok = 0;
  if (!open_row(cur, ctx) || !need_scratch(cur, ctx)) return 0;
  if (cur->a.ndim < 2 || cur->a.numel == 0 || !real_array(cur)) return 1;
  if (in_heat_plan(&cur->heat, &cur->a, cur->grid) != CODEC_OK) {
    sqlite3_result_error_nomem(ctx);
    return 0;
  }
  cur->heat_ok = 1;
  return 1;
}

/* The histogram and/or the heatmap (both in one pass when the query reads
** both). */
static int compute_pictures(inspect_cursor *cur, sqlite3_context *ctx, int col) {
  int do_hist = col == COL_HISTOGRAM || ((cur->idx & IDX_HISTOGRAM) && !cur->hist_done);
  int do_heat = col == COL_HEATMAP || ((cur->idx & IDX_HEATMAP) && !cur->heat_done);
  if ((col == COL_HISTOGRAM && cur->hist_done) || (col == COL_HEATMAP && cur->heat_done)) return 1;
  if (!open_row(cur, ctx)) return 0;
  if (!real_array(cur)) {
    cur->hist_ok = cur->heat_ok = 0;
    cur->hist_done = cur->heat_done = 1;
    return 1;
  }
  if (do_hist && !cur->hist_done && !plan_hist(cur, ctx)) return 0;
  if (do_heat && !cur->heat_done && !plan_heat(cur, ctx)) return 0;
  do_hist = do_hist && !cur->hist_done;
  do_heat = do_heat && !cur->heat_done;
  if ((do_hist && cur->hist_ok) || (do_heat && cur->heat_ok))
    in_pass(&cur->a, do_hist && cur->hist_ok ? &cur->hist : NULL, do_heat && cur->heat_ok ? &cur->heat : NULL,
            cur->scratch);
  if (do_hist) cur->hist_done = 1;
  if (do_heat) cur->heat_done = 1;
  return 1;
}

static void result_histogram(inspect_cursor *cur, sqlite3_context *ctx) {
  buf_t b;
  int i;
  if (!cur->hist_ok) return;
  sql_buf_init(ctx, &b);
  buf_puts(&b, "{\"lo\":");
  json_put_float(&b, cur->hist.lo, 64);
  buf_puts(&b, ",\"hi\":");
  json_put_float(&b, cur->hist.hi, 64);
  buf_puts(&b, ",\"counts\":[");
  for (i = 0; i < cur->hist.bins; i++) buf_printf(&b, i ? ",%llu" : "%llu", (unsigned long long)cur->hist.counts[i]);
  buf_puts(&b, "]}");
  sql_result_buf(ctx, &b, 1);
}

static void put_cell(buf_t *b, double v) {
  if (v != v)
    buf_puts(b, "null");
  else
    json_put_float(b, v, 64);
}

static void result_heatmap(inspect_cursor *cur, sqlite3_context *ctx) {
  const in_heat *m = &cur->heat;
  double lo = NAN, hi = NAN;
  uint64_t r, c;
  buf_t b;
  if (!cur->heat_ok) return;
  for (r = 0; r < m->crows; r++)
    for (c = 0; c < m->ccols; c++) {
      double v = in_heat_cell(m, r, c);
      if (v != v) continue;
      if (lo != lo || v < lo) lo = v;
      if (hi != hi || v > hi) hi = v;
    }
  sql_buf_init(ctx, &b);
  buf_printf(&b, "{\"rows\":%llu,\"cols\":%llu,\"layout\":\"%s\",\"cell_rows\":%llu,\"cell_cols\":%llu,\"min\":",
             (unsigned long long)m->rows, (unsigned long long)m->cols, m->kernels ? "kernels" : "matrix",
             (unsigned long long)m->crows, (unsigned long long)m->ccols);
  put_cell(&b, lo);
  buf_puts(&b, ",\"max\":");
  put_cell(&b, hi);
  buf_puts(&b, ",\"values\":[");
  for (r = 0; r < m->crows; r++) {
    buf_puts(&b, r ? ",[" : "[");
    for (c = 0; c < m->ccols; c++) {
      if (c) buf_putc(&b, ',');
      put_cell(&b, in_heat_cell(m, r, c));
    }
    buf_putc(&b, ']');
  }
  buf_puts(&b, "]}");
  sql_result_buf(ctx, &b, 1);
}

static void result_count(sqlite3_context *ctx, uint64_t n) { sqlite3_result_int64(ctx, (sqlite3_int64)n); }

static int inspect_column(sqlite3_vtab_cursor *base, sqlite3_context *ctx, int col) {
  inspect_cursor *cur = (inspect_cursor *)base;
  const record_item *it = row_item(cur);
  char name[DT_NAME_MAX];
  switch (col) {
    case COL_POSITION: sqlite3_result_int(ctx, cur->row); return SQLITE_OK;
    case COL_RECORD:
      if (cur->kind == INSPECT_RECORDDICT) {
        const recorddict_item *ri = &cur->rd.items[cur->rd_item[cur->rec]];
        sqlite3_result_text64(ctx, (const char *)ri->name.p, ri->name.n, SQLITE_TRANSIENT, SQLITE_UTF8);
      }
      return SQLITE_OK;
    case COL_KEY:
      if (it) sqlite3_result_text64(ctx, (const char *)it->key.p, it->key.n, SQLITE_TRANSIENT, SQLITE_UTF8);
      return SQLITE_OK;
    case COL_ARG: sql_result_blob_copy(ctx, cur->arg.p, cur->arg.n); return SQLITE_OK;
    case COL_BINS: sqlite3_result_int(ctx, cur->bins); return SQLITE_OK;
    case COL_GRID: sqlite3_result_int(ctx, cur->grid); return SQLITE_OK;
    case COL_KIND: sqlite3_result_text(ctx, sql_inspect_kind_name(cur->kind), -1, SQLITE_STATIC); return SQLITE_OK;
    default: break;
  }
  if (!open_row(cur, ctx)) return SQLITE_OK;
  if (!cur->numeric) {
    result_not_numeric(ctx, it, col);
    return SQLITE_OK;
  }
  switch (col) {
    case COL_DTYPE:
      dt_name(cur->a.dtype, name);
      sqlite3_result_text(ctx, name, -1, SQLITE_TRANSIENT);
      return SQLITE_OK;
    case COL_SHAPE: sql_result_shape(ctx, cur->a.ndim, cur->a.shape); return SQLITE_OK;
    case COL_NUMEL: result_count(ctx, cur->a.numel); return SQLITE_OK;
    case COL_NBYTES: result_count(ctx, cur->a.nbytes); return SQLITE_OK;
    case COL_HISTOGRAM:
      if (compute_pictures(cur, ctx, col)) result_histogram(cur, ctx);
      return SQLITE_OK;
    case COL_HEATMAP:
      if (compute_pictures(cur, ctx, col)) result_heatmap(cur, ctx);
      return SQLITE_OK;
    default: break;
  }
  if (!compute_stats(cur, ctx)) return SQLITE_OK;
  switch (col) {
    case COL_MIN:
    case COL_MAX: sql_result_minmax(ctx, &cur->st, col == COL_MAX); break;
    case COL_MEAN: sql_result_mean(ctx, &cur->st); break;
    case COL_STD: sql_result_std(ctx, &cur->st); break;
    case COL_L2: sqlite3_result_double(ctx, sqrt(cur->st.sumsq)); break;
    default: /* nan, posinf, neginf (none for complex arrays) */
      if (col != COL_NAN && !real_array(cur)) break;
      if (cur->st.nonfinite == 0)
        result_count(ctx, 0);
      else if (compute_scan(cur, ctx))
        result_count(ctx, col == COL_NAN ? cur->sc.nan : col == COL_POSINF ? cur->sc.posinf : cur->sc.neginf);
      break;
  }
  return SQLITE_OK;
}

/* xCreate is NULL: an eponymous-only table-valued function. */
static sqlite3_module ar_inspect_module = {
    .iVersion = 0,
    .xConnect = sql_vtab_connect,
    .xBestIndex = inspect_best_index,
    .xDisconnect = sql_vtab_disconnect,
    .xOpen = inspect_open,
    .xClose = inspect_close,
    .xFilter = inspect_filter,
    .xNext = inspect_next,
    .xEof = inspect_eof,
    .xColumn = inspect_column,
    .xRowid = inspect_rowid,
};

int vtab_ar_inspect_register(sqlite3 *db, char **pzErrMsg) {
  return sql_register_module(db, "ar_inspect", &ar_inspect_module, ar_inspect_schema, pzErrMsg);
}
