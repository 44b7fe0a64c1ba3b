/* SPDX-License-Identifier: Apache-2.0 */
/*
** flower_object.c — deflating records into Flower's object tree and
** inflating them back (see flower_object.h for the format).
*/
#include "codec/flower_object.h"

#include <stdio.h>
#include <string.h>

#include "codec/json_read.h"

/* A buffer's failure as a codec error. */
static int buf_error(const buf_t *b, codec_err *err) {
  return codec_fail_rc(err, b->rc);
}

static const char *const type_names[] = {"ArrayRecord", "Array", "ArrayChunk"};

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
      case '"': buf_puts(out, "\\\""); i++; continue;
      case '\\': buf_puts(out, "\\\\"); i++; continue;
      case '\n': buf_puts(out, "\\n"); i++; continue;
      case '\r': buf_puts(out, "\\r"); i++; continue;
      case '\t': buf_puts(out, "\\t"); i++; continue;
      case '\b': buf_puts(out, "\\b"); i++; continue;
      case '\f': buf_puts(out, "\\f"); i++; continue;
      default: break;
    }
    /* Everything else outside ' '..'~' becomes \uXXXX (valid UTF-8 assumed). */
    if (c < 0x80) len = 1, cp = c;
    else if (c < 0xe0) len = 2, cp = c & 0x1f;
    else if (c < 0xf0) len = 3, cp = c & 0x0f;
    else len = 4, cp = c & 0x07;
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
                        const unsigned char *body, uint64_t body_len, const unsigned char *body2,
                        uint64_t body2_len, unsigned char id[SHA256_DIGEST_SIZE]) {
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
static void chunk_id2(const unsigned char *p, const unsigned char *p2, uint64_t len, unsigned char id[SHA256_DIGEST_SIZE],
                      unsigned char id2[SHA256_DIGEST_SIZE]) {
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
static int fo_array_build(fo_array *a, const record_item_spec *spec, uint64_t chunk_size, buf_t *text,
                          codec_err *err) {
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
    for (u = 0; u < a->nunique && memcmp(a->uid[u], id, SHA256_DIGEST_SIZE) != 0; u++) {
    }
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
}

void fo_tree_free(fo_tree *t) {
  codec_free(t->obj);
  codec_free(t->child);
  buf_free(&t->text);
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
static int deflate_item(fo_tree *t, keyset_t *seen, int i, uint64_t chunk_size, uint32_t *array_index,
                        codec_err *err) {
  const record_item *it = &t->rec->items[i];
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

int fo_deflate(fo_tree *t, const record_t *rec, uint64_t chunk_size, codec_err *err) {
  keyset_t seen;
  uint32_t *item_array = NULL, first_array, k;
  uint64_t body0;
  unsigned char root[SHA256_DIGEST_SIZE];
  int i, rc = CODEC_OK;
  fo_object *o;
  t->rec = rec;
  keyset_init(&seen);
  item_array = codec_malloc((uint64_t)(rec->n ? rec->n : 1) * sizeof(uint32_t));
  if (!item_array) {
    rc = codec_nomem(err);
    goto done;
  }
  for (i = 0; i < rec->n && rc == CODEC_OK; i++) rc = deflate_item(t, &seen, i, chunk_size, &item_array[i], err);
  if (rc) goto done;
  /* The record's children are its unique Arrays in item order: exactly the
  ** Array objects, in the order they entered the tree. */
  first_array = t->nchild_total;
  for (k = 0; k < t->n; k++) {
    if (t->obj[k].type == FO_ARRAY && push_child(t, k)) {
      rc = codec_nomem(err);
      goto done;
    }
  }
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
  if (t->text.rc) {
    rc = buf_error(&t->text, err);
    goto done;
  }
  {
    /* Gather the child ids contiguously for hashing. */
    uint32_t nchild = t->nchild_total - first_array;
    unsigned char(*ids)[SHA256_DIGEST_SIZE] = codec_malloc((uint64_t)(nchild ? nchild : 1) * SHA256_DIGEST_SIZE);
    if (!ids) {
      rc = codec_nomem(err);
      goto done;
    }
    for (k = 0; k < nchild; k++) memcpy(ids[k], t->obj[t->child[first_array + k]].id, SHA256_DIGEST_SIZE);
    hash_object(FO_ARRAY_RECORD, (const unsigned char(*)[SHA256_DIGEST_SIZE])ids, nchild, t->text.p + body0,
                t->text.n - body0, NULL, 0, root);
    codec_free(ids);
    o = push_object(t, FO_ARRAY_RECORD, root);
    if (!o) {
      rc = codec_nomem(err);
      goto done;
    }
    o->item = -1;
    o->off = body0;
    o->len = t->text.n - body0;
    o->child0 = first_array;
    o->nchild = nchild;
  }
done:
  codec_free(item_array);
  keyset_free(&seen);
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
  if (o->type == FO_ARRAY_CHUNK) buf_append(out, t->rec->items[o->item].data.p + o->off, o->len);
  else buf_append(out, t->text.p + o->off, o->len);
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


/* The head of a content: type, child ids, body length (see fo_store_add). */
static int parse_head(const unsigned char *c, uint64_t n, fo_entry *e, const char *idhex, codec_err *err) {
  const unsigned char *nul = memchr(c, 0, (size_t)n), *sp1, *sp2;
  uint64_t head_len, body_len = 0, k, clen;
  int t;
  if (!nul) return codec_fail(err, CODEC_CORRUPT, "object %s has no head (no NUL byte)", idhex);
  head_len = (uint64_t)(nul - c);
  sp1 = memchr(c, ' ', (size_t)head_len);
  sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(head_len - (uint64_t)(sp1 + 1 - c))) : NULL;
  if (!sp2 || memchr(sp2 + 1, ' ', (size_t)(head_len - (uint64_t)(sp2 + 1 - c))) || sp2 + 1 == nul)
    return codec_fail(err, CODEC_CORRUPT, "object %s: head is not '<type> <child ids> <body length>'", idhex);
  for (t = 0; t < 3; t++)
    if ((size_t)(sp1 - c) == strlen(type_names[t]) && memcmp(c, type_names[t], (size_t)(sp1 - c)) == 0) break;
  if (t == 3) {
    int shown = (int)(sp1 - c) > 24 ? 24 : (int)(sp1 - c);
    char name[25];
    for (k = 0; k < (uint64_t)shown; k++) name[k] = c[k] >= 0x20 && c[k] < 0x7f ? (char)c[k] : '?';
    name[shown] = 0;
    return codec_fail(err, CODEC_CORRUPT, "object %s has unknown type '%s'", idhex, name);
  }
  for (k = (uint64_t)(sp2 + 1 - c); k < head_len; k++) {
    if (c[k] < '0' || c[k] > '9' || body_len > (UINT64_MAX - 9) / 10)
      return codec_fail(err, CODEC_CORRUPT, "object %s: bad body length in the head", idhex);
    body_len = body_len * 10 + (uint64_t)(c[k] - '0');
  }
  if (body_len != n - head_len - 1)
    return codec_fail(err, CODEC_CORRUPT, "object %s: head says the body has %llu bytes, it has %llu", idhex,
                      (unsigned long long)body_len, (unsigned long long)(n - head_len - 1));
  e->type = (unsigned char)t;
  e->body = head_len + 1;
  e->children = (uint64_t)(sp1 + 1 - c);
  clen = (uint64_t)(sp2 - sp1 - 1);
  /* "" or 64 hex digits, then ",id" for each further child */
  if (clen && ((clen + 1) % 65 != 0))
    return codec_fail(err, CODEC_CORRUPT, "object %s: bad child id list in the head", idhex);
  e->nchild = clen ? (uint32_t)((clen + 1) / 65) : 0;
  for (k = 0; k < e->nchild; k++) {
    const unsigned char *id = c + e->children + k * 65;
    if (!is_lower_hex(id, 64) || (k + 1 < e->nchild && id[64] != ','))
      return codec_fail(err, CODEC_CORRUPT, "object %s: bad child id list in the head", idhex);
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
        rc = codec_fail(err, CODEC_CORRUPT, "object %s lists child %.64s twice", idhex, (const char *)id);
      else if (keyset_put(&seen, id, 64, (int)k))
        rc = codec_nomem(err);
    }
    keyset_free(&seen);
    if (rc) return rc;
  }
  if (e->type == FO_ARRAY_CHUNK && e->nchild)
    return codec_fail(err, CODEC_CORRUPT, "object %s: an ArrayChunk has no children", idhex);
  return CODEC_OK;
}

int fo_store_add(fo_store *s, const unsigned char id[SHA256_DIGEST_SIZE], const unsigned char *content,
                 uint64_t n, codec_err *err) {
  unsigned char actual[SHA256_DIGEST_SIZE];
  char idhex[SHA256_HEX_SIZE], acthex[SHA256_HEX_SIZE];
  fo_entry e;
  int rc;
  sha256(content, n, actual);
  sha256_hex(id, idhex);
  if (memcmp(actual, id, SHA256_DIGEST_SIZE) != 0)
    return codec_fail(err, CODEC_CORRUPT, "object %s: content hashes to %s", idhex, sha256_hex(actual, acthex));
  if (keyset_get(&s->ids, id, SHA256_DIGEST_SIZE) >= 0) return CODEC_OK; /* same id, same bytes */
  memset(&e, 0, sizeof(e));
  if ((rc = parse_head(content, n, &e, idhex, err)) != CODEC_OK) return rc;
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
  buf_t scratch; /* decoded key, dtype, stype */
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
                        type_names[parent->type], sha256_hex(parent->id, phex), (const char *)child_hex(f->s, parent, k));
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
  if ((rc = json_reader_init(&r, content_of(f->s, a) + a->body, a->len - a->body, 0, what, f->err)) != CODEC_OK) return rc;
  if ((rc = json_begin(&r, '{')) != CODEC_OK) return rc;
  if ((rc = used_reset(f, a->nchild)) != CODEC_OK) return codec_fail_rc(f->err, rc);
  for (;;) {
    int field;
    if ((rc = json_next_key(&r, &more, &key)) != CODEC_OK) return rc;
    if (!more) break;
    field = json_str_eq(&key, "dtype") ? 1 : json_str_eq(&key, "shape") ? 2 : json_str_eq(&key, "stype") ? 4
            : json_str_eq(&key, "arraychunk_ids") ? 8 : 0;
    if (!field) return json_fail_str(&r, &key, "unexpected key");
    if (seen & field) return json_fail_str(&r, &key, "duplicate key");
    seen |= field;
    if (field == 1) rc = json_string(&r, &b->dtype);
    else if (field == 4) rc = json_string(&r, &b->stype);
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
  if (seen != 15) return codec_fail(f->err, CODEC_CORRUPT, "%s lacks \"%s\"", what,
                                    !(seen & 1) ? "dtype" : !(seen & 2) ? "shape" : !(seen & 4) ? "stype" : "arraychunk_ids");
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
  if ((rc = json_reader_init(&r, content_of(f->s, root) + root->body, root->len - root->body, 0, what, f->err)) != CODEC_OK)
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
      return codec_fail(err, CODEC_CORRUPT, "more than one ArrayRecord object (%s and %s)", sha256_hex(s->e[root].id, hex),
                        sha256_hex(s->e[k].id, hex2));
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
