/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_codec_edges.c — codec paths the SQL surface reaches rarely or not at
** all: element stores with out-of-range values, half-precision rounding,
** float formatting of non-finite values, long formatted appends, hash-set
** collisions and growth, quoting and message truncation, 1-d Fortran copies,
** and allocation failure at every point of record parsing and key sets.
*/
#include <math.h>
#include <stdlib.h>

#include "codec/buf.h"
#include "codec/dtype.h"
#include "codec/json.h"
#include "codec/keyset.h"
#include "codec/npy.h"
#include "codec/record.h"
#include "unit.h"

TEST(edge_dt_store_float_to_int) {
  unsigned char b[8];
  dt_value v;
  dt_dtype i8 = dt_native(DT_INT8), u16 = dt_native(DT_UINT16), i64 = dt_native(DT_INT64);
  dt_dtype u64 = dt_native(DT_UINT64);
  dt_value_double(&v, -3.9); /* truncates toward zero, like astype */
  CHECK(dt_store(b, i8, &v) == 0 && (int8_t)b[0] == -3);
  dt_value_double(&v, 127.99);
  CHECK(dt_store(b, i8, &v) == 0 && (int8_t)b[0] == 127);
  dt_value_double(&v, 128.0);
  CHECK(dt_store(b, i8, &v) == 1);
  dt_value_double(&v, -129.0);
  CHECK(dt_store(b, i8, &v) == 1);
  dt_value_double(&v, 65535.5);
  CHECK(dt_store(b, u16, &v) == 0 && dt_load_double(b, u16) == 65535.0);
  dt_value_double(&v, -0.5); /* truncates to 0: in range */
  CHECK(dt_store(b, u16, &v) == 0 && dt_load_double(b, u16) == 0.0);
  dt_value_double(&v, -1.0);
  CHECK(dt_store(b, u16, &v) == 1);
  dt_value_double(&v, 18446744073709551616.0);
  CHECK(dt_store(b, u64, &v) == 1);
  dt_value_double(&v, 9223372036854775808.0);
  CHECK(dt_store(b, i64, &v) == 1);
  dt_value_double(&v, -9223372036854775808.0);
  CHECK(dt_store(b, i64, &v) == 0);
  dt_value_double(&v, NAN);
  CHECK(dt_store(b, i64, &v) == 1);
  dt_value_double(&v, HUGE_VAL);
  CHECK(dt_store(b, u64, &v) == 1);
  dt_value_double(&v, -HUGE_VAL);
  CHECK(dt_store(b, i8, &v) == 1);
}

TEST(edge_dt_store_conversions) {
  unsigned char b[16];
  dt_value v, w;
  dt_dtype c8 = dt_native(DT_COMPLEX64), bl = dt_native(DT_BOOL), f2 = dt_native(DT_FLOAT16);
  dt_dtype u8 = dt_native(DT_UINT8), c16be = {DT_COMPLEX128, 1};
  /* uint into complex and bool, complex into bool, bool into float16 */
  dt_value_uint(&v, 7);
  CHECK(dt_store(b, c8, &v) == 0);
  dt_load(b, c8, &w);
  CHECK(w.re == 7.0 && w.im == 0.0);
  CHECK(dt_store(b, bl, &v) == 0 && b[0] == 1);
  dt_value_uint(&v, 0);
  CHECK(dt_store(b, bl, &v) == 0 && b[0] == 0);
  v.kind = DT_KIND_COMPLEX;
  v.re = 0.0;
  v.im = 2.0;
  CHECK(dt_store(b, bl, &v) == 0 && b[0] == 1); /* non-zero imaginary part */
  CHECK(dt_store(b, c16be, &v) == 0);
  dt_load(b, c16be, &w);
  CHECK(w.re == 0.0 && w.im == 2.0);
  dt_value_int(&v, 1);
  v.kind = DT_KIND_BOOL;
  CHECK(dt_store(b, f2, &v) == 0 && dt_load_double(b, f2) == 1.0);
  CHECK(dt_store(b, c8, &v) == 0 && dt_load_double(b, c8) == 1.0);
  /* integers wrap to the target width */
  dt_value_int(&v, 300);
  CHECK(dt_store(b, u8, &v) == 0 && b[0] == 44);
  dt_value_uint(&v, UINT64_MAX);
  CHECK(dt_store(b, u8, &v) == 0 && b[0] == 255);
}

/* Every half converts to double and back to itself (NaNs stay NaNs), and
** doubles between two halves round to nearest, ties to even. */
TEST(edge_half_round_trip) {
  uint32_t h;
  for (h = 0; h < 65536; h++) {
    double d = dt_half_to_double((uint16_t)h);
    uint16_t back = dt_double_to_half(d);
    if (d != d)
      CHECK((back & 0x7c00) == 0x7c00 && (back & 0x3ff) != 0);
    else
      CHECK(back == h);
  }
  CHECK(dt_double_to_half(1.0 + ldexp(1.0, -11)) == 0x3c00);     /* tie, even stays */
  CHECK(dt_double_to_half(1.0 + 3 * ldexp(1.0, -11)) == 0x3c02); /* tie, odd rounds up */
  CHECK(dt_double_to_half(1.0 + ldexp(1.0, -11) + ldexp(1.0, -30)) == 0x3c01);
  CHECK(dt_double_to_half(ldexp(1.0, -25)) == 0x0000);     /* tie below the smallest subnormal */
  CHECK(dt_double_to_half(3 * ldexp(1.0, -25)) == 0x0002); /* subnormal tie, odd rounds up */
  CHECK(dt_double_to_half(ldexp(1.0, -25) + ldexp(1.0, -40)) == 0x0001);
  CHECK(dt_double_to_half(ldexp(1.0, -80)) == 0x0000); /* far below: signed zero */
  CHECK(dt_double_to_half(-ldexp(1.0, -80)) == 0x8000);
  CHECK(dt_double_to_half(65520.0) == 0x7c00); /* rounds up to infinity */
  CHECK(dt_double_to_half(65519.99) == 0x7bff);
  CHECK(dt_double_to_half(1e300) == 0x7c00 && dt_double_to_half(-HUGE_VAL) == 0xfc00);
  CHECK((dt_double_to_half(NAN) & 0x7fff) > 0x7c00);
}

TEST(edge_json_format_nonfinite) {
  char out[32];
  buf_t b;
  dt_value v;
  json_format_float(out, NAN, 64);
  CHECK_STR(out, "nan");
  json_format_float(out, HUGE_VAL, 32);
  CHECK_STR(out, "inf");
  json_format_float(out, -HUGE_VAL, 16);
  CHECK_STR(out, "-inf");
  json_format_float(out, 1e16, 64);
  CHECK_STR(out, "1e+16");
  json_format_float(out, 0.0001, 64);
  CHECK_STR(out, "0.0001");
  json_format_float(out, 0.00001, 32);
  CHECK_STR(out, "1e-05");
  buf_init(&b, 100);
  v.kind = DT_KIND_COMPLEX;
  v.re = NAN;
  v.im = -HUGE_VAL;
  json_put_value(&b, &v, DT_COMPLEX64);
  CHECK(b.n == 19 && memcmp(b.p, "[\"NaN\",\"-Infinity\"]", 19) == 0);
  buf_free(&b);
}

TEST(edge_json_put_string_escapes) {
  static const unsigned char s[] = "a\"b\\c\nd\re\tf\x01g\x1f";
  static const char want[] = "\"a\\\"b\\\\c\\nd\\re\\tf\\u0001g\\u001f\"";
  buf_t b;
  buf_init(&b, 100);
  json_put_string(&b, s, sizeof(s) - 1);
  CHECK(b.rc == CODEC_OK && b.n == sizeof(want) - 1 && memcmp(b.p, want, b.n) == 0);
  buf_free(&b);
}

TEST(edge_buf_printf_long_and_limits) {
  buf_t b;
  char big[300];
  memset(big, 'x', sizeof(big) - 1);
  big[sizeof(big) - 1] = 0;
  buf_init(&b, 1000);
  buf_printf(&b, "<%s>", big);
  CHECK(b.rc == CODEC_OK && b.n == 301 && b.p[0] == '<' && b.p[300] == '>');
  buf_printf(&b, "%s%s%s", big, big, big); /* past the limit */
  CHECK(b.rc == CODEC_TOOBIG && b.n == 301);
  buf_putc(&b, 'y'); /* a failed buffer stays failed */
  CHECK(b.rc == CODEC_TOOBIG && b.n == 301);
  buf_free(&b);
  buf_init(&b, 10);
  CHECK(buf_reserve(&b, UINT64_MAX) == CODEC_TOOBIG);
  buf_free(&b);
  buf_init(&b, UINT64_MAX);
  buf_puts(&b, "ab");
  CHECK(buf_reserve(&b, UINT64_MAX - 1) == CODEC_TOOBIG); /* size overflow */
  buf_free(&b);
  buf_init(&b, 100);
  {
    uint64_t n = 99;
    CHECK(buf_detach(&b, &n) == NULL && n == 0);
    CHECK(buf_detach(&b, NULL) == NULL);
  }
  unit_fail_alloc_after(0);
  buf_puts(&b, "abc");
  CHECK(b.rc == CODEC_NOMEM && b.p == NULL);
  unit_fail_alloc_after(-1);
  buf_free(&b);
}

TEST(edge_quote_and_truncation) {
  char q[CODEC_QUOTE_MAX], tiny[8];
  codec_err err;
  CHECK(strcmp(codec_quote(tiny, sizeof(tiny), "abc", 3), "...") == 0); /* too small to show any */
  CHECK(strcmp(codec_quote(q, sizeof(q), "", 0), "") == 0);
  CHECK(strcmp(codec_quote(q, sizeof(q), "\x7f\xc3", 2), "??") == 0); /* DEL, cut character */
  CHECK(strcmp(codec_quote(q, sizeof(q), "\xf0\x9f\x98\x80!", 5), "\xf0\x9f\x98\x80!") == 0);
  CHECK(codec_utf8_seq((const unsigned char *)"\xe0\x80\x80", 3) == 0);     /* overlong */
  CHECK(codec_utf8_seq((const unsigned char *)"\xf0\x8f\xbf\xbf", 4) == 0); /* overlong 4-byte */
  CHECK(codec_utf8_seq((const unsigned char *)"\xf4\x90\x80\x80", 4) == 0); /* past U+10FFFF */
  CHECK(codec_utf8_seq((const unsigned char *)"\xed\xbf\xbf", 3) == 0);     /* surrogate */
  CHECK(codec_utf8_seq((const unsigned char *)"\xee\x80\x80", 3) == 3);
  CHECK(codec_utf8_seq((const unsigned char *)"\xc3\x28", 2) == 0);
  /* cuts at every position of a 4-byte character stay valid */
  {
    int pad;
    for (pad = 230; pad <= 240; pad++) {
      codec_fail(&err, CODEC_CORRUPT, "%0*d\xf0\x9f\x98\x80\xf0\x9f\x98\x80", pad, 0);
      CHECK(codec_utf8_valid((const unsigned char *)err.msg, strlen(err.msg)));
    }
  }
  CHECK(codec_fail(NULL, CODEC_RANGE, "ignored") == CODEC_RANGE);
}

TEST(edge_fortran_1d_and_offsets) {
  static const unsigned char src[6] = {1, 2, 3, 4, 5, 6};
  unsigned char dst[6];
  int64_t shape1[1] = {6}, shape0[2] = {3, 0};
  npy_array a;
  memset(dst, 0, sizeof(dst));
  npy_fortran_to_c(src, dst, 1, shape1, 1);
  CHECK(memcmp(dst, src, 6) == 0);
  npy_fortran_to_c(src, dst, 2, shape0, 1); /* zero elements: nothing to copy */
  memset(&a, 0, sizeof(a));
  a.dtype = dt_native(DT_INT16);
  a.fortran_order = 1;
  a.ndim = 1;
  a.shape[0] = 3;
  CHECK(npy_element_offset(&a, 2) == 4);
  a.ndim = 2;
  a.shape[0] = 2;
  a.shape[1] = 3;
  CHECK(npy_element_offset(&a, 1) == 4); /* C index (0,1) is Fortran element 2 */
  CHECK(npy_element_offset(&a, 3) == 2); /* C index (1,0) is Fortran element 1 */
}

TEST(edge_keyset_collisions_and_growth) {
  keyset_t ks;
  char key[16];
  int i;
  keyset_init(&ks);
  CHECK(keyset_get(&ks, "x", 1) == -1);
  for (i = 0; i < 2000; i++) {
    int n = snprintf(key, sizeof(key), "k%d", i);
    CHECK(keyset_put(&ks, key, (uint64_t)n, i) == CODEC_OK);
  }
  CHECK(keyset_put(&ks, "", 0, 2000) == CODEC_OK);
  for (i = 0; i < 2000; i++) {
    int n = snprintf(key, sizeof(key), "k%d", i);
    CHECK(keyset_get(&ks, key, (uint64_t)n) == i);
    n = snprintf(key, sizeof(key), "m%d", i);
    CHECK(keyset_get(&ks, key, (uint64_t)n) == -1);
  }
  CHECK(keyset_get(&ks, "", 0) == 2000);
  keyset_free(&ks);
  /* a set holding only empty keys never allocates its arena */
  keyset_init(&ks);
  CHECK(keyset_put(&ks, "", 0, 0) == CODEC_OK && keyset_get(&ks, "", 0) == 0);
  CHECK(keyset_get(&ks, "a", 1) == -1);
  keyset_free(&ks);
}

/* An allocation failure anywhere in a keyset or a large record parse is
** reported as CODEC_NOMEM and leaks nothing (the harness counts blocks). */
TEST(edge_alloc_failure_everywhere) {
  unsigned char blob[40 * 9];
  size_t n = 0;
  long k;
  int i;
  for (i = 0; i < 40; i++) { /* 40 items "k00".."k39" with empty values */
    static const unsigned char head[] = {0x0a, 0x07, 0x0a, 0x03, 'k'};
    memcpy(blob + n, head, sizeof(head));
    n += sizeof(head);
    blob[n++] = (unsigned char)('0' + i / 10);
    blob[n++] = (unsigned char)('0' + i % 10);
    blob[n++] = 0x12;
    blob[n++] = 0x00;
  }
  for (k = 0;; k++) {
    record_t rec;
    codec_err err;
    int rc;
    record_init(&rec);
    unit_fail_alloc_after(k);
    rc = record_parse(&rec, blob, n, &err);
    unit_fail_alloc_after(-1);
    record_clear(&rec);
    CHECK(rc == CODEC_OK || rc == CODEC_NOMEM);
    if (rc == CODEC_OK) {
      CHECK(!unit_alloc_failed());
      break;
    }
  }
  CHECK(k > 2); /* the item array grew and the duplicate check hashed */
  for (k = 0;; k++) {
    keyset_t ks;
    int rc = CODEC_OK;
    keyset_init(&ks);
    unit_fail_alloc_after(k);
    for (i = 0; i < 100 && rc == CODEC_OK; i++) {
      char key[8];
      int len = snprintf(key, sizeof(key), "%d", i);
      rc = keyset_put(&ks, key, (uint64_t)len, i);
    }
    unit_fail_alloc_after(-1);
    keyset_free(&ks);
    if (rc == CODEC_OK) break;
    CHECK(rc == CODEC_NOMEM);
  }
}
