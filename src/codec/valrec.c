/* SPDX-License-Identifier: Apache-2.0 */
/*
** valrec.c — MetricRecord / ConfigRecord reader, JSON mapping and canonical
** writer (see valrec.h for the messages and the rules).
*/
#include "codec/valrec.h"

#include "codec/json.h"
#include "codec/json_read.h"
#include "codec/keyset.h"

#include <math.h>
#include <stdio.h>
#include <stddef.h>
#include <string.h>

static const unsigned char empty_bytes[1] = {0};

const char *valrec_type_name(int type) {
  switch (type) {
    case VALREC_DOUBLE: return "double";
    case VALREC_SINT64: return "sint64";
    case VALREC_UINT64: return "uint64";
    case VALREC_BOOL: return "bool";
    case VALREC_STRING: return "string";
    case VALREC_BYTES: return "bytes";
    case VALREC_DOUBLE_LIST: return "double_list";
    case VALREC_SINT_LIST: return "sint_list";
    case VALREC_UINT_LIST: return "uint_list";
    case VALREC_BOOL_LIST: return "bool_list";
    case VALREC_STRING_LIST: return "string_list";
    case VALREC_BYTES_LIST: return "bytes_list";
    default: return "";
  }
}

/* Is field f a member of the value oneof of this record kind? */
static int is_member(int config, uint64_t f) {
  if (f == 1 || f == 2 || f == 3 || f == 21 || f == 22 || f == 23) return 1;
  return config && (f == 4 || f == 5 || f == 6 || f == 24 || f == 25 || f == 26);
}

static uint64_t get_le64(const unsigned char *p) {
  uint64_t v = 0;
  int k;
  for (k = 7; k >= 0; k--) v = (v << 8) | p[k];
  return v;
}

static double bits_double(uint64_t u) {
  double d;
  memcpy(&d, &u, sizeof(d));
  return d;
}

/* "<blob> <problem>" at byte `at`, with the item's place. */
static int vr_fail(const pb_ctx *ctx, const char *problem, uint64_t at) {
  char what[200];
  snprintf(what, sizeof(what), "%s %s", ctx->blob, problem);
  return pb_error(ctx, CODEC_CORRUPT, what, at);
}

/* --- list elements ------------------------------------------------------------ */

static void decode_varint(int type, uint64_t u, valrec_elem *e) {
  if (type == VALREC_SINT_LIST)
    e->i = (int64_t)((u >> 1) ^ (~(u & 1) + 1));
  else if (type == VALREC_BOOL_LIST)
    e->u = u != 0;
  else
    e->u = u;
}

/* The next element, checking as it goes (ctx names the place); *got 0 at
** the end. Parsing runs this once over every list, so later walks cannot
** fail. */
static int iter_step(valrec_iter *it, const pb_ctx *ctx, valrec_elem *e, int *got) {
  const unsigned char *blob = it->list.blob;
  int rc;
  *got = 0;
  for (;;) {
    uint64_t field, at, s, len, u;
    int wt;
    if (it->packed.pos < it->packed.end) {
      at = it->packed.pos;
      if (it->type == VALREC_DOUBLE_LIST) {
        if (it->packed.end - at < 8) return vr_fail(ctx, "has a packed double list cut mid-value", at);
        e->d = bits_double(get_le64(blob + at));
        it->packed.pos += 8;
      } else {
        if ((rc = pb_varint(&it->packed, &u)) != PB_OK) return pb_read_error(ctx, rc, &it->packed, at);
        decode_varint(it->type, u, e);
      }
      *got = 1;
      return CODEC_OK;
    }
    if (it->list.pos >= it->list.end) return CODEC_OK;
    at = it->list.pos;
    if ((rc = pb_tag(&it->list, ctx, &field, &wt)) != CODEC_OK) return rc;
    if (field != 1) {
      if ((rc = pb_skip(&it->list, ctx, field, wt, 0, at)) != CODEC_OK) return rc;
      continue;
    }
    if (it->type == VALREC_STRING_LIST || it->type == VALREC_BYTES_LIST) {
      if (wt != PB_WT_LEN) return pb_wrong_type(ctx, "a list element", wt, at);
      if ((rc = pb_len(&it->list, ctx, &s, &len)) != CODEC_OK) return rc;
      e->s.p = len ? blob + s : empty_bytes;
      e->s.n = len;
      if (it->type == VALREC_STRING_LIST && !codec_utf8_valid(e->s.p, e->s.n))
        return vr_fail(ctx, "has a string that is not valid UTF-8", s);
      *got = 1;
      return CODEC_OK;
    }
    if (wt == PB_WT_LEN) { /* a packed run */
      if ((rc = pb_len(&it->list, ctx, &s, &len)) != CODEC_OK) return rc;
      it->packed.pos = s;
      it->packed.end = s + len;
      continue;
    }
    if (it->type == VALREC_DOUBLE_LIST) {
      if (wt != PB_WT_I64) return pb_wrong_type(ctx, "a double list element", wt, at);
      if (it->list.end - it->list.pos < 8) return vr_fail(ctx, "truncated", it->list.end);
      e->d = bits_double(get_le64(blob + it->list.pos));
      it->list.pos += 8;
    } else {
      uint64_t vat = it->list.pos;
      if (wt != PB_WT_VARINT) return pb_wrong_type(ctx, "a list element", wt, at);
      if ((rc = pb_varint(&it->list, &u)) != PB_OK) return pb_read_error(ctx, rc, &it->list, vat);
      decode_varint(it->type, u, e);
    }
    *got = 1;
    return CODEC_OK;
  }
}

static void iter_start(valrec_iter *it, const unsigned char *blob, uint64_t s, uint64_t e, int type) {
  it->list.blob = it->packed.blob = blob;
  it->list.pos = s;
  it->list.end = e;
  it->packed.pos = it->packed.end = 0;
  it->type = type;
}

void valrec_iter_init(valrec_iter *it, const valrec_item *item) {
  iter_start(it, item->list.p, 0, item->list.n, item->type);
}

int valrec_iter_next(valrec_iter *it, valrec_elem *e) {
  pb_ctx quiet = {NULL, "list", -1, {NULL, 0}};
  int got = 0;
  memset(e, 0, sizeof(*e));
  if (iter_step(it, &quiet, e, &got) != CODEC_OK) return 0;
  return got;
}

/* --- parsing ------------------------------------------------------------------ */

/* One list occurrence at blob[s..e): every element checked (offsets stay
** absolute), counted into *n. */
static int check_list(const unsigned char *blob, uint64_t s, uint64_t e, int type, const pb_ctx *ctx, uint64_t *n) {
  valrec_iter li;
  valrec_elem el;
  int rc, got;
  iter_start(&li, blob, s, e, type);
  for (;;) {
    if ((rc = iter_step(&li, ctx, &el, &got)) != CODEC_OK) return rc;
    if (!got) return CODEC_OK;
    (*n)++;
  }
}

/* One occurrence of the value message at blob[start..end), merged into
** what the item holds as protobuf merges it: a scalar member sets the
** value, a list member of the type held appends its elements, of another
** type starts a new list; fields of no member change nothing. */
static int parse_value(valrec_item *it, int config, const unsigned char *blob, uint64_t start, uint64_t end,
                       const pb_ctx *ctx) {
  pb_reader r = {blob, start, end};
  int rc;
  while (r.pos < r.end) {
    uint64_t field, at = r.pos, s, len, u;
    int wt;
    if ((rc = pb_tag(&r, ctx, &field, &wt)) != CODEC_OK) return rc;
    if (!is_member(config, field)) {
      if ((rc = pb_skip(&r, ctx, field, wt, 0, at)) != CODEC_OK) return rc;
      continue;
    }
    if (field == VALREC_DOUBLE) {
      if (wt != PB_WT_I64) return pb_wrong_type(ctx, "a double value", wt, at);
      if (r.end - r.pos < 8) return vr_fail(ctx, "truncated", r.end);
      memset(&it->v, 0, sizeof(it->v));
      it->v.d = bits_double(get_le64(blob + r.pos));
      r.pos += 8;
    } else if (field <= VALREC_BOOL) {
      uint64_t vat = r.pos;
      if (wt != PB_WT_VARINT) return pb_wrong_type(ctx, valrec_type_name((int)field), wt, at);
      if ((rc = pb_varint(&r, &u)) != PB_OK) return pb_read_error(ctx, rc, &r, vat);
      memset(&it->v, 0, sizeof(it->v));
      if (field == VALREC_SINT64)
        it->v.i = (int64_t)((u >> 1) ^ (~(u & 1) + 1));
      else
        it->v.u = field == VALREC_BOOL ? u != 0 : u;
    } else {
      if (wt != PB_WT_LEN) return pb_wrong_type(ctx, valrec_type_name((int)field), wt, at);
      if ((rc = pb_len(&r, ctx, &s, &len)) != CODEC_OK) return rc;
      if (field == VALREC_STRING || field == VALREC_BYTES) {
        memset(&it->v, 0, sizeof(it->v));
        it->v.s.p = len ? blob + s : empty_bytes;
        it->v.s.n = len;
        if (field == VALREC_STRING && !codec_utf8_valid(it->v.s.p, len))
          return vr_fail(ctx, "has a string that is not valid UTF-8", s);
      } else {
        uint64_t count = 0;
        if (it->type != (int)field) { /* a new list */
          it->list.p = empty_bytes;
          it->list.n = 0;
          it->nvals = 0;
        }
        if ((rc = check_list(blob, s, s + len, (int)field, ctx, &count)) != CODEC_OK) return rc;
        if (pb_join(&it->list, &it->owned, blob + s, len) != CODEC_OK) return codec_nomem(ctx->err);
        it->nvals += count;
      }
    }
    it->type = (int)field;
  }
  return CODEC_OK;
}

static int parse_item(valrec_item *it, int config, const unsigned char *blob, uint64_t start, uint64_t end,
                      pb_ctx *ctx) {
  pb_reader r = {blob, start, end};
  int rc;
  memset(it, 0, sizeof(*it));
  it->key.p = it->list.p = empty_bytes;
  ctx->key.p = NULL;
  /* The key first (the last occurrence wins), so messages about the value
  ** can name it; then every value occurrence, merged in order. */
  while (r.pos < r.end) {
    uint64_t field, at = r.pos, s, len;
    int wt;
    if ((rc = pb_tag(&r, ctx, &field, &wt)) != CODEC_OK) return rc;
    if (field == 1 || field == 2) {
      if (wt != PB_WT_LEN) return pb_wrong_type(ctx, field == 1 ? "Item.key" : "Item.value", wt, at);
      if ((rc = pb_len(&r, ctx, &s, &len)) != CODEC_OK) return rc;
      if (field == 1) {
        it->key.p = len ? blob + s : empty_bytes;
        it->key.n = len;
        if (codec_utf8_valid(it->key.p, len)) ctx->key = it->key;
      }
    } else if ((rc = pb_skip(&r, ctx, field, wt, 0, at)) != CODEC_OK) {
      return rc;
    }
  }
  if (!codec_utf8_valid(it->key.p, it->key.n)) {
    ctx->key.p = NULL;
    return vr_fail(ctx, "has a key that is not valid UTF-8", start);
  }
  ctx->key = it->key;
  r.pos = start;
  while (r.pos < r.end) {
    uint64_t field, at = r.pos, s, len;
    int wt;
    pb_tag(&r, ctx, &field, &wt); /* read once already: cannot fail */
    if (field == 2) {
      pb_len(&r, ctx, &s, &len);
      if ((rc = parse_value(it, config, blob, s, s + len, ctx)) != CODEC_OK) return rc;
    } else if (field == 1) {
      pb_len(&r, ctx, &s, &len);
    } else {
      pb_skip(&r, ctx, field, wt, 0, at);
    }
  }
  if (it->type == VALREC_NONE) return vr_fail(ctx, "has an item without a value", start);
  return CODEC_OK;
}

static void free_owned(valrec_t *vr) {
  int i;
  for (i = 0; i < vr->n; i++) pb_owned_free(&vr->items[i].owned);
}

void valrec_init(valrec_t *vr) {
  vr->items = vr->small;
  vr->n = 0;
  vr->cap = (int)(sizeof(vr->small) / sizeof(vr->small[0]));
  vr->config = 0;
}

void valrec_clear(valrec_t *vr) {
  free_owned(vr);
  if (vr->items != vr->small) codec_free(vr->items);
  valrec_init(vr);
}

static int dup_error(const valrec_t *vr, const char *name, int first, int second, codec_err *err) {
  char q[CODEC_QUOTE_MAX];
  codec_quote(q, sizeof(q), vr->items[second].key.p, vr->items[second].key.n);
  return codec_fail(err, CODEC_CORRUPT, "%s has duplicate key '%s' (items %d and %d)", name, q, first, second);
}

static int check_unique(const valrec_t *vr, const char *name, codec_err *err) {
  int first, second;
  if (keyset_find_duplicate(vr->items, vr->n, sizeof(valrec_item), offsetof(valrec_item, key), &first, &second))
    return codec_nomem(err);
  return second < 0 ? CODEC_OK : dup_error(vr, name, first, second, err);
}

int valrec_parse_more(valrec_t *vr, const unsigned char *blob, uint64_t start, uint64_t end, const char *name,
                      codec_err *err) {
  pb_reader r = {blob, start, end};
  pb_ctx ctx = {err, name, -1, {NULL, 0}};
  uint64_t at, s, len;
  int rc;
  while ((rc = pb_next_item(&r, &ctx, "items", vr->n, &at, &s, &len)) == PB_ITEM) {
    valrec_item *it = buf_push_item(&vr->items, &vr->n, &vr->cap, vr->small, sizeof(*it));
    if (!it) return codec_nomem(err);
    if ((rc = parse_item(it, vr->config, blob, s, s + len, &ctx)) != CODEC_OK) return rc;
    it->offset = at;
  }
  return rc;
}

int valrec_check_unique(const valrec_t *vr, const char *name, codec_err *err) { return check_unique(vr, name, err); }

int valrec_parse(valrec_t *vr, int config, const unsigned char *blob, uint64_t start, uint64_t end, const char *name,
                 codec_err *err) {
  int rc;
  free_owned(vr);
  vr->n = 0;
  vr->config = config;
  if ((rc = valrec_parse_more(vr, blob, start, end, name, err)) != CODEC_OK) return rc;
  return check_unique(vr, name, err);
}

int valrec_find(const valrec_t *vr, const void *key, uint64_t n) {
  int i;
  for (i = 0; i < vr->n; i++)
    if (vr->items[i].key.n == n && memcmp(vr->items[i].key.p, key, (size_t)n) == 0) return i;
  return -1;
}

/* --- JSON out ------------------------------------------------------------------- */

void valrec_put_base64(buf_t *out, const unsigned char *p, uint64_t n) {
  static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  uint64_t i;
  char q[4];
  for (i = 0; i + 3 <= n; i += 3) {
    uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
    q[0] = tab[v >> 18];
    q[1] = tab[(v >> 12) & 63];
    q[2] = tab[(v >> 6) & 63];
    q[3] = tab[v & 63];
    buf_append(out, q, 4);
  }
  if (n - i == 1) {
    uint32_t v = (uint32_t)p[i] << 16;
    q[0] = tab[v >> 18];
    q[1] = tab[(v >> 12) & 63];
    q[2] = q[3] = '=';
    buf_append(out, q, 4);
  } else if (n - i == 2) {
    uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
    q[0] = tab[v >> 18];
    q[1] = tab[(v >> 12) & 63];
    q[2] = tab[(v >> 6) & 63];
    q[3] = '=';
    buf_append(out, q, 4);
  }
}

static void put_double(buf_t *out, double d) {
  char text[40];
  if (d != d) {
    buf_puts(out, "{\"double\":\"NaN\"}");
  } else if (isinf(d)) {
    buf_puts(out, d > 0 ? "{\"double\":\"Infinity\"}" : "{\"double\":\"-Infinity\"}");
  } else {
    json_format_float(text, d, 64);
    buf_puts(out, text);
  }
}

/* One scalar or element of type t (a scalar type). */
static void put_elem(buf_t *out, int t, const valrec_elem *e) {
  switch (t) {
    case VALREC_DOUBLE: put_double(out, e->d); break;
    case VALREC_SINT64: buf_printf(out, "%lld", (long long)e->i); break;
    case VALREC_UINT64: buf_printf(out, "%llu", (unsigned long long)e->u); break;
    case VALREC_BOOL: buf_puts(out, e->u ? "true" : "false"); break;
    case VALREC_STRING: json_put_string(out, e->s.p, e->s.n); break;
    default:
      buf_puts(out, "{\"bytes\":\"");
      valrec_put_base64(out, e->s.p, e->s.n);
      buf_puts(out, "\"}");
  }
}

void valrec_scalar_json(buf_t *out, int type, const valrec_elem *e) { put_elem(out, type, e); }

void valrec_value_json(buf_t *out, const valrec_item *item) {
  if (VALREC_IS_LIST(item->type)) {
    valrec_iter it;
    valrec_elem e;
    int first = 1, t = item->type - 20;
    valrec_iter_init(&it, item);
    buf_putc(out, '[');
    while (valrec_iter_next(&it, &e)) {
      if (!first) buf_putc(out, ',');
      first = 0;
      put_elem(out, t, &e);
    }
    buf_putc(out, ']');
  } else {
    put_elem(out, item->type, &item->v);
  }
}

void valrec_to_json(buf_t *out, const valrec_t *vr) {
  int i;
  buf_putc(out, '{');
  for (i = 0; i < vr->n; i++) {
    if (i) buf_putc(out, ',');
    json_put_string(out, vr->items[i].key.p, vr->items[i].key.n);
    buf_putc(out, ':');
    valrec_value_json(out, &vr->items[i]);
  }
  buf_putc(out, '}');
}

/* --- writing -------------------------------------------------------------------- */

static void put_le64(buf_t *b, uint64_t v) {
  unsigned char t[8];
  int k;
  for (k = 0; k < 8; k++) t[k] = (unsigned char)(v >> (8 * k));
  buf_append(b, t, 8);
}

static uint64_t double_bits(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof(u));
  return u;
}

static uint64_t zigzag(int64_t i) { return ((uint64_t)i << 1) ^ (i < 0 ? UINT64_MAX : 0); }

/* Scratch space for one item: the value message, the list message, a packed run. */
typedef struct writer {
  buf_t val, list, packed;
} writer;

static void writer_init(writer *w, uint64_t limit) {
  buf_init(&w->val, limit);
  buf_init(&w->list, limit);
  buf_init(&w->packed, limit);
}

static void writer_free(writer *w) {
  buf_free(&w->val);
  buf_free(&w->list);
  buf_free(&w->packed);
}

static int writer_rc(const writer *w) { return w->val.rc ? w->val.rc : w->list.rc ? w->list.rc : w->packed.rc; }

static void writer_begin(writer *w) { w->val.n = w->list.n = w->packed.n = 0; }

/* The value message of a scalar. */
static void put_scalar(buf_t *v, int t, const valrec_elem *e) {
  buf_putc(v, (char)(t << 3 | (t == VALREC_DOUBLE ? PB_WT_I64 : t <= VALREC_BOOL ? PB_WT_VARINT : PB_WT_LEN)));
  switch (t) {
    case VALREC_DOUBLE: put_le64(v, double_bits(e->d)); break;
    case VALREC_SINT64: pb_put_varint(v, zigzag(e->i)); break;
    case VALREC_UINT64:
    case VALREC_BOOL: pb_put_varint(v, e->u); break;
    default: pb_put_varint(v, e->s.n); buf_append(v, e->s.p, e->s.n);
  }
}

/* One element of a list of type lt. */
static void put_list_elem(writer *w, int lt, const valrec_elem *e) {
  switch (lt) {
    case VALREC_DOUBLE_LIST: put_le64(&w->packed, double_bits(e->d)); break;
    case VALREC_SINT_LIST: pb_put_varint(&w->packed, zigzag(e->i)); break;
    case VALREC_UINT_LIST:
    case VALREC_BOOL_LIST: pb_put_varint(&w->packed, e->u); break;
    default: /* strings and bytes: one field each, written even when empty */
      buf_putc(&w->list, 0x0a);
      pb_put_varint(&w->list, e->s.n);
      buf_append(&w->list, e->s.p, e->s.n);
  }
}

/* The value message of a list whose elements are in w. */
static void finish_list(writer *w, int lt) {
  if (w->packed.n) {
    buf_putc(&w->list, 0x0a);
    pb_put_varint(&w->list, w->packed.n);
    buf_append(&w->list, buf_at(&w->packed, 0), w->packed.n);
  }
  pb_put_varint(&w->val, (uint64_t)lt << 3 | PB_WT_LEN);
  pb_put_varint(&w->val, w->list.n);
  buf_append(&w->val, buf_at(&w->list, 0), w->list.n);
}

/* An Item with key and the value message in w->val. */
static void put_item(buf_t *out, const unsigned char *key, uint64_t klen, const writer *w) {
  uint64_t body = pb_len_field_size(klen) + 1 + pb_varint_size(w->val.n) + w->val.n;
  buf_putc(out, 0x0a);
  pb_put_varint(out, body);
  pb_put_len_field(out, 0x0a, key, klen);
  buf_putc(out, 0x12);
  pb_put_varint(out, w->val.n);
  buf_append(out, buf_at(&w->val, 0), w->val.n);
}

/* The type Flower's serde gives a value it read back into Python: ints
** are sint64 unless above INT64_MAX (uint64 then), an empty list has no
** element type and becomes a double list (metrics) or a bool list
** (configs: bool is the first type serde tries). */
static int flower_type(const valrec_t *vr, const valrec_item *it) {
  if (VALREC_IS_LIST(it->type) && it->nvals == 0) return vr->config ? VALREC_BOOL_LIST : VALREC_DOUBLE_LIST;
  if (it->type == VALREC_UINT64) return it->v.u > (uint64_t)INT64_MAX ? VALREC_UINT64 : VALREC_SINT64;
  if (it->type == VALREC_UINT_LIST) {
    valrec_iter li;
    valrec_elem e;
    valrec_iter_init(&li, it);
    while (valrec_iter_next(&li, &e))
      if (e.u > (uint64_t)INT64_MAX) return VALREC_UINT_LIST;
    return VALREC_SINT_LIST;
  }
  return it->type;
}

/* An element of type `from` as one of type `to` (only uint -> sint differs). */
static void retype(int from, int to, valrec_elem *e) {
  if ((from == VALREC_UINT64 || from == VALREC_UINT_LIST) && (to == VALREC_SINT64 || to == VALREC_SINT_LIST))
    e->i = (int64_t)e->u;
}

static void write_record(buf_t *out, const valrec_t *vr, int flower) {
  writer w;
  int i;
  writer_init(&w, out->limit);
  for (i = 0; i < vr->n && out->rc == CODEC_OK; i++) {
    const valrec_item *it = &vr->items[i];
    int t = flower ? flower_type(vr, it) : it->type;
    writer_begin(&w);
    if (VALREC_IS_LIST(it->type)) {
      valrec_iter li;
      valrec_elem e;
      valrec_iter_init(&li, it);
      while (valrec_iter_next(&li, &e)) {
        retype(it->type, t, &e);
        put_list_elem(&w, t, &e);
      }
      finish_list(&w, t);
    } else {
      valrec_elem e = it->v;
      retype(it->type, t, &e);
      put_scalar(&w.val, t, &e);
    }
    if (writer_rc(&w)) {
      if (out->rc == CODEC_OK) out->rc = writer_rc(&w);
      break;
    }
    put_item(out, it->key.p, it->key.n, &w);
  }
  writer_free(&w);
}

void valrec_write(buf_t *out, const valrec_t *vr) { write_record(out, vr, 0); }

void valrec_write_flower(buf_t *out, const valrec_t *vr) { write_record(out, vr, 1); }

/* --- JSON in -------------------------------------------------------------------- */

/* What one JSON leaf is. */
enum { J_INT, J_REAL, J_BOOL, J_STRING, J_BYTES };

typedef struct jleaf {
  int kind;
  int negative; /* J_INT */
  uint64_t mag; /* J_INT: magnitude */
  double d;     /* J_REAL */
  int b;        /* J_BOOL */
  json_str s;   /* J_STRING, J_BYTES (the base64 text) */
} jleaf;

typedef struct jctx {
  json_reader *r;
  int config;
  const char *kq; /* the key, quoted for messages */
  buf_t tmp;      /* decoded strings and bytes */
} jctx;

static int key_fail(jctx *j, uint64_t at, const char *problem) {
  char what[200];
  snprintf(what, sizeof(what), "value of key '%s' %s", j->kq, problem);
  return json_fail_at(j->r, at, what);
}

static int b64_val(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

/* Strict padded base64 of the (unescaped) text into out. -1 when invalid. */
static int b64_decode(const unsigned char *s, uint64_t n, buf_t *out) {
  uint64_t i;
  if (n % 4) return -1;
  for (i = 0; i < n; i += 4) {
    int a = b64_val(s[i]), b = b64_val(s[i + 1]), c, d;
    int last = i + 4 == n;
    if (a < 0 || b < 0) return -1;
    if (last && s[i + 2] == '=' && s[i + 3] == '=') {
      if (b & 15) return -1; /* non-canonical trailing bits */
      buf_putc(out, (char)(a << 2 | b >> 4));
      break;
    }
    c = b64_val(s[i + 2]);
    if (c < 0) return -1;
    if (last && s[i + 3] == '=') {
      if (c & 3) return -1;
      buf_putc(out, (char)(a << 2 | b >> 4));
      buf_putc(out, (char)((b & 15) << 4 | c >> 2));
      break;
    }
    d = b64_val(s[i + 3]);
    if (d < 0) return -1;
    buf_putc(out, (char)(a << 2 | b >> 4));
    buf_putc(out, (char)((b & 15) << 4 | c >> 2));
    buf_putc(out, (char)((c & 3) << 6 | d));
  }
  return 0;
}

/* {"bytes": "<base64>"} or {"double": "NaN" | "Infinity" | "-Infinity"}. */
static int read_special(jctx *j, jleaf *leaf) {
  json_reader *r = j->r;
  uint64_t at = r->pos;
  json_str key, val;
  int more, rc;
  if ((rc = json_begin(r, '{')) != CODEC_OK) return rc;
  if ((rc = json_next_key(r, &more, &key)) != CODEC_OK) return rc;
  if (!more) return key_fail(j, at, "is an empty object (expected {\"bytes\": \"<base64>\"} or {\"double\": \"NaN\"})");
  if (json_peek(r) != '"') return key_fail(j, r->pos, "has an object member that is not a string");
  if ((rc = json_string(r, &val)) != CODEC_OK) return rc;
  if (json_str_eq(&key, "bytes")) {
    leaf->kind = J_BYTES;
    leaf->s = val;
  } else if (json_str_eq(&key, "double")) {
    leaf->kind = J_REAL;
    if (json_str_eq(&val, "NaN"))
      leaf->d = NAN;
    else if (json_str_eq(&val, "Infinity"))
      leaf->d = INFINITY;
    else if (json_str_eq(&val, "-Infinity"))
      leaf->d = -INFINITY;
    else
      return key_fail(j, at, "has a \"double\" that is not \"NaN\", \"Infinity\" or \"-Infinity\"");
  } else {
    return key_fail(j, at, "is an object other than {\"bytes\": \"<base64>\"} or {\"double\": \"NaN\"}");
  }
  if ((rc = json_next_key(r, &more, &key)) != CODEC_OK) return rc;
  if (more) return key_fail(j, at, "is an object with more than one member");
  return CODEC_OK;
}

static int read_leaf(jctx *j, jleaf *leaf) {
  json_reader *r = j->r;
  int c = json_peek(r), rc;
  uint64_t at = r->pos;
  memset(leaf, 0, sizeof(*leaf));
  if (c == '{') return read_special(j, leaf);
  if (c == '"') {
    leaf->kind = J_STRING;
    return json_string(r, &leaf->s);
  }
  if (c == 't' || c == 'f') {
    if ((rc = json_skip(r)) != CODEC_OK) return rc;
    leaf->kind = J_BOOL;
    leaf->b = c == 't';
    return CODEC_OK;
  }
  if (c == '-' || (c >= '0' && c <= '9')) {
    int integral, negative;
    uint64_t p;
    if ((rc = json_number(r, &integral, &negative)) != CODEC_OK) return rc;
    if (integral) {
      uint64_t v = 0;
      leaf->kind = J_INT;
      leaf->negative = negative;
      for (p = at + negative; p < r->pos; p++) {
        unsigned d = (unsigned)(r->s[p] - '0');
        if (v > (UINT64_MAX - d) / 10) return key_fail(j, at, "is an integer out of range for sint64 and uint64");
        v = v * 10 + d;
      }
      if (negative && v > (uint64_t)INT64_MAX + 1)
        return key_fail(j, at, "is an integer out of range for sint64 and uint64");
      leaf->mag = v;
    } else {
      char tmp[512];
      if (r->pos - at >= sizeof(tmp)) return key_fail(j, at, "is a number more than 511 characters long");
      memcpy(tmp, r->s + at, (size_t)(r->pos - at));
      tmp[r->pos - at] = 0;
      leaf->kind = J_REAL;
      leaf->d = json_strtod(tmp);
    }
    return CODEC_OK;
  }
  if (c == 'n') return key_fail(j, at, "is null (records hold no nulls)");
  if (c == '[') return key_fail(j, at, "has a nested list");
  return json_fail(r, "expected a value");
}

static int int_elem(const jleaf *l, valrec_elem *e) {
  if (l->negative)
    e->i = (int64_t)(0 - l->mag);
  else
    e->i = (int64_t)l->mag;
  e->u = l->mag;
  return 0;
}

/* The leaf's string or bytes, decoded into j->tmp. */
static int leaf_bytes(jctx *j, const jleaf *l, uint64_t at, valrec_elem *e) {
  j->tmp.n = 0;
  if (json_unescape(&l->s, &j->tmp) != CODEC_OK) return j->tmp.rc;
  if (l->kind == J_BYTES) {
    uint64_t n = j->tmp.n;
    /* Decode after the text, in the same buffer: room for it first, so the
    ** text does not move while it is read. */
    if (buf_reserve(&j->tmp, n) != CODEC_OK) return j->tmp.rc;
    if (b64_decode(buf_at(&j->tmp, 0), n, &j->tmp) != 0) {
      if (j->tmp.rc) return j->tmp.rc;
      return key_fail(j, at, "has \"bytes\" that are not padded base64");
    }
    if (j->tmp.rc) return j->tmp.rc;
    e->s.p = buf_at(&j->tmp, n);
    e->s.n = j->tmp.n - n;
  } else {
    e->s.p = buf_at(&j->tmp, 0);
    e->s.n = j->tmp.n;
  }
  return CODEC_OK;
}

/* The element a leaf holds: its number, or its string or bytes decoded
** into j->tmp. */
static int leaf_elem(jctx *j, const jleaf *l, uint64_t at, valrec_elem *e) {
  memset(e, 0, sizeof(*e));
  if (l->kind == J_INT)
    int_elem(l, e);
  else if (l->kind == J_REAL)
    e->d = l->d;
  else if (l->kind == J_BOOL)
    e->u = (uint64_t)l->b;
  else
    return leaf_bytes(j, l, at, e);
  return CODEC_OK;
}

/* The scalar type of a leaf (metric records: numbers only). */
static int leaf_type(jctx *j, const jleaf *l, uint64_t at, int *t) {
  switch (l->kind) {
    case J_INT: *t = !l->negative && l->mag > (uint64_t)INT64_MAX ? VALREC_UINT64 : VALREC_SINT64; break;
    case J_REAL: *t = VALREC_DOUBLE; break;
    case J_BOOL: *t = VALREC_BOOL; break;
    case J_STRING: *t = VALREC_STRING; break;
    default: *t = VALREC_BYTES; break;
  }
  if (!j->config && *t > VALREC_UINT64)
    return key_fail(j, at, "must be a number or a list of numbers in a metric record");
  return CODEC_OK;
}

/* A JSON array: find its type in a first pass, then write it. */
static int read_list(jctx *j, writer *w) {
  json_reader *r = j->r, save;
  uint64_t at = r->pos;
  int rc, more, lt = 0, any_neg = 0, any_big = 0;
  jleaf l;
  valrec_elem e;
  if ((rc = json_begin(r, '[')) != CODEC_OK) return rc;
  save = *r;
  for (;;) {
    int t;
    uint64_t eat;
    if ((rc = json_next(r, &more)) != CODEC_OK) return rc;
    if (!more) break;
    eat = r->pos;
    if ((rc = read_leaf(j, &l)) != CODEC_OK) return rc;
    if ((rc = leaf_type(j, &l, eat, &t)) != CODEC_OK) return rc;
    if (t == VALREC_UINT64) any_big = 1, t = VALREC_SINT64;
    if (l.kind == J_INT && l.negative) any_neg = 1;
    if (lt && lt != t + 20) return key_fail(j, at, "is a list that mixes element types (Flower lists hold one type)");
    lt = t + 20;
  }
  if (!lt) lt = j->config ? VALREC_BOOL_LIST : VALREC_DOUBLE_LIST; /* as Flower types [] */
  if (lt == VALREC_SINT_LIST && any_big) {
    if (any_neg) return key_fail(j, at, "is a list of integers out of range for both sint64 and uint64");
    lt = VALREC_UINT_LIST;
  }
  *r = save;
  for (;;) {
    uint64_t eat;
    if ((rc = json_next(r, &more)) != CODEC_OK) return rc;
    if (!more) break;
    eat = r->pos;
    if ((rc = read_leaf(j, &l)) != CODEC_OK) return rc;
    if ((rc = leaf_elem(j, &l, eat, &e)) != CODEC_OK) return rc;
    put_list_elem(w, lt, &e);
  }
  finish_list(w, lt);
  return CODEC_OK;
}

int valrec_from_json(buf_t *out, int config, const unsigned char *json, uint64_t n, const char *what, codec_err *err) {
  json_reader r;
  json_str key;
  writer w;
  jctx j;
  buf_t kb;
  uint64_t start = out->n;
  int rc, more;
  char kq[CODEC_QUOTE_MAX];
  if ((rc = json_reader_init(&r, json, n, 0, what, err)) != CODEC_OK) return rc;
  if (json_peek(&r) != '{')
    return json_fail(&r,
                     config ? "expected a JSON object (a config record)" : "expected a JSON object (a metric record)");
  writer_init(&w, out->limit);
  buf_init(&kb, out->limit);
  j.r = &r;
  j.config = config;
  j.kq = kq;
  buf_init(&j.tmp, out->limit);
  if ((rc = json_begin(&r, '{')) != CODEC_OK) goto done;
  for (;;) {
    if ((rc = json_next_key(&r, &more, &key)) != CODEC_OK) goto done;
    if (!more) break;
    kb.n = 0;
    if ((rc = json_unescape(&key, &kb)) != CODEC_OK) goto fail_rc;
    codec_quote(kq, sizeof(kq), buf_at(&kb, 0), kb.n);
    writer_begin(&w);
    if (json_peek(&r) == '[') {
      if ((rc = read_list(&j, &w)) != CODEC_OK) goto done;
    } else {
      jleaf l;
      valrec_elem e;
      int t;
      uint64_t at = r.pos;
      if ((rc = read_leaf(&j, &l)) != CODEC_OK) goto done;
      if ((rc = leaf_type(&j, &l, at, &t)) != CODEC_OK) goto done;
      if ((rc = leaf_elem(&j, &l, at, &e)) != CODEC_OK) goto fail_rc;
      put_scalar(&w.val, t, &e);
    }
    if ((rc = writer_rc(&w)) != CODEC_OK) goto fail_rc;
    put_item(out, buf_at(&kb, 0), kb.n, &w);
    if ((rc = out->rc) != CODEC_OK) goto fail_rc;
  }
  if ((rc = json_end(&r)) != CODEC_OK) goto done;
  {
    /* Keys must be unique, as in records. */
    valrec_t vr;
    valrec_init(&vr);
    rc = valrec_parse(&vr, config, buf_at(out, 0), start, out->n, what, err);
    valrec_clear(&vr);
  }
  goto done;
fail_rc:
  if (rc == CODEC_CORRUPT) goto done; /* message already set */
  codec_fail_rc(err, rc);
done:
  writer_free(&w);
  buf_free(&kb);
  buf_free(&j.tmp);
  return rc;
}
