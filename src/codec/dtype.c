/* SPDX-License-Identifier: Apache-2.0 */
/*
** dtype.c — dtype table, NumPy-compatible names and parsing, half-precision
** conversion, element load and byte swapping (see dtype.h).
*/
#include "codec/dtype.h"

#include <math.h>
#include <string.h>

static const struct {
  const char *name;
  char kind;
  unsigned char size;
} dt_table[DT_NTYPES] = {
    [DT_BOOL] = {"bool", 'b', 1},           [DT_INT8] = {"int8", 'i', 1},
    [DT_INT16] = {"int16", 'i', 2},         [DT_INT32] = {"int32", 'i', 4},
    [DT_INT64] = {"int64", 'i', 8},         [DT_UINT8] = {"uint8", 'u', 1},
    [DT_UINT16] = {"uint16", 'u', 2},       [DT_UINT32] = {"uint32", 'u', 4},
    [DT_UINT64] = {"uint64", 'u', 8},       [DT_FLOAT16] = {"float16", 'f', 2},
    [DT_FLOAT32] = {"float32", 'f', 4},     [DT_FLOAT64] = {"float64", 'f', 8},
    [DT_COMPLEX64] = {"complex64", 'c', 8}, [DT_COMPLEX128] = {"complex128", 'c', 16},
};

size_t dt_size(dt_type t) { return dt_table[t].size; }
char dt_kind(dt_type t) { return dt_table[t].kind; }
const char *dt_type_name(dt_type t) { return dt_table[t].name; }

int dt_host_big(void) {
  const uint16_t one = 1;
  unsigned char first;
  memcpy(&first, &one, 1);
  return first == 0;
}

dt_dtype dt_native(dt_type t) {
  dt_dtype d;
  d.type = (unsigned char)t;
  d.big = (unsigned char)(dt_size(t) > 1 && dt_host_big());
  return d;
}

int dt_swapped(dt_dtype d) { return dt_size(d.type) > 1 && d.big != dt_host_big(); }

void dt_descr(dt_dtype d, char *out) {
  size_t size = dt_size(d.type);
  char order = size == 1 ? '|' : (d.big ? '>' : '<');
  /* NumPy's typestr uses the total item size, so complex64 is "c8". */
  char *p = out;
  *p++ = order;
  *p++ = dt_kind(d.type);
  if (size >= 10) *p++ = (char)('0' + size / 10);
  *p++ = (char)('0' + size % 10);
  *p = 0;
}

void dt_name(dt_dtype d, char *out) {
  /* str(np.dtype) prints the plain name only in native byte order; a
  ** non-native dtype prints as its descr (">f4"). */
  if (dt_swapped(d)) {
    dt_descr(d, out);
  } else {
    strcpy(out, dt_type_name(d.type));
  }
}

/* --- parsing --------------------------------------------------------- */

static const struct {
  const char *name;
  dt_type type;
} dt_aliases[] = {
    {"bool", DT_BOOL},
    {"int8", DT_INT8},
    {"int16", DT_INT16},
    {"int32", DT_INT32},
    {"int64", DT_INT64},
    {"uint8", DT_UINT8},
    {"uint16", DT_UINT16},
    {"uint32", DT_UINT32},
    {"uint64", DT_UINT64},
    {"float16", DT_FLOAT16},
    {"float32", DT_FLOAT32},
    {"float64", DT_FLOAT64},
    {"complex64", DT_COMPLEX64},
    {"complex128", DT_COMPLEX128},
    /* NumPy's other spellings of the same types (C names on LP64). */
    {"bool_", DT_BOOL},
    {"byte", DT_INT8},
    {"ubyte", DT_UINT8},
    {"short", DT_INT16},
    {"ushort", DT_UINT16},
    {"intc", DT_INT32},
    {"uintc", DT_UINT32},
    {"int", DT_INT64},
    {"uint", DT_UINT64},
    {"longlong", DT_INT64},
    {"ulonglong", DT_UINT64},
    {"half", DT_FLOAT16},
    {"single", DT_FLOAT32},
    {"double", DT_FLOAT64},
    {"float", DT_FLOAT64},
    {"csingle", DT_COMPLEX64},
    {"cdouble", DT_COMPLEX128},
    {"complex", DT_COMPLEX128},
    {"float_", DT_FLOAT64},
    {"int_", DT_INT64},
    {"complex_", DT_COMPLEX128},
    {"intp", DT_INT64},
    {"uintp", DT_UINT64},
    {"long", DT_INT64},
    {"ulong", DT_UINT64},
    {"bool8", DT_BOOL},
    {"int0", DT_INT64},
    {"uint0", DT_UINT64},
};

/* One-character type codes (np.dtype('f') etc.). */
static int dt_from_char(char c, dt_type *t) {
  static const char codes[] = "?bBhHiIlLqQpPefdFD";
  static const dt_type types[] = {DT_BOOL,   DT_INT8,    DT_UINT8,   DT_INT16,   DT_UINT16,    DT_INT32,
                                  DT_UINT32, DT_INT64,   DT_UINT64,  DT_INT64,   DT_UINT64,    DT_INT64,
                                  DT_UINT64, DT_FLOAT16, DT_FLOAT32, DT_FLOAT64, DT_COMPLEX64, DT_COMPLEX128};
  const char *hit = c ? strchr(codes, c) : NULL;
  if (!hit) return 0;
  *t = types[hit - codes];
  return 1;
}

/* Kind letter + item size ("f4", "c16", "b1"). */
static int dt_from_kind_size(char kind, unsigned size, dt_type *t) {
  int i;
  if (kind == 'b' && size == 1) {
    *t = DT_BOOL;
    return 1;
  }
  for (i = DT_INT8; i < DT_NTYPES; i++) {
    if (dt_table[i].kind == kind && dt_table[i].size == size) {
      *t = (dt_type)i;
      return 1;
    }
  }
  return 0;
}

static int dt_is_name(const char *p, size_t len, const char *name) {
  return strlen(name) == len && memcmp(p, name, len) == 0;
}

static const char *dt_unsupported_why(const char *p, size_t len) {
  char kind = len ? p[0] : 0;
  int long_double = (len == 3 && ((kind == 'f' && p[1] == '1' && (p[2] == '2' || p[2] == '6')) ||
                                  (kind == 'c' && (p[1] == '2' || p[1] == '3'))));
  /* NumPy's names of the long double types (x86-64 layouts) */
  static const char *const long_names[] = {"longdouble", "clongdouble", "longfloat",  "clongfloat",
                                           "float96",    "float128",    "complex192", "complex256"};
  size_t k;
  for (k = 0; k < sizeof(long_names) / sizeof(long_names[0]); k++)
    if (dt_is_name(p, len, long_names[k])) long_double = 1;
  if (long_double || (len == 1 && (kind == 'g' || kind == 'G'))) return "long double has no portable layout";
  if (dt_is_name(p, len, "object")) kind = 'O';
  if (dt_is_name(p, len, "str") || dt_is_name(p, len, "unicode") || dt_is_name(p, len, "str_")) kind = 'U';
  if (dt_is_name(p, len, "bytes") || dt_is_name(p, len, "bytes_")) kind = 'S';
  if (dt_is_name(p, len, "datetime64") || dt_is_name(p, len, "timedelta64")) kind = 'M';
  if (dt_is_name(p, len, "void")) kind = 'V';
  switch (kind) {
    case 'U': return "unicode strings are not numeric";
    case 'S':
    case 'a': return "byte strings are not numeric";
    case 'O': return "object arrays hold pickled Python objects, which are never loaded";
    case 'V': return "void/structured data is not numeric";
    case 'M':
    case 'm': return "datetimes are not supported";
    default: return "not a NumPy numeric dtype";
  }
}

int dt_parse(const char *s, size_t n, dt_dtype *out, codec_err *err) {
  size_t i;
  char order = '=';
  const char *p = s;
  size_t len = n;
  dt_type t;
  int ok = 0;

  for (i = 0; i < sizeof(dt_aliases) / sizeof(dt_aliases[0]); i++) {
    if (strlen(dt_aliases[i].name) == n && memcmp(dt_aliases[i].name, s, n) == 0) {
      *out = dt_native(dt_aliases[i].type);
      return CODEC_OK;
    }
  }
  if (len > 0 && p[0] && strchr("<>=|", p[0])) {
    order = p[0];
    p++;
    len--;
  }
  if (len == 1) {
    ok = dt_from_char(p[0], &t);
  } else if (len >= 2 && len <= 3) {
    unsigned size = 0;
    size_t k;
    ok = 1;
    for (k = 1; k < len; k++) {
      if (p[k] < '0' || p[k] > '9') ok = 0;
      size = size * 10 + (unsigned)(p[k] - '0');
    }
    ok = ok && dt_from_kind_size(p[0], size, &t);
  }
  if (!ok) {
    char q[CODEC_QUOTE_MAX];
    return codec_fail(err, CODEC_UNSUPPORTED, "unsupported dtype '%s' (%s)", codec_quote(q, sizeof(q), s, n),
                      dt_unsupported_why(p, len));
  }
  *out = dt_native(t);
  if (dt_size(t) > 1) {
    if (order == '<') out->big = 0;
    if (order == '>') out->big = 1;
  }
  return CODEC_OK;
}

/* --- half precision ---------------------------------------------------- */

double dt_half_to_double(uint16_t h) {
  uint64_t sign = (uint64_t)(h >> 15) << 63;
  unsigned e = (h >> 10) & 0x1f;
  unsigned m = h & 0x3ff;
  uint64_t bits;
  double d;
  if (e == 0) {
    d = ldexp((double)m, -24);
    return sign ? -d : d;
  }
  if (e == 31) {
    bits = sign | (UINT64_C(0x7ff) << 52) | ((uint64_t)m << 42);
  } else {
    bits = sign | ((uint64_t)(e - 15 + 1023) << 52) | ((uint64_t)m << 42);
  }
  memcpy(&d, &bits, 8);
  return d;
}

uint16_t dt_double_to_half(double d) {
  uint64_t x, man, rem, half;
  uint16_t sign;
  int exp, e;
  memcpy(&x, &d, 8);
  sign = (uint16_t)((x >> 48) & 0x8000);
  exp = (int)((x >> 52) & 0x7ff);
  man = x & UINT64_C(0xfffffffffffff);
  if (exp == 0x7ff) {
    uint16_t m;
    if (man == 0) return sign | 0x7c00;
    /* Keep the NaN payload's top bits and stay a NaN, as NumPy does
    ** (npy_double_to_half): a payload only in the low bits gives 0x7c01. */
    m = (uint16_t)(man >> 42);
    return sign | 0x7c00 | (m ? m : 1);
  }
  e = exp - 1023 + 15;
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) {
    /* Subnormal half: m = M * 2^(exp - 1051), rounded to nearest even. */
    int s = 1051 - exp;
    uint64_t big_m, m;
    if (exp == 0 || s > 63) return sign;
    big_m = man | (UINT64_C(1) << 52);
    m = big_m >> s;
    rem = big_m & ((UINT64_C(1) << s) - 1);
    half = UINT64_C(1) << (s - 1);
    if (rem > half || (rem == half && (m & 1))) m++;
    return (uint16_t)(sign | m);
  } else {
    uint32_t h = ((uint32_t)e << 10) | (uint32_t)(man >> 42);
    rem = man & ((UINT64_C(1) << 42) - 1);
    half = UINT64_C(1) << 41;
    /* A carry out of the mantissa bumps the exponent, up to infinity. */
    if (rem > half || (rem == half && (h & 1))) h++;
    return (uint16_t)(sign | h);
  }
}

/* --- element access --------------------------------------------------- */

static uint64_t load_bits(const unsigned char *p, size_t size, int swap) {
  uint8_t b8;
  uint16_t b16;
  uint32_t b32;
  uint64_t b64;
  switch (size) {
    case 1: memcpy(&b8, p, 1); return b8;
    case 2: memcpy(&b16, p, 2); return swap ? __builtin_bswap16(b16) : b16;
    case 4: memcpy(&b32, p, 4); return swap ? __builtin_bswap32(b32) : b32;
    default: memcpy(&b64, p, 8); return swap ? __builtin_bswap64(b64) : b64;
  }
}

static double bits_to_float(uint64_t bits, size_t size) {
  if (size == 2) return dt_half_to_double((uint16_t)bits);
  if (size == 4) {
    uint32_t b = (uint32_t)bits;
    float f;
    memcpy(&f, &b, 4);
    return f;
  } else {
    double d;
    memcpy(&d, &bits, 8);
    return d;
  }
}

void dt_load(const unsigned char *p, dt_dtype d, dt_value *v) {
  dt_type t = (dt_type)d.type;
  size_t size = dt_size(t);
  int swap = dt_swapped(d);
  uint64_t bits;
  v->kind = dt_kind(t);
  v->i = 0;
  v->u = 0;
  v->im = 0;
  if (v->kind == DT_KIND_COMPLEX) {
    size_t half = size / 2;
    v->re = bits_to_float(load_bits(p, half, swap), half);
    v->im = bits_to_float(load_bits(p + half, half, swap), half);
    return;
  }
  bits = load_bits(p, size, swap);
  switch (v->kind) {
    case DT_KIND_BOOL:
      v->i = bits != 0;
      v->re = (double)v->i;
      break;
    case DT_KIND_INT:
      /* Sign-extend from the item width. */
      if (size < 8 && (bits >> (size * 8 - 1)) & 1) bits |= ~UINT64_C(0) << (size * 8);
      memcpy(&v->i, &bits, 8);
      v->re = (double)v->i;
      break;
    case DT_KIND_UINT:
      v->u = bits;
      v->re = (double)v->u;
      break;
    default: v->re = bits_to_float(bits, size); break;
  }
}

double dt_load_double(const unsigned char *p, dt_dtype d) {
  dt_value v;
  dt_load(p, d, &v);
  return v.re;
}

void dt_byteswap(unsigned char *p, uint64_t n, dt_dtype d) {
  size_t size = dt_size(d.type);
  uint64_t k, count = n;
  if (dt_kind(d.type) == DT_KIND_COMPLEX) {
    size /= 2;
    count = n * 2;
  }
  for (k = 0; k < count; k++, p += size) {
    uint16_t b16;
    uint32_t b32;
    uint64_t b64;
    switch (size) {
      case 2:
        memcpy(&b16, p, 2);
        b16 = __builtin_bswap16(b16);
        memcpy(p, &b16, 2);
        break;
      case 4:
        memcpy(&b32, p, 4);
        b32 = __builtin_bswap32(b32);
        memcpy(p, &b32, 4);
        break;
      case 8:
        memcpy(&b64, p, 8);
        b64 = __builtin_bswap64(b64);
        memcpy(p, &b64, 8);
        break;
      default: return; /* 1-byte items have no byte order */
    }
  }
}

/* --- element store ------------------------------------------------------ */

static void store_bits(unsigned char *p, uint64_t bits, size_t size, int swap) {
  uint8_t b8;
  uint16_t b16;
  uint32_t b32;
  switch (size) {
    case 1:
      b8 = (uint8_t)bits;
      memcpy(p, &b8, 1);
      break;
    case 2:
      b16 = (uint16_t)bits;
      if (swap) b16 = __builtin_bswap16(b16);
      memcpy(p, &b16, 2);
      break;
    case 4:
      b32 = (uint32_t)bits;
      if (swap) b32 = __builtin_bswap32(b32);
      memcpy(p, &b32, 4);
      break;
    default:
      if (swap) bits = __builtin_bswap64(bits);
      memcpy(p, &bits, 8);
      break;
  }
}

static uint64_t float_bits(double x, size_t size) {
  if (size == 2) return dt_double_to_half(x);
  if (size == 4) {
    float f = (float)x;
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
  } else {
    uint64_t b;
    memcpy(&b, &x, 8);
    return b;
  }
}

/* Float to integer bits: truncate, then check the target range. */
static int float_to_int_bits(double x, char kind, size_t size, uint64_t *bits) {
  double t;
  if (x != x || x == HUGE_VAL || x == -HUGE_VAL) return 1;
  t = trunc(x);
  if (kind == DT_KIND_UINT) {
    double hi = ldexp(1.0, (int)size * 8);
    if (t < 0 || t >= hi) return 1;
    *bits = (uint64_t)t;
  } else {
    double lim = ldexp(1.0, (int)size * 8 - 1);
    int64_t i;
    if (t < -lim || t >= lim) return 1;
    i = (int64_t)t;
    memcpy(bits, &i, 8);
  }
  return 0;
}

int dt_store(unsigned char *p, dt_dtype d, const dt_value *v) {
  dt_type t = (dt_type)d.type;
  size_t size = dt_size(t);
  int swap = dt_swapped(d);
  char kind = dt_kind(t);
  uint64_t bits = 0;
  switch (kind) {
    case DT_KIND_BOOL:
      if (v->kind == DT_KIND_INT || v->kind == DT_KIND_BOOL)
        bits = v->i != 0;
      else if (v->kind == DT_KIND_UINT)
        bits = v->u != 0;
      else
        bits = v->re != 0 || v->im != 0;
      break;
    case DT_KIND_INT:
    case DT_KIND_UINT:
      if (v->kind == DT_KIND_INT || v->kind == DT_KIND_BOOL)
        memcpy(&bits, &v->i, 8);
      else if (v->kind == DT_KIND_UINT)
        bits = v->u;
      else if (float_to_int_bits(v->re, kind, size, &bits))
        return 1;
      break;
    case DT_KIND_FLOAT:
      bits = float_bits(v->kind == DT_KIND_INT || v->kind == DT_KIND_BOOL ? (double)v->i
                        : v->kind == DT_KIND_UINT                         ? (double)v->u
                                                                          : v->re,
                        size);
      break;
    default: { /* complex */
      size_t half = size / 2;
      double re = v->kind == DT_KIND_INT || v->kind == DT_KIND_BOOL ? (double)v->i
                  : v->kind == DT_KIND_UINT                         ? (double)v->u
                                                                    : v->re;
      store_bits(p, float_bits(re, half), half, swap);
      store_bits(p + half, float_bits(v->kind == DT_KIND_COMPLEX ? v->im : 0.0, half), half, swap);
      return 0;
    }
  }
  store_bits(p, bits, size, swap);
  return 0;
}

void dt_value_double(dt_value *v, double x) {
  v->kind = DT_KIND_FLOAT;
  v->i = 0;
  v->u = 0;
  v->re = x;
  v->im = 0;
}

void dt_value_int(dt_value *v, int64_t x) {
  v->kind = DT_KIND_INT;
  v->i = x;
  v->u = 0;
  v->re = (double)x;
  v->im = 0;
}

void dt_value_uint(dt_value *v, uint64_t x) {
  v->kind = DT_KIND_UINT;
  v->i = 0;
  v->u = x;
  v->re = (double)x;
  v->im = 0;
}
