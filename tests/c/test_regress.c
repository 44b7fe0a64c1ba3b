/*
** test_regress.c — regression tests for defects found by fuzzing and the
** hardening work (tests/fuzz, tests/bad); each names what it guards.
*/
#include "buf.h"
#include "json.h"
#include "npy.h"
#include "record.h"
#include "unit.h"

/* buf_extend(b, 0) on a buffer that never allocated computed NULL + 0
** (undefined) and returned NULL, which callers read as failure. */
TEST(regress_buf_extend_zero_on_empty) {
  ar_buf b;
  int ndim;
  int64_t shape[NPY_MAX_DIMS];
  codec_err err;
  dt_dtype d = dt_native(DT_FLOAT64);
  buf_init(&b, 100);
  CHECK(buf_extend(&b, 0) != NULL);
  CHECK(b.rc == CODEC_OK && b.n == 0);
  /* npy_from_json('[]') takes that path. */
  CHECK(json_parse_array("[]", 2, 0, &d, &ndim, shape, &b, &err) == CODEC_OK);
  CHECK(ndim == 1 && shape[0] == 0 && b.n == 0);
  buf_free(&b);
}

/* Error messages echo untrusted text (dtype strings, .npy header keys,
** record keys); they printed it raw or cut it mid-character, so a message
** could be invalid UTF-8, which strict decoders (Python's sqlite3) reject. */
static int msg_is_utf8(const codec_err *err) {
  return ar_utf8_valid((const unsigned char *)err->msg, strlen(err->msg));
}

TEST(regress_error_messages_stay_utf8) {
  static const char long_dtype[] = "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e"
                                   "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e"
                                   "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe6\x97\xa5\xe6\x9c\xac"; /* 17 CJK characters, 51 bytes */
  static const unsigned char npy_bad_key[] = "\x93NUMPY\x01\x00\x18\x00{'\xff\xfe': 1, 'descr': 'f'}\n";
  /* Item 0: key "\xff" (invalid), then a value whose length runs past the end. */
  static const unsigned char rec[] = {0x0a, 0x05, 0x0a, 0x01, 0xff, 0x12, 0x09};
  dt_dtype d;
  npy_array a;
  ar_record r;
  codec_err err;
  char q[CODEC_QUOTE_MAX];
  CHECK(dt_parse("\xff\xfe<f4", 5, &d, &err) == CODEC_UNSUPPORTED);
  CHECK(msg_is_utf8(&err) && strstr(err.msg, "'?\?<f4'") != NULL);
  CHECK(dt_parse(long_dtype, sizeof(long_dtype) - 1, &d, &err) == CODEC_UNSUPPORTED);
  CHECK(msg_is_utf8(&err) && strstr(err.msg, "...") != NULL);
  CHECK(npy_parse(npy_bad_key, sizeof(npy_bad_key) - 1, &a, &err) == CODEC_CORRUPT);
  CHECK(msg_is_utf8(&err) && strstr(err.msg, "unexpected key '?\?'") != NULL);
  ar_record_init(&r);
  CHECK(ar_record_parse(&r, rec, sizeof(rec), &err) == CODEC_CORRUPT);
  CHECK(msg_is_utf8(&err) && strstr(err.msg, "key '?'") != NULL);
  ar_record_clear(&r);
  /* A message cut at its end drops the split character. */
  CHECK(codec_fail(&err, CODEC_CORRUPT, "%0237d\xe6\x97\xa5", 0) == CODEC_CORRUPT);
  CHECK(msg_is_utf8(&err) && strlen(err.msg) == 237);
  CHECK(strcmp(codec_quote(q, sizeof(q), "a\nb\xc3\xa9", 5), "a?b\xc3\xa9") == 0);
}
