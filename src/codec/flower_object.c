/* SPDX-License-Identifier: Apache-2.0 */
/*
** flower_object.c — deflating records into Flower's object tree and
** inflating them back (see flower_object.h for the format).
*/
#include "codec/flower_object.h"

#include <stdio.h>
#include <string.h>

#include "codec/json_read.h"
#include "codec/pb.h"
#include "codec/recorddict.h"
#include "codec/valrec.h"

/* A buffer's failure as a codec error. */
static int buf_error(const buf_t *b, codec_err *err) { return codec_fail_rc(err, b->rc); }

static const char *const type_names[FO_NTYPES] = {"ArrayRecord",  "Array",        "ArrayChunk", "RecordDict",
                                                  "MetricRecord", "ConfigRecord", "Message"};

const char *fo_type_name(int type) { return type_names[type]; }

/* --- Python json.dumps output ------------------------------------------------ */

static void put_u_escape(buf_t *out, uint32_t unit) {
  static const char hex[] = "0123456789abcdef";
  char u[6] = {'\\', 'u', hex[unit >> 12 & 15], hex[unit >> 8 & 15], hex[unit >> 4 & 15], hex[unit & 15]};
  buf_append(out, u, 6);
}

void fo_put_pystring(buf_t *out, const unsigned char *s, uint64_t n) {
  uint64_t i = 0;
  buf_putc(out, '"');
  while (i < n) {
    unsigned char c = s[i];
    uint32_t cp;
    int len, k;
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      buf_putc(out, (char)c);
      i++;
      continue;
    }
    switch (c) { /* json's ESCAPE_DCT */
      case '"':
        buf_puts(out, "\\\"");
        i++;
        continue;
      case '\\':
        buf_puts(out, "\\\\");
        i++;
        continue;
      case '\n':
        buf_puts(out, "\\n");
        i++;
        continue;
      case '\r':
        buf_puts(out, "\\r");
        i++;
        continue;
      case '\t':
        buf_puts(out, "\\t");
        i++;
        continue;
      case '\b':
        buf_puts(out, "\\b");
        i++;
        continue;
      case '\f':
        buf_puts(out, "\\f");
        i++;
        continue;
      default: break;
    }
    /* Everything else outside ' '..'~' becomes \uXXXX (valid UTF-8 assumed). */
    if (c < 0x80)
      len = 1, cp = c;
    else if (c < 0xe0)
      len = 2, cp = c & 0x1f;
    else if (c < 0xf0)
      len = 3, cp = c & 0x0f;
    else
      len = 4, cp = c & 0x07;
    if ((uint64_t)len > n - i) len = (int)(n - i);
    for (k = 1; k < len; k++) cp = cp << 6 | (s[i + k] & 0x3f);
    i += (uint64_t)len;
    if (cp >= 0x10000) {
      cp -= 0x10000;
      put_u_escape(out, 0xd800 | (cp >> 10));
      put_u_escape(out, 0xdc00 | (cp & 0x3ff));
    } else {
      put_u_escape(out, cp);
    }
  }
  buf_putc(out, '"');
}

/* json.dumps of a list of non-negative integers: "[2, 3]", "[]". */
static void put_pylist(buf_t *out, const int64_t *v, int n) {
  int k;
  buf_putc(out, '[');
  for (k = 0; k < n; k++) buf_printf(out, k ? ", %lld" : "%lld", (long long)v[k]);
  buf_putc(out, ']');
}

/* --- object ids ----------------------------------------------------------------- */

/* Hash "<type> <children> <len>\0" into a fresh context. */
static void hash_head(sha256_ctx *c, int type, const unsigned char (*children)[SHA256_DIGEST_SIZE], uint32_t nchild,
                      uint64_t len) {
  char hex[SHA256_HEX_SIZE], num[32];
  uint32_t k;
  sha256_init(c);
  sha256_update(c, type_names[type], strlen(type_names[type]));
  sha256_update(c, " ", 1);
  for (k = 0; k < nchild; k++) {
    if (k) sha256_update(c, ",", 1);
    sha256_hex(children[k], hex);
    sha256_update(c, hex, 64);
  }
  snprintf(num, sizeof(num), " %llu", (unsigned long long)len);
  sha256_update(c, num, strlen(num) + 1); /* the NUL divider too */
}

/* Hash the head followed by the body's pieces. */
static void hash_object(int type, const unsigned char (*children)[SHA256_DIGEST_SIZE], uint32_t nchild,
                        const unsigned char *body, uint64_t body_len, const unsigned char *body2, uint64_t body2_len,
                        unsigned char id[SHA256_DIGEST_SIZE]) {
  sha256_ctx c;
  hash_head(&c, type, children, nchild, body_len + body2_len);
  sha256_update(&c, body, body_len);
  sha256_update(&c, body2, body2_len);
  sha256_final(&c, id);
}

static void chunk_id(const unsigned char *p, uint64_t len, unsigned char id[SHA256_DIGEST_SIZE]) {
  hash_object(FO_ARRAY_CHUNK, NULL, 0, p, len, NULL, 0, id);
}

/* Two chunks of the same length, hashed side by side (sha256_update2: on
** SHA-NI about 1.5x the speed of one after the other). */
static void chunk_id2(const unsigned char *p, const unsigned char *p2, uint64_t len,
                      unsigned char id[SHA256_DIGEST_SIZE], unsigned char id2[SHA256_DIGEST_SIZE]) {
  sha256_ctx c, c2;
  hash_head(&c, FO_ARRAY_CHUNK, NULL, 0, len);
  hash_head(&c2, FO_ARRAY_CHUNK, NULL, 0, len);
  sha256_update2(&c, &c2, p, p2, len);
  sha256_final(&c, id);
  sha256_final(&c2, id2);
}

/* One Array being deflated: its unique chunks (in order of first
** appearance) and, for every chunk position, the index of its unique chunk. */
typedef struct fo_array {
  unsigned char (*uid)[SHA256_DIGEST_SIZE];
  uint64_t *uoff; /* first occurrence of each unique chunk in the data */
  int64_t *index; /* arraychunk_ids */
  uint32_t nunique, nchunks;
  unsigned char id[SHA256_DIGEST_SIZE];
} fo_array;

static void fo_array_free(fo_array *a) {
  codec_free(a->uid);
  memset(a, 0, sizeof(*a));
}

/* Chunk the data, then write the body into text (starting at its current
** end) and hash the Array. */
static int fo_array_build(fo_array *a, const record_item_spec *spec, uint64_t chunk_size, buf_t *text, codec_err *err) {
  const unsigned char *data = spec->data.p;
  uint64_t len = spec->data.n, nchunks = len / chunk_size + (len % chunk_size != 0), off, body0 = text->n;
  uint32_t j, u;
  int have_next = 0;
  unsigned char *mem, next[SHA256_DIGEST_SIZE];
  memset(a, 0, sizeof(*a));
  if (nchunks > 0x3fffffff) return codec_fail(err, CODEC_TOOBIG, "too many chunks");
  mem = codec_malloc((nchunks ? nchunks : 1) * (SHA256_DIGEST_SIZE + 2 * sizeof(uint64_t)));
  if (!mem) return codec_nomem(err);
  a->uid = (unsigned char(*)[SHA256_DIGEST_SIZE])mem;
  a->uoff = (uint64_t *)(mem + (nchunks ? nchunks : 1) * SHA256_DIGEST_SIZE);
  a->index = (int64_t *)(a->uoff + (nchunks ? nchunks : 1));
  a->nchunks = (uint32_t)nchunks;
  for (j = 0, off = 0; j < a->nchunks; j++, off += chunk_size) {
    unsigned char id[SHA256_DIGEST_SIZE];
    uint64_t clen = len - off < chunk_size ? len - off : chunk_size;
    if (have_next) { /* hashed with the chunk before it */
      memcpy(id, next, SHA256_DIGEST_SIZE);
      have_next = 0;
    } else if (clen == chunk_size && len - off - clen >= chunk_size) { /* two whole chunks: hash both */
      chunk_id2(data + off, data + off + chunk_size, chunk_size, id, next);
      have_next = 1;
    } else {
      chunk_id(data + off, clen, id);
    }
    for (u = 0; u < a->nunique && memcmp(a->uid[u], id, SHA256_DIGEST_SIZE) != 0; u++) {}
    if (u == a->nunique) {
      memcpy(a->uid[u], id, SHA256_DIGEST_SIZE);
      a->uoff[u] = off;
      a->nunique++;
    }
    a->index[j] = u;
  }
  buf_puts(text, "{\"dtype\": ");
  fo_put_pystring(text, spec->dtype.p, spec->dtype.n);
  buf_puts(text, ", \"shape\": ");
  put_pylist(text, spec->shape, spec->ndim);
  buf_puts(text, ", \"stype\": ");
  fo_put_pystring(text, spec->stype.p, spec->stype.n);
  buf_puts(text, ", \"arraychunk_ids\": ");
  put_pylist(text, a->index, (int)a->nchunks);
  buf_putc(text, '}');
  if (text->rc) {
    fo_array_free(a);
    return codec_fail_rc(err, text->rc);
  }
  hash_object(FO_ARRAY, (const unsigned char(*)[SHA256_DIGEST_SIZE])a->uid, a->nunique, text->p + body0,
              text->n - body0, NULL, 0, a->id);
  return CODEC_OK;
}

int fo_array_id(const record_item_spec *spec, uint64_t chunk_size, unsigned char id[SHA256_DIGEST_SIZE],
                codec_err *err) {
  fo_array a;
  buf_t text;
  int rc;
  buf_init(&text, UINT64_MAX);
  rc = fo_array_build(&a, spec, chunk_size, &text, err);
  if (rc == CODEC_OK) memcpy(id, a.id, SHA256_DIGEST_SIZE);
  fo_array_free(&a);
  buf_free(&text);
  return rc;
}

/* --- deflate ---------------------------------------------------------------------- */

void fo_tree_init(fo_tree *t) {
  memset(t, 0, sizeof(*t));
  buf_init(&t->text, UINT64_MAX);
  keyset_init(&t->seen);
}

void fo_tree_free(fo_tree *t) {
  codec_free(t->obj);
  codec_free(t->child);
  buf_free(&t->text);
  keyset_free(&t->seen);
  fo_tree_init(t);
}

static fo_object *push_object(fo_tree *t, int type, const unsigned char *id) {
  fo_object *o;
  if (t->n == t->cap && buf_grow(&t->obj, &t->cap, sizeof(fo_object))) return NULL;
  o = &t->obj[t->n++];
  memset(o, 0, sizeof(*o));
  memcpy(o->id, id, SHA256_DIGEST_SIZE);
  o->type = (unsigned char)type;
  o->child0 = t->nchild_total;
  return o;
}

static int push_child(fo_tree *t, uint32_t index) {
  if (t->nchild_total == t->child_cap && buf_grow(&t->child, &t->child_cap, sizeof(uint32_t))) return CODEC_NOMEM;
  t->child[t->nchild_total++] = index;
  return CODEC_OK;
}

/* Add the objects of item i's Array that the tree does not hold yet (its new
** chunks, then the Array itself). *array_index gets the Array's index. */
static int deflate_item(fo_tree *t, keyset_t *seen, const record_t *rec, int i, uint64_t chunk_size,
                        uint32_t *array_index, codec_err *err) {
  const record_item *it = &rec->items[i];
  int64_t shape[RECORD_MAX_DIMS];
  record_item_spec spec;
  fo_array a;
  uint64_t body0 = t->text.n;
  uint32_t u, first_child;
  int at, rc;
  fo_object *o;
  record_item_spec_from_item(&spec, it, shape);
  if ((rc = fo_array_build(&a, &spec, chunk_size, &t->text, err)) != CODEC_OK) return rc;
  at = keyset_get(seen, a.id, SHA256_DIGEST_SIZE);
  if (at >= 0) { /* an identical Array is already in the tree */
    t->text.n = body0;
    *array_index = (uint32_t)at;
    fo_array_free(&a);
    return CODEC_OK;
  }
  /* Record the chunk indices first: push_object may move t->obj. */
  first_child = t->nchild_total;
  for (u = 0; u < a.nunique; u++) {
    int c = keyset_get(seen, a.uid[u], SHA256_DIGEST_SIZE);
    if (c < 0) {
      o = push_object(t, FO_ARRAY_CHUNK, a.uid[u]);
      if (!o) goto nomem;
      o->item = i;
      o->off = a.uoff[u];
      o->len = it->data.n - a.uoff[u] < chunk_size ? it->data.n - a.uoff[u] : chunk_size;
      o->data = it->data.p + a.uoff[u];
      c = (int)(t->n - 1);
      if (keyset_put(seen, a.uid[u], SHA256_DIGEST_SIZE, c)) goto nomem;
    }
    if (push_child(t, (uint32_t)c)) goto nomem;
  }
  o = push_object(t, FO_ARRAY, a.id);
  if (!o) goto nomem;
  o->item = i;
  o->off = body0;
  o->len = t->text.n - body0;
  o->child0 = first_child;
  o->nchild = a.nunique;
  *array_index = t->n - 1;
  fo_array_free(&a);
  if (keyset_put(seen, o->id, SHA256_DIGEST_SIZE, (int)*array_index)) return codec_nomem(err);
  return CODEC_OK;
nomem:
  fo_array_free(&a);
  return codec_nomem(err);
}

/* Add the object of `type` whose body is text[body0..) and whose children
** are the unique objects among kids (indices, in order of first
** appearance). An object the tree holds already is not added again (its
** body and children are dropped). *index gets its index either way. */
static int finish_object(fo_tree *t, int type, const uint32_t *kids, uint32_t nkids, uint64_t body0, uint32_t *index,
                         codec_err *err) {
  uint32_t first = t->nchild_total, nchild, k;
  unsigned char id[SHA256_DIGEST_SIZE], (*ids)[SHA256_DIGEST_SIZE];
  keyset_t unique;
  fo_object *o;
  int at, rc = CODEC_OK;
  if (t->text.rc) return buf_error(&t->text, err);
  keyset_init(&unique);
  for (k = 0; k < nkids && rc == CODEC_OK; k++) {
    const unsigned char *kid = t->obj[kids[k]].id;
    if (keyset_get(&unique, kid, SHA256_DIGEST_SIZE) >= 0) continue;
    if (keyset_put(&unique, kid, SHA256_DIGEST_SIZE, (int)k) || push_child(t, kids[k])) rc = codec_nomem(err);
  }
  keyset_free(&unique);
  if (rc) return rc;
  /* Gather the child ids contiguously for hashing. */
  nchild = t->nchild_total - first;
  ids = codec_malloc((uint64_t)(nchild ? nchild : 1) * SHA256_DIGEST_SIZE);
  if (!ids) return codec_nomem(err);
  for (k = 0; k < nchild; k++) memcpy(ids[k], t->obj[t->child[first + k]].id, SHA256_DIGEST_SIZE);
  hash_object(type, (const unsigned char(*)[SHA256_DIGEST_SIZE])ids, nchild, buf_at(&t->text, body0), t->text.n - body0,
              NULL, 0, id);
  codec_free(ids);
  if ((at = keyset_get(&t->seen, id, SHA256_DIGEST_SIZE)) >= 0) { /* an identical object is in the tree */
    t->nchild_total = first;
    t->text.n = body0;
    *index = (uint32_t)at;
    return CODEC_OK;
  }
  if (!(o = push_object(t, type, id))) return codec_nomem(err);
  o->item = -1;
  o->off = body0;
  o->len = t->text.n - body0;
  o->child0 = first;
  o->nchild = nchild;
  *index = t->n - 1;
  if (keyset_put(&t->seen, id, SHA256_DIGEST_SIZE, (int)*index)) return codec_nomem(err);
  return CODEC_OK;
}

/* A record's Arrays and chunks, then the ArrayRecord. */
static int deflate_record(fo_tree *t, const record_t *rec, uint64_t chunk_size, uint32_t *index, codec_err *err) {
  uint32_t *item_array;
  uint64_t body0;
  int i, rc = CODEC_OK;
  item_array = codec_malloc((uint64_t)(rec->n ? rec->n : 1) * sizeof(uint32_t));
  if (!item_array) return codec_nomem(err);
  for (i = 0; i < rec->n && rc == CODEC_OK; i++)
    rc = deflate_item(t, &t->seen, rec, i, chunk_size, &item_array[i], err);
  if (rc == CODEC_OK) {
    body0 = t->text.n;
    buf_putc(&t->text, '{');
    for (i = 0; i < rec->n; i++) {
      char hex[SHA256_HEX_SIZE];
      if (i) buf_puts(&t->text, ", ");
      fo_put_pystring(&t->text, rec->items[i].key.p, rec->items[i].key.n);
      sha256_hex(t->obj[item_array[i]].id, hex);
      buf_puts(&t->text, ": \"");
      buf_append(&t->text, hex, 64);
      buf_putc(&t->text, '"');
    }
    buf_putc(&t->text, '}');
    /* The record's children: its unique Arrays in item order. */
    rc = finish_object(t, FO_ARRAY_RECORD, item_array, (uint32_t)rec->n, body0, index, err);
  }
  codec_free(item_array);
  return rc;
}

int fo_deflate(fo_tree *t, const record_t *rec, uint64_t chunk_size, codec_err *err) {
  uint32_t root;
  t->rec = rec;
  return deflate_record(t, rec, chunk_size, &root, err);
}

/* "array record 'name'", for messages. */
static void item_label(char *out, size_t cap, const recorddict_item *it) {
  char q[CODEC_QUOTE_MAX];
  snprintf(out, cap, "%s record '%s'", recorddict_kind_name(it->kind),
           codec_quote(q, sizeof(q), it->name.p, it->name.n));
}

/* One RecordDict item's record tree. */
static int deflate_rd_item(fo_tree *t, const recorddict_item *it, const unsigned char *blob, uint64_t chunk_size,
                           uint32_t *index, codec_err *err) {
  char label[CODEC_QUOTE_MAX + 32];
  int rc;
  item_label(label, sizeof(label), it);
  if (it->kind == RECORDDICT_ARRAY) {
    record_t rec;
    codec_err inner;
    record_init(&rec);
    rc = record_parse(&rec, it->record.p, it->record.n, &inner);
    if (rc == CODEC_OK)
      rc = deflate_record(t, &rec, chunk_size, index, err);
    else if (rc == CODEC_CORRUPT)
      rc = codec_fail(err, rc, "%s (at byte %llu): %s", label, (unsigned long long)it->record_at, inner.msg);
    else
      rc = codec_fail_rc(err, rc);
    record_clear(&rec);
  } else {
    valrec_t vr;
    uint64_t body0 = t->text.n;
    valrec_init(&vr);
    rc = recorddict_item_valrec(&vr, it, blob, label, err);
    if (rc == CODEC_OK) {
      valrec_write_flower(&t->text, &vr);
      rc = finish_object(t, it->kind == RECORDDICT_CONFIG ? FO_CONFIG_RECORD : FO_METRIC_RECORD, NULL, 0, body0, index,
                         err);
    }
    valrec_clear(&vr);
  }
  return rc;
}

int fo_deflate_rd(fo_tree *t, const unsigned char *blob, uint64_t n, uint64_t chunk_size, codec_err *err) {
  recorddict_t rd;
  uint32_t *kids = NULL, root;
  uint64_t body0;
  int i, rc;
  t->rec = NULL;
  recorddict_init(&rd);
  if ((rc = recorddict_parse(&rd, blob, n, err)) != CODEC_OK) goto done;
  if (!(kids = codec_malloc((uint64_t)(rd.n ? rd.n : 1) * sizeof(uint32_t)))) {
    rc = codec_nomem(err);
    goto done;
  }
  for (i = 0; i < rd.n && rc == CODEC_OK; i++) rc = deflate_rd_item(t, &rd.items[i], blob, chunk_size, &kids[i], err);
  if (rc) goto done;
  body0 = t->text.n;
  buf_putc(&t->text, '{');
  for (i = 0; i < rd.n; i++) {
    char hex[SHA256_HEX_SIZE];
    if (i) buf_puts(&t->text, ", ");
    fo_put_pystring(&t->text, rd.items[i].name.p, rd.items[i].name.n);
    buf_puts(&t->text, ": \"");
    buf_append(&t->text, sha256_hex(t->obj[kids[i]].id, hex), 64);
    buf_putc(&t->text, '"');
  }
  buf_putc(&t->text, '}');
  rc = finish_object(t, FO_RECORD_DICT, kids, (uint32_t)rd.n, body0, &root, err);
done:
  codec_free(kids);
  recorddict_clear(&rd);
  return rc;
}

static uint64_t digits(uint64_t v) {
  uint64_t d = 1;
  while (v >= 10) v /= 10, d++;
  return d;
}

uint64_t fo_content_size(const fo_tree *t, uint32_t i) {
  const fo_object *o = &t->obj[i];
  uint64_t ids = o->nchild ? (uint64_t)o->nchild * 65 - 1 : 0;
  return strlen(type_names[o->type]) + 1 + ids + 1 + digits(o->len) + 1 + o->len;
}

static void put_child_ids(const fo_tree *t, const fo_object *o, buf_t *out, const char *sep, int quoted) {
  uint32_t k;
  for (k = 0; k < o->nchild; k++) {
    char hex[SHA256_HEX_SIZE];
    if (k) buf_puts(out, sep);
    sha256_hex(t->obj[t->child[o->child0 + k]].id, hex);
    if (quoted) buf_putc(out, '"');
    buf_append(out, hex, 64);
    if (quoted) buf_putc(out, '"');
  }
}

void fo_write_content(const fo_tree *t, uint32_t i, buf_t *out) {
  const fo_object *o = &t->obj[i];
  buf_puts(out, type_names[o->type]);
  buf_putc(out, ' ');
  put_child_ids(t, o, out, ",", 0);
  buf_printf(out, " %llu", (unsigned long long)o->len);
  buf_putc(out, 0);
  if (o->type == FO_ARRAY_CHUNK)
    buf_append(out, o->data, o->len);
  else
    buf_append(out, buf_at(&t->text, o->off), o->len);
}

void fo_write_children_json(const fo_tree *t, uint32_t i, buf_t *out) {
  buf_putc(out, '[');
  put_child_ids(t, &t->obj[i], out, ",", 1);
  buf_putc(out, ']');
}

/* --- inflate ---------------------------------------------------------------------- */

void fo_store_init(fo_store *s, uint64_t limit) {
  memset(s, 0, sizeof(*s));
  buf_init(&s->arena, limit);
  keyset_init(&s->ids);
}

void fo_store_free(fo_store *s) {
  buf_free(&s->arena);
  codec_free(s->e);
  keyset_free(&s->ids);
  memset(s, 0, sizeof(*s));
}

static int is_lower_hex(const unsigned char *p, uint64_t n) {
  uint64_t k;
  for (k = 0; k < n; k++)
    if (!((p[k] >= '0' && p[k] <= '9') || (p[k] >= 'a' && p[k] <= 'f'))) return 0;
  return 1;
}

int fo_parse_head(const unsigned char *c, uint64_t n, fo_entry *e, const char *what, codec_err *err) {
  const unsigned char *nul = memchr(c, 0, (size_t)n), *sp1, *sp2;
  uint64_t head_len, body_len = 0, k, clen;
  int t;
  if (!nul) return codec_fail(err, CODEC_CORRUPT, "%s has no head (no NUL byte)", what);
  head_len = (uint64_t)(nul - c);
  sp1 = memchr(c, ' ', (size_t)head_len);
  sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(head_len - (uint64_t)(sp1 + 1 - c))) : NULL;
  if (!sp2 || memchr(sp2 + 1, ' ', (size_t)(head_len - (uint64_t)(sp2 + 1 - c))) || sp2 + 1 == nul)
    return codec_fail(err, CODEC_CORRUPT, "%s: head is not '<type> <child ids> <body length>'", what);
  for (t = 0; t < FO_NTYPES; t++)
    if ((size_t)(sp1 - c) == strlen(type_names[t]) && memcmp(c, type_names[t], (size_t)(sp1 - c)) == 0) break;
  if (t == FO_NTYPES) {
    int shown = (int)(sp1 - c) > 24 ? 24 : (int)(sp1 - c);
    char name[25];
    for (k = 0; k < (uint64_t)shown; k++) name[k] = c[k] >= 0x20 && c[k] < 0x7f ? (char)c[k] : '?';
    name[shown] = 0;
    return codec_fail(err, CODEC_CORRUPT, "%s has unknown type '%s'", what, name);
  }
  for (k = (uint64_t)(sp2 + 1 - c); k < head_len; k++) {
    if (c[k] < '0' || c[k] > '9' || body_len > (UINT64_MAX - 9) / 10)
      return codec_fail(err, CODEC_CORRUPT, "%s: bad body length in the head", what);
    body_len = body_len * 10 + (uint64_t)(c[k] - '0');
  }
  if (body_len != n - head_len - 1)
    return codec_fail(err, CODEC_CORRUPT, "%s: head says the body has %llu bytes, it has %llu", what,
                      (unsigned long long)body_len, (unsigned long long)(n - head_len - 1));
  e->type = (unsigned char)t;
  e->body = head_len + 1;
  e->children = (uint64_t)(sp1 + 1 - c);
  clen = (uint64_t)(sp2 - sp1 - 1);
  /* "" or 64 hex digits, then ",id" for each further child */
  if (clen && ((clen + 1) % 65 != 0)) return codec_fail(err, CODEC_CORRUPT, "%s: bad child id list in the head", what);
  e->nchild = clen ? (uint32_t)((clen + 1) / 65) : 0;
  for (k = 0; k < e->nchild; k++) {
    const unsigned char *id = c + e->children + k * 65;
    if (!is_lower_hex(id, 64) || (k + 1 < e->nchild && id[64] != ','))
      return codec_fail(err, CODEC_CORRUPT, "%s: bad child id list in the head", what);
  }
  if (e->nchild > 1) {
    /* Children are unique (they are dict keys in Flower): a hash set, so
    ** a head of many thousand ids is not a quadratic scan. */
    keyset_t seen;
    int rc = CODEC_OK;
    keyset_init(&seen);
    for (k = 0; k < e->nchild && rc == CODEC_OK; k++) {
      const unsigned char *id = c + e->children + k * 65;
      if (keyset_get(&seen, id, 64) >= 0)
        rc = codec_fail(err, CODEC_CORRUPT, "%s lists child %.64s twice", what, (const char *)id);
      else if (keyset_put(&seen, id, 64, (int)k))
        rc = codec_nomem(err);
    }
    keyset_free(&seen);
    if (rc) return rc;
  }
  if ((e->type == FO_ARRAY_CHUNK || e->type == FO_METRIC_RECORD || e->type == FO_CONFIG_RECORD) && e->nchild)
    return codec_fail(err, CODEC_CORRUPT, "%s: a%s %s has no children", what, e->type == FO_ARRAY_CHUNK ? "n" : "",
                      type_names[e->type]);
  return CODEC_OK;
}

int fo_store_add(fo_store *s, const unsigned char id[SHA256_DIGEST_SIZE], const unsigned char *content, uint64_t n,
                 codec_err *err) {
  unsigned char actual[SHA256_DIGEST_SIZE];
  char idhex[SHA256_HEX_SIZE], acthex[SHA256_HEX_SIZE], what[80];
  fo_entry e;
  int rc;
  sha256(content, n, actual);
  sha256_hex(id, idhex);
  if (memcmp(actual, id, SHA256_DIGEST_SIZE) != 0)
    return codec_fail(err, CODEC_CORRUPT, "object %s: content hashes to %s", idhex, sha256_hex(actual, acthex));
  if (keyset_get(&s->ids, id, SHA256_DIGEST_SIZE) >= 0) return CODEC_OK; /* same id, same bytes */
  memset(&e, 0, sizeof(e));
  snprintf(what, sizeof(what), "object %s", idhex);
  if ((rc = fo_parse_head(content, n, &e, what, err)) != CODEC_OK) return rc;
  memcpy(e.id, id, SHA256_DIGEST_SIZE);
  e.off = s->arena.n;
  e.len = n;
  buf_append(&s->arena, content, n);
  if (s->arena.rc) return buf_error(&s->arena, err);
  if (s->n == s->cap && buf_grow(&s->e, &s->cap, sizeof(fo_entry))) return codec_nomem(err);
  s->e[s->n] = e;
  if (keyset_put(&s->ids, id, SHA256_DIGEST_SIZE, (int)s->n)) return codec_nomem(err);
  s->n++;
  return CODEC_OK;
}

/* Inflation state shared by the helpers below. */
typedef struct fo_inflater {
  fo_store *s;
  buf_t *out;
  codec_err *err;
  buf_t scratch;       /* decoded key, dtype, stype */
  unsigned char *used; /* per head child of the object being read */
  uint32_t used_cap;
} fo_inflater;

static const unsigned char *content_of(const fo_store *s, const fo_entry *e) { return s->arena.p + e->off; }

static const unsigned char *child_hex(const fo_store *s, const fo_entry *e, uint32_t k) {
  return content_of(s, e) + e->children + (uint64_t)k * 65;
}

/* The entry of a child id (64 lowercase hex), or -1. */
static int find_hex(const fo_store *s, const unsigned char *hex) {
  unsigned char id[SHA256_DIGEST_SIZE];
  if (sha256_from_hex((const char *)hex, 64, id)) return -1;
  return keyset_get(&s->ids, id, SHA256_DIGEST_SIZE);
}

static int used_reset(fo_inflater *f, uint32_t n) {
  if (n > f->used_cap) {
    unsigned char *p = codec_realloc(f->used, n);
    if (!p) return CODEC_NOMEM;
    f->used = p;
    f->used_cap = n;
  }
  if (n) memset(f->used, 0, n);
  return CODEC_OK;
}

/* Check every child of parent is present and of `type`; mark them. */
static int check_children(fo_inflater *f, const fo_entry *parent, int type) {
  char phex[SHA256_HEX_SIZE];
  uint32_t k;
  for (k = 0; k < parent->nchild; k++) {
    const unsigned char *hex = child_hex(f->s, parent, k);
    int c = find_hex(f->s, hex);
    if (c < 0)
      return codec_fail(f->err, CODEC_CORRUPT, "missing %s %.64s (child of %s %s)", type_names[type], (const char *)hex,
                        type_names[parent->type], sha256_hex(parent->id, phex));
    if (f->s->e[c].type != type)
      return codec_fail(f->err, CODEC_CORRUPT, "object %.64s is an %s, its parent %s wants an %s", (const char *)hex,
                        type_names[f->s->e[c].type], sha256_hex(parent->id, phex), type_names[type]);
    f->s->e[c].reached = 1;
  }
  return CODEC_OK;
}

/* An unused head child of parent, as an error. */
static int unused_child(fo_inflater *f, const fo_entry *parent) {
  char phex[SHA256_HEX_SIZE];
  uint32_t k;
  for (k = 0; k < parent->nchild; k++)
    if (!f->used[k])
      return codec_fail(f->err, CODEC_CORRUPT, "%s %s lists child %.64s that its body does not use",
                        type_names[parent->type], sha256_hex(parent->id, phex),
                        (const char *)child_hex(f->s, parent, k));
  return CODEC_OK;
}

/* What an Array body says. The chunk index list is read twice: once to
** check it and size the data, once to copy the chunks (from `chunks_at`). */
typedef struct array_body {
  json_str dtype, stype;
  int ndim;
  int64_t shape[RECORD_MAX_DIMS];
  uint64_t data_len;
  json_reader chunks_at;
} array_body;

/* The index list from r; with copy set, append the chunks to f->out. */
static int read_chunk_ids(fo_inflater *f, const fo_entry *a, json_reader *r, uint64_t *data_len, int copy) {
  int more, rc;
  uint64_t idx;
  if ((rc = json_begin(r, '[')) != CODEC_OK) return rc;
  *data_len = 0;
  for (;;) {
    const fo_entry *ch;
    if ((rc = json_next(r, &more)) != CODEC_OK) return rc;
    if (!more) return CODEC_OK;
    if ((rc = json_uint(r, &idx)) != CODEC_OK) return rc;
    if (idx >= a->nchild) {
      char hex[SHA256_HEX_SIZE];
      return codec_fail(f->err, CODEC_CORRUPT, "Array %s: chunk index %llu is out of range (%u children)",
                        sha256_hex(a->id, hex), (unsigned long long)idx, a->nchild);
    }
    f->used[idx] = 1;
    ch = &f->s->e[find_hex(f->s, child_hex(f->s, a, (uint32_t)idx))];
    if (size_add(*data_len, ch->len - ch->body, data_len)) return codec_fail(f->err, CODEC_TOOBIG, "array too large");
    if (copy) buf_append(f->out, content_of(f->s, ch) + ch->body, ch->len - ch->body);
  }
}

static int read_array_body(fo_inflater *f, const fo_entry *a, array_body *b) {
  char hex[SHA256_HEX_SIZE], what[96];
  json_reader r;
  json_str key;
  int more, rc, seen = 0;
  snprintf(what, sizeof(what), "Array %s body", sha256_hex(a->id, hex));
  if ((rc = json_reader_init(&r, content_of(f->s, a) + a->body, a->len - a->body, 0, what, f->err)) != CODEC_OK)
    return rc;
  if ((rc = json_begin(&r, '{')) != CODEC_OK) return rc;
  if ((rc = used_reset(f, a->nchild)) != CODEC_OK) return codec_fail_rc(f->err, rc);
  for (;;) {
    int field;
    if ((rc = json_next_key(&r, &more, &key)) != CODEC_OK) return rc;
    if (!more) break;
    field = json_str_eq(&key, "dtype")            ? 1
            : json_str_eq(&key, "shape")          ? 2
            : json_str_eq(&key, "stype")          ? 4
            : json_str_eq(&key, "arraychunk_ids") ? 8
                                                  : 0;
    if (!field) return json_fail_str(&r, &key, "unexpected key");
    if (seen & field) return json_fail_str(&r, &key, "duplicate key");
    seen |= field;
    if (field == 1)
      rc = json_string(&r, &b->dtype);
    else if (field == 4)
      rc = json_string(&r, &b->stype);
    else if (field == 8) {
      b->chunks_at = r;
      rc = read_chunk_ids(f, a, &r, &b->data_len, 0);
    } else {
      b->ndim = 0;
      if ((rc = json_begin(&r, '[')) != CODEC_OK) return rc;
      for (;;) {
        uint64_t d, at;
        if ((rc = json_next(&r, &more)) != CODEC_OK || !more) break;
        if (b->ndim == RECORD_MAX_DIMS) return json_fail(&r, "too many dimensions");
        at = r.pos;
        if ((rc = json_uint(&r, &d)) != CODEC_OK) return rc;
        if (d > INT32_MAX) return json_fail_at(&r, at, "dimension does not fit Flower's int32 shape");
        b->shape[b->ndim++] = (int64_t)d;
      }
    }
    if (rc) return rc;
  }
  if ((rc = json_end(&r)) != CODEC_OK) return rc;
  if (seen != 15)
    return codec_fail(f->err, CODEC_CORRUPT, "%s lacks \"%s\"", what,
                      !(seen & 1)   ? "dtype"
                      : !(seen & 2) ? "shape"
                      : !(seen & 4) ? "stype"
                                    : "arraychunk_ids");
  return unused_child(f, a);
}

/* One record item: key (decoded), the Array's metadata and its data. */
static int write_item(fo_inflater *f, const json_str *key, const fo_entry *a) {
  array_body b;
  record_item_spec spec;
  uint64_t key_off, dtype_off, stype_off;
  int rc;
  if ((rc = check_children(f, a, FO_ARRAY_CHUNK)) != CODEC_OK) return rc;
  if ((rc = read_array_body(f, a, &b)) != CODEC_OK) return rc;
  f->scratch.n = 0;
  key_off = 0;
  json_unescape(key, &f->scratch);
  dtype_off = f->scratch.n;
  json_unescape(&b.dtype, &f->scratch);
  stype_off = f->scratch.n;
  json_unescape(&b.stype, &f->scratch);
  if (f->scratch.rc) return buf_error(&f->scratch, f->err);
  memset(&spec, 0, sizeof(spec));
  spec.key.p = buf_at(&f->scratch, key_off); /* all three may be empty */
  spec.key.n = dtype_off - key_off;
  spec.dtype.p = buf_at(&f->scratch, dtype_off);
  spec.dtype.n = stype_off - dtype_off;
  spec.stype.p = buf_at(&f->scratch, stype_off);
  spec.stype.n = f->scratch.n - stype_off;
  spec.ndim = b.ndim;
  spec.shape = b.shape;
  spec.data.n = b.data_len;
  record_write_item_head(f->out, &spec);
  if ((rc = read_chunk_ids(f, a, &b.chunks_at, &b.data_len, 1)) != CODEC_OK) return rc;
  if (f->out->rc) return buf_error(f->out, f->err);
  return CODEC_OK;
}

static int inflate_record(fo_inflater *f, fo_entry *root) {
  char hex[SHA256_HEX_SIZE], what[96];
  json_reader r;
  json_str key, value;
  keyset_t keys;
  int more, rc, items = 0;
  uint32_t k;
  snprintf(what, sizeof(what), "ArrayRecord %s body", sha256_hex(root->id, hex));
  if ((rc = check_children(f, root, FO_ARRAY)) != CODEC_OK) return rc;
  for (k = 0; k < root->nchild; k++) f->s->e[find_hex(f->s, child_hex(f->s, root, k))].listed = 1;
  if ((rc = json_reader_init(&r, content_of(f->s, root) + root->body, root->len - root->body, 0, what, f->err)) !=
      CODEC_OK)
    return rc;
  if ((rc = json_begin(&r, '{')) != CODEC_OK) return rc;
  keyset_init(&keys);
  for (;;) {
    int a;
    if ((rc = json_next_key(&r, &more, &key)) != CODEC_OK || !more) break;
    if ((rc = json_string(&r, &value)) != CODEC_OK) break;
    if (value.n != 64 || value.escaped || !is_lower_hex(value.p, 64) || (a = find_hex(f->s, value.p)) < 0 ||
        !f->s->e[a].listed) {
      rc = json_fail_str(&r, &value, "value is not one of the head's child ids");
      break;
    }
    f->s->e[a].listed = 2; /* used */
    f->scratch.n = 0;
    if (json_unescape(&key, &f->scratch) || keyset_get(&keys, f->scratch.p, f->scratch.n) >= 0) {
      rc = f->scratch.rc ? buf_error(&f->scratch, f->err) : json_fail_str(&r, &key, "duplicate key");
      break;
    }
    if (keyset_put(&keys, f->scratch.p, f->scratch.n, items++)) {
      rc = codec_nomem(f->err);
      break;
    }
    if ((rc = write_item(f, &key, &f->s->e[a])) != CODEC_OK) break;
  }
  keyset_free(&keys);
  if (rc == CODEC_OK) rc = json_end(&r);
  for (k = 0; k < root->nchild && rc == CODEC_OK; k++) {
    fo_entry *e = &f->s->e[find_hex(f->s, child_hex(f->s, root, k))];
    if (e->listed != 2)
      rc = codec_fail(f->err, CODEC_CORRUPT, "ArrayRecord %s lists child %.64s that its body does not use", hex,
                      (const char *)child_hex(f->s, root, k));
  }
  /* Arrays may be shared with another ArrayRecord, read later. */
  for (k = 0; k < root->nchild; k++) f->s->e[find_hex(f->s, child_hex(f->s, root, k))].listed = 0;
  return rc;
}

int fo_inflate(fo_store *s, buf_t *out, codec_err *err) {
  fo_inflater f;
  char hex[SHA256_HEX_SIZE], hex2[SHA256_HEX_SIZE];
  int root = -1, rc;
  uint32_t k;
  for (k = 0; k < s->n; k++) {
    if (s->e[k].type != FO_ARRAY_RECORD) continue;
    if (root >= 0)
      return codec_fail(err, CODEC_CORRUPT, "more than one ArrayRecord object (%s and %s)",
                        sha256_hex(s->e[root].id, hex), sha256_hex(s->e[k].id, hex2));
    root = (int)k;
  }
  if (root < 0) return codec_fail(err, CODEC_CORRUPT, "no ArrayRecord object among the %u objects", s->n);
  memset(&f, 0, sizeof(f));
  f.s = s;
  f.out = out;
  f.err = err;
  buf_init(&f.scratch, UINT64_MAX);
  s->e[root].reached = 1;
  rc = inflate_record(&f, &s->e[root]);
  buf_free(&f.scratch);
  codec_free(f.used);
  if (rc) return rc;
  for (k = 0; k < s->n; k++)
    if (!s->e[k].reached)
      return codec_fail(err, CODEC_CORRUPT, "object %s (%s) is not part of ArrayRecord %s", sha256_hex(s->e[k].id, hex),
                        type_names[s->e[k].type], sha256_hex(s->e[root].id, hex2));
  return CODEC_OK;
}

/* --- RecordDicts and Messages ------------------------------------------------------ */

static int is_record_type(int t) { return t == FO_ARRAY_RECORD || t == FO_METRIC_RECORD || t == FO_CONFIG_RECORD; }

/* One record object, as the bytes a RecordDict item holds, into rec. */
static int inflate_rd_record(fo_inflater *f, fo_entry *e, buf_t *rec) {
  char hex[SHA256_HEX_SIZE], what[96];
  buf_t *out = f->out;
  valrec_t vr;
  int rc;
  if (e->type == FO_ARRAY_RECORD) {
    f->out = rec;
    rc = inflate_record(f, e);
    f->out = out;
    return rc;
  }
  snprintf(what, sizeof(what), "%s %s body", type_names[e->type], sha256_hex(e->id, hex));
  valrec_init(&vr);
  rc = valrec_parse(&vr, e->type == FO_CONFIG_RECORD, content_of(f->s, e), e->body, e->len, what, f->err);
  if (rc == CODEC_OK) {
    valrec_write_flower(rec, &vr);
    if (rec->rc) rc = buf_error(rec, f->err);
  }
  valrec_clear(&vr);
  return rc;
}

static int inflate_rd(fo_inflater *f, fo_entry *root) {
  char hex[SHA256_HEX_SIZE], what[96];
  json_reader r;
  json_str key, value;
  keyset_t names, heads; /* names seen; head child id (hex) -> its place */
  buf_t rec;
  unsigned char *used; /* per head child: the body names it */
  int more, rc = CODEC_OK, items = 0, at;
  uint32_t k;
  sha256_hex(root->id, hex);
  snprintf(what, sizeof(what), "RecordDict %s body", hex);
  for (k = 0; k < root->nchild; k++) {
    const unsigned char *ch = child_hex(f->s, root, k);
    int c = find_hex(f->s, ch);
    if (c < 0)
      return codec_fail(f->err, CODEC_CORRUPT, "missing record %.64s (child of RecordDict %s)", (const char *)ch, hex);
    if (!is_record_type(f->s->e[c].type))
      return codec_fail(
          f->err, CODEC_CORRUPT,
          "object %.64s is a%s %s, its parent RecordDict %s wants an ArrayRecord, MetricRecord or ConfigRecord",
          (const char *)ch, f->s->e[c].type == FO_ARRAY || f->s->e[c].type == FO_ARRAY_CHUNK ? "n" : "",
          type_names[f->s->e[c].type], hex);
    f->s->e[c].reached = 1;
  }
  if ((rc = json_reader_init(&r, content_of(f->s, root) + root->body, root->len - root->body, 0, what, f->err)) !=
      CODEC_OK)
    return rc;
  if ((rc = json_begin(&r, '{')) != CODEC_OK) return rc;
  if (!(used = codec_malloc(root->nchild ? root->nchild : 1))) return codec_nomem(f->err);
  memset(used, 0, root->nchild ? root->nchild : 1);
  keyset_init(&names);
  keyset_init(&heads);
  buf_init(&rec, f->out->limit);
  for (k = 0; k < root->nchild && rc == CODEC_OK; k++)
    if (keyset_put(&heads, child_hex(f->s, root, k), 64, (int)k)) rc = codec_nomem(f->err);
  while (rc == CODEC_OK) {
    fo_entry *e;
    codec_span name, bytes;
    if ((rc = json_next_key(&r, &more, &key)) != CODEC_OK || !more) break;
    if ((rc = json_string(&r, &value)) != CODEC_OK) break;
    if (value.n != 64 || value.escaped || (at = keyset_get(&heads, value.p, 64)) < 0) {
      rc = json_fail_str(&r, &value, "value is not one of the head's child ids");
      break;
    }
    used[at] = 1;
    e = &f->s->e[find_hex(f->s, value.p)];
    f->scratch.n = 0;
    if (json_unescape(&key, &f->scratch) || keyset_get(&names, f->scratch.p, f->scratch.n) >= 0) {
      rc = f->scratch.rc ? buf_error(&f->scratch, f->err) : json_fail_str(&r, &key, "duplicate key");
      break;
    }
    if (!codec_utf8_valid(f->scratch.p, f->scratch.n)) {
      rc = json_fail_str(&r, &key, "name is not valid UTF-8");
      break;
    }
    if (keyset_put(&names, f->scratch.p, f->scratch.n, items++)) {
      rc = codec_nomem(f->err);
      break;
    }
    rec.n = 0;
    if ((rc = inflate_rd_record(f, e, &rec)) != CODEC_OK) break;
    /* inflate_record used f->scratch: decode the name again */
    f->scratch.n = 0;
    json_unescape(&key, &f->scratch);
    if (f->scratch.rc) {
      rc = buf_error(&f->scratch, f->err);
      break;
    }
    name.p = buf_at(&f->scratch, 0);
    name.n = f->scratch.n;
    bytes.p = buf_at(&rec, 0);
    bytes.n = rec.n;
    recorddict_write_item(f->out, name,
                          e->type == FO_ARRAY_RECORD    ? RECORDDICT_ARRAY
                          : e->type == FO_METRIC_RECORD ? RECORDDICT_METRIC
                                                        : RECORDDICT_CONFIG,
                          bytes);
    if (f->out->rc) {
      rc = buf_error(f->out, f->err);
      break;
    }
  }
  buf_free(&rec);
  keyset_free(&names);
  keyset_free(&heads);
  if (rc == CODEC_OK) rc = json_end(&r);
  for (k = 0; k < root->nchild && rc == CODEC_OK; k++)
    if (!used[k])
      rc = codec_fail(f->err, CODEC_CORRUPT, "RecordDict %s lists child %.64s that its body does not use", hex,
                      (const char *)child_hex(f->s, root, k));
  codec_free(used);
  return rc;
}

/* A Message body: protobuf Message fields, content (field 2) absent. */
static int check_message_body(fo_inflater *f, const fo_entry *m) {
  char hex[SHA256_HEX_SIZE], what[96];
  pb_reader r;
  pb_ctx ctx;
  snprintf(what, sizeof(what), "Message %s body", sha256_hex(m->id, hex));
  r.blob = content_of(f->s, m);
  r.pos = m->body;
  r.end = m->len;
  ctx.err = f->err;
  ctx.blob = what;
  ctx.item = -1;
  ctx.key.p = NULL;
  ctx.key.n = 0;
  while (r.pos < r.end) {
    uint64_t field, at = r.pos;
    int wt, rc;
    if ((rc = pb_tag(&r, &ctx, &field, &wt)) != CODEC_OK) return rc;
    if (field == 2)
      return codec_fail(f->err, CODEC_CORRUPT, "%s holds a content (field 2): a Message object's content is its child",
                        what);
    if ((rc = pb_skip(&r, &ctx, field, wt, 0, at)) != CODEC_OK) return rc;
  }
  return CODEC_OK;
}

int fo_inflate_rd(fo_store *s, buf_t *out, int *has_content, codec_err *err) {
  fo_inflater f;
  char hex[SHA256_HEX_SIZE], hex2[SHA256_HEX_SIZE];
  int root = -1, msg = -1, rc = CODEC_OK, pass;
  uint32_t k;
  *has_content = 0;
  /* The root: the one Message, else the one RecordDict (a Message's
  ** content is a RecordDict: with a Message, others are extras). */
  for (pass = 0; pass < 2; pass++) {
    int type = pass ? FO_RECORD_DICT : FO_MESSAGE, *slot = pass ? &root : &msg;
    if (pass && msg >= 0) break;
    for (k = 0; k < s->n; k++) {
      if (s->e[k].type != type) continue;
      if (*slot >= 0)
        return codec_fail(err, CODEC_CORRUPT, "more than one %s object (%s and %s)", type_names[type],
                          sha256_hex(s->e[*slot].id, hex), sha256_hex(s->e[k].id, hex2));
      *slot = (int)k;
    }
  }
  memset(&f, 0, sizeof(f));
  f.s = s;
  f.out = out;
  f.err = err;
  buf_init(&f.scratch, UINT64_MAX);
  if (msg >= 0) {
    fo_entry *m = &s->e[msg];
    m->reached = 1;
    sha256_hex(m->id, hex);
    if (m->nchild > 1) {
      rc = codec_fail(err, CODEC_CORRUPT, "Message %s has %u children (its content RecordDict is the only one)", hex,
                      m->nchild);
    } else if ((rc = check_message_body(&f, m)) == CODEC_OK && m->nchild == 1) {
      const unsigned char *ch = child_hex(s, m, 0);
      int c = find_hex(s, ch);
      if (c < 0)
        rc = codec_fail(err, CODEC_CORRUPT, "missing RecordDict %.64s (child of Message %s)", (const char *)ch, hex);
      else if (s->e[c].type != FO_RECORD_DICT)
        rc = codec_fail(err, CODEC_CORRUPT, "object %.64s is a%s %s, its parent Message %s wants a RecordDict",
                        (const char *)ch, s->e[c].type <= FO_ARRAY_CHUNK ? "n" : "", type_names[s->e[c].type], hex);
      else
        root = c;
    } else {
      root = -1;
    }
  } else if (root < 0) {
    rc = codec_fail(err, CODEC_CORRUPT, "no RecordDict or Message object among the %u objects", s->n);
  }
  if (rc == CODEC_OK && root >= 0) {
    s->e[root].reached = 1;
    rc = inflate_rd(&f, &s->e[root]);
    *has_content = rc == CODEC_OK;
  }
  buf_free(&f.scratch);
  codec_free(f.used);
  if (rc) return rc;
  for (k = 0; k < s->n; k++)
    if (!s->e[k].reached) {
      int top = msg >= 0 ? msg : root;
      return codec_fail(err, CODEC_CORRUPT, "object %s (%s) is not part of %s %s", sha256_hex(s->e[k].id, hex),
                        type_names[s->e[k].type], type_names[s->e[top].type], sha256_hex(s->e[top].id, hex2));
    }
  return CODEC_OK;
}
