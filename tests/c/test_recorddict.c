/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_recorddict.c — unit tests of the RecordDict, MetricRecord and
** ConfigRecord codecs (recorddict.c, valrec.c): Flower's vectors parse,
** their records map to JSON and back to the same bytes, list walking,
** lenient reading, error messages, re-encoding (recorddict_canonical), and
** allocation failures at every step.
*/
#include "unit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codec/recorddict.h"
#include "codec/valrec.h"

/* JSON of the record of item idx, then rebuilt from that JSON: same bytes. */
static int roundtrip(const unsigned char *blob, const recorddict_item *it, buf_t *json) {
  valrec_t vr;
  buf_t back;
  codec_err err;
  int rc, config = it->kind == RECORDDICT_CONFIG;
  valrec_init(&vr);
  rc = valrec_parse(&vr, config, blob, it->record_at, it->record_at + it->record.n, "rec", &err);
  if (rc == CODEC_OK) {
    valrec_to_json(json, &vr);
    buf_init(&back, UINT64_MAX);
    rc = json->rc ? json->rc : valrec_from_json(&back, config, buf_at(json, 0), json->n, "json", &err);
    if (rc == CODEC_OK && (back.n != it->record.n || memcmp(buf_at(&back, 0), it->record.p, (size_t)back.n) != 0))
      rc = -1;
    buf_free(&back);
  }
  valrec_clear(&vr);
  return rc;
}

TEST(recorddict_vectors) {
  static const char *const files[] = {"recorddict/full.pb", "recorddict/metric_types.pb", "recorddict/config_types.pb",
                                      "recorddict/empty_records.pb", "recorddict/shared_records.pb"};
  size_t f;
  for (f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
    uint64_t n;
    unsigned char *blob = unit_read_file(files[f], &n);
    recorddict_t rd;
    buf_t out;
    codec_err err;
    int i;
    CHECK(blob);
    recorddict_init(&rd);
    CHECK(recorddict_parse(&rd, blob, n, &err) == CODEC_OK);
    buf_init(&out, UINT64_MAX);
    for (i = 0; i < rd.n; i++) {
      recorddict_write_item(&out, rd.items[i].name, rd.items[i].kind, rd.items[i].record);
      if (rd.items[i].kind != RECORDDICT_ARRAY) {
        buf_t json;
        buf_init(&json, UINT64_MAX);
        CHECK(roundtrip(blob, &rd.items[i], &json) == CODEC_OK);
        buf_free(&json);
      }
    }
    CHECK(out.n == n && (n == 0 || memcmp(out.p, blob, (size_t)n) == 0));
    buf_free(&out);
    recorddict_clear(&rd);
    free(blob);
  }
}

TEST(recorddict_full_items) {
  uint64_t n;
  unsigned char *blob = unit_read_file("recorddict/full.pb", &n);
  recorddict_t rd;
  codec_err err;
  buf_t json;
  CHECK(blob);
  recorddict_init(&rd);
  CHECK(recorddict_parse(&rd, blob, n, &err) == CODEC_OK);
  CHECK(rd.n == 3 && rd.items[0].kind == RECORDDICT_ARRAY && rd.items[1].kind == RECORDDICT_METRIC);
  CHECK(recorddict_find(&rd, "config", 6) == 2 && recorddict_find(&rd, "x", 1) == -1);
  CHECK_STR(recorddict_kind_name(rd.items[2].kind), "config");
  CHECK(recorddict_kind_from_name("metric", 6) == RECORDDICT_METRIC && recorddict_kind_from_name("arr", 3) == 0);
  buf_init(&json, UINT64_MAX);
  CHECK(roundtrip(blob, &rd.items[2], &json) == CODEC_OK);
  buf_putc(&json, 0);
  CHECK_STR((const char *)json.p, "{\"lr\":0.01,\"local-epochs\":2,\"optimizer\":\"sgd\",\"use-cuda\":false}");
  buf_free(&json);
  recorddict_clear(&rd);
  free(blob);
}

TEST(valrec_lists_and_lenience) {
  /* sint_list: an unpacked element, a packed run, another unpacked one;
  ** an unknown field; a later oneof member replaces the earlier one */
  static const unsigned char rec[] = {0x0a, 0x10, 0x0a, 0x01, 'k',  0x12, 0x0b, 0xb2, 0x01, 0x08,
                                      0x08, 0x02, 0x0a, 0x02, 0x04, 0x06, 0x08, 0x08, 0x38, 0x05};
  static const unsigned char rec2[] = {0x0a, 0x0a, 0x0a, 0x01, 'k', 0x12, 0x05, 0x10, 0x02, 0xaa, 0x01, 0x00};
  valrec_t vr;
  valrec_iter it;
  valrec_elem e;
  codec_err err;
  int64_t want[] = {1, 2, 3, 4}, k = 0;
  valrec_init(&vr);
  CHECK(valrec_parse(&vr, 0, rec, 0, sizeof(rec), "m", &err) == CODEC_OK);
  CHECK(vr.n == 1 && vr.items[0].type == VALREC_SINT_LIST && vr.items[0].nvals == 4);
  valrec_iter_init(&it, &vr.items[0]);
  while (valrec_iter_next(&it, &e)) {
    CHECK(k < 4 && e.i == want[k]);
    k++;
  }
  CHECK(k == 4);
  CHECK(valrec_parse(&vr, 0, rec2, 0, sizeof(rec2), "m", &err) == CODEC_OK);
  CHECK(vr.items[0].type == VALREC_DOUBLE_LIST && vr.items[0].nvals == 0);
  CHECK_STR(valrec_type_name(vr.items[0].type), "double_list");
  valrec_clear(&vr);
}

TEST(valrec_errors) {
  static const unsigned char dup[] = {0x0a, 0x05, 0x0a, 0x01, 'k', 0x12, 0x00};
  static const unsigned char trunc[] = {0x0a, 0x07, 0x0a, 0x01, 'k', 0x12, 0x02, 0x10};
  valrec_t vr;
  codec_err err;
  buf_t out;
  valrec_init(&vr);
  CHECK(valrec_parse(&vr, 0, dup, 0, sizeof(dup), "metric record 'm'", &err) == CODEC_CORRUPT);
  CHECK_STR(err.msg, "metric record 'm' has an item without a value at byte 2 (item 0, key 'k')");
  CHECK(valrec_parse(&vr, 1, trunc, 0, sizeof(trunc), "config record 'c'", &err) == CODEC_CORRUPT);
  CHECK_STR(err.msg, "config record 'c' truncated at byte 8 (item 0)");
  valrec_clear(&vr);
  buf_init(&out, UINT64_MAX);
  CHECK(valrec_from_json(&out, 0, (const unsigned char *)"{\"a\": \"x\"}", 10, "j", &err) == CODEC_CORRUPT);
  CHECK_STR(err.msg, "j: value of key 'a' must be a number or a list of numbers in a metric record at byte 6");
  CHECK(valrec_from_json(&out, 1, (const unsigned char *)"{\"a\": [1, true]}", 16, "j", &err) == CODEC_CORRUPT);
  CHECK(strstr(err.msg, "mixes element types") != NULL);
  buf_free(&out);
}

TEST(valrec_json_spellings) {
  static const char text[] =
      "{\"n\":{\"double\":\"NaN\"},\"i\":{\"double\":\"-Infinity\"},\"z\":-0.0,\"b\":{\"bytes\":\"AAEC\"},"
      "\"u\":18446744073709551615,\"e\":[],\"s\":[\"\",\"\\u00e9\"]}";
  buf_t out, json;
  valrec_t vr;
  codec_err err;
  buf_init(&out, UINT64_MAX);
  CHECK(valrec_from_json(&out, 1, (const unsigned char *)text, strlen(text), "j", &err) == CODEC_OK);
  valrec_init(&vr);
  CHECK(valrec_parse(&vr, 1, out.p, 0, out.n, "c", &err) == CODEC_OK);
  CHECK(vr.n == 7 && isnan(vr.items[0].v.d) && vr.items[1].v.d == -INFINITY && signbit(vr.items[2].v.d));
  CHECK(vr.items[3].type == VALREC_BYTES && vr.items[3].v.s.n == 3 && vr.items[4].type == VALREC_UINT64);
  CHECK(vr.items[5].type == VALREC_BOOL_LIST && vr.items[6].type == VALREC_STRING_LIST && vr.items[6].nvals == 2);
  buf_init(&json, UINT64_MAX);
  valrec_to_json(&json, &vr);
  buf_putc(&json, 0);
  CHECK_STR((const char *)json.p,
            "{\"n\":{\"double\":\"NaN\"},\"i\":{\"double\":\"-Infinity\"},\"z\":-0.0,\"b\":{\"bytes\":\"AAEC\"},"
            "\"u\":18446744073709551615,\"e\":[],\"s\":[\"\",\"\xc3\xa9\"]}");
  buf_free(&json);
  valrec_clear(&vr);
  buf_free(&out);
}

TEST(recorddict_errors) {
  static const unsigned char dupname[] = {0x0a, 0x05, 0x0a, 0x01, 'a', 0x1a, 0x00,
                                          0x0a, 0x05, 0x0a, 0x01, 'a', 0x1a, 0x00};
  static const unsigned char norec[] = {0x0a, 0x03, 0x0a, 0x01, 'm'};
  recorddict_t rd;
  codec_err err;
  recorddict_init(&rd);
  CHECK(recorddict_parse(&rd, dupname, sizeof(dupname), &err) == CODEC_CORRUPT);
  CHECK_STR(err.msg, "record dict has duplicate name 'a' (items 0 and 1)");
  CHECK(recorddict_parse(&rd, norec, sizeof(norec), &err) == CODEC_CORRUPT);
  CHECK_STR(err.msg, "record dict has an item without a record at byte 2 (item 0, key 'm')");
  CHECK(recorddict_parse(&rd, norec, 1, &err) == CODEC_CORRUPT);
  CHECK_STR(err.msg, "record dict truncated at byte 1 (item 0)");
  recorddict_clear(&rd);
}

/* Every allocation failing in turn: CODEC_OK or CODEC_NOMEM, nothing leaked. */
TEST(recorddict_oom) {
  uint64_t n;
  unsigned char *blob = unit_read_file("recorddict/config_types.pb", &n);
  long k;
  CHECK(blob);
  for (k = 0; k < 200; k++) {
    long live = unit_live_allocs();
    recorddict_t rd;
    codec_err err;
    int rc;
    unit_fail_alloc_after(k);
    recorddict_init(&rd);
    rc = recorddict_parse(&rd, blob, n, &err);
    if (rc == CODEC_OK) {
      buf_t json;
      buf_init(&json, UINT64_MAX);
      rc = roundtrip(blob, &rd.items[0], &json);
      buf_free(&json);
    }
    recorddict_clear(&rd);
    unit_fail_alloc_after(-1);
    CHECK(rc == CODEC_OK || rc == CODEC_NOMEM);
    CHECK(unit_live_allocs() == live);
    if (rc == CODEC_OK && !unit_alloc_failed()) break;
  }
  free(blob);
}

/* Flower's vectors are canonical already: re-encoding keeps every byte. */
TEST(recorddict_canonical_vectors) {
  static const char *const files[] = {"recorddict/full.pb", "recorddict/metric_types.pb", "recorddict/config_types.pb",
                                      "recorddict/empty_records.pb", "recorddict/shared_records.pb"};
  size_t f;
  for (f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
    uint64_t n;
    unsigned char *blob = unit_read_file(files[f], &n);
    buf_t out;
    codec_err err;
    CHECK(blob);
    buf_init(&out, UINT64_MAX);
    CHECK(recorddict_canonical(&out, blob, n, &err) == CODEC_OK);
    CHECK(out.n == n && (n == 0 || memcmp(out.p, blob, (size_t)n) == 0));
    buf_free(&out);
    free(blob);
  }
}

/* A RecordDict Flower reads but did not write: an unknown field; item 'm'
** with its record before its name, a metric record whose value (a uint64 7,
** which Flower writes as a sint64) comes before its key; item 'a', an
** array record whose Array has its shape unpacked, its dtype written twice
** (empty, then "uint8") and its key last. */
static const unsigned char messy_rd[] = {0x48, 0x01, 0x0a, 0x0e, 0x1a, 0x09, 0x0a, 0x07, 0x12, 0x02, 0x18, 0x07,
                                         0x0a, 0x01, 0x6b, 0x0a, 0x01, 0x6d, 0x0a, 0x1b, 0x0a, 0x01, 0x61, 0x12,
                                         0x16, 0x0a, 0x14, 0x12, 0x0f, 0x10, 0x02, 0x22, 0x02, 0x01, 0x02, 0x0a,
                                         0x00, 0x0a, 0x05, 0x75, 0x69, 0x6e, 0x74, 0x38, 0x0a, 0x01, 0x77};

TEST(recorddict_canonical_messy) {
  /* what Flower's serde writes for it */
  static const unsigned char want[] = {0x0a, 0x0e, 0x0a, 0x01, 0x6d, 0x1a, 0x09, 0x0a, 0x07, 0x0a, 0x01,
                                       0x6b, 0x12, 0x02, 0x10, 0x0e, 0x0a, 0x1a, 0x0a, 0x01, 0x61, 0x12,
                                       0x15, 0x0a, 0x13, 0x0a, 0x01, 0x77, 0x12, 0x0e, 0x0a, 0x05, 0x75,
                                       0x69, 0x6e, 0x74, 0x38, 0x12, 0x01, 0x02, 0x22, 0x02, 0x01, 0x02};
  unsigned char bad[sizeof(messy_rd)];
  buf_t out;
  codec_err err;
  long k;
  buf_init(&out, UINT64_MAX);
  CHECK(recorddict_canonical(&out, messy_rd, sizeof(messy_rd), &err) == CODEC_OK);
  CHECK(out.n == sizeof(want) && memcmp(out.p, want, sizeof(want)) == 0);
  buf_free(&out);
  /* the result limit: CODEC_TOOBIG */
  buf_init(&out, sizeof(want) - 1);
  CHECK(recorddict_canonical(&out, messy_rd, sizeof(messy_rd), &err) == CODEC_TOOBIG);
  buf_free(&out);
  /* a record that does not read: the uint64 with wire type 1 */
  memcpy(bad, messy_rd, sizeof(bad));
  bad[10] = 0x19;
  buf_init(&out, UINT64_MAX);
  CHECK(recorddict_canonical(&out, bad, sizeof(bad), &err) == CODEC_CORRUPT);
  CHECK_STR(err.msg, "metric record 'm' has wrong wire type 1 for uint64 at byte 10 (item 0, key 'k')");
  buf_free(&out);
  /* every allocation failing in turn */
  for (k = 0; k < 100; k++) {
    long live = unit_live_allocs();
    int rc;
    unit_fail_alloc_after(k);
    buf_init(&out, UINT64_MAX);
    rc = recorddict_canonical(&out, messy_rd, sizeof(messy_rd), &err);
    buf_free(&out);
    unit_fail_alloc_after(-1);
    CHECK(rc == CODEC_OK || rc == CODEC_NOMEM);
    CHECK(unit_live_allocs() == live);
    if (rc == CODEC_OK && !unit_alloc_failed()) break;
  }
  CHECK(k < 100);
}
