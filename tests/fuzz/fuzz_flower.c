/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_flower.c — libFuzzer harness for Flower's content-addressed objects
** (flower_object.c): the object store (fo_store_add: hashes and heads), the
** inflater (fo_inflate: bodies, children, the tree), and the deflater
** (fo_deflate, fo_array_id, contents and child lists).
**
** Input, by its first byte:
**   even: objects to inflate, the rest split on "@@@@" (up to 64); each is
**         named by its own SHA-256 (bit 1 of the first byte: the first
**         object's id is off by one bit, which must be refused). Whatever
**         inflates is a record that parses, and deflating and inflating it
**         again gives the same bytes. The same objects go through
**         fo_inflate_rd too: whatever it rebuilds is a RecordDict that
**         deflates and inflates to the same bytes.
**   odd:  a record to deflate; byte 1 picks the chunk size (0: Flower's
**         5 MiB, else that many bytes, so data splits into many chunks and
**         repeats share them). Its objects (ids = SHA-256 of the contents,
**         Array ids as fo_array_id gives them, children listed before their
**         parents) are stored in an order byte 0 picks, some twice, and
**         inflate back to the record's canonical bytes.
**   odd with bit 7 set: the same for a RecordDict (fo_deflate_rd,
**         fo_inflate_rd): its objects inflate to a RecordDict whose own
**         objects have the same root id.
** Both run again with one allocation failing (fuzz_oom_check).
**
** Seeds in tests/fuzz/corpus/flower (Flower's own objects of
** tests/data/objects and tests/data/recorddict/objects, the records of
** tests/data/records and RecordDicts of tests/data/recorddict) are made by
** tests/fuzz/gen_seeds.py.
*/
#include "../host/failalloc.h"
#include "codec/flower_object.h"
#include "fuzz.h"

#define MAX_OBJECTS 64

typedef struct input {
  const uint8_t *data;
  size_t size;
} input;

/* The record's canonical bytes (Flower's serde). */
static void canonical(const record_t *rec, buf_t *out) {
  int i;
  for (i = 0; i < rec->n; i++) {
    int64_t shape[RECORD_MAX_DIMS];
    record_item_spec spec;
    record_item_spec_from_item(&spec, &rec->items[i], shape);
    record_write_item(out, &spec);
  }
}

/* Deflate rec, store its objects (in an order `order` picks, some twice)
** and inflate them into out. With check, the tree's properties too. */
static int round_trip(const record_t *rec, uint64_t chunk, unsigned order, buf_t *out, int check, codec_err *err) {
  fo_tree t;
  fo_store s;
  buf_t content;
  uint32_t i, k;
  int rc;
  fo_tree_init(&t);
  fo_store_init(&s, UINT64_MAX);
  buf_init(&content, UINT64_MAX);
  rc = fo_deflate(&t, rec, chunk, err);
  for (k = 0; rc == CODEC_OK && k < t.n; k++) {
    unsigned char id[SHA256_DIGEST_SIZE];
    i = order & 1 ? t.n - 1 - k : (k + order / 2) % t.n;
    content.n = 0;
    fo_write_content(&t, i, &content);
    if (content.rc) {
      rc = content.rc;
      break;
    }
    if (check) {
      const fo_object *o = &t.obj[i];
      uint32_t c;
      FUZZ_CHECK(content.n == fo_content_size(&t, i));
      sha256(content.p, content.n, id);
      FUZZ_CHECK(memcmp(id, o->id, SHA256_DIGEST_SIZE) == 0);
      /* Children come before their parent; chunks are at most `chunk`. */
      for (c = 0; c < o->nchild; c++) FUZZ_CHECK(t.child[o->child0 + c] < i);
      if (o->type == FO_ARRAY_CHUNK) FUZZ_CHECK(o->len <= chunk && o->nchild == 0);
      FUZZ_CHECK((o->type == FO_ARRAY_RECORD) == (i == t.n - 1));
      if (o->type == FO_ARRAY) {
        unsigned char aid[SHA256_DIGEST_SIZE];
        int64_t shape[RECORD_MAX_DIMS];
        record_item_spec spec;
        record_item_spec_from_item(&spec, &rec->items[o->item], shape);
        FUZZ_CHECK(fo_array_id(&spec, chunk, aid, err) == CODEC_OK && memcmp(aid, o->id, SHA256_DIGEST_SIZE) == 0);
      }
      {
        buf_t kids;
        buf_init(&kids, UINT64_MAX);
        fo_write_children_json(&t, i, &kids);
        FUZZ_CHECK(kids.rc == CODEC_OK && kids.n == 2 + (o->nchild ? o->nchild * 67 - 1 : 0));
        buf_free(&kids);
      }
    }
    sha256(content.p, content.n, id);
    rc = fo_store_add(&s, id, content.p, content.n, err);
    /* the same object again is ignored */
    if (rc == CODEC_OK && (order & 4) && k % 3 == 0) rc = fo_store_add(&s, id, content.p, content.n, err);
  }
  if (rc == CODEC_OK) rc = fo_inflate(&s, out, err);
  fo_tree_free(&t);
  fo_store_free(&s);
  buf_free(&content);
  return rc;
}

/* Store the input's objects, each under its hash (the first one's spoiled
** when data[0] asks): s initialised here, freed by the caller. */
static int store_parts(const uint8_t *data, size_t size, fo_store *s, codec_err *err) {
  fuzz_part parts[MAX_OBJECTS];
  int n = fuzz_split(data + 1, size - 1, parts, MAX_OBJECTS), i, rc = CODEC_OK;
  fo_store_init(s, (uint64_t)1 << 24);
  for (i = 0; i < n && rc == CODEC_OK; i++) {
    unsigned char id[SHA256_DIGEST_SIZE];
    sha256(parts[i].p, parts[i].n, id);
    if (i == 0 && (data[0] & 2)) id[0] ^= 1;
    rc = fo_store_add(s, id, parts[i].p, parts[i].n, err);
  }
  return rc;
}

/* Store the input's objects and inflate them. */
static int inflate_parts(const uint8_t *data, size_t size, buf_t *out, codec_err *err) {
  fo_store s;
  int rc = store_parts(data, size, &s, err);
  if (rc == CODEC_OK) rc = fo_inflate(&s, out, err);
  fo_store_free(&s);
  return rc;
}

/* Deflate a RecordDict, store its objects (order as round_trip) and
** inflate them into out; root gets the RecordDict's id. With check, every
** content hashes to its id and children come first. */
static int rd_round_trip(const unsigned char *blob, uint64_t n, uint64_t chunk, unsigned order, buf_t *out,
                         unsigned char root[SHA256_DIGEST_SIZE], int check, codec_err *err) {
  fo_tree t;
  fo_store s;
  buf_t content;
  uint32_t i, k;
  int rc, has = 0;
  fo_tree_init(&t);
  fo_store_init(&s, UINT64_MAX);
  buf_init(&content, UINT64_MAX);
  rc = fo_deflate_rd(&t, blob, n, chunk, err);
  if (rc == CODEC_OK) memcpy(root, t.obj[t.n - 1].id, SHA256_DIGEST_SIZE);
  for (k = 0; rc == CODEC_OK && k < t.n; k++) {
    unsigned char id[SHA256_DIGEST_SIZE];
    i = order & 1 ? t.n - 1 - k : (k + order / 2) % t.n;
    content.n = 0;
    fo_write_content(&t, i, &content);
    if (content.rc) {
      rc = content.rc;
      break;
    }
    sha256(content.p, content.n, id);
    if (check) {
      const fo_object *o = &t.obj[i];
      uint32_t c;
      FUZZ_CHECK(content.n == fo_content_size(&t, i));
      FUZZ_CHECK(memcmp(id, o->id, SHA256_DIGEST_SIZE) == 0);
      for (c = 0; c < o->nchild; c++) FUZZ_CHECK(t.child[o->child0 + c] < i);
      FUZZ_CHECK((o->type == FO_RECORD_DICT) == (i == t.n - 1));
    }
    rc = fo_store_add(&s, id, content.p, content.n, err);
  }
  if (rc == CODEC_OK) rc = fo_inflate_rd(&s, out, &has, err);
  if (check && rc == CODEC_OK) FUZZ_CHECK(has);
  fo_tree_free(&t);
  fo_store_free(&s);
  buf_free(&content);
  return rc;
}

/* Store the input's objects and inflate them as a RecordDict. */
static int inflate_parts_rd(const uint8_t *data, size_t size, buf_t *out, int *has, codec_err *err) {
  fo_store s;
  int rc = store_parts(data, size, &s, err);
  if (rc == CODEC_OK) rc = fo_inflate_rd(&s, out, has, err);
  fo_store_free(&s);
  return rc;
}

static uint64_t chunk_size(const uint8_t *data, size_t size) { return size > 1 && data[1] ? data[1] : FO_CHUNK_SIZE; }

static int pipeline(const void *arg, buf_t *out) {
  const input *in = arg;
  codec_err err;
  record_t rec, again;
  buf_t inflated;
  int rc;
  if (in->size == 0) return CODEC_OK;
  record_init(&rec);
  record_init(&again);
  buf_init(&inflated, UINT64_MAX);
  if ((in->data[0] & 0x81) == 0x81) {
    size_t skip = in->size > 2 ? 2 : in->size;
    unsigned char root[SHA256_DIGEST_SIZE];
    rc = rd_round_trip(in->data + skip, in->size - skip, chunk_size(in->data, in->size), (in->data[0] >> 1) & 0x3f,
                       &inflated, root, 0, &err);
  } else if (in->data[0] & 1) {
    size_t skip = in->size > 2 ? 2 : in->size;
    rc = record_parse(&rec, in->data + skip, in->size - skip, &err);
    if (rc == CODEC_OK) rc = round_trip(&rec, chunk_size(in->data, in->size), in->data[0] >> 1, &inflated, 0, &err);
  } else {
    int has = 0, rc2; /* the RecordDict inflate's result, rc the record's */
    buf_t rd;
    buf_init(&rd, UINT64_MAX);
    rc2 = inflate_parts_rd(in->data, in->size, &rd, &has, &err);
    buf_append(out, &rc2, sizeof(rc2));
    buf_append(out, &has, sizeof(has));
    buf_append(out, rd.p, rd.n);
    buf_free(&rd);
    rc = inflate_parts(in->data, in->size, &inflated, &err);
    if (rc == CODEC_OK)
      rc = record_parse(&again, inflated.p ? inflated.p : (const unsigned char *)"", inflated.n, &err);
    if (rc == CODEC_OK) {
      buf_t twice;
      buf_init(&twice, UINT64_MAX);
      rc = round_trip(&again, FO_CHUNK_SIZE, 0, &twice, 0, &err);
      buf_append(out, twice.p, twice.n);
      buf_free(&twice);
    }
    if (rc2 == CODEC_NOMEM) rc = rc2; /* the run failed early */
  }
  buf_append(out, &rc, sizeof(rc));
  buf_append(out, inflated.p, inflated.n);
  buf_free(&inflated);
  record_clear(&rec);
  record_clear(&again);
  return rc == CODEC_OK && out->rc ? out->rc : rc;
}

static void check_properties(const uint8_t *data, size_t size) {
  codec_err err;
  record_t rec;
  buf_t inflated, canon, again;
  int rc;
  if (size == 0) return;
  record_init(&rec);
  buf_init(&inflated, UINT64_MAX);
  buf_init(&canon, UINT64_MAX);
  buf_init(&again, UINT64_MAX);
  err.msg[0] = 0;
  if ((data[0] & 0x81) == 0x81) {
    /* A RecordDict: what inflates deflates to the same root id, and is a
    ** fixed point. */
    size_t skip = size > 2 ? 2 : size;
    unsigned char root[SHA256_DIGEST_SIZE], root2[SHA256_DIGEST_SIZE];
    rc = rd_round_trip(data + skip, size - skip, chunk_size(data, size), (data[0] >> 1) & 0x3f, &inflated, root, 1,
                       &err);
    if (rc != CODEC_OK) {
      fuzz_check_error(rc, &err);
      FUZZ_CHECK(rc == CODEC_CORRUPT || rc == CODEC_TOOBIG);
    } else {
      FUZZ_CHECK(rd_round_trip(inflated.p ? inflated.p : (const unsigned char *)"", inflated.n, chunk_size(data, size),
                               1, &again, root2, 1, &err) == CODEC_OK);
      FUZZ_CHECK(memcmp(root, root2, SHA256_DIGEST_SIZE) == 0);
      FUZZ_CHECK(fuzz_same_buf(&again, &inflated));
    }
  } else if (data[0] & 1) {
    /* Deflate, then inflate: the canonical bytes of the record. */
    size_t skip = size > 2 ? 2 : size;
    uint64_t chunk = chunk_size(data, size);
    if (record_parse(&rec, data + skip, size - skip, &err) == CODEC_OK) {
      canonical(&rec, &canon);
      rc = round_trip(&rec, chunk, data[0] >> 1, &inflated, 1, &err);
      FUZZ_CHECK(rc == CODEC_OK);
      FUZZ_CHECK(fuzz_same_buf(&inflated, &canon));
    }
  } else {
    int has = 0;
    buf_t rd, rd2;
    unsigned char root[SHA256_DIGEST_SIZE];
    buf_init(&rd, UINT64_MAX);
    buf_init(&rd2, UINT64_MAX);
    rc = inflate_parts_rd(data, size, &rd, &has, &err);
    if (rc != CODEC_OK) {
      fuzz_check_error(rc, &err);
      FUZZ_CHECK(rc == CODEC_CORRUPT || rc == CODEC_TOOBIG);
      if (data[0] & 2) FUZZ_CHECK(strstr(err.msg, "hashes to") != NULL);
    } else if (has) {
      /* A RecordDict, in the form Flower writes, and a fixed point. */
      FUZZ_CHECK(rd_round_trip(rd.p ? rd.p : (const unsigned char *)"", rd.n, FO_CHUNK_SIZE, 0, &rd2, root, 1, &err) ==
                 CODEC_OK);
      FUZZ_CHECK(fuzz_same_buf(&rd, &rd2));
    } else {
      FUZZ_CHECK(rd.n == 0);
    }
    buf_free(&rd);
    buf_free(&rd2);
    err.msg[0] = 0;
    rc = inflate_parts(data, size, &inflated, &err);
    if (rc != CODEC_OK) {
      fuzz_check_error(rc, &err);
      FUZZ_CHECK(rc == CODEC_CORRUPT || rc == CODEC_TOOBIG);
      if (data[0] & 2) FUZZ_CHECK(strstr(err.msg, "hashes to") != NULL);
    } else {
      /* What inflates is a record in canonical form, and a fixed point. */
      FUZZ_CHECK(!(data[0] & 2));
      FUZZ_CHECK(record_parse(&rec, inflated.p ? inflated.p : (const unsigned char *)"", inflated.n, &err) == CODEC_OK);
      canonical(&rec, &canon);
      FUZZ_CHECK(fuzz_same_buf(&inflated, &canon));
      FUZZ_CHECK(round_trip(&rec, FO_CHUNK_SIZE, 1, &again, 1, &err) == CODEC_OK);
      FUZZ_CHECK(fuzz_same_buf(&again, &inflated));
    }
  }
  record_clear(&rec);
  buf_free(&inflated);
  buf_free(&canon);
  buf_free(&again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  input in;
  fuzz_alloc_setup();
  in.data = data;
  in.size = size;
  check_properties(data, size);
  fuzz_oom_check(pipeline, &in, fuzz_hash(data, size));
  return 0;
}
