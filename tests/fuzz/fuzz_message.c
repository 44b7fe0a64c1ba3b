/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_message.c — libFuzzer harness for the Flower Message and Context
** readers (message.c). The input is read as a Message (metadata, error,
** content merged and re-encoded as a RecordDict: a fixed point) and as a Context (config map
** entries, state). Checks: errors are well-formed; every JSON output is
** valid UTF-8 JSON; strings read are UTF-8; map entries come out sorted, one
** per key; a Message or Context written twice in a row (every field merged
** with itself) reads the same; a Context re-encoded here with its entries
** in reverse order gives the same JSON.
**
** seeds: tests/data/recorddict/messages tests/data/recorddict/contexts
*/
#include "codec/json_read.h"
#include "codec/message.h"
#include "codec/pb.h"
#include "codec/recorddict.h"
#include "fuzz.h"

static int same_buf(const buf_t *a, const buf_t *b) {
  return a->rc == b->rc && a->n == b->n && (!a->n || memcmp(a->p, b->p, (size_t)a->n) == 0);
}

/* The text is one valid JSON value (the strict reader checks UTF-8 too). */
static void check_json(const buf_t *b) {
  json_reader r;
  codec_err err;
  if (b->rc != CODEC_OK) return;
  FUZZ_CHECK(json_reader_init(&r, buf_at(b, 0), b->n, 0, "json", &err) == CODEC_OK);
  FUZZ_CHECK(json_skip(&r) == CODEC_OK);
  FUZZ_CHECK(json_end(&r) == CODEC_OK);
}

static void utf8(codec_span s) { FUZZ_CHECK(codec_utf8_valid(s.p, s.n)); }

/* The input twice in a row. */
static int doubled(const uint8_t *d, size_t size, buf_t *two) {
  buf_init(two, UINT64_MAX);
  buf_append(two, d, size);
  buf_append(two, d, size);
  return two->rc;
}

/* A RecordDict taken out of a message: re-encoded, so a fixed point. */
static void check_canonical(const buf_t *rd) {
  buf_t again;
  codec_err err;
  int rc;
  buf_init(&again, UINT64_MAX);
  rc = recorddict_canonical(&again, buf_at(rd, 0), rd->n, &err);
  FUZZ_CHECK(rc == CODEC_NOMEM || (rc == CODEC_OK && same_buf(rd, &again)));
  buf_free(&again);
}

static void check_message(const uint8_t *d, size_t size) {
  message_t m, m2;
  codec_err err;
  buf_t json, json2, out, two;
  int rc;
  err.msg[0] = 0;
  rc = message_parse(&m, d, size, &err);
  if (rc != CODEC_OK) {
    fuzz_check_error(rc, &err);
    FUZZ_CHECK(rc == CODEC_CORRUPT);
    return;
  }
  utf8(m.message_id), utf8(m.reply_to_message_id), utf8(m.group_id), utf8(m.message_type), utf8(m.error_reason);
  buf_init(&json, UINT64_MAX);
  message_metadata_json(&json, &m);
  check_json(&json);
  if (m.ncontent) {
    buf_init(&out, UINT64_MAX);
    err.msg[0] = 0;
    rc = message_content(&m, d, size, &out, &err);
    if (rc != CODEC_OK)
      fuzz_check_error(rc, &err);
    else
      check_canonical(&out);
    buf_free(&out);
  }
  /* every field merged with itself: the same metadata */
  if (doubled(d, size, &two) == CODEC_OK) {
    FUZZ_CHECK(message_parse(&m2, buf_at(&two, 0), two.n, &err) == CODEC_OK);
    FUZZ_CHECK(m2.has_error == m.has_error && (m2.ncontent == 2 * m.ncontent || m.ncontent >= 0x1fffffff));
    buf_init(&json2, UINT64_MAX);
    message_metadata_json(&json2, &m2);
    FUZZ_CHECK(same_buf(&json, &json2));
    buf_free(&json2);
  }
  buf_free(&two);
  buf_free(&json);
}

/* A Scalar, as protobuf writes it. */
static void put_scalar(buf_t *b, const message_entry *e) {
  uint64_t u;
  switch (e->type) {
    case VALREC_DOUBLE: {
      unsigned char le[8];
      int k;
      memcpy(&u, &e->v.d, 8);
      for (k = 0; k < 8; k++) le[k] = (unsigned char)(u >> (8 * k));
      buf_putc(b, 0x09);
      buf_append(b, le, 8);
      break;
    }
    case VALREC_UINT64: buf_putc(b, 0x30), pb_put_varint(b, e->v.u); break;
    case VALREC_SINT64:
      buf_putc(b, 0x40);
      pb_put_varint(b, ((uint64_t)e->v.i << 1) ^ (uint64_t)(e->v.i >> 63));
      break;
    case VALREC_BOOL: buf_putc(b, 0x68), pb_put_varint(b, e->v.u); break;
    case VALREC_STRING: buf_putc(b, 0x72), pb_put_varint(b, e->v.s.n), buf_append(b, e->v.s.p, e->v.s.n); break;
    default: buf_putc(b, 0x7a), pb_put_varint(b, e->v.s.n), buf_append(b, e->v.s.p, e->v.s.n);
  }
}

static void reencode_reversed(const message_context_t *c, buf_t *b) {
  buf_t ent, sc;
  int i;
  buf_init(b, UINT64_MAX);
  buf_init(&ent, UINT64_MAX);
  buf_init(&sc, UINT64_MAX);
  if (c->node_id) buf_putc(b, 0x10), pb_put_varint(b, c->node_id);
  if (c->series_id) buf_putc(b, 0x30), pb_put_varint(b, c->series_id);
  for (i = c->n - 1; i >= 0; i--) {
    const message_entry *e = &c->entries[i];
    ent.n = sc.n = 0;
    put_scalar(&sc, e);
    pb_put_len_field(&ent, 0x0a, e->key.p, e->key.n);
    buf_putc(&ent, 0x12);
    pb_put_varint(&ent, sc.n);
    buf_append(&ent, buf_at(&sc, 0), sc.n);
    buf_putc(b, (char)(e->map << 3 | 2));
    pb_put_varint(b, ent.n);
    buf_append(b, buf_at(&ent, 0), ent.n);
    if (i == c->n / 2 && c->run_id) buf_putc(b, 0x08), pb_put_varint(b, c->run_id);
  }
  if (c->n == 0 && c->run_id) buf_putc(b, 0x08), pb_put_varint(b, c->run_id);
  if (ent.rc) b->rc = ent.rc;
  if (sc.rc) b->rc = sc.rc;
  buf_free(&ent);
  buf_free(&sc);
}

/* Another encoding of the same Context (parsed into c2) must give the JSON
** the original gave (or run out of memory). */
static void same_context_json(message_context_t *c2, const buf_t *bytes, const buf_t *json) {
  codec_err err;
  buf_t json2;
  int rc = message_context_parse(c2, buf_at(bytes, 0), bytes->n, &err);
  FUZZ_CHECK(rc == CODEC_OK || rc == CODEC_NOMEM);
  if (rc == CODEC_OK) {
    buf_init(&json2, UINT64_MAX);
    message_context_json(&json2, c2);
    FUZZ_CHECK(same_buf(json, &json2));
    buf_free(&json2);
  }
}

static void check_context(const uint8_t *d, size_t size) {
  message_context_t c, c2;
  codec_err err;
  buf_t json, out, two;
  int rc, i;
  message_context_init(&c);
  message_context_init(&c2);
  err.msg[0] = 0;
  rc = message_context_parse(&c, d, size, &err);
  if (rc != CODEC_OK) {
    fuzz_check_error(rc, &err);
    FUZZ_CHECK(rc == CODEC_CORRUPT || rc == CODEC_NOMEM);
    message_context_clear(&c);
    return;
  }
  for (i = 0; i < c.n; i++) {
    const message_entry *e = &c.entries[i];
    utf8(e->key);
    FUZZ_CHECK(e->map == 3 || e->map == 5);
    FUZZ_CHECK(e->type == VALREC_DOUBLE || e->type == VALREC_UINT64 || e->type == VALREC_SINT64 ||
               e->type == VALREC_BOOL || e->type == VALREC_STRING || e->type == VALREC_BYTES);
    if (e->type == VALREC_STRING) utf8(e->v.s);
    if (i) { /* strictly increasing (map, key) */
      const message_entry *p = &c.entries[i - 1];
      uint64_t n = p->key.n < e->key.n ? p->key.n : e->key.n;
      int cmp = n ? memcmp(p->key.p, e->key.p, (size_t)n) : 0;
      FUZZ_CHECK(p->map < e->map || (p->map == e->map && (cmp < 0 || (cmp == 0 && p->key.n < e->key.n))));
    }
  }
  buf_init(&json, UINT64_MAX);
  message_context_json(&json, &c);
  check_json(&json);
  buf_init(&out, UINT64_MAX);
  err.msg[0] = 0;
  rc = message_context_state(&c, d, size, &out, &err);
  if (rc != CODEC_OK)
    fuzz_check_error(rc, &err);
  else
    check_canonical(&out);
  buf_free(&out);
  /* entries in another order: the same JSON */
  reencode_reversed(&c, &out);
  if (out.rc == CODEC_OK) same_context_json(&c2, &out, &json);
  buf_free(&out);
  /* every field merged with itself, every key twice: the same JSON */
  if (doubled(d, size, &two) == CODEC_OK) same_context_json(&c2, &two, &json);
  buf_free(&two);
  buf_free(&json);
  message_context_clear(&c2);
  message_context_clear(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *d = size ? data : (const uint8_t *)"";
  check_message(d, size);
  check_context(d, size);
  return 0;
}
