/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_record.c — the ArrayRecord protobuf reader under proto3 rules
** (unknown fields of every wire type, groups, packed and unpacked shape,
** repeated `value` merging, last-wins strings, long varints), its errors
** (offsets, item and key in messages), every truncation of every vector,
** duplicate keys on both the pairwise and the hash path, UTF-8 checks, and
** the canonical writer (re-encoding every vector gives Flower's bytes).
**
** Messages are built here with a small protobuf writer of the test's own,
** independent of record.c.
*/
#include <stdlib.h>

#include "codec/array.h"
#include "codec/record.h"
#include "unit.h"

/* --- a tiny protobuf writer for building test messages ------------------ */

typedef struct pb {
  unsigned char b[8192];
  size_t n;
} pb;

static void pb_byte(pb *m, unsigned v) { m->b[m->n++] = (unsigned char)v; }
static void pb_raw(pb *m, const void *p, size_t n) {
  memcpy(m->b + m->n, p, n);
  m->n += n;
}
static void pb_varint(pb *m, uint64_t v) {
  while (v >= 0x80) {
    pb_byte(m, (unsigned)(v & 0x7f) | 0x80);
    v >>= 7;
  }
  pb_byte(m, (unsigned)v);
}
static void pb_tag(pb *m, unsigned field, unsigned wt) { pb_varint(m, (uint64_t)field << 3 | wt); }
static void pb_bytes(pb *m, unsigned field, const void *p, size_t n) {
  pb_tag(m, field, 2);
  pb_varint(m, n);
  pb_raw(m, p, n);
}
static void pb_str(pb *m, unsigned field, const char *s) { pb_bytes(m, field, s, strlen(s)); }
static void pb_sub(pb *m, unsigned field, const pb *sub) { pb_bytes(m, field, sub->b, sub->n); }
static void pb_reset(pb *m) { m->n = 0; }

/* One unknown field of each wire type, a group with a nested group inside. */
static void pb_unknowns(pb *m, unsigned base) {
  static const unsigned char eight[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  pb_tag(m, base, 0);
  pb_varint(m, UINT64_MAX); /* 10-byte varint */
  pb_tag(m, base + 1, 1);
  pb_raw(m, eight, 8);
  pb_bytes(m, base + 2, "junk\xff", 5); /* not UTF-8: unknown bytes are not checked */
  pb_tag(m, base + 3, 3);               /* start group */
  pb_tag(m, 1, 0);
  pb_varint(m, 5);
  pb_tag(m, base + 4, 3); /* nested group */
  pb_tag(m, 2, 5);
  pb_raw(m, eight, 4);
  pb_tag(m, base + 4, 4);
  pb_bytes(m, 3, "x", 1);
  pb_tag(m, base + 3, 4); /* end group */
  pb_tag(m, base + 5, 5);
  pb_raw(m, eight, 4);
  pb_tag(m, 536870911, 0); /* the largest field number */
  pb_varint(m, 1);
}

/* An Array message for a float32 .npy of shape `shape`. */
static void pb_array(pb *m, const char *dtype, const int64_t *shape, int ndim, const char *stype, const void *data,
                     size_t n) {
  pb packed;
  int k;
  pb_reset(&packed);
  if (dtype) pb_str(m, 1, dtype);
  for (k = 0; k < ndim; k++) pb_varint(&packed, (uint64_t)shape[k]);
  if (ndim) pb_sub(m, 2, &packed);
  if (stype) pb_str(m, 3, stype);
  if (n) pb_bytes(m, 4, data, n);
}

static int parse(const pb *m, record_t *rec, codec_err *err) {
  record_init(rec);
  return record_parse(rec, m->b, m->n, err);
}

static int span_is(codec_span s, const char *text) { return s.n == strlen(text) && memcmp(s.p, text, s.n) == 0; }

/* --- reading -------------------------------------------------------------- */

TEST(record_unknown_fields_of_every_wire_type_are_skipped) {
  static const int64_t shape[2] = {2, 3};
  pb arr, item, rec;
  record_t r;
  codec_err err;
  int64_t got[RECORD_MAX_DIMS];
  pb_reset(&arr);
  pb_unknowns(&arr, 5);
  pb_array(&arr, "float32", shape, 2, "raw", "abcdefghijklmnopqrstuvwx", 24);
  pb_unknowns(&arr, 100);
  pb_reset(&item);
  pb_unknowns(&item, 3);
  pb_str(&item, 1, "w");
  pb_unknowns(&item, 7);
  pb_sub(&item, 2, &arr);
  pb_reset(&rec);
  pb_unknowns(&rec, 2);
  pb_sub(&rec, 1, &item);
  pb_unknowns(&rec, 9);
  pb_sub(&rec, 1, &item); /* same key: must be a duplicate */
  CHECK(parse(&rec, &r, &err) == CODEC_CORRUPT);
  CHECK_STR(err.msg, "record has duplicate key 'w' (items 0 and 1)");
  record_clear(&r);
  rec.n = 0;
  pb_unknowns(&rec, 2);
  pb_sub(&rec, 1, &item);
  pb_unknowns(&rec, 9);
  CHECK(parse(&rec, &r, &err) == CODEC_OK);
  CHECK(r.n == 1 && span_is(r.items[0].key, "w") && span_is(r.items[0].dtype, "float32"));
  CHECK(span_is(r.items[0].stype, "raw") && r.items[0].data.n == 24 && r.items[0].ndim == 2);
  CHECK(record_item_shape(&r.items[0], got) == 2 && got[0] == 2 && got[1] == 3);
  /* and the item reads as a legacy raw array */
  {
    npy_array a;
    CHECK(array_open(&r.items[0], 0, &a, &err) == CODEC_OK && a.numel == 6 && a.nbytes == 24);
  }
  record_clear(&r);
}

TEST(record_shape_packed_and_unpacked_mixed) {
  pb arr, item, rec, packed;
  record_t r;
  codec_err err;
  int64_t got[RECORD_MAX_DIMS];
  pb_reset(&arr);
  pb_reset(&packed);
  pb_varint(&packed, 2);
  pb_varint(&packed, 300);
  pb_sub(&arr, 2, &packed); /* packed run: 2, 300 */
  pb_tag(&arr, 2, 0);
  pb_varint(&arr, 4); /* unpacked: 4 */
  pb_str(&arr, 1, "uint8");
  pb_sub(&arr, 2, &packed); /* packed again: 2, 300 */
  pb_tag(&arr, 2, 0);
  pb_byte(&arr, 0x85); /* unpacked 5, written as a non-minimal 10-byte varint */
  {
    int k;
    for (k = 0; k < 8; k++) pb_byte(&arr, 0x80);
    pb_byte(&arr, 0x00);
  }
  pb_reset(&packed);
  pb_sub(&arr, 2, &packed); /* an empty packed run adds nothing */
  pb_reset(&item);
  pb_str(&item, 1, "k");
  pb_sub(&item, 2, &arr);
  pb_reset(&rec);
  pb_sub(&rec, 1, &item);
  CHECK(parse(&rec, &r, &err) == CODEC_OK);
  CHECK(r.items[0].ndim == 6);
  CHECK(record_item_shape(&r.items[0], got) == 6);
  CHECK(got[0] == 2 && got[1] == 300 && got[2] == 4 && got[3] == 2 && got[4] == 300 && got[5] == 5);
  record_clear(&r);
}

TEST(record_repeated_value_merges_and_strings_last_win) {
  static const int64_t s2[1] = {2}, s3[1] = {3};
  pb a1, a2, item, rec;
  record_t r;
  codec_err err;
  int64_t got[RECORD_MAX_DIMS];
  pb_reset(&a1);
  pb_array(&a1, "int8", s2, 1, "first", "zz", 2);
  pb_reset(&a2);
  pb_array(&a2, NULL, s3, 1, NULL, "abcdef", 6); /* no dtype/stype: the first ones stay */
  pb_reset(&item);
  pb_str(&item, 1, "old");
  pb_sub(&item, 2, &a1);
  pb_str(&item, 1, "new"); /* key: last wins */
  pb_sub(&item, 2, &a2);
  pb_reset(&rec);
  pb_sub(&rec, 1, &item);
  CHECK(parse(&rec, &r, &err) == CODEC_OK);
  CHECK(span_is(r.items[0].key, "new") && span_is(r.items[0].dtype, "int8"));
  CHECK(span_is(r.items[0].stype, "first") && span_is(r.items[0].data, "abcdef"));
  /* repeated shape fields concatenate across the merged messages */
  CHECK(record_item_shape(&r.items[0], got) == 2 && got[0] == 2 && got[1] == 3);
  CHECK(record_find(&r, "new", 3) == 0 && record_find(&r, "old", 3) == -1);
  record_clear(&r);
  /* an explicitly empty string replaces the earlier one */
  pb_reset(&a2);
  pb_bytes(&a2, 3, "", 0);
  pb_bytes(&a2, 1, "", 0);
  pb_reset(&item);
  pb_str(&item, 1, "k");
  pb_sub(&item, 2, &a1);
  pb_sub(&item, 2, &a2);
  pb_reset(&rec);
  pb_sub(&rec, 1, &item);
  CHECK(parse(&rec, &r, &err) == CODEC_OK);
  CHECK(r.items[0].stype.n == 0 && r.items[0].dtype.n == 0 && span_is(r.items[0].data, "zz"));
  record_clear(&r);
}

TEST(record_defaults_when_fields_absent) {
  /* an item with no key and no value, and one whose value is empty */
  static const unsigned char bytes[] = {0x0a, 0x00, 0x0a, 0x05, 0x0a, 0x01, 'k', 0x12, 0x00};
  record_t r;
  codec_err err;
  int64_t got[RECORD_MAX_DIMS];
  record_init(&r);
  CHECK(record_parse(&r, bytes, sizeof(bytes), &err) == CODEC_OK && r.n == 2);
  CHECK(r.items[0].key.n == 0 && r.items[0].dtype.n == 0 && r.items[0].data.n == 0 && r.items[0].ndim == 0);
  CHECK(r.items[0].key.p != NULL && r.items[0].data.p != NULL);
  CHECK(span_is(r.items[1].key, "k") && record_item_shape(&r.items[1], got) == 0);
  CHECK(record_item_is_numpy(&r.items[1]) == 0);
  CHECK(r.items[0].offset == 0 && r.items[1].offset == 2);
  record_clear(&r);
  /* the empty record */
  CHECK(record_parse(&r, bytes, 0, &err) == CODEC_OK && r.n == 0);
  record_clear(&r);
}

TEST(record_varints_up_to_10_bytes_11_rejected_tags_up_to_5) {
  /* the items length as a 10-byte non-minimal varint of 0 */
  unsigned char ok[12] = {0x0a, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
  unsigned char bad[13] = {0x0a, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
  record_t r;
  codec_err err;
  record_init(&r);
  CHECK(record_parse(&r, ok, 11, &err) == CODEC_OK && r.n == 1);
  CHECK(record_parse(&r, bad, 12, &err) == CODEC_CORRUPT);
  CHECK_STR(err.msg, "record blob has a varint longer than 10 bytes at byte 1 (item 0)");
  /* tags as protobuf reads them: up to 5 bytes, the value below 2^32 */
  {
    unsigned char tag5[7] = {0x90, 0x80, 0x80, 0x80, 0x00, 0x01};
    unsigned char tag5hi[7] = {0x90, 0x80, 0x80, 0x80, 0x10, 0x01};
    unsigned char tag6[8] = {0x90, 0x80, 0x80, 0x80, 0x80, 0x00, 0x01};
    unsigned char tag10[12] = {0x90, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0x01};
    CHECK(record_parse(&r, tag5, 6, &err) == CODEC_OK && r.n == 0); /* field 2, unknown */
    CHECK(record_parse(&r, tag5hi, 6, &err) == CODEC_CORRUPT);
    CHECK_STR(err.msg, "record blob has an invalid field number at byte 0");
    CHECK(record_parse(&r, tag6, 7, &err) == CODEC_CORRUPT);
    CHECK_STR(err.msg, "record blob has a tag longer than 5 bytes at byte 0");
    CHECK(record_parse(&r, tag10, 11, &err) == CODEC_CORRUPT);
    CHECK_STR(err.msg, "record blob has a tag longer than 5 bytes at byte 0");
  }
  record_clear(&r);
}

TEST(record_structural_errors_name_offset_item_and_key) {
  static const struct {
    const char *bytes;
    size_t n;
    const char *msg;
  } rows[] = {
      {"\x0a", 1, "record blob truncated at byte 1 (item 0)"},
      {"\x0a\x05\x0a\x01", 4, "record blob truncated at byte 4 (item 0)"},
      {"\x0a\x03\x0a\x05k", 5, "record blob truncated at byte 5 (item 0)"},
      /* the item runs past the end, but its key is there to be named */
      {"\x0a\x40\x0a\x01k\x12\x05", 7, "record blob truncated at byte 7 (item 0, key 'k')"},
      {"\x0a\x40\x0a\x01k\x18\x01\x0a\x02k2\x12", 12, "record blob truncated at byte 12 (item 0, key 'k2')"},
      {"\x0a\x40\x0a\x01\xff\x12", 6, "record blob truncated at byte 6 (item 0)"},
      {"\x0a\x05\x0a\x01k\x12\x05", 7, "record blob truncated at byte 7 (item 0, key 'k')"},
      {"\x0a\x07\x0a\x01k\x12\x02\x0a\x05", 9, "record blob truncated at byte 9 (item 0, key 'k')"},
      {"\x10\x01\x0a\x00\x0a", 5, "record blob truncated at byte 5 (item 1)"},
      {"\x0d\x00\x00\x00\x00", 5, "record blob has wrong wire type 5 for ArrayRecord.items at byte 0 (item 0)"},
      {"\x10", 1, "record blob truncated at byte 1"},
      {"\x11\x01\x02", 3, "record blob truncated at byte 3"},
      {"\x0d\x01", 2, "record blob has wrong wire type 5 for ArrayRecord.items at byte 0 (item 0)"},
      {"\x15\x01", 2, "record blob truncated at byte 2"},
      {"\x00\x01", 2, "record blob has an invalid field number at byte 0"},
      {"\x0e", 1, "record blob has invalid wire type 6 at byte 0"},
      {"\x0f", 1, "record blob has invalid wire type 7 at byte 0"},
      {"\x14", 1, "record blob has an unexpected end-group at byte 0"},
      {"\x0c", 1, "record blob has wrong wire type 4 for ArrayRecord.items at byte 0 (item 0)"},
      {"\x10\x01\x24", 3, "record blob has an unexpected end-group at byte 2"},
      {"\x13\x1c", 2, "record blob has a mismatched end-group at byte 1"},
      {"\x13\x08\x01", 3, "record blob truncated inside a group at byte 3"},
      {"\x0a\x02\x08\x01", 4, "record blob has wrong wire type 0 for Item.key at byte 2 (item 0)"},
      {"\x0a\x02\x10\x01", 4, "record blob has wrong wire type 0 for Item.value at byte 2 (item 0)"},
      {"\x0a\x04\x0a\x01k\x15", 6, "record blob has wrong wire type 5 for Item.value at byte 5 (item 0, key 'k')"},
      {"\x0a\x07\x0a\x01k\x12\x02\x08\x01", 9,
       "record blob has wrong wire type 0 for Array.dtype at byte 7 (item 0, key 'k')"},
      {"\x0a\x07\x0a\x01k\x12\x02\x1d\x01", 9,
       "record blob has wrong wire type 5 for Array.stype at byte 7 (item 0, key 'k')"},
      {"\x0a\x07\x0a\x01k\x12\x02\x20\x01", 9,
       "record blob has wrong wire type 0 for Array.data at byte 7 (item 0, key 'k')"},
      {"\x0a\x07\x0a\x01k\x12\x02\x15\x01", 9,
       "record blob has wrong wire type 5 for Array.shape at byte 7 (item 0, key 'k')"},
      {"\x0a\x0f\x0a\x01k\x12\x0a\x10\xff\xff\xff\xff\xff\xff\xff\xff\x01", 17,
       "record blob has negative dimension -1 at byte 8 (item 0, key 'k')"},
      {"\x0a\x0a\x0a\x01k\x12\x05\x12\x03\x02\xff\xff", 12, "record blob truncated at byte 12 (item 0, key 'k')"},
      {"\x0a\x05\x0a\x01k\x1b\x24", 7, "record blob has a mismatched end-group at byte 6 (item 0, key 'k')"},
      {"\x0a\x03\x0a\x01\xff", 5, "record key is not valid UTF-8 at byte 2 (item 0)"},
      /* a key that is not UTF-8, named before it is checked: quoted safely */
      {"\x0a\x06\x0a\x03\xffk\n\x15", 8,
       "record blob has wrong wire type 5 for Item.value at byte 7 (item 0, key '?k?')"},
      {"\x0a\x09\x0a\x01k\x12\x04\x0a\x02\xc3\x28", 11, "record dtype is not valid UTF-8 at byte 2 (item 0, key 'k')"},
      {"\x0a\x09\x0a\x01k\x12\x04\x1a\x02\xed\xa0", 11, "record stype is not valid UTF-8 at byte 2 (item 0, key 'k')"},
  };
  size_t k;
  for (k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
    record_t r;
    codec_err err;
    int rc;
    unsigned char *copy = malloc(rows[k].n); /* exact size: ASan catches over-reads */
    memcpy(copy, rows[k].bytes, rows[k].n);
    record_init(&r);
    rc = record_parse(&r, copy, rows[k].n, &err);
    if (rc != CODEC_CORRUPT || strcmp(err.msg, rows[k].msg))
      printf("  row %d: rc %d %s\n", (int)k, rc, rc ? err.msg : "");
    CHECK(rc == CODEC_CORRUPT);
    CHECK_STR(err.msg, rows[k].msg);
    record_clear(&r);
    free(copy);
  }
}

TEST(record_groups_nest_only_so_deep) {
  pb m;
  record_t r;
  codec_err err;
  int k, depth;
  for (depth = 63; depth <= 65; depth++) {
    pb_reset(&m);
    for (k = 0; k < depth; k++) pb_tag(&m, 5, 3);
    for (k = 0; k < depth; k++) pb_tag(&m, 5, 4);
    CHECK(parse(&m, &r, &err) == (depth <= 64 ? CODEC_OK : CODEC_CORRUPT));
    if (depth > 64) CHECK(strstr(err.msg, "nests groups too deeply") != NULL);
    record_clear(&r);
  }
}

TEST(record_shape_dimension_limits) {
  pb arr, item, rec;
  record_t r;
  codec_err err;
  int64_t shape[RECORD_MAX_DIMS + 1];
  int k;
  for (k = 0; k <= RECORD_MAX_DIMS; k++) shape[k] = 1;
  shape[0] = INT32_MAX;
  for (k = RECORD_MAX_DIMS; k <= RECORD_MAX_DIMS + 1; k++) {
    pb_reset(&arr);
    pb_array(&arr, "uint8", shape, k, NULL, NULL, 0);
    pb_reset(&item);
    pb_str(&item, 1, "k");
    pb_sub(&item, 2, &arr);
    pb_reset(&rec);
    pb_sub(&rec, 1, &item);
    if (k == RECORD_MAX_DIMS) {
      int64_t got[RECORD_MAX_DIMS];
      CHECK(parse(&rec, &r, &err) == CODEC_OK && r.items[0].ndim == RECORD_MAX_DIMS);
      CHECK(record_item_shape(&r.items[0], got) == RECORD_MAX_DIMS && got[0] == INT32_MAX);
    } else {
      CHECK(parse(&rec, &r, &err) == CODEC_CORRUPT);
      CHECK(strstr(err.msg, "a shape with more than 64 dimensions") != NULL);
    }
    record_clear(&r);
  }
  /* int32 on the wire: a varint beyond 32 bits keeps its low 32 bits */
  pb_reset(&arr);
  pb_tag(&arr, 2, 0);
  pb_varint(&arr, (UINT64_C(1) << 32) + 7);
  pb_reset(&item);
  pb_sub(&item, 2, &arr);
  pb_reset(&rec);
  pb_sub(&rec, 1, &item);
  {
    int64_t got[RECORD_MAX_DIMS];
    CHECK(parse(&rec, &r, &err) == CODEC_OK && record_item_shape(&r.items[0], got) == 1 && got[0] == 7);
    record_clear(&r);
  }
}

/* n items with keys "k0".."k{n-1}", optionally item `dup` repeating key 0 */
static void many_items(pb *rec, int n, int dup) {
  int i;
  pb_reset(rec);
  for (i = 0; i < n; i++) {
    pb item, arr;
    char key[16];
    snprintf(key, sizeof(key), "k%d", i == dup ? 3 : i);
    pb_reset(&arr);
    pb_str(&arr, 1, "uint8");
    pb_reset(&item);
    pb_str(&item, 1, key);
    pb_sub(&item, 2, &arr);
    pb_sub(rec, 1, &item);
  }
}

TEST(record_duplicate_keys_pairwise_and_hashed) {
  static pb rec;
  record_t r;
  codec_err err;
  int n;
  for (n = 2; n <= 40; n++) {
    many_items(&rec, n, -1);
    CHECK(parse(&rec, &r, &err) == CODEC_OK && r.n == n);
    CHECK(record_find(&r, "k1", 2) == 1);
    record_clear(&r);
    if (n > 4) {
      char want[80];
      many_items(&rec, n, n - 1); /* last item repeats "k3" */
      CHECK(parse(&rec, &r, &err) == CODEC_CORRUPT);
      snprintf(want, sizeof(want), "record has duplicate key 'k3' (items 3 and %d)", n - 1);
      CHECK_STR(err.msg, want);
      record_clear(&r);
    }
  }
  /* keys that differ only in length or after a common prefix are distinct */
  pb_reset(&rec);
  {
    static const char *keys[] = {"", "a", "aa", "a\xc3\xa9", "b", "A", "a ", " a"};
    size_t k;
    int rep;
    for (rep = 0; rep < 3; rep++) {
      for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
        pb item;
        char key[16];
        snprintf(key, sizeof(key), "%s%d", keys[k], rep);
        pb_reset(&item);
        pb_str(&item, 1, key);
        pb_sub(&rec, 1, &item);
      }
    }
    CHECK(parse(&rec, &r, &err) == CODEC_OK && r.n == 24);
    record_clear(&r);
  }
}

TEST(record_utf8_validation) {
  static const struct {
    const char *s;
    size_t n;
    int valid;
    uint64_t chars;
  } rows[] = {
      {"", 0, 1, 0},
      {"abc", 3, 1, 3},
      {"\xc3\xa9", 2, 1, 1},
      {"\xe5\xb1\x82", 3, 1, 1},
      {"\xf0\x9f\x98\x80", 4, 1, 1},
      {"\xf4\x8f\xbf\xbf", 4, 1, 1},
      {"a\0b", 3, 1, 3},
      {"\xc0\x80", 2, 0, 0},         /* overlong NUL */
      {"\xc1\xbf", 2, 0, 0},         /* overlong */
      {"\xe0\x80\xaf", 3, 0, 0},     /* overlong */
      {"\xf0\x80\x80\xaf", 4, 0, 0}, /* overlong */
      {"\xed\xa0\x80", 3, 0, 0},     /* surrogate */
      {"\xed\xbf\xbf", 3, 0, 0},     /* surrogate */
      {"\xf4\x90\x80\x80", 4, 0, 0}, /* beyond U+10FFFF */
      {"\xf5\x80\x80\x80", 4, 0, 0},
      {"\x80", 1, 0, 0}, /* lone continuation */
      {"\xc3", 1, 0, 0}, /* cut short */
      {"\xe5\xb1", 2, 0, 0},
      {"\xc3\x28", 2, 0, 0}, /* bad continuation */
      {"\xff", 1, 0, 0},
  };
  size_t k;
  for (k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
    CHECK(codec_utf8_valid((const unsigned char *)rows[k].s, rows[k].n) == rows[k].valid);
    if (rows[k].valid) CHECK(codec_utf8_length((const unsigned char *)rows[k].s, rows[k].n) == rows[k].chars);
    /* and as a key */
    {
      pb item, rec;
      record_t r;
      codec_err err;
      pb_reset(&item);
      pb_bytes(&item, 1, rows[k].s, rows[k].n);
      pb_reset(&rec);
      pb_sub(&rec, 1, &item);
      CHECK(parse(&rec, &r, &err) == (rows[k].valid ? CODEC_OK : CODEC_CORRUPT));
      record_clear(&r);
    }
  }
}

TEST(record_quote_key_for_messages) {
  char out[CODEC_QUOTE_MAX];
  static const unsigned char ctl[] = {'a', '\n', 'b', 0x7f, 0};
  unsigned char longkey[100];
  unsigned char accents[60];
  size_t k;
  CHECK_STR(codec_quote(out, sizeof(out), (const unsigned char *)"fc.weight", 9), "fc.weight");
  CHECK_STR(codec_quote(out, sizeof(out), ctl, 5), "a?b??");
  memset(longkey, 'x', sizeof(longkey));
  codec_quote(out, sizeof(out), longkey, sizeof(longkey));
  CHECK(strlen(out) == 51 && strcmp(out + 48, "...") == 0);
  /* never cuts a UTF-8 sequence: 30 two-byte characters */
  for (k = 0; k < 60; k += 2) accents[k] = 0xc3, accents[k + 1] = 0xa9;
  codec_quote(out, sizeof(out), accents, 60);
  CHECK(strlen(out) == 51 && codec_utf8_valid((const unsigned char *)out, 48));
  CHECK_STR(out + 48, "...");
  CHECK_STR(codec_quote(out, sizeof(out), accents, 0), "");
}

/* --- vectors -------------------------------------------------------------- */

static const struct {
  const char *file;
  int len;
  uint64_t count_bytes;
} record_vectors[] = {
    {"records/empty.pb", 0, 0},          {"records/list_3.pb", 3, 428},         {"records/mlp_dict.pb", 5, 4202},
    {"records/unicode_keys.pb", 3, 417}, {"records/legacy_raw.pb", 2, 34},      {"fedavg/f32_client0.pb", -1, 0},
    {"fedavg/f64_result.pb", -1, 0},     {"fedavg/mixed_int_result.pb", -1, 0}, {"fedavg/mixed_int_client3.pb", -1, 0},
};
#define NRECORDS (sizeof(record_vectors) / sizeof(record_vectors[0]))

TEST(record_vectors_parse_and_reencode_byte_identical) {
  size_t k;
  for (k = 0; k < NRECORDS; k++) {
    uint64_t n, total = 0, cb = 0;
    unsigned char *f = unit_read_file(record_vectors[k].file, &n);
    record_t r;
    codec_err err;
    buf_t out;
    int i;
    CHECK(f != NULL);
    record_init(&r);
    CHECK(record_parse(&r, f, n, &err) == CODEC_OK);
    if (record_vectors[k].len >= 0) CHECK(r.n == record_vectors[k].len);
    buf_init(&out, UINT64_MAX);
    for (i = 0; i < r.n; i++) {
      record_item_spec spec;
      int64_t shape[RECORD_MAX_DIMS];
      record_item_spec_from_item(&spec, &r.items[i], shape);
      total += record_item_encoded_size(&spec);
      record_write_item(&out, &spec);
      CHECK(array_validate(&r.items[i], i, &err) == CODEC_OK);
      cb += r.items[i].data.n + codec_utf8_length(r.items[i].key.p, r.items[i].key.n);
    }
    CHECK(out.rc == CODEC_OK && out.n == n && total == n);
    CHECK(n == 0 || memcmp(out.p, f, (size_t)n) == 0);
    if (record_vectors[k].len >= 0) CHECK(cb == record_vectors[k].count_bytes);
    buf_free(&out);
    record_clear(&r);
    free(f);
  }
}

TEST(record_every_truncation_of_every_vector) {
  /* A prefix ending exactly between two items is a shorter valid record;
  ** any other prefix is corrupt. Never a crash or an over-read. */
  size_t k;
  for (k = 0; k < NRECORDS; k++) {
    uint64_t n, cut;
    unsigned char *f = unit_read_file(record_vectors[k].file, &n);
    record_t full, r;
    codec_err err;
    CHECK(f != NULL || n == 0);
    record_init(&full);
    CHECK(record_parse(&full, f ? f : (const unsigned char *)"", n, &err) == CODEC_OK);
    for (cut = 0; cut < n; cut++) {
      unsigned char *p = malloc(cut ? (size_t)cut : 1);
      int rc, boundary = cut == 0, i;
      for (i = 1; i < full.n; i++) boundary |= full.items[i].offset == cut;
      memcpy(p, f, (size_t)cut);
      record_init(&r);
      rc = record_parse(&r, p, cut, &err);
      if (boundary) {
        CHECK(rc == CODEC_OK);
      } else {
        CHECK(rc == CODEC_CORRUPT);
        CHECK(strstr(err.msg, "truncated") != NULL || strstr(err.msg, "wire type") != NULL ||
              strstr(err.msg, "UTF-8") != NULL || strstr(err.msg, "group") != NULL ||
              strstr(err.msg, "field number") != NULL || strstr(err.msg, "varint") != NULL);
      }
      record_clear(&r);
      free(p);
    }
    record_clear(&full);
    free(f);
  }
}

/* --- writing -------------------------------------------------------------- */

TEST(record_writer_omits_defaults_and_packs_shape) {
  record_item_spec spec;
  buf_t out;
  int64_t shape[3] = {2, 300, 0};
  memset(&spec, 0, sizeof(spec));
  buf_init(&out, UINT64_MAX);
  /* everything default: an item holding an empty value */
  record_write_item(&out, &spec);
  CHECK(out.n == 4 && memcmp(out.p, "\x0a\x02\x12\x00", 4) == 0);
  CHECK(record_item_encoded_size(&spec) == 4);
  out.n = 0;
  spec.key.p = (const unsigned char *)"k";
  spec.key.n = 1;
  spec.dtype.p = (const unsigned char *)"f";
  spec.dtype.n = 1;
  spec.ndim = 3;
  spec.shape = shape;
  spec.stype.p = (const unsigned char *)"s";
  spec.stype.n = 1;
  spec.data_head.p = (const unsigned char *)"HE";
  spec.data_head.n = 2;
  spec.data.p = (const unsigned char *)"ad";
  spec.data.n = 2;
  record_write_item(&out, &spec);
  {
    static const unsigned char want[] = {0x0a, 0x17, 0x0a, 0x01, 'k',  0x12, 0x12, 0x0a, 0x01, 'f', 0x12, 0x04, 0x02,
                                         0xac, 0x02, 0x00, 0x1a, 0x01, 's',  0x22, 0x04, 'H',  'E', 'a',  'd',  0x00};
    CHECK(out.n == sizeof(want) - 1 && memcmp(out.p, want, out.n) == 0);
    CHECK(record_item_encoded_size(&spec) == out.n);
  }
  /* a scalar: no shape field at all */
  out.n = 0;
  spec.ndim = 0;
  record_write_item(&out, &spec);
  CHECK(out.n == 19 && out.p[1] == 17 && out.p[7] == 0x0a && out.p[10] == 0x1a);
  buf_free(&out);
}

TEST(record_writer_long_lengths) {
  /* a 200-byte key and 70000 bytes of data need multi-byte lengths */
  static unsigned char data[70000];
  unsigned char key[200];
  record_item_spec spec;
  buf_t out;
  record_t r;
  codec_err err;
  memset(key, 'k', sizeof(key));
  memset(&spec, 0, sizeof(spec));
  spec.key.p = key;
  spec.key.n = sizeof(key);
  spec.data.p = data;
  spec.data.n = sizeof(data);
  buf_init(&out, UINT64_MAX);
  record_write_item(&out, &spec);
  CHECK(out.rc == CODEC_OK && out.n == record_item_encoded_size(&spec));
  record_init(&r);
  CHECK(record_parse(&r, out.p, out.n, &err) == CODEC_OK && r.n == 1);
  CHECK(r.items[0].key.n == 200 && r.items[0].data.n == 70000 && r.items[0].data.p == out.p + out.n - 70000);
  record_clear(&r);
  buf_free(&out);
}
