/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_dtype.c — dtype parsing and naming, element load/store, byte swaps
** and half-precision conversion (exhaustive over all 65536 half values,
** double -> half rounding against an independent nearest-value search).
*/
#include <math.h>
#include <stdlib.h>

#include "codec/dtype.h"
#include "unit.h"

/* --- parsing and naming ------------------------------------------------- */

static int parses_as(const char *s, dt_type t, int big) {
  dt_dtype d;
  codec_err err;
  if (dt_parse(s, strlen(s), &d, &err) != CODEC_OK) return 0;
  return d.type == t && d.big == big;
}

TEST(dtype_parse_names_codes_and_typestrings) {
  /* Every spelling NumPy 1.24 accepts for the numeric types (this machine is
  ** little-endian, as the vectors are). */
  static const struct {
    const char *s;
    dt_type t;
    int big;
  } ok[] = {
      {"bool", DT_BOOL, 0},
      {"int8", DT_INT8, 0},
      {"int16", DT_INT16, 0},
      {"int32", DT_INT32, 0},
      {"int64", DT_INT64, 0},
      {"uint8", DT_UINT8, 0},
      {"uint16", DT_UINT16, 0},
      {"uint32", DT_UINT32, 0},
      {"uint64", DT_UINT64, 0},
      {"float16", DT_FLOAT16, 0},
      {"float32", DT_FLOAT32, 0},
      {"float64", DT_FLOAT64, 0},
      {"complex64", DT_COMPLEX64, 0},
      {"complex128", DT_COMPLEX128, 0},
      {"float", DT_FLOAT64, 0},
      {"int", DT_INT64, 0},
      {"uint", DT_UINT64, 0},
      {"complex", DT_COMPLEX128, 0},
      {"double", DT_FLOAT64, 0},
      {"single", DT_FLOAT32, 0},
      {"half", DT_FLOAT16, 0},
      {"byte", DT_INT8, 0},
      {"ubyte", DT_UINT8, 0},
      {"short", DT_INT16, 0},
      {"ushort", DT_UINT16, 0},
      {"intc", DT_INT32, 0},
      {"uintc", DT_UINT32, 0},
      {"longlong", DT_INT64, 0},
      {"ulonglong", DT_UINT64, 0},
      {"csingle", DT_COMPLEX64, 0},
      {"cdouble", DT_COMPLEX128, 0},
      {"bool_", DT_BOOL, 0},
      {"float_", DT_FLOAT64, 0},
      {"int_", DT_INT64, 0},
      {"complex_", DT_COMPLEX128, 0},
      {"intp", DT_INT64, 0},
      {"uintp", DT_UINT64, 0},
      {"long", DT_INT64, 0},
      {"ulong", DT_UINT64, 0},
      {"bool8", DT_BOOL, 0},
      {"int0", DT_INT64, 0},
      {"uint0", DT_UINT64, 0},
      {"?", DT_BOOL, 0},
      {"b", DT_INT8, 0},
      {"B", DT_UINT8, 0},
      {"h", DT_INT16, 0},
      {"H", DT_UINT16, 0},
      {"i", DT_INT32, 0},
      {"I", DT_UINT32, 0},
      {"l", DT_INT64, 0},
      {"L", DT_UINT64, 0},
      {"q", DT_INT64, 0},
      {"Q", DT_UINT64, 0},
      {"p", DT_INT64, 0},
      {"P", DT_UINT64, 0},
      {"e", DT_FLOAT16, 0},
      {"f", DT_FLOAT32, 0},
      {"d", DT_FLOAT64, 0},
      {"F", DT_COMPLEX64, 0},
      {"D", DT_COMPLEX128, 0},
      {"<f4", DT_FLOAT32, 0},
      {">f4", DT_FLOAT32, 1},
      {"=f4", DT_FLOAT32, 0},
      {"|f4", DT_FLOAT32, 0},
      {"f4", DT_FLOAT32, 0},
      {">c16", DT_COMPLEX128, 1},
      {"<c8", DT_COMPLEX64, 0},
      {">c8", DT_COMPLEX64, 1},
      {"|b1", DT_BOOL, 0},
      {">b1", DT_BOOL, 0},
      {"b1", DT_BOOL, 0},
      {"<i1", DT_INT8, 0},
      {">u1", DT_UINT8, 0},
      {"|u1", DT_UINT8, 0},
      {">i2", DT_INT16, 1},
      {"<u8", DT_UINT64, 0},
      {">f2", DT_FLOAT16, 1},
      {"<?", DT_BOOL, 0},
      {">?", DT_BOOL, 0},
      {">d", DT_FLOAT64, 1},
      {"<f", DT_FLOAT32, 0},
      {"|b", DT_INT8, 0},
      {"<B", DT_UINT8, 0},
      {"f08", DT_FLOAT64, 0},
      {"i08", DT_INT64, 0},
  };
  size_t k;
  for (k = 0; k < sizeof(ok) / sizeof(ok[0]); k++) {
    if (!parses_as(ok[k].s, ok[k].t, ok[k].big)) printf("  dtype %s\n", ok[k].s);
    CHECK(parses_as(ok[k].s, ok[k].t, ok[k].big));
  }
}

TEST(dtype_parse_rejects_non_numeric_with_reason) {
  static const struct {
    const char *s, *msg;
  } bad[] = {
      {"<U2", "unsupported dtype '<U2' (unicode strings are not numeric)"},
      {"|S3", "unsupported dtype '|S3' (byte strings are not numeric)"},
      {"a", "unsupported dtype 'a' (byte strings are not numeric)"},
      {"|O", "unsupported dtype '|O' (object arrays hold pickled Python objects, which are never loaded)"},
      {"O", "unsupported dtype 'O' (object arrays hold pickled Python objects, which are never loaded)"},
      {"|V8", "unsupported dtype '|V8' (void/structured data is not numeric)"},
      {"<M8", "unsupported dtype '<M8' (datetimes are not supported)"},
      {"m8", "unsupported dtype 'm8' (datetimes are not supported)"},
      {"<f16", "unsupported dtype '<f16' (long double has no portable layout)"},
      {"c32", "unsupported dtype 'c32' (long double has no portable layout)"},
      {"g", "unsupported dtype 'g' (long double has no portable layout)"},
      {"G", "unsupported dtype 'G' (long double has no portable layout)"},
      {"<q9", "unsupported dtype '<q9' (not a NumPy numeric dtype)"},
      {"", "unsupported dtype '' (not a NumPy numeric dtype)"},
      {"u", "unsupported dtype 'u' (not a NumPy numeric dtype)"},
      {"b2", "unsupported dtype 'b2' (not a NumPy numeric dtype)"},
      {"i0", "unsupported dtype 'i0' (not a NumPy numeric dtype)"},
      {"f3", "unsupported dtype 'f3' (not a NumPy numeric dtype)"},
      {" f4", "unsupported dtype ' f4' (not a NumPy numeric dtype)"},
      {"f4 ", "unsupported dtype 'f4 ' (not a NumPy numeric dtype)"},
      {"Float32", "unsupported dtype 'Float32' (not a NumPy numeric dtype)"},
      {"<", "unsupported dtype '<' (not a NumPy numeric dtype)"},
      {"f4444", "unsupported dtype 'f4444' (not a NumPy numeric dtype)"},
      {"float128", "unsupported dtype 'float128' (long double has no portable layout)"},
      {"longdouble", "unsupported dtype 'longdouble' (long double has no portable layout)"},
      {"clongdouble", "unsupported dtype 'clongdouble' (long double has no portable layout)"},
      {"complex256", "unsupported dtype 'complex256' (long double has no portable layout)"},
      {"object", "unsupported dtype 'object' (object arrays hold pickled Python objects, which are never loaded)"},
      {"str", "unsupported dtype 'str' (unicode strings are not numeric)"},
  };
  size_t k;
  for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
    dt_dtype d;
    codec_err err;
    CHECK(dt_parse(bad[k].s, strlen(bad[k].s), &d, &err) == CODEC_UNSUPPORTED);
    if (strcmp(err.msg, bad[k].msg) != 0) printf("  got: %s\n", err.msg);
    CHECK_STR(err.msg, bad[k].msg);
  }
}

TEST(dtype_parse_uses_length_not_terminator) {
  dt_dtype d;
  codec_err err;
  /* "float32" followed by garbage the caller did not include */
  CHECK(dt_parse("float32xyz", 7, &d, &err) == CODEC_OK && d.type == DT_FLOAT32);
  CHECK(dt_parse("<f4\0", 4, &d, &err) == CODEC_UNSUPPORTED);
  /* long names are cut in the message */
  {
    char longname[200];
    memset(longname, 'x', sizeof(longname));
    CHECK(dt_parse(longname, sizeof(longname), &d, &err) == CODEC_UNSUPPORTED);
    CHECK(strlen(err.msg) < 100);
  }
}

TEST(dtype_names_and_descrs_follow_numpy) {
  static const struct {
    dt_type t;
    const char *name, *le, *be;
  } rows[] = {
      {DT_BOOL, "bool", "|b1", "|b1"},           {DT_INT8, "int8", "|i1", "|i1"},
      {DT_INT16, "int16", "<i2", ">i2"},         {DT_INT32, "int32", "<i4", ">i4"},
      {DT_INT64, "int64", "<i8", ">i8"},         {DT_UINT8, "uint8", "|u1", "|u1"},
      {DT_UINT16, "uint16", "<u2", ">u2"},       {DT_UINT32, "uint32", "<u4", ">u4"},
      {DT_UINT64, "uint64", "<u8", ">u8"},       {DT_FLOAT16, "float16", "<f2", ">f2"},
      {DT_FLOAT32, "float32", "<f4", ">f4"},     {DT_FLOAT64, "float64", "<f8", ">f8"},
      {DT_COMPLEX64, "complex64", "<c8", ">c8"}, {DT_COMPLEX128, "complex128", "<c16", ">c16"},
  };
  size_t k;
  CHECK(!dt_host_big()); /* the expectations below are for a little-endian host */
  for (k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
    char out[DT_NAME_MAX];
    dt_dtype d = dt_native(rows[k].t);
    int one_byte = dt_size(rows[k].t) == 1;
    dt_name(d, out);
    CHECK_STR(out, rows[k].name);
    dt_descr(d, out);
    CHECK_STR(out, rows[k].le);
    d.big = (unsigned char)!one_byte; /* 1-byte types have no byte order */
    dt_descr(d, out);
    CHECK_STR(out, rows[k].be);
    dt_name(d, out);
    /* str(np.dtype('>f4')) is '>f4' on a little-endian machine */
    CHECK_STR(out, one_byte ? rows[k].name : rows[k].be);
    CHECK_STR(dt_type_name(rows[k].t), rows[k].name);
    /* every descr and name parses back to the same dtype */
    {
      dt_dtype back;
      codec_err err;
      dt_descr(d, out);
      CHECK(dt_parse(out, strlen(out), &back, &err) == CODEC_OK && back.type == d.type && back.big == d.big);
      dt_name(d, out);
      CHECK(dt_parse(out, strlen(out), &back, &err) == CODEC_OK && back.type == d.type && back.big == d.big);
    }
  }
  CHECK(dt_size(DT_COMPLEX128) == 16 && dt_kind(DT_COMPLEX128) == 'c' && dt_kind(DT_BOOL) == 'b');
  CHECK(dt_size(DT_FLOAT16) == 2 && dt_kind(DT_UINT32) == 'u' && dt_kind(DT_INT8) == 'i');
}

/* --- element access ------------------------------------------------------ */

TEST(dtype_load_both_byte_orders) {
  static const unsigned char be_i32[4] = {0xff, 0xff, 0xff, 0xfe}; /* -2 */
  static const unsigned char le_i16[2] = {0x00, 0x80};             /* -32768 */
  static const unsigned char le_u64[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  static const unsigned char be_f64[8] = {0x3f, 0xf8, 0, 0, 0, 0, 0, 0};   /* 1.5 */
  static const unsigned char le_f16[2] = {0x00, 0x3c};                     /* 1.0 */
  static const unsigned char be_c8[8] = {0x3f, 0x80, 0, 0, 0xc0, 0, 0, 0}; /* 1 - 2j */
  static const unsigned char b[1] = {2};
  dt_dtype d;
  dt_value v;
  d.type = DT_INT32, d.big = 1;
  dt_load(be_i32, d, &v);
  CHECK(v.kind == 'i' && v.i == -2 && v.re == -2.0);
  d.type = DT_INT16, d.big = 0;
  dt_load(le_i16, d, &v);
  CHECK(v.kind == 'i' && v.i == -32768);
  d.type = DT_UINT64, d.big = 0;
  dt_load(le_u64, d, &v);
  CHECK(v.kind == 'u' && v.u == UINT64_MAX);
  d.type = DT_FLOAT64, d.big = 1;
  dt_load(be_f64, d, &v);
  CHECK(v.kind == 'f' && v.re == 1.5 && dt_load_double(be_f64, d) == 1.5);
  d.type = DT_FLOAT16, d.big = 0;
  CHECK(dt_load_double(le_f16, d) == 1.0);
  d.type = DT_COMPLEX64, d.big = 1;
  dt_load(be_c8, d, &v);
  CHECK(v.kind == 'c' && v.re == 1.0 && v.im == -2.0);
  d.type = DT_BOOL, d.big = 0;
  dt_load(b, d, &v);
  CHECK(v.kind == 'b' && v.i == 1);
}

TEST(dtype_store_load_round_trip_every_type_and_order) {
  int t, big;
  for (t = 0; t < DT_NTYPES; t++) {
    for (big = 0; big <= 1; big++) {
      dt_dtype d;
      unsigned char buf[16], swapped[16];
      dt_value in, out;
      d.type = (unsigned char)t;
      d.big = (unsigned char)(big && dt_size((dt_type)t) > 1);
      if (dt_kind((dt_type)t) == 'u')
        dt_value_uint(&in, 1 + (uint64_t)t);
      else if (dt_kind((dt_type)t) == 'i')
        dt_value_int(&in, -1 - t);
      else
        dt_value_double(&in, t == DT_BOOL ? 1.0 : -0.5 - t);
      if (dt_kind((dt_type)t) == 'c') in.kind = 'c', in.im = 0.25;
      CHECK(dt_store(buf, d, &in) == 0);
      dt_load(buf, d, &out);
      if (out.re != in.re || out.im != in.im)
        printf("  type %d big %d: %g%+gj -> %g%+gj\n", t, big, in.re, in.im, out.re, out.im);
      CHECK(out.re == in.re && out.im == in.im);
      /* the same bytes swapped read the same in the other byte order */
      if (dt_size((dt_type)t) > 1) {
        dt_dtype other = d;
        memcpy(swapped, buf, dt_size((dt_type)t));
        dt_byteswap(swapped, 1, d);
        other.big = (unsigned char)!d.big;
        dt_load(swapped, other, &out);
        CHECK(out.re == in.re && out.im == in.im);
      }
    }
  }
}

TEST(dtype_store_converts_like_astype) {
  unsigned char buf[16];
  dt_value v;
  dt_dtype d;
  /* integers wrap to the target width */
  d = dt_native(DT_INT8);
  dt_value_int(&v, 300);
  CHECK(dt_store(buf, d, &v) == 0 && (signed char)buf[0] == 44);
  d = dt_native(DT_UINT16);
  dt_value_int(&v, -1);
  CHECK(dt_store(buf, d, &v) == 0 && buf[0] == 0xff && buf[1] == 0xff);
  /* float to integer truncates toward zero */
  d = dt_native(DT_INT32);
  dt_value_double(&v, -2.9);
  CHECK(dt_store(buf, d, &v) == 0 && dt_load_double(buf, d) == -2.0);
  /* NaN, infinities and out-of-range floats are not stored */
  dt_value_double(&v, NAN);
  CHECK(dt_store(buf, d, &v) == 1);
  dt_value_double(&v, HUGE_VAL);
  CHECK(dt_store(buf, d, &v) == 1);
  dt_value_double(&v, 2147483648.0);
  CHECK(dt_store(buf, d, &v) == 1);
  dt_value_double(&v, -2147483648.0);
  CHECK(dt_store(buf, d, &v) == 0 && dt_load_double(buf, d) == -2147483648.0);
  d = dt_native(DT_UINT8);
  dt_value_double(&v, -0.5); /* truncates to 0, in range */
  CHECK(dt_store(buf, d, &v) == 0 && buf[0] == 0);
  dt_value_double(&v, -1.0);
  CHECK(dt_store(buf, d, &v) == 1);
  dt_value_double(&v, 256.0);
  CHECK(dt_store(buf, d, &v) == 1);
  d = dt_native(DT_UINT64);
  dt_value_double(&v, 18446744073709549568.0); /* largest double below 2^64 */
  CHECK(dt_store(buf, d, &v) == 0);
  dt_load(buf, d, &v);
  CHECK(v.u == UINT64_C(18446744073709549568));
  dt_value_double(&v, 18446744073709551616.0);
  CHECK(dt_store(buf, d, &v) == 1);
  /* anything to bool tests for non-zero, complex included */
  d = dt_native(DT_BOOL);
  dt_value_double(&v, NAN);
  CHECK(dt_store(buf, d, &v) == 0 && buf[0] == 1);
  dt_value_double(&v, -0.0);
  CHECK(dt_store(buf, d, &v) == 0 && buf[0] == 0);
  v.kind = 'c', v.re = 0, v.im = 1;
  CHECK(dt_store(buf, d, &v) == 0 && buf[0] == 1);
  dt_value_uint(&v, UINT64_C(1) << 63);
  CHECK(dt_store(buf, d, &v) == 0 && buf[0] == 1);
  /* complex to real drops the imaginary part; real to complex has im 0 */
  d = dt_native(DT_FLOAT32);
  v.kind = 'c', v.re = 1.5, v.im = 7;
  CHECK(dt_store(buf, d, &v) == 0 && dt_load_double(buf, d) == 1.5);
  d = dt_native(DT_COMPLEX128);
  dt_value_int(&v, -3);
  CHECK(dt_store(buf, d, &v) == 0);
  dt_load(buf, d, &v);
  CHECK(v.re == -3.0 && v.im == 0.0);
  /* uint64 above 2^53 into float64 rounds */
  d = dt_native(DT_FLOAT64);
  dt_value_uint(&v, UINT64_MAX);
  CHECK(dt_store(buf, d, &v) == 0 && dt_load_double(buf, d) == 18446744073709551616.0);
}

TEST(dtype_byteswap_counts_items_and_complex_halves) {
  unsigned char p[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  static const unsigned char c8[16] = {4, 3, 2, 1, 8, 7, 6, 5, 12, 11, 10, 9, 16, 15, 14, 13};
  static const unsigned char i2[16] = {2, 1, 4, 3, 6, 5, 8, 7, 9, 10, 11, 12, 13, 14, 15, 16};
  unsigned char q[16];
  memcpy(q, p, 16);
  dt_byteswap(q, 2, dt_native(DT_COMPLEX64)); /* 2 items = 4 float halves */
  CHECK(memcmp(q, c8, 16) == 0);
  memcpy(q, p, 16);
  dt_byteswap(q, 4, dt_native(DT_INT16)); /* only the first 8 bytes */
  CHECK(memcmp(q, i2, 16) == 0);
  memcpy(q, p, 16);
  dt_byteswap(q, 16, dt_native(DT_UINT8)); /* no byte order */
  CHECK(memcmp(q, p, 16) == 0);
}

/* --- half precision ------------------------------------------------------ */

/* Independent reference: the value of half bits h, from the definition. */
static double half_value(uint16_t h) {
  int sign = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  double v;
  if (e == 31) return m ? NAN : (sign ? -HUGE_VAL : HUGE_VAL);
  v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
  return sign ? -v : v;
}

TEST(half_to_double_exhaustive) {
  uint32_t h;
  for (h = 0; h < 65536; h++) {
    double got = dt_half_to_double((uint16_t)h), want = half_value((uint16_t)h);
    if (want != want) {
      CHECK(got != got);
    } else {
      CHECK(got == want && signbit(got) == signbit(want));
    }
  }
}

TEST(half_round_trip_exhaustive) {
  /* every half value, NaN payloads and signed zeros included, survives
  ** half -> double -> half bit for bit */
  uint32_t h;
  for (h = 0; h < 65536; h++) CHECK(dt_double_to_half(dt_half_to_double((uint16_t)h)) == h);
}

/* Reference rounding of a finite double to half: search the sorted positive
** halves for the neighbours and pick the nearer, ties to the even mantissa;
** at or beyond 65520 (max + half an ulp) the result is infinity. */
static uint16_t ref_double_to_half(double d) {
  uint16_t sign = signbit(d) ? 0x8000 : 0;
  double a = fabs(d);
  uint16_t lo = 0, hi = 0x7bff, mid;
  double vlo, vhi;
  if (a >= 65520.0) return sign | 0x7c00;
  if (a >= half_value(0x7bff)) return sign | 0x7bff;
  /* largest half <= a */
  while (lo < hi) {
    mid = (uint16_t)((lo + hi + 1) / 2);
    if (half_value(mid) <= a)
      lo = mid;
    else
      hi = (uint16_t)(mid - 1);
  }
  vlo = half_value(lo);
  vhi = half_value((uint16_t)(lo + 1));
  if (a - vlo < vhi - a) return sign | lo;
  if (a - vlo > vhi - a) return sign | (uint16_t)(lo + 1);
  return sign | ((lo & 1) ? (uint16_t)(lo + 1) : lo);
}

static uint64_t lcg(uint64_t *s) {
  *s = *s * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
  return *s >> 11;
}

TEST(double_to_half_rounds_to_nearest_even) {
  uint32_t h;
  uint64_t seed = 12345;
  int k;
  /* midpoints between neighbouring halves (ties) and a hair either side */
  for (h = 0; h < 0x7bff; h++) {
    double a = half_value((uint16_t)h), b = half_value((uint16_t)(h + 1)), m = (a + b) / 2;
    double probes[5];
    int j;
    probes[0] = m;
    probes[1] = nextafter(m, 0);
    probes[2] = nextafter(m, HUGE_VAL);
    probes[3] = a + (b - a) / 4;
    probes[4] = -m;
    for (j = 0; j < 5; j++) {
      uint16_t got = dt_double_to_half(probes[j]), want = ref_double_to_half(probes[j]);
      if (got != want) printf("  %.17g: got %04x want %04x\n", probes[j], got, want);
      CHECK(got == want);
    }
  }
  /* overflow threshold, underflow, tiny and double-subnormal inputs */
  {
    static const double edge[] = {65504.0,
                                  65519.99999999999,
                                  65520.0,
                                  1e300,
                                  -65520.0,
                                  0x1p-24,
                                  0x1p-25,
                                  0x1.0000000000001p-25,
                                  0x1p-26,
                                  4.9e-324,
                                  0x1p-1022,
                                  0x1.ffcp-15,
                                  0x1.ffep-15,
                                  0x1p-14,
                                  -0.0,
                                  0.0,
                                  1.00048828125 /* 1 + 2^-11: tie */,
                                  1.0004882812500002};
    for (k = 0; k < (int)(sizeof(edge) / sizeof(edge[0])); k++) {
      CHECK(dt_double_to_half(edge[k]) == ref_double_to_half(edge[k]));
    }
  }
  /* 1 + 2^-11 + 2^-40 rounds up in one step (NumPy: 0x3c01); rounding via
  ** float32 first would give 0x3c00 */
  CHECK(dt_double_to_half(1.0 + 0x1p-11 + 0x1p-40) == 0x3c01);
  /* random doubles across the half range, both signs */
  for (k = 0; k < 200000; k++) {
    double d = ldexp((double)(lcg(&seed) & ((UINT64_C(1) << 53) - 1)), (int)(lcg(&seed) % 50) - 80);
    if (k & 1) d = -d;
    CHECK(dt_double_to_half(d) == ref_double_to_half(d));
  }
  /* non-finite */
  CHECK(dt_double_to_half(HUGE_VAL) == 0x7c00);
  CHECK(dt_double_to_half(-HUGE_VAL) == 0xfc00);
  CHECK(dt_double_to_half(NAN) == 0x7e00);
}

TEST(double_to_half_nan_payloads_like_numpy) {
  /* NumPy keeps the top payload bits and makes sure the result stays a NaN:
  ** 0x7ff0000000000001 -> 0x7c01, 0x7ff8000000000000 -> 0x7e00. */
  static const struct {
    uint64_t bits;
    uint16_t half;
  } rows[] = {{UINT64_C(0x7ff0000000000001), 0x7c01},
              {UINT64_C(0x7ff8000000000000), 0x7e00},
              {UINT64_C(0xfff0000000000001), 0xfc01},
              {UINT64_C(0x7ff0040000000000), 0x7c01},
              {UINT64_C(0x7fffffffffffffff), 0x7fff}};
  size_t k;
  for (k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
    double d;
    memcpy(&d, &rows[k].bits, 8);
    if (dt_double_to_half(d) != rows[k].half)
      printf("  %016llx -> %04x\n", (unsigned long long)rows[k].bits, dt_double_to_half(d));
    CHECK(dt_double_to_half(d) == rows[k].half);
  }
}
