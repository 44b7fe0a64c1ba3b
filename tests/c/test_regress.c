/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_regress.c — regression tests for defects found by fuzzing and the
** hardening work (tests/fuzz, tests/bad); each names what it guards.
*/
#include <locale.h>

#include "codec/buf.h"
#include "codec/json.h"
#include "codec/keyset.h"
#include "codec/npy.h"
#include "codec/record.h"
#include "unit.h"

/* buf_extend(b, 0) on a buffer that never allocated computed NULL + 0
** (undefined) and returned NULL, which callers read as failure. */
TEST(regress_buf_extend_zero_on_empty) {
  buf_t b;
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
  return codec_utf8_valid((const unsigned char *)err->msg, strlen(err->msg));
}

TEST(regress_error_messages_stay_utf8) {
  static const char long_dtype[] =
      "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e"
      "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e"
      "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe6\x97\xa5\xe6\x9c\xac"; /* 17 CJK characters, 51 bytes */
  static const unsigned char npy_bad_key[] = "\x93NUMPY\x01\x00\x18\x00{'\xff\xfe': 1, 'descr': 'f'}\n";
  /* Item 0: key "\xff" (invalid), then a value whose length runs past the end. */
  static const unsigned char rec[] = {0x0a, 0x05, 0x0a, 0x01, 0xff, 0x12, 0x09};
  dt_dtype d;
  npy_array a;
  record_t r;
  codec_err err;
  char q[CODEC_QUOTE_MAX];
  CHECK(dt_parse("\xff\xfe<f4", 5, &d, &err) == CODEC_UNSUPPORTED);
  CHECK(msg_is_utf8(&err) && strstr(err.msg, "'?\?<f4'") != NULL);
  CHECK(dt_parse(long_dtype, sizeof(long_dtype) - 1, &d, &err) == CODEC_UNSUPPORTED);
  CHECK(msg_is_utf8(&err) && strstr(err.msg, "...") != NULL);
  CHECK(npy_parse(npy_bad_key, sizeof(npy_bad_key) - 1, &a, &err) == CODEC_CORRUPT);
  CHECK(msg_is_utf8(&err) && strstr(err.msg, "unexpected key '?\?'") != NULL);
  record_init(&r);
  CHECK(record_parse(&r, rec, sizeof(rec), &err) == CODEC_CORRUPT);
  CHECK(msg_is_utf8(&err) && strstr(err.msg, "key '?'") != NULL);
  record_clear(&r);
  /* A message cut at its end drops the split character. */
  CHECK(codec_fail(&err, CODEC_CORRUPT, "%0237d\xe6\x97\xa5", 0) == CODEC_CORRUPT);
  CHECK(msg_is_utf8(&err) && strlen(err.msg) == 237);
  CHECK(strcmp(codec_quote(q, sizeof(q), "a\nb\xc3\xa9", 5), "a?b\xc3\xa9") == 0);
}

/* printf and strtod follow LC_NUMERIC: in a host program that set, say,
** de_DE, npy_to_json printed "1,5.0" (not JSON) and npy_from_json read
** "[2.5]" as 2. Numbers now use '.' whatever the locale. */
TEST(regress_json_numbers_ignore_locale) {
  static const char *comma_locales[] = {"de_DE.UTF-8", "de_DE.utf8", "de_DE", "fr_FR.UTF-8", "ru_RU.UTF-8"};
  static const char json[] = "[2.5, -0.75, 1e-3, 6.25E2]";
  static const double want[] = {2.5, -0.75, 1e-3, 625.0};
  size_t k;
  const char *set = NULL;
  char out[32];
  buf_t b, text;
  dt_dtype d = dt_native(DT_FLOAT64);
  int ndim, ok_values = 1;
  int64_t shape[NPY_MAX_DIMS];
  codec_err err;
  for (k = 0; k < sizeof(comma_locales) / sizeof(comma_locales[0]) && !set; k++) {
    set = setlocale(LC_NUMERIC, comma_locales[k]);
    if (set && strcmp(localeconv()->decimal_point, ",") != 0) set = NULL;
  }
  if (!set) {
    setlocale(LC_NUMERIC, "C");
    SKIP(
        "no locale with a ',' decimal point (Debian: apt-get install locales; localedef -i de_DE -f UTF-8 "
        "de_DE.UTF-8)");
  }
  json_format_float(out, 1.5, 64);
  buf_init(&b, 1000);
  buf_init(&text, 1000);
  if (json_parse_array(json, sizeof(json) - 1, 1, &d, &ndim, shape, &b, &err) == CODEC_OK && ndim == 1 &&
      shape[0] == 4) {
    for (k = 0; k < 4; k++) {
      double v;
      memcpy(&v, b.p + 8 * k, 8);
      ok_values &= v == want[k];
    }
    json_put_array(&text, b.p, d, ndim, shape);
  } else {
    ok_values = 0;
  }
  setlocale(LC_NUMERIC, "C");
  CHECK_STR(out, "1.5");
  CHECK(ok_values);
  CHECK(text.n == 23 && memcmp(text.p, "[2.5,-0.75,0.001,625.0]", 23) == 0);
  buf_free(&b);
  buf_free(&text);
}

/* Key sets hashed keys with plain FNV-1a and took slots from its low bits,
** so keys prepared offline to share those bits all landed in one run of
** slots, and parsing a record (duplicate-key check), ar_merge and ar_agg
** went quadratic: 20,000 such keys in a 275 KB record took 44 times as
** long as ordinary ones, 200,000 would take minutes. The hash is now
** seeded per set and fully mixed. */
TEST(regress_keyset_resists_prepared_collisions) {
  enum { NKEYS = 2000 };
  static char keys[NKEYS][12];
  keyset_t ks;
  uint64_t c, i, run = 0, longest = 0;
  int found = 0;
  /* keys whose plain FNV-1a hashes share their low 12 bits (the set's final
  ** size is 4096 slots) */
  for (c = 0; found < NKEYS; c++) {
    int n = snprintf(keys[found], sizeof(keys[found]), "%llx", (unsigned long long)c), k;
    uint64_t h = UINT64_C(1469598103934665603);
    for (k = 0; k < n; k++) h = (h ^ (unsigned char)keys[found][k]) * UINT64_C(1099511628211);
    if ((h & 0xfff) == 0) found++;
  }
  keyset_init(&ks);
  for (i = 0; i < NKEYS; i++) CHECK(keyset_put(&ks, keys[i], strlen(keys[i]), (int)i) == CODEC_OK);
  CHECK(ks.cap == 4096);
  for (i = 0; i < NKEYS; i++) CHECK(keyset_get(&ks, keys[i], strlen(keys[i])) == (int)i);
  /* the longest run of occupied slots (what a probe may walk) stays short */
  for (i = 0; i < 2 * ks.cap; i++) {
    if (ks.slots[i % ks.cap].value >= 0) {
      if (++run > longest) longest = run;
    } else {
      run = 0;
    }
  }
  keyset_free(&ks);
  CHECK(longest < 400);
}
