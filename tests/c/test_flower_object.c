/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_flower_object.c — Flower object trees: JSON formatting like Python's
** json.dumps, deflation of the vector records into the exact objects Flower
** made (tests/data/objects), chunking and de-duplication, inflation back to
** the record and the errors inflation reports.
*/
#include <stdlib.h>

#include "codec/flower_object.h"
#include "unit.h"

static unsigned char *read_data(const char *rel, uint64_t *n) {
  unsigned char *p = unit_read_file(rel, n);
  if (!p && *n == 0) p = malloc(1); /* an empty file */
  return p;
}

TEST(fo_pystring_matches_json_dumps) {
  static const char in[] = "a\"b\\c\n\r\t\b\f\x01\x7f\xc3\xa9\xe5\xb1\x82\xf0\x9f\x98\x80~ ";
  static const char want[] = "\"a\\\"b\\\\c\\n\\r\\t\\b\\f\\u0001\\u007f\\u00e9\\u5c42\\ud83d\\ude00~ \"";
  buf_t b;
  buf_init(&b, 1000);
  fo_put_pystring(&b, (const unsigned char *)in, sizeof(in) - 1);
  buf_putc(&b, 0);
  CHECK(b.rc == CODEC_OK);
  CHECK_STR((const char *)b.p, want);
  buf_free(&b);
}

/* The vector records and what Flower made of them. */
static const struct {
  const char *name;
  uint32_t nobjects;
  const char *root;
} vectors[] = {
    {"empty", 1, "c68161c7561379629cbba143e65d069f43f30d933d924a2770859737e0b0d117"},
    {"list_3", 7, "cd636b2726e71ee964b3cace4f3f12070d9ccfa1c35122badeaab274c950ae7c"},
    {"mlp_dict", 11, "5bf00ee0ea706ab9be74632bb19294dd9ca9eb5dbb5634ae23960be4733d66c0"},
    {"unicode_keys", 7, "ff9ba05af567949cc789df7ea1f04e0518a14c8bd929d1021ccb28dcbab2fa96"},
    {"legacy_raw", 5, "3aa42e98131c1078814a2aca7a746d7800974fa38bb8fb23fff7a1005c5243e9"},
};

TEST(fo_deflate_reproduces_flower_objects) {
  size_t v;
  for (v = 0; v < sizeof(vectors) / sizeof(vectors[0]); v++) {
    char path[128], hex[SHA256_HEX_SIZE];
    uint64_t n;
    unsigned char *blob;
    record_t rec;
    fo_tree t;
    codec_err err;
    uint32_t i;
    snprintf(path, sizeof(path), "records/%s.pb", vectors[v].name);
    blob = read_data(path, &n);
    CHECK(blob != NULL);
    record_init(&rec);
    CHECK(record_parse(&rec, blob, n, &err) == CODEC_OK);
    fo_tree_init(&t);
    CHECK(fo_deflate(&t, &rec, FO_CHUNK_SIZE, &err) == CODEC_OK);
    CHECK(t.n == vectors[v].nobjects);
    CHECK(t.obj[t.n - 1].type == FO_ARRAY_RECORD);
    CHECK_STR(sha256_hex(t.obj[t.n - 1].id, hex), vectors[v].root);
    for (i = 0; i < t.n; i++) {
      uint64_t fn;
      unsigned char *want, digest[SHA256_DIGEST_SIZE];
      buf_t content;
      sha256_hex(t.obj[i].id, hex);
      snprintf(path, sizeof(path), "objects/%s/%s.bin", vectors[v].name, hex);
      want = read_data(path, &fn);
      CHECK(want != NULL);
      buf_init(&content, UINT64_MAX);
      fo_write_content(&t, i, &content);
      CHECK(content.rc == CODEC_OK && content.n == fo_content_size(&t, i));
      CHECK(content.n == fn && memcmp(content.p, want, (size_t)fn) == 0);
      sha256(content.p, content.n, digest);
      CHECK(memcmp(digest, t.obj[i].id, sizeof(digest)) == 0);
      /* children come before their parent */
      {
        uint32_t k;
        for (k = 0; k < t.obj[i].nchild; k++) CHECK(t.child[t.obj[i].child0 + k] < i);
      }
      buf_free(&content);
      free(want);
    }
    fo_tree_free(&t);
    record_clear(&rec);
    free(blob);
  }
}

/* A record of raw uint8 items for chunking tests (shape [len], stype ""). */
static void raw_record(buf_t *out, const char *const *keys, const char *const *datas, int n) {
  int i;
  for (i = 0; i < n; i++) {
    record_item_spec spec;
    int64_t shape[1];
    memset(&spec, 0, sizeof(spec));
    spec.key.p = (const unsigned char *)keys[i];
    spec.key.n = strlen(keys[i]);
    spec.dtype.p = (const unsigned char *)"uint8";
    spec.dtype.n = 5;
    shape[0] = (int64_t)strlen(datas[i]);
    spec.ndim = 1;
    spec.shape = shape;
    spec.data.p = (const unsigned char *)datas[i];
    spec.data.n = strlen(datas[i]);
    record_write_item(out, &spec);
  }
}

static void content_text(const fo_tree *t, uint32_t i, char *out, size_t cap) {
  buf_t b;
  buf_init(&b, UINT64_MAX);
  fo_write_content(t, i, &b);
  snprintf(out, cap, "%.*s", (int)b.n, (const char *)b.p);
  buf_free(&b);
}

TEST(fo_deflate_chunks_and_shares_identical_objects) {
  /* chunk size 4: "aaaabbbbaaaacc" -> chunks aaaa bbbb aaaa cc -> ids [0, 1, 0, 2];
  ** item "y" is identical to "x" (one Array object); "z" shares chunk aaaa. */
  static const char *const keys[] = {"x", "y", "z"};
  static const char *const datas[] = {"aaaabbbbaaaacc", "aaaabbbbaaaacc", "aaaa"};
  buf_t blob;
  record_t rec;
  fo_tree t;
  codec_err err;
  char text[512];
  buf_init(&blob, UINT64_MAX);
  raw_record(&blob, keys, datas, 3);
  record_init(&rec);
  CHECK(record_parse(&rec, blob.p, blob.n, &err) == CODEC_OK);
  fo_tree_init(&t);
  CHECK(fo_deflate(&t, &rec, 4, &err) == CODEC_OK);
  /* chunk aaaa, chunk bbbb, chunk cc, Array x, Array z, ArrayRecord */
  CHECK(t.n == 6);
  CHECK(t.obj[0].type == FO_ARRAY_CHUNK && t.obj[1].type == FO_ARRAY_CHUNK && t.obj[2].type == FO_ARRAY_CHUNK);
  CHECK(t.obj[3].type == FO_ARRAY && t.obj[4].type == FO_ARRAY && t.obj[5].type == FO_ARRAY_RECORD);
  content_text(&t, 0, text, sizeof(text));
  CHECK_STR(text, "ArrayChunk  4");
  CHECK(t.obj[3].nchild == 3 && t.obj[4].nchild == 1 && t.obj[5].nchild == 2);
  CHECK(t.child[t.obj[4].child0] == 0); /* z reuses the aaaa chunk */
  content_text(&t, 3, text, sizeof(text));
  CHECK(strncmp(text, "Array ", 6) == 0);
  CHECK(strstr(text, " 78") != NULL);
  {
    buf_t b;
    const char *body;
    buf_init(&b, UINT64_MAX);
    fo_write_content(&t, 3, &b);
    body = memchr(b.p, 0, (size_t)b.n);
    CHECK(body != NULL);
    CHECK((uint64_t)(b.p + b.n - (const unsigned char *)body - 1) == 78);
    CHECK(memcmp(body + 1, "{\"dtype\": \"uint8\", \"shape\": [14], \"stype\": \"\", \"arraychunk_ids\": [0, 1, 0, 2]}",
                 78) == 0);
    buf_free(&b);
  }
  {
    buf_t b;
    buf_init(&b, UINT64_MAX);
    fo_write_children_json(&t, 0, &b);
    CHECK(b.n == 2 && memcmp(b.p, "[]", 2) == 0);
    b.n = 0;
    fo_write_children_json(&t, 5, &b);
    CHECK(b.n == 2 * 66 + 3 && b.p[0] == '[' && b.p[1] == '"' && b.p[66] == '"' && b.p[67] == ',');
    buf_free(&b);
  }
  fo_tree_free(&t);
  record_clear(&rec);
  buf_free(&blob);
}

/* Chunks are hashed two at a time when two whole ones are next to each
** other (sha256_update2): every chunk id, paired or not, on both SHA-256
** paths, must be SHA-256("ArrayChunk  <len>\0" + chunk). */
TEST(fo_deflate_chunk_ids_paired_and_single) {
  static const uint64_t sizes[] = {128, 200, 333, 999, 1000, 1001};
  static const char *const keys[] = {"x"};
  char data[1001], head[48];
  const char *datas[1];
  size_t i, s;
  int path;
  for (i = 0; i < 1000; i++) data[i] = (char)('!' + (i * 37 + i / 91) % 90);
  data[1000] = 0;
  datas[0] = data;
  for (path = 0; path < 2; path++) {
    sha256_force_portable(path);
    for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
      buf_t blob;
      record_t rec;
      fo_tree t;
      codec_err err;
      uint64_t off, k, nchunks = (1000 + sizes[s] - 1) / sizes[s];
      int rc;
      buf_init(&blob, UINT64_MAX);
      raw_record(&blob, keys, datas, 1);
      record_init(&rec);
      fo_tree_init(&t);
      rc = record_parse(&rec, blob.p, blob.n, &err) == CODEC_OK ? fo_deflate(&t, &rec, sizes[s], &err) : -1;
      for (k = 0, off = 0; rc == CODEC_OK && k < nchunks; k++, off += sizes[s]) {
        uint64_t clen = 1000 - off < sizes[s] ? 1000 - off : sizes[s];
        unsigned char want[SHA256_DIGEST_SIZE];
        sha256_ctx c;
        snprintf(head, sizeof(head), "ArrayChunk  %llu", (unsigned long long)clen);
        sha256_init(&c);
        sha256_update(&c, head, strlen(head) + 1);
        sha256_update(&c, data + off, clen);
        sha256_final(&c, want);
        if (t.obj[k].type != FO_ARRAY_CHUNK || memcmp(t.obj[k].id, want, sizeof(want)) != 0) rc = -1;
      }
      fo_tree_free(&t);
      record_clear(&rec);
      buf_free(&blob);
      if (rc != CODEC_OK) sha256_force_portable(0);
      CHECK(rc == CODEC_OK);
    }
  }
  sha256_force_portable(0);
}

/* Deflate blob, feed every object (last first) to a store, inflate. */
static int round_trip(const unsigned char *blob, uint64_t n, uint64_t chunk_size, buf_t *out, codec_err *err) {
  record_t rec;
  fo_tree t;
  fo_store s;
  int rc;
  uint32_t i;
  record_init(&rec);
  fo_tree_init(&t);
  fo_store_init(&s, UINT64_MAX);
  rc = record_parse(&rec, blob, n, err);
  if (!rc) rc = fo_deflate(&t, &rec, chunk_size, err);
  for (i = t.n; rc == CODEC_OK && i-- > 0;) {
    buf_t c;
    buf_init(&c, UINT64_MAX);
    fo_write_content(&t, i, &c);
    rc = c.rc ? c.rc : fo_store_add(&s, t.obj[i].id, c.p ? c.p : (const unsigned char *)"", c.n, err);
    if (!rc) rc = fo_store_add(&s, t.obj[i].id, c.p, c.n, err); /* repeats are ignored */
    buf_free(&c);
  }
  if (!rc) rc = fo_inflate(&s, out, err);
  fo_store_free(&s);
  fo_tree_free(&t);
  record_clear(&rec);
  return rc;
}

TEST(fo_inflate_round_trips_every_vector) {
  size_t v;
  for (v = 0; v < sizeof(vectors) / sizeof(vectors[0]); v++) {
    char path[128];
    uint64_t n;
    unsigned char *blob;
    buf_t out;
    codec_err err;
    snprintf(path, sizeof(path), "records/%s.pb", vectors[v].name);
    blob = read_data(path, &n);
    CHECK(blob != NULL);
    buf_init(&out, UINT64_MAX);
    CHECK(round_trip(blob, n, FO_CHUNK_SIZE, &out, &err) == CODEC_OK);
    CHECK(out.n == n && (n == 0 || memcmp(out.p, blob, (size_t)n) == 0));
    buf_free(&out);
    /* tiny chunks: many chunks, many shared */
    buf_init(&out, UINT64_MAX);
    CHECK(round_trip(blob, n, 7, &out, &err) == CODEC_OK);
    CHECK(out.n == n && (n == 0 || memcmp(out.p, blob, (size_t)n) == 0));
    buf_free(&out);
    free(blob);
  }
}

TEST(fo_deflate_and_inflate_survive_allocation_failures) {
  uint64_t n;
  unsigned char *blob = read_data("records/mlp_dict.pb", &n);
  long k;
  int ok = 0;
  CHECK(blob != NULL);
  for (k = 0; k < 400 && !ok; k++) {
    buf_t out;
    codec_err err;
    int rc;
    buf_init(&out, UINT64_MAX);
    unit_fail_alloc_after(k);
    rc = round_trip(blob, n, 100, &out, &err);
    unit_fail_alloc_after(-1);
    CHECK(rc == CODEC_OK || rc == CODEC_NOMEM);
    if (rc == CODEC_OK) {
      CHECK(out.n == n && memcmp(out.p, blob, (size_t)n) == 0);
      ok = 1;
    }
    buf_free(&out);
  }
  CHECK(ok);
  free(blob);
}

/* --- inflation errors -------------------------------------------------------- */

typedef struct obj {
  unsigned char id[SHA256_DIGEST_SIZE];
  char hex[SHA256_HEX_SIZE];
  buf_t c;
} obj;

/* An object from a head and a body (the NUL goes between them). */
static void make(obj *o, const char *head, const char *body, size_t body_len) {
  buf_init(&o->c, UINT64_MAX);
  buf_puts(&o->c, head);
  buf_putc(&o->c, 0);
  buf_append(&o->c, body, body_len);
  sha256(o->c.p, o->c.n, o->id);
  sha256_hex(o->id, o->hex);
}

/* Inflate a list of objects; returns the rc and leaves the message. */
static int inflate_objs(obj *const *objs, int n, buf_t *out, codec_err *err) {
  fo_store s;
  int i, rc = CODEC_OK;
  fo_store_init(&s, UINT64_MAX);
  for (i = 0; i < n && rc == CODEC_OK; i++) rc = fo_store_add(&s, objs[i]->id, objs[i]->c.p, objs[i]->c.n, err);
  if (!rc) rc = fo_inflate(&s, out, err);
  fo_store_free(&s);
  return rc;
}

TEST(fo_inflate_builds_the_record_from_hand_made_objects) {
  obj chunk, array, rec;
  char head[256], body[512];
  buf_t out;
  codec_err err;
  obj *all[3];
  record_t parsed;
  make(&chunk, "ArrayChunk  3", "\x01\x02\x03", 3);
  snprintf(body, sizeof(body), "{\"dtype\": \"uint8\", \"shape\": [3], \"stype\": \"\", \"arraychunk_ids\": [0]}");
  snprintf(head, sizeof(head), "Array %s %zu", chunk.hex, strlen(body));
  make(&array, head, body, strlen(body));
  snprintf(body, sizeof(body), "{\"k\\u00e9\": \"%s\", \"b\": \"%s\"}", array.hex, array.hex);
  snprintf(head, sizeof(head), "ArrayRecord %s %zu", array.hex, strlen(body));
  make(&rec, head, body, strlen(body));
  all[0] = &rec, all[1] = &chunk, all[2] = &array;
  buf_init(&out, UINT64_MAX);
  CHECK(inflate_objs(all, 3, &out, &err) == CODEC_OK);
  record_init(&parsed);
  CHECK(record_parse(&parsed, out.p, out.n, &err) == CODEC_OK);
  CHECK(parsed.n == 2);
  CHECK(parsed.items[0].key.n == 3 && memcmp(parsed.items[0].key.p, "k\xc3\xa9", 3) == 0);
  CHECK(parsed.items[1].data.n == 3 && memcmp(parsed.items[1].data.p, "\x01\x02\x03", 3) == 0);
  record_clear(&parsed);
  buf_free(&out);
  buf_free(&chunk.c), buf_free(&array.c), buf_free(&rec.c);
}

/* An item whose key, dtype and stype are all empty (and no data): the
** decoded strings take no bytes at all (the sanitizer build checks no
** NULL + 0 is made). */
TEST(fo_inflate_empty_key_dtype_and_stype) {
  obj array, rec;
  char head[256], body[512];
  buf_t out;
  codec_err err;
  obj *all[2];
  record_t parsed;
  snprintf(body, sizeof(body), "{\"dtype\": \"\", \"shape\": [], \"stype\": \"\", \"arraychunk_ids\": []}");
  snprintf(head, sizeof(head), "Array  %zu", strlen(body));
  make(&array, head, body, strlen(body));
  snprintf(body, sizeof(body), "{\"\": \"%s\"}", array.hex);
  snprintf(head, sizeof(head), "ArrayRecord %s %zu", array.hex, strlen(body));
  make(&rec, head, body, strlen(body));
  all[0] = &array, all[1] = &rec;
  buf_init(&out, UINT64_MAX);
  CHECK(inflate_objs(all, 2, &out, &err) == CODEC_OK);
  record_init(&parsed);
  CHECK(record_parse(&parsed, out.p, out.n, &err) == CODEC_OK);
  CHECK(parsed.n == 1 && parsed.items[0].key.n == 0 && parsed.items[0].dtype.n == 0 && parsed.items[0].data.n == 0);
  record_clear(&parsed);
  buf_free(&out);
  buf_free(&array.c), buf_free(&rec.c);
}

/* One malformed tree per case: the objects and the message expected. */
TEST(fo_inflate_names_the_first_problem) {
  obj c1, c2, a1, r1, r2, bad;
  char head[256], body[600], want[400];
  buf_t out;
  codec_err err;
  fo_store s;
  unsigned char wrong[SHA256_DIGEST_SIZE];
  make(&c1, "ArrayChunk  3", "abc", 3);
  make(&c2, "ArrayChunk  1", "z", 1);
  snprintf(body, sizeof(body), "{\"dtype\": \"uint8\", \"shape\": [3], \"stype\": \"\", \"arraychunk_ids\": [0]}");
  snprintf(head, sizeof(head), "Array %s %zu", c1.hex, strlen(body));
  make(&a1, head, body, strlen(body));
  snprintf(body, sizeof(body), "{\"w\": \"%s\"}", a1.hex);
  snprintf(head, sizeof(head), "ArrayRecord %s %zu", a1.hex, strlen(body));
  make(&r1, head, body, strlen(body));
  make(&r2, "ArrayRecord  2", "{}", 2);
  buf_init(&out, UINT64_MAX);

  /* the content does not hash to the id */
  fo_store_init(&s, UINT64_MAX);
  memcpy(wrong, c1.id, sizeof(wrong));
  wrong[0] ^= 1;
  CHECK(fo_store_add(&s, wrong, c1.c.p, c1.c.n, &err) == CODEC_CORRUPT);
  CHECK(strstr(err.msg, "content hashes to") != NULL);
  fo_store_free(&s);

  { /* a missing chunk */
    obj *all[] = {&r1, &a1};
    CHECK(inflate_objs(all, 2, &out, &err) == CODEC_CORRUPT);
    snprintf(want, sizeof(want), "missing ArrayChunk %s (child of Array %s)", c1.hex, a1.hex);
    CHECK_STR(err.msg, want);
  }
  { /* an extra object */
    obj *all[] = {&r1, &a1, &c1, &c2};
    CHECK(inflate_objs(all, 4, &out, &err) == CODEC_CORRUPT);
    snprintf(want, sizeof(want), "object %s (ArrayChunk) is not part of ArrayRecord %s", c2.hex, r1.hex);
    CHECK_STR(err.msg, want);
  }
  { /* two records */
    obj *all[] = {&r1, &a1, &c1, &r2};
    CHECK(inflate_objs(all, 4, &out, &err) == CODEC_CORRUPT);
    CHECK(strncmp(err.msg, "more than one ArrayRecord object", 32) == 0);
  }
  { /* no record */
    obj *all[] = {&a1, &c1};
    CHECK(inflate_objs(all, 2, &out, &err) == CODEC_CORRUPT);
    CHECK_STR(err.msg, "no ArrayRecord object among the 2 objects");
  }
  { /* a chunk where an Array belongs */
    snprintf(body, sizeof(body), "{\"w\": \"%s\"}", c1.hex);
    snprintf(head, sizeof(head), "ArrayRecord %s %zu", c1.hex, strlen(body));
    make(&bad, head, body, strlen(body));
    {
      obj *all[] = {&bad, &c1};
      CHECK(inflate_objs(all, 2, &out, &err) == CODEC_CORRUPT);
      snprintf(want, sizeof(want), "object %s is an ArrayChunk, its parent %s wants an Array", c1.hex, bad.hex);
      CHECK_STR(err.msg, want);
    }
    buf_free(&bad.c);
  }
  { /* chunk index out of range */
    snprintf(body, sizeof(body), "{\"dtype\": \"uint8\", \"shape\": [3], \"stype\": \"\", \"arraychunk_ids\": [0, 1]}");
    snprintf(head, sizeof(head), "Array %s %zu", c1.hex, strlen(body));
    make(&bad, head, body, strlen(body));
    snprintf(body, sizeof(body), "{\"w\": \"%s\"}", bad.hex);
    snprintf(head, sizeof(head), "ArrayRecord %s %zu", bad.hex, strlen(body));
    buf_free(&r2.c);
    make(&r2, head, body, strlen(body));
    {
      obj *all[] = {&r2, &bad, &c1};
      CHECK(inflate_objs(all, 3, &out, &err) == CODEC_CORRUPT);
      snprintf(want, sizeof(want), "Array %s: chunk index 1 is out of range (1 children)", bad.hex);
      CHECK_STR(err.msg, want);
    }
    buf_free(&bad.c);
  }
  { /* a head child the body never uses */
    snprintf(body, sizeof(body), "{\"dtype\": \"uint8\", \"shape\": [3], \"stype\": \"\", \"arraychunk_ids\": [0]}");
    snprintf(head, sizeof(head), "Array %s,%s %zu", c1.hex, c2.hex, strlen(body));
    make(&bad, head, body, strlen(body));
    snprintf(body, sizeof(body), "{\"w\": \"%s\"}", bad.hex);
    snprintf(head, sizeof(head), "ArrayRecord %s %zu", bad.hex, strlen(body));
    buf_free(&r2.c);
    make(&r2, head, body, strlen(body));
    {
      obj *all[] = {&r2, &bad, &c1, &c2};
      CHECK(inflate_objs(all, 4, &out, &err) == CODEC_CORRUPT);
      snprintf(want, sizeof(want), "Array %s lists child %s that its body does not use", bad.hex, c2.hex);
      CHECK_STR(err.msg, want);
    }
    buf_free(&bad.c);
  }
  { /* malformed Array bodies */
    static const char *bodies[] = {
        "{\"dtype\": \"uint8\", \"shape\": [3], \"stype\": \"\"}",
        "{\"dtype\": \"uint8\", \"shape\": [3], \"stype\": \"\", \"arraychunk_ids\": [0], \"x\": 1}",
        "{\"dtype\": 5, \"shape\": [3], \"stype\": \"\", \"arraychunk_ids\": [0]}",
        "{\"dtype\": \"uint8\", \"shape\": [-3], \"stype\": \"\", \"arraychunk_ids\": [0]}",
        "{\"dtype\": \"uint8\", \"shape\": [3], \"stype\": \"\", \"arraychunk_ids\": [0]",
    };
    static const char *problems[] = {
        "body lacks \"arraychunk_ids\"", "body: unexpected key at byte 69", "body: expected a string at byte 10",
        "body: expected a non-negative integer at byte 29", "body: unexpected end of JSON at byte 67"};
    size_t k;
    for (k = 0; k < sizeof(bodies) / sizeof(bodies[0]); k++) {
      snprintf(head, sizeof(head), "Array %s %zu", c1.hex, strlen(bodies[k]));
      make(&bad, head, bodies[k], strlen(bodies[k]));
      snprintf(body, sizeof(body), "{\"w\": \"%s\"}", bad.hex);
      snprintf(head, sizeof(head), "ArrayRecord %s %zu", bad.hex, strlen(body));
      buf_free(&r2.c);
      make(&r2, head, body, strlen(body));
      {
        obj *all[] = {&r2, &bad, &c1};
        CHECK(inflate_objs(all, 3, &out, &err) == CODEC_CORRUPT);
        snprintf(want, sizeof(want), "Array %s %s", bad.hex, problems[k]);
        if (strcmp(err.msg, want) != 0) printf("  got: %s\n", err.msg);
        CHECK_STR(err.msg, want);
      }
      buf_free(&bad.c);
    }
  }
  { /* malformed heads */
    static const char *heads[] = {"ArrayChunk 3", "Blob  3", "ArrayChunk  4", "ArrayChunk  x3", "ArrayChunk a 3"};
    static const char *problems[] = {"head is not '<type> <child ids> <body length>'", "has unknown type 'Blob'",
                                     "head says the body has 4 bytes, it has 3", "bad body length in the head",
                                     "bad child id list in the head"};
    size_t k;
    for (k = 0; k < sizeof(heads) / sizeof(heads[0]); k++) {
      make(&bad, heads[k], "abc", 3);
      fo_store_init(&s, UINT64_MAX);
      CHECK(fo_store_add(&s, bad.id, bad.c.p, bad.c.n, &err) == CODEC_CORRUPT);
      snprintf(want, sizeof(want), k == 1 ? "object %s %s" : "object %s: %s", bad.hex, problems[k]);
      if (strcmp(err.msg, want) != 0) printf("  got: %s\n", err.msg);
      CHECK_STR(err.msg, want);
      fo_store_free(&s);
      buf_free(&bad.c);
    }
  }
  { /* no NUL at all */
    unsigned char id[SHA256_DIGEST_SIZE];
    char hex[SHA256_HEX_SIZE];
    sha256("ArrayChunk", 10, id);
    fo_store_init(&s, UINT64_MAX);
    CHECK(fo_store_add(&s, id, (const unsigned char *)"ArrayChunk", 10, &err) == CODEC_CORRUPT);
    snprintf(want, sizeof(want), "object %s has no head (no NUL byte)", sha256_hex(id, hex));
    CHECK_STR(err.msg, want);
    fo_store_free(&s);
  }
  { /* the store's size limit */
    fo_store_init(&s, 10);
    CHECK(fo_store_add(&s, c1.id, c1.c.p, c1.c.n, &err) == CODEC_TOOBIG);
    fo_store_free(&s);
  }
  buf_free(&out);
  buf_free(&c1.c), buf_free(&c2.c), buf_free(&a1.c), buf_free(&r1.c), buf_free(&r2.c);
}
