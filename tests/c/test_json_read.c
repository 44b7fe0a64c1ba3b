/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_json_read.c — the strict JSON pull reader: walking objects and
** arrays, string decoding, and the errors for malformed documents.
*/
#include "codec/json_read.h"
#include "unit.h"

/* Walk a document of any shape with json_skip; returns the codec result. */
static int skim(const char *text, codec_err *err) {
  json_reader r;
  int rc = json_reader_init(&r, text, strlen(text), 0, "doc", err);
  if (!rc) rc = json_skip(&r);
  if (!rc) rc = json_end(&r);
  return rc;
}

TEST(json_read_accepts_valid_documents) {
  static const char *ok[] = {"{}",
                             " [ ] ",
                             "{\"a\": [1, 2.5e3, -0.5, true, false, null, {\"b\": \"\\u00e9\\n\"}]}",
                             "\"\\ud83d\\ude00\"",
                             "0",
                             "-12.25E+2",
                             "[[[[]]]]",
                             "{\"\xc3\xa9\": \"\xe5\xb1\x82\"}"};
  size_t k;
  codec_err err;
  for (k = 0; k < sizeof(ok) / sizeof(ok[0]); k++) CHECK(skim(ok[k], &err) == CODEC_OK);
}

TEST(json_read_rejects_malformed_documents) {
  static const struct {
    const char *text, *msg;
  } bad[] = {
      {"", "doc: unexpected end of JSON at byte 0"},
      {"{\"a\" 1}", "doc: expected ':' at byte 5"},
      {"{\"a\": 1,}", "doc: expected a string key at byte 8"},
      {"[1 2]", "doc: expected ',' or ']' at byte 3"},
      {"[1,]", "doc: expected a value at byte 3"},
      {"{1: 2}", "doc: expected a string key at byte 1"},
      {"01", "doc: number with a leading zero at byte 0"},
      {"1.", "doc: expected a digit after '.' at byte 0"},
      {"\"abc", "doc: unterminated string at byte 4"},
      {"\"a\tb\"", "doc: control character in a string at byte 2"},
      {"\"\\x\"", "doc: bad escape in a string at byte 1"},
      {"\"\\u12g4\"", "doc: bad \\u escape at byte 1"},
      {"\"\\udc00\"", "doc: unpaired surrogate escape at byte 1"},
      {"\"\\ud800x\"", "doc: unpaired surrogate escape at byte 1"},
      {"tru", "doc: expected a value at byte 0"},
      {"{} x", "doc: unexpected text after the JSON value at byte 3"},
      {"\"\xff\"", "doc is not valid UTF-8"},
  };
  size_t k;
  for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
    codec_err err;
    CHECK(skim(bad[k].text, &err) == CODEC_CORRUPT);
    if (strcmp(err.msg, bad[k].msg) != 0) printf("  got '%s' for '%s'\n", err.msg, bad[k].text);
    CHECK_STR(err.msg, bad[k].msg);
  }
}

/* A NUL byte is text, not the end: json_peek answers 0 for both. */
TEST(json_read_nul_bytes_are_not_the_end) {
  static const struct {
    const char *text;
    size_t n;
    const char *msg;
  } bad[] = {
      {"{}\0", 3, "doc: unexpected text after the JSON value at byte 2"},
      {"[1] \0 ", 6, "doc: unexpected text after the JSON value at byte 4"},
      {"[\0]", 3, "doc: expected a value at byte 1"},
      {"\0", 1, "doc: expected a value at byte 0"},
  };
  size_t k;
  for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
    json_reader r;
    codec_err err;
    int rc = json_reader_init(&r, bad[k].text, bad[k].n, 0, "doc", &err);
    if (!rc) rc = json_skip(&r);
    if (!rc) rc = json_end(&r);
    CHECK(rc == CODEC_CORRUPT);
    CHECK_STR(err.msg, bad[k].msg);
  }
}

TEST(json_read_bounds_nesting) {
  char deep[200];
  codec_err err;
  memset(deep, '[', 100);
  memset(deep + 100, ']', 100);
  CHECK(skim("[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]", &err) == CODEC_OK);
  {
    json_reader r;
    CHECK(json_reader_init(&r, deep, sizeof(deep), 10, "doc", &err) == CODEC_OK);
    CHECK(json_skip(&r) == CODEC_CORRUPT);
    CHECK_STR(err.msg, "doc: JSON nested too deeply at byte 74");
  }
}

TEST(json_read_walks_objects_and_decodes_strings) {
  static const char text[] = "{\"dtype\": \"float32\", \"k\\u00e9\\ud83d\\ude00\\\"\": [3, 18446744073709551615]}";
  json_reader r;
  json_str key, val;
  codec_err err;
  uint64_t a, b;
  int more;
  buf_t out;
  CHECK(json_reader_init(&r, text, sizeof(text) - 1, 100, "doc", &err) == CODEC_OK);
  CHECK(json_begin(&r, '{') == CODEC_OK);
  CHECK(json_next_key(&r, &more, &key) == CODEC_OK && more);
  CHECK(json_str_eq(&key, "dtype") && !json_str_eq(&key, "dtyp") && !json_str_eq(&key, "dtypes"));
  CHECK(json_string(&r, &val) == CODEC_OK && json_str_eq(&val, "float32"));
  CHECK(json_next_key(&r, &more, &key) == CODEC_OK && more && key.escaped);
  CHECK(json_str_eq(&key, "k\xc3\xa9\xf0\x9f\x98\x80\""));
  buf_init(&out, 100);
  CHECK(json_unescape(&key, &out) == CODEC_OK);
  CHECK(out.n == 8 && memcmp(out.p, "k\xc3\xa9\xf0\x9f\x98\x80\"", 8) == 0);
  buf_free(&out);
  CHECK(json_begin(&r, '[') == CODEC_OK);
  CHECK(json_next(&r, &more) == CODEC_OK && more && json_uint(&r, &a) == CODEC_OK && a == 3);
  CHECK(json_next(&r, &more) == CODEC_OK && more && json_uint(&r, &b) == CODEC_OK && b == UINT64_MAX);
  CHECK(json_next(&r, &more) == CODEC_OK && !more);
  CHECK(json_next_key(&r, &more, &key) == CODEC_OK && !more);
  CHECK(json_end(&r) == CODEC_OK);
}

TEST(json_read_uint_rejects_non_integers) {
  static const char *bad[] = {"-1", "1.0", "1e3", "18446744073709551616", "\"1\""};
  static const char *msg[] = {"doc: expected a non-negative integer at byte 110",
                              "doc: expected a non-negative integer at byte 110",
                              "doc: expected a non-negative integer at byte 110", "doc: integer too large at byte 110",
                              "doc: expected a non-negative integer at byte 110"};
  size_t k;
  for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
    json_reader r;
    codec_err err;
    uint64_t v;
    CHECK(json_reader_init(&r, bad[k], strlen(bad[k]), 110, "doc", &err) == CODEC_OK);
    CHECK(json_uint(&r, &v) == CODEC_CORRUPT);
    CHECK_STR(err.msg, msg[k]);
  }
}
