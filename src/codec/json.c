/* SPDX-License-Identifier: Apache-2.0 */
/*
** json.c — JSON output of strings, numbers and nested arrays, and input of
** shapes and nested numeric arrays (see json.h).
**
** The array reader walks the text twice: the first pass checks the syntax,
** finds the shape (every list at one depth must have the same length) and
** classifies the leaves; the second converts each leaf straight into the
** output payload, so no per-element temporary is kept. Nesting is bounded by
** NPY_MAX_DIMS. Number text is converted with snprintf and strtod, which
** follow LC_NUMERIC: a host program may have set a locale whose decimal
** point is not '.' (de_DE writes 1,5), so numbers are translated between
** the locale's form and JSON's on the way in and out.
*/
#include "codec/json.h"

#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- output ---------------------------------------------------------------- */

void json_put_string(buf_t *out, const unsigned char *s, uint64_t n) {
  static const char hex[] = "0123456789abcdef";
  uint64_t i, run = 0;
  buf_putc(out, '"');
  for (i = 0; i < n; i++) {
    unsigned char c = s[i];
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    buf_append(out, s + run, i - run);
    run = i + 1;
    buf_putc(out, '\\');
    switch (c) {
      case '"': buf_putc(out, '"'); break;
      case '\\': buf_putc(out, '\\'); break;
      case '\n': buf_putc(out, 'n'); break;
      case '\r': buf_putc(out, 'r'); break;
      case '\t': buf_putc(out, 't'); break;
      default: {
        char u[5] = {'u', '0', '0', hex[c >> 4], hex[c & 15]};
        buf_append(out, u, 5);
      }
    }
  }
  buf_append(out, s + run, n - run);
  buf_putc(out, '"');
}

static int same_at_precision(double a, double b, int bits) {
  if (bits == 16) return dt_double_to_half(a) == dt_double_to_half(b);
  if (bits == 32) return (float)a == (float)b;
  return a == b;
}

/* Replace the p-digit "%e" text in sci (room for 40 bytes) by the p-digit
** decimal one unit of its last digit away in magnitude (dir +1 or -1). */
static void sci_neighbour(char *sci, int p, int dir) {
  uint64_t m = 0, lo = 1, hi;
  const char *q = sci;
  char digits[24];
  int neg = 0, e, k;
  if (*q == '-') neg = 1, q++;
  for (; *q && *q != 'e'; q++)
    if (*q != '.') m = m * 10 + (uint64_t)(*q - '0');
  e = atoi(q + 1);
  for (k = 1; k < p; k++) lo *= 10;
  hi = lo * 10;
  m = dir > 0 ? m + 1 : m - 1;
  if (m >= hi) m = lo, e++;
  if (m < lo) m = hi - 1, e--;
  snprintf(digits, sizeof(digits), "%llu", (unsigned long long)m);
  snprintf(sci, 40, "%s%c%s%se%+03d", neg ? "-" : "", digits[0], p > 1 ? "." : "", digits + 1, e);
}

/* The current locale's decimal point ("." in the C locale). */
static const char *locale_point(void) {
  const char *dp = localeconv()->decimal_point;
  return dp && *dp ? dp : ".";
}

/* Replace the locale's decimal point in s (printf output) by '.'. */
static void point_to_json(char *s) {
  const char *dp = locale_point();
  size_t len = strlen(dp);
  char *at;
  if (dp[0] == '.' && len == 1) return;
  if ((at = strstr(s, dp)) != NULL) {
    *at = '.';
    memmove(at + 1, at + len, strlen(at + len) + 1);
  }
}

/* strtod of number text written with '.' (JSON's decimal point), whatever
** the locale's; s is at most 511 bytes. */
static double strtod_json(const char *s) {
  const char *dp = locale_point();
  size_t dlen = strlen(dp), o = 0;
  char tmp[600];
  if (dp[0] == '.' && dlen == 1) return strtod(s, NULL);
  for (; *s && o + dlen + 1 < sizeof(tmp); s++) {
    if (*s == '.') {
      memcpy(tmp + o, dp, dlen);
      o += dlen;
    } else {
      tmp[o++] = *s;
    }
  }
  tmp[o] = 0;
  return strtod(tmp, NULL);
}

/* Does a decimal of p significant digits read back as v (at `bits`): the
** nearest one, else its neighbour on the other side of v? sci holds it. */
static int reads_back(char *sci, int p, double v, int bits) {
  double back;
  snprintf(sci, 40, "%.*e", p - 1, v);
  point_to_json(sci);
  back = strtod_json(sci);
  if (same_at_precision(back, v, bits)) return 1;
  sci_neighbour(sci, p, fabs(back) < fabs(v) ? 1 : -1);
  return same_at_precision(strtod_json(sci), v, bits);
}

void json_format_float(char *out, double v, int bits) {
  int p, maxp = bits == 16 ? 5 : bits == 32 ? 9 : 17, exp10;
  char sci[40];
  if (v != v) {
    strcpy(out, "nan");
    return;
  }
  if (isinf(v)) {
    strcpy(out, v > 0 ? "inf" : "-inf");
    return;
  }
  /* Fewest significant digits that read back to the same value: at each
  ** length the nearest decimal, else its neighbour on the other side of v
  ** (at a power of two the rounding interval is lopsided, so the nearest
  ** can miss where the other one reads back: float16 2^-6 is 0.01563). */
  /* Most values need the longest lengths: try maxp - 2 digits first. If no
  ** decimal of that length reads back, none shorter does (a shorter one is
  ** also one of that length, and the nearest of that length, or its
  ** neighbour across v, lies between v and it), so the search resumes at
  ** maxp - 1; otherwise it starts from 1 as before. Same digits, far fewer
  ** strtod calls (the heatmaps of ar_inspect print thousands of doubles). */
  p = maxp > 3 && !reads_back(sci, maxp - 2, v, bits) ? maxp - 1 : 1;
  for (; p < maxp; p++)
    if (reads_back(sci, p, v, bits)) break;
  if (p == maxp) {
    snprintf(sci, sizeof(sci), "%.*e", p - 1, v);
    point_to_json(sci);
  }
  /* NumPy's repr of the scalar (Python's repr for float64): positional for
  ** 1e-4 <= |v| < 1e16 (decided on the value itself) and zero, with the
  ** shortest digits padded by zeros (float16 65504 -> "65500.0", float32
  ** 123456789 -> "123456790.0"); exponent form otherwise, as "%e" gives it
  ** ("1.5e-07", sign and at least two digits). */
  if (v == 0 || (fabs(v) >= 1e-4 && fabs(v) < 1e16)) {
    char digits[24];
    const char *q = sci;
    char *o = out;
    int nd = 0, k;
    if (*q == '-') *o++ = *q++;
    for (; *q && *q != 'e'; q++)
      if (*q != '.') digits[nd++] = *q;
    exp10 = atoi(q + 1);
    if (exp10 < 0) {
      *o++ = '0';
      *o++ = '.';
      for (k = 0; k < -exp10 - 1; k++) *o++ = '0';
      memcpy(o, digits, (size_t)nd);
      o += nd;
    } else {
      for (k = 0; k <= exp10; k++) *o++ = k < nd ? digits[k] : '0';
      *o++ = '.';
      if (nd > exp10 + 1) {
        memcpy(o, digits + exp10 + 1, (size_t)(nd - exp10 - 1));
        o += nd - exp10 - 1;
      } else {
        *o++ = '0';
      }
    }
    *o = 0;
  } else {
    strcpy(out, sci);
  }
}

void json_put_float(buf_t *out, double v, int bits) {
  char text[40];
  if (v != v) {
    buf_puts(out, "\"NaN\"");
  } else if (isinf(v)) {
    buf_puts(out, v > 0 ? "\"Infinity\"" : "\"-Infinity\"");
  } else {
    json_format_float(text, v, bits);
    buf_puts(out, text);
  }
}

static int float_bits_of(dt_type t) {
  size_t size = dt_size(t);
  if (dt_kind(t) == DT_KIND_COMPLEX) size /= 2;
  return (int)size * 8;
}

void json_put_value(buf_t *out, const dt_value *v, dt_type t) {
  switch (v->kind) {
    case DT_KIND_BOOL: buf_puts(out, v->i ? "true" : "false"); break;
    case DT_KIND_INT: buf_printf(out, "%lld", (long long)v->i); break;
    case DT_KIND_UINT: buf_printf(out, "%llu", (unsigned long long)v->u); break;
    case DT_KIND_FLOAT: json_put_float(out, v->re, float_bits_of(t)); break;
    default:
      buf_putc(out, '[');
      json_put_float(out, v->re, float_bits_of(t));
      buf_putc(out, ',');
      json_put_float(out, v->im, float_bits_of(t));
      buf_putc(out, ']');
  }
}

/* Nested empty lists down to the first zero-length axis ([[], []] for (2,0,3)). */
static void json_put_empty(buf_t *out, int ndim, const int64_t *shape) {
  int64_t k;
  if (ndim == 0 || shape[0] == 0) {
    buf_puts(out, "[]");
    return;
  }
  buf_putc(out, '[');
  for (k = 0; k < shape[0] && !out->rc; k++) {
    if (k) buf_putc(out, ',');
    json_put_empty(out, ndim - 1, shape + 1);
  }
  buf_putc(out, ']');
}

void json_put_array(buf_t *out, const unsigned char *cdata, dt_dtype d, int ndim, const int64_t *shape) {
  uint64_t numel = 1, i, idx[NPY_MAX_DIMS];
  size_t itemsize = dt_size(d.type);
  dt_value v;
  int k;
  for (k = 0; k < ndim; k++) {
    numel *= (uint64_t)shape[k];
    idx[k] = 0;
  }
  if (numel == 0) {
    /* At least 2 bytes per innermost "[]": refuse at once what cannot fit
    ** instead of writing up to the limit (shape (2^40, 2^40, 0)). */
    uint64_t lists = 1;
    for (k = 0; k < ndim && shape[k] != 0; k++) {
      if (size_mul(lists, (uint64_t)shape[k], &lists) || lists > out->limit / 2) {
        out->rc = CODEC_TOOBIG;
        return;
      }
    }
    json_put_empty(out, ndim, shape);
    return;
  }
  for (k = 0; k < ndim; k++) buf_putc(out, '[');
  for (i = 0; i < numel && !out->rc; i++) {
    int wrapped = 0;
    dt_load(cdata + i * itemsize, d, &v);
    json_put_value(out, &v, (dt_type)d.type);
    /* Advance the odometer; each axis that wraps closes and reopens a list. */
    for (k = ndim - 1; k >= 0; k--) {
      if (++idx[k] < (uint64_t)shape[k]) break;
      idx[k] = 0;
      wrapped++;
    }
    if (i + 1 == numel) break;
    for (k = 0; k < wrapped; k++) buf_putc(out, ']');
    buf_putc(out, ',');
    for (k = 0; k < wrapped; k++) buf_putc(out, '[');
  }
  for (k = 0; k < ndim; k++) buf_putc(out, ']');
}

/* --- input ------------------------------------------------------------------ */

typedef struct jscan {
  const char *s;
  uint64_t pos, n;
  codec_err *err;
} jscan;

static void js_space(jscan *j) {
  while (j->pos < j->n && (j->s[j->pos] == ' ' || j->s[j->pos] == '\t' || j->s[j->pos] == '\n' || j->s[j->pos] == '\r'))
    j->pos++;
}

static int js_fail(jscan *j, const char *what) {
  return codec_fail(j->err, CODEC_CORRUPT, "%s at byte %llu", what, (unsigned long long)j->pos);
}

/* Leaf kinds. */
enum { LEAF_INT, LEAF_FLOAT, LEAF_BOOL, LEAF_NAN, LEAF_POSINF, LEAF_NEGINF };

typedef struct jleaf {
  int kind;
  int negative;
  uint64_t mag;     /* LEAF_INT magnitude */
  int mag_overflow; /* beyond uint64 */
  double d;         /* LEAF_FLOAT value; also set for LEAF_INT */
  int b;            /* LEAF_BOOL */
  uint64_t at;      /* byte offset, for messages */
} jleaf;

static int js_match(jscan *j, const char *word) {
  size_t len = strlen(word);
  if (j->n - j->pos >= len && memcmp(j->s + j->pos, word, len) == 0) {
    j->pos += len;
    return 1;
  }
  return 0;
}

/* A number, true/false/null, or one of the strings naming NaN/infinity. */
static int js_leaf(jscan *j, jleaf *leaf) {
  const char *s = j->s;
  uint64_t start = j->pos;
  leaf->at = start;
  leaf->kind = -1; /* none yet: callers may test it after an error */
  leaf->negative = 0;
  leaf->mag = 0;
  leaf->mag_overflow = 0;
  leaf->d = 0;
  leaf->b = 0;
  if (js_match(j, "true") || js_match(j, "false")) {
    leaf->kind = LEAF_BOOL;
    leaf->b = s[start] == 't';
    return CODEC_OK;
  }
  if (js_match(j, "null")) {
    leaf->kind = LEAF_NAN;
    return CODEC_OK;
  }
  if (s[j->pos] == '"') {
    static const struct {
      const char *text;
      int kind;
    } names[] = {{"\"NaN\"", LEAF_NAN},    {"\"nan\"", LEAF_NAN},          {"\"Infinity\"", LEAF_POSINF},
                 {"\"inf\"", LEAF_POSINF}, {"\"+Infinity\"", LEAF_POSINF}, {"\"-Infinity\"", LEAF_NEGINF},
                 {"\"-inf\"", LEAF_NEGINF}};
    size_t k;
    for (k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
      if (js_match(j, names[k].text)) {
        leaf->kind = names[k].kind;
        return CODEC_OK;
      }
    }
    return js_fail(j, "unexpected string (only \"NaN\", \"Infinity\", \"-Infinity\" are numbers)");
  }
  {
    /* JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
    uint64_t p = j->pos;
    int is_float = 0;
    char tmp[512 + 8]; /* room for a multi-byte decimal point */
    if (p < j->n && s[p] == '-') {
      leaf->negative = 1;
      p++;
    }
    if (p >= j->n || s[p] < '0' || s[p] > '9') return js_fail(j, "expected a number");
    if (s[p] == '0' && p + 1 < j->n && s[p + 1] >= '0' && s[p + 1] <= '9')
      return js_fail(j, "number with a leading zero");
    while (p < j->n && s[p] >= '0' && s[p] <= '9') {
      unsigned dgt = (unsigned)(s[p] - '0');
      if (leaf->mag > (UINT64_MAX - dgt) / 10)
        leaf->mag_overflow = 1;
      else
        leaf->mag = leaf->mag * 10 + dgt;
      p++;
    }
    if (p < j->n && s[p] == '.') {
      is_float = 1;
      p++;
      if (p >= j->n || s[p] < '0' || s[p] > '9') return js_fail(j, "expected a digit after '.'");
      while (p < j->n && s[p] >= '0' && s[p] <= '9') p++;
    }
    if (p < j->n && (s[p] == 'e' || s[p] == 'E')) {
      is_float = 1;
      p++;
      if (p < j->n && (s[p] == '+' || s[p] == '-')) p++;
      if (p >= j->n || s[p] < '0' || s[p] > '9') return js_fail(j, "expected a digit in the exponent");
      while (p < j->n && s[p] >= '0' && s[p] <= '9') p++;
    }
    if (p - start >= 512) return js_fail(j, "number too long");
    memcpy(tmp, s + start, (size_t)(p - start));
    tmp[p - start] = 0;
    leaf->d = strtod_json(tmp);
    leaf->kind = is_float ? LEAF_FLOAT : LEAF_INT;
    j->pos = p;
    return CODEC_OK;
  }
}

/* Leaf conversion to a dt_value; 1 when the leaf cannot be an integer. */
static void leaf_value(const jleaf *leaf, dt_value *v) {
  switch (leaf->kind) {
    case LEAF_BOOL:
      v->kind = DT_KIND_BOOL;
      v->i = leaf->b;
      v->u = 0;
      v->re = leaf->b;
      v->im = 0;
      return;
    case LEAF_NAN: dt_value_double(v, NAN); return;
    case LEAF_POSINF: dt_value_double(v, HUGE_VAL); return;
    case LEAF_NEGINF: dt_value_double(v, -HUGE_VAL); return;
    case LEAF_INT:
      if (!leaf->mag_overflow && !leaf->negative) {
        dt_value_uint(v, leaf->mag);
        return;
      }
      if (!leaf->mag_overflow && leaf->mag <= (uint64_t)INT64_MAX + 1) {
        dt_value_int(v, leaf->mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)leaf->mag);
        return;
      }
      dt_value_double(v, leaf->d);
      return;
    default: dt_value_double(v, leaf->d); return;
  }
}

/* Range check of an exact integer leaf against an integer dtype. */
static int int_fits(const dt_value *v, dt_type t) {
  size_t bits = dt_size(t) * 8;
  if (dt_kind(t) == DT_KIND_UINT) {
    if (v->kind == DT_KIND_INT) return v->i >= 0 && (bits == 64 || (uint64_t)v->i < (UINT64_C(1) << bits));
    return bits == 64 || v->u < (UINT64_C(1) << bits);
  }
  if (v->kind == DT_KIND_UINT) return v->u <= (UINT64_C(1) << (bits - 1)) - 1;
  if (bits == 64) return 1;
  return v->i >= -(INT64_C(1) << (bits - 1)) && v->i < (INT64_C(1) << (bits - 1));
}

/* Convert one leaf and store it; errors name the value and the byte. */
static int store_leaf(jscan *j, const jleaf *leaf, dt_dtype d, unsigned char *dst) {
  dt_value v;
  char kind = dt_kind(d.type);
  leaf_value(leaf, &v);
  if (kind == DT_KIND_INT || kind == DT_KIND_UINT) {
    /* An integer literal beyond int64/uint64 must not be rounded into range
    ** through its double (-9223372036854775809 would become INT64_MIN). */
    if (leaf->kind == LEAF_INT && v.kind == DT_KIND_FLOAT) {
      return codec_fail(j->err, CODEC_RANGE, "value at byte %llu is out of range for %s", (unsigned long long)leaf->at,
                        dt_type_name(d.type));
    }
    if (v.kind == DT_KIND_FLOAT) {
      if (v.re != v.re || isinf(v.re) || v.re != trunc(v.re)) {
        j->pos = leaf->at;
        return codec_fail(j->err, CODEC_RANGE, "value at byte %llu is not an integer, dtype is %s",
                          (unsigned long long)leaf->at, dt_type_name(d.type));
      }
      if (v.re >= 0 && v.re < 18446744073709551616.0)
        dt_value_uint(&v, (uint64_t)v.re);
      else if (v.re < 0 && v.re >= -9223372036854775808.0)
        dt_value_int(&v, (int64_t)v.re);
      else
        v.kind = DT_KIND_FLOAT; /* out of any range */
    }
    if (v.kind == DT_KIND_FLOAT || (v.kind != DT_KIND_BOOL && !int_fits(&v, d.type))) {
      return codec_fail(j->err, CODEC_RANGE, "value at byte %llu is out of range for %s", (unsigned long long)leaf->at,
                        dt_type_name(d.type));
    }
  }
  dt_store(dst, d, &v);
  return CODEC_OK;
}

/* What the structure pass learns. */
typedef struct jshape {
  int ndim; /* -1 until known */
  int64_t shape[NPY_MAX_DIMS + 1];
  uint64_t leaves;
  int any_float, any_int, any_bool;
  int int_in_int64, int_beyond_int64, int_beyond_uint64;
} jshape;

/* One pass over the text. With dst == NULL it learns the shape; otherwise it
** stores each leaf (complex: pairs) into dst. */
static int js_walk(jscan *j, jshape *sh, dt_dtype d, unsigned char *dst) {
  int64_t count[NPY_MAX_DIMS + 2];
  int64_t known[NPY_MAX_DIMS + 2];
  int depth = 0, expect_value = 1, rc, max_depth = NPY_MAX_DIMS + 1;
  size_t itemsize = dt_size(d.type);
  int is_complex = dt_kind(d.type) == DT_KIND_COMPLEX;
  uint64_t leaf_index = 0;
  int k;
  for (k = 0; k < NPY_MAX_DIMS + 2; k++) known[k] = -1;
  if (!dst) sh->ndim = -1;
  j->pos = 0;
  for (;;) {
    js_space(j);
    if (j->pos >= j->n) {
      if (depth == 0 && sh->ndim >= 0 && !expect_value) break;
      return js_fail(j, "unexpected end of JSON");
    }
    if (depth == 0 && !expect_value) return js_fail(j, "text after the JSON value");
    if (j->s[j->pos] == '[') {
      if (!expect_value) return js_fail(j, "expected ',' or ']'");
      if (depth >= max_depth) return js_fail(j, "JSON nested too deeply");
      if (sh->ndim >= 0 && depth >= sh->ndim) return js_fail(j, "ragged nested lists (a list where a number belongs)");
      count[depth++] = 0;
      j->pos++;
      expect_value = 1;
      js_space(j);
      if (j->pos < j->n && j->s[j->pos] == ']') expect_value = 0; /* empty list */
      continue;
    }
    if (j->s[j->pos] == ']') {
      if (depth == 0 || expect_value) return js_fail(j, "unexpected ']'");
      if (sh->ndim < 0) sh->ndim = depth; /* an empty innermost list fixes the depth */
      if (known[depth - 1] < 0)
        known[depth - 1] = count[depth - 1];
      else if (known[depth - 1] != count[depth - 1])
        return js_fail(j, "ragged nested lists (lengths differ)");
      depth--;
      j->pos++;
      if (depth > 0) count[depth - 1]++;
      expect_value = 0;
      continue;
    }
    if (j->s[j->pos] == ',') {
      if (depth == 0 || expect_value) return js_fail(j, "unexpected ','");
      j->pos++;
      expect_value = 1;
      continue;
    }
    if (!expect_value) return js_fail(j, "expected ',' or ']'");
    {
      jleaf leaf;
      if ((rc = js_leaf(j, &leaf)) != CODEC_OK) return rc;
      if (sh->ndim < 0)
        sh->ndim = depth;
      else if (depth != sh->ndim) {
        j->pos = leaf.at; /* point at the number, not past it */
        return js_fail(j, "ragged nested lists (a number where a list belongs)");
      }
      if (depth > 0) count[depth - 1]++;
      expect_value = 0;
      if (!dst) {
        sh->leaves++;
        if (leaf.kind == LEAF_BOOL)
          sh->any_bool = 1;
        else if (leaf.kind == LEAF_INT) {
          sh->any_int = 1;
          if (leaf.mag_overflow || (leaf.negative && leaf.mag > (uint64_t)INT64_MAX + 1))
            sh->int_beyond_uint64 = 1;
          else if (!leaf.negative && leaf.mag > (uint64_t)INT64_MAX)
            sh->int_beyond_int64 = 1;
          else
            sh->int_in_int64 = 1;
        } else
          sh->any_float = 1;
      } else if (is_complex) {
        /* leaves alternate re, im within each innermost pair */
        dt_value re;
        uint64_t elem = leaf_index / 2;
        size_t half = itemsize / 2;
        leaf_value(&leaf, &re);
        if (leaf.kind == LEAF_BOOL) dt_value_double(&re, leaf.b);
        {
          dt_dtype part = {(unsigned char)(itemsize == 8 ? DT_FLOAT32 : DT_FLOAT64), d.big};
          dt_store(dst + elem * itemsize + (leaf_index % 2) * half, part, &re);
        }
        leaf_index++;
      } else {
        if ((rc = store_leaf(j, &leaf, d, dst + leaf_index * itemsize)) != CODEC_OK) return rc;
        leaf_index++;
      }
    }
  }
  if (!dst) {
    for (k = 0; k < sh->ndim; k++) sh->shape[k] = known[k] < 0 ? 0 : known[k];
  }
  return CODEC_OK;
}

int json_parse_array(const char *s, uint64_t n, int has_dtype, dt_dtype *d, int *ndim, int64_t *shape, buf_t *out,
                     codec_err *err) {
  jscan j = {s, 0, n, err};
  jshape sh;
  int rc, k, out_ndim;
  uint64_t numel = 1, nbytes;
  unsigned char *dst;
  memset(&sh, 0, sizeof(sh));
  if (!has_dtype) *d = dt_native(DT_FLOAT64); /* *d is an output then: never read it */
  if ((rc = js_walk(&j, &sh, *d, NULL)) != CODEC_OK) return rc;
  if (!has_dtype) {
    /* np.array: integers all beyond int64 but within uint64 make uint64;
    ** mixed with int64 values, or beyond uint64, they make float64 (NumPy
    ** would make an object array of the latter). */
    if (sh.any_float || sh.int_beyond_uint64 || (sh.int_beyond_int64 && sh.int_in_int64))
      *d = dt_native(DT_FLOAT64);
    else if (sh.int_beyond_int64)
      *d = dt_native(DT_UINT64);
    else if (sh.any_int)
      *d = dt_native(DT_INT64);
    else if (sh.any_bool)
      *d = dt_native(DT_BOOL);
    else
      *d = dt_native(DT_FLOAT64); /* np.array([]) is float64 */
  }
  out_ndim = sh.ndim;
  if (dt_kind(d->type) == DT_KIND_COMPLEX && sh.leaves > 0) {
    if (sh.ndim == 0 || sh.shape[sh.ndim - 1] != 2) {
      return codec_fail(err, CODEC_CORRUPT, "complex values must be [re, im] pairs (innermost lists of length 2)");
    }
    out_ndim--;
  }
  if (out_ndim > NPY_MAX_DIMS) return codec_fail(err, CODEC_CORRUPT, "more than %d dimensions", NPY_MAX_DIMS);
  for (k = 0; k < out_ndim; k++) {
    shape[k] = sh.shape[k];
    numel *= (uint64_t)sh.shape[k]; /* bounded by the leaf count */
  }
  *ndim = out_ndim;
  if (size_mul(numel, dt_size(d->type), &nbytes)) return codec_fail(err, CODEC_TOOBIG, "array too large");
  dst = buf_extend(out, nbytes);
  if (!dst) return out->rc;
  if (nbytes) memset(dst, 0, (size_t)nbytes);
  if (sh.leaves == 0) return CODEC_OK;
  return js_walk(&j, &sh, *d, dst);
}

/* A shape entry: a non-negative integer, or -1 when `unknown` allows it. */
static int shape_leaf_ok(const jleaf *leaf, int unknown) {
  if (leaf->kind != LEAF_INT || leaf->mag_overflow || leaf->mag > INT64_MAX) return 0;
  return !leaf->negative || (unknown && leaf->mag == 1);
}

static int parse_shape(const char *s, uint64_t n, int *ndim, int64_t *shape, int unknown, codec_err *err) {
  const char *what = unknown ? "shape must be a JSON array of non-negative integers (one may be -1)"
                             : "shape must be a JSON array of non-negative integers";
  jscan j = {s, 0, n, err};
  int count = 0;
  js_space(&j);
  if (j.pos < n && s[j.pos] != '[') {
    /* a bare integer means a 1-d shape */
    jleaf leaf;
    int rc = js_leaf(&j, &leaf);
    js_space(&j);
    if (rc || !shape_leaf_ok(&leaf, unknown) || j.pos != n) return codec_fail(err, CODEC_CORRUPT, "%s", what);
    shape[0] = leaf.negative ? -1 : (int64_t)leaf.mag;
    *ndim = 1;
    return CODEC_OK;
  }
  if (j.pos >= n) return codec_fail(err, CODEC_CORRUPT, "%s", what);
  j.pos++;
  js_space(&j);
  if (j.pos < n && s[j.pos] == ']') {
    j.pos++;
  } else {
    for (;;) {
      jleaf leaf;
      js_space(&j);
      if (j.pos >= n || js_leaf(&j, &leaf) != CODEC_OK || !shape_leaf_ok(&leaf, unknown))
        return codec_fail(err, CODEC_CORRUPT, "%s", what);
      if (count >= NPY_MAX_DIMS)
        return codec_fail(err, CODEC_CORRUPT, "shape has more than %d dimensions", NPY_MAX_DIMS);
      shape[count++] = leaf.negative ? -1 : (int64_t)leaf.mag;
      js_space(&j);
      if (j.pos < n && s[j.pos] == ',') {
        j.pos++;
        continue;
      }
      if (j.pos < n && s[j.pos] == ']') {
        j.pos++;
        break;
      }
      return codec_fail(err, CODEC_CORRUPT, "%s", what);
    }
  }
  js_space(&j);
  if (j.pos != n) return codec_fail(err, CODEC_CORRUPT, "%s", what);
  *ndim = count;
  return CODEC_OK;
}

int json_parse_shape(const char *s, uint64_t n, int *ndim, int64_t *shape, codec_err *err) {
  return parse_shape(s, n, ndim, shape, 0, err);
}

int json_parse_newshape(const char *s, uint64_t n, int *ndim, int64_t *shape, codec_err *err) {
  return parse_shape(s, n, ndim, shape, 1, err);
}

double json_strtod(const char *s) { return strtod_json(s); }
