/* SPDX-License-Identifier: Apache-2.0 */
/*
** repr.c — repr(ndarray) as NumPy 1.24, or NumPy 2, prints it with default
** options (see repr.h). The layout follows numpy/core/arrayprint.py:
** _formatArray (rows wrapped at linewidth, nested axes separated by blank
** lines, "..." rows and columns when summarised), FloatingFormat (fixed or
** scientific notation chosen over the shown values, padded to a common
** width), IntegerFormat, BoolFormat and ComplexFloatingFormat, and
** array_repr's shape and dtype suffix.
*/
#include "codec/repr.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINEWIDTH 75
#define EDGEITEMS 3
#define PRECISION 8
#define PREFIX "array("
#define WORD_MAX 160

/* How one float column (real or imaginary parts) prints. */
typedef struct float_fmt {
  int sci;       /* scientific notation */
  int plus;      /* print '+' for non-negative values (imaginary parts) */
  int pad_left;  /* width of the integer part, sign included */
  int pad_right; /* fixed: width of the fraction; scientific: of all after '.' */
  int prec;      /* scientific: digits after the point */
  int exp_size;  /* scientific: exponent digits */
} float_fmt;

typedef struct repr_ctx {
  buf_t *out;
  const npy_array *a;
  int version; /* the NumPy whose printing is followed: 100 * major + minor */
  int summarize;
  uint64_t col; /* column in the current line of this repr */
  int64_t idx[NPY_MAX_DIMS];
  int int_width;
  float_fmt re, im;
} repr_ctx;

/* --- walking the shown elements -------------------------------------------- */

static int axis_summarized(const repr_ctx *r, int k) { return r->summarize && r->a->shape[k] > 2 * EDGEITEMS; }

/* Next shown index along axis k after i, or -1 at the end. */
static int64_t next_index(const repr_ctx *r, int k, int64_t i) {
  int64_t n = r->a->shape[k];
  if (axis_summarized(r, k) && i == EDGEITEMS - 1) return n - EDGEITEMS;
  return i + 1 < n ? i + 1 : -1;
}

static void load_at(const repr_ctx *r, dt_value *v) {
  uint64_t flat = 0;
  int k;
  for (k = 0; k < r->a->ndim; k++) flat = flat * (uint64_t)r->a->shape[k] + (uint64_t)r->idx[k];
  dt_load(r->a->data + npy_element_offset(r->a, flat), r->a->dtype, v);
}

/* Visit every shown element (size > 0) in C order. */
static void for_each_shown(repr_ctx *r, void (*visit)(void *, const dt_value *), void *arg) {
  int nd = r->a->ndim, k;
  dt_value v;
  for (k = 0; k < nd; k++) r->idx[k] = 0;
  for (;;) {
    load_at(r, &v);
    visit(arg, &v);
    for (k = nd - 1; k >= 0; k--) {
      int64_t nx = next_index(r, k, r->idx[k]);
      if (nx >= 0) {
        r->idx[k] = nx;
        break;
      }
      r->idx[k] = 0;
    }
    if (k < 0) return;
  }
}

/* --- floats ------------------------------------------------------------------ */

/* Does the text read back as x in the array's precision? */
static int round_trips(const char *s, double x, dt_type t) {
  if (t == DT_FLOAT32 || t == DT_COMPLEX64) return strtof(s, NULL) == (float)x;
  if (t == DT_FLOAT16) return dt_double_to_half(strtod(s, NULL)) == dt_double_to_half(x);
  return strtod(s, NULL) == x;
}

/* The digits after the first of the shortest "%.*e" text that reads back as
** x (finite, not negative): returns that precision. */
static int shortest_prec(double x, dt_type t, char *s, size_t cap) {
  int p;
  for (p = 0; p < 17; p++) {
    snprintf(s, cap, "%.*e", p, x);
    if (round_trips(s, x, t)) return p;
  }
  return 16;
}

/* x (finite) as integer part (sign included) and fraction digits, as
** Dragon4 in NumPy's 'maxprec' mode with precision 8 and trim '.': unique
** digits, at most 8 after the point (scientific: of the mantissa), trailing
** zeros dropped. *exp10 gets the exponent in scientific mode. */
static void float_parts(double x, dt_type t, int sci, int plus, char *ip, char *fp, int *exp10) {
  char s[64], digits[32];
  const char *sign = signbit(x) ? "-" : plus ? "+" : "";
  double ax = fabs(x);
  int p = shortest_prec(ax, t, s, sizeof(s)), e, nd, i;
  char *m;
  if (sci && p > PRECISION) snprintf(s, sizeof(s), "%.*e", PRECISION, ax);
  /* s = d[.ddd]e±XX */
  m = strchr(s, 'e');
  e = atoi(m + 1);
  nd = 0;
  for (i = 0; s + i < m; i++)
    if (s[i] != '.') digits[nd++] = s[i];
  while (nd > 1 && digits[nd - 1] == '0') nd--;
  digits[nd] = 0;
  *exp10 = e;
  if (sci) {
    sprintf(ip, "%s%c", sign, digits[0]);
    strcpy(fp, digits + 1);
    return;
  }
  if (nd - 1 - e > PRECISION) {
    /* More than 8 digits after the point: the value rounded there. */
    char *dot;
    snprintf(s, sizeof(s), "%.*f", PRECISION, ax);
    dot = strchr(s, '.');
    *dot = 0;
    sprintf(ip, "%s%s", sign, s);
    nd = (int)strlen(dot + 1);
    while (nd > 0 && dot[nd] == '0') nd--;
    memcpy(fp, dot + 1, (size_t)nd);
    fp[nd] = 0;
    return;
  }
  strcpy(ip, sign);
  if (e + 1 >= nd) {
    /* No digit after the point: Dragon4 prints the integer exactly, past
    ** its unique digits (float32 67108872, not 67108870). Fixed notation is
    ** used below 1e8 only. */
    snprintf(ip + strlen(ip), 40, "%.0f", ax);
    fp[0] = 0;
  } else if (e >= 0) {
    size_t n = strlen(ip);
    for (i = 0; i <= e; i++) ip[n++] = digits[i];
    ip[n] = 0;
    strcpy(fp, digits + e + 1);
  } else {
    strcat(ip, "0");
    for (i = 0; i < -e - 1; i++) fp[i] = '0';
    strcpy(fp + i, digits);
  }
  if (ax == 0) fp[0] = 0;
}

/* Pass one over a column: fixed or scientific. */
typedef struct float_scan {
  float_fmt *f;
  int imag;
  dt_type t;
  double lo, hi; /* smallest and largest non-zero finite magnitudes */
  int any_nonzero, any_finite, any_nonfinite, neg_inf;
} float_scan;

static double part(const float_scan *fs, const dt_value *v) { return fs->imag ? v->im : v->re; }

static void scan_range(void *arg, const dt_value *v) {
  float_scan *fs = arg;
  double x = part(fs, v), ax = fabs(x);
  if (!isfinite(x)) {
    fs->any_nonfinite = 1;
    if (isinf(x) && x < 0) fs->neg_inf = 1;
    return;
  }
  fs->any_finite = 1;
  if (ax == 0) return;
  if (!fs->any_nonzero || ax < fs->lo) fs->lo = ax;
  if (!fs->any_nonzero || ax > fs->hi) fs->hi = ax;
  fs->any_nonzero = 1;
}

static int max_int(int a, int b) { return a > b ? a : b; }

/* Pass two: the widths. */
static void scan_widths(void *arg, const dt_value *v) {
  float_scan *fs = arg;
  float_fmt *f = fs->f;
  double x = part(fs, v);
  char ip[48], fp[48], ex[16];
  int e;
  if (!isfinite(x)) return;
  float_parts(x, fs->t, f->sci, f->plus, ip, fp, &e);
  f->pad_left = max_int(f->pad_left, (int)strlen(ip));
  if (f->sci) {
    f->prec = max_int(f->prec, (int)strlen(fp));
    f->exp_size = max_int(f->exp_size, snprintf(ex, sizeof(ex), "%02d", e < 0 ? -e : e));
  } else {
    f->pad_right = max_int(f->pad_right, (int)strlen(fp));
  }
}

/* Values from this size up print in scientific notation: 1e8 up to NumPy
** 2.2; from 2.3, 10 ** min(8, finfo(dtype).precision) — 1e3 for float16,
** 1e6 for float32 and complex64. */
static double exp_cutoff(const repr_ctx *r) {
  dt_type t = (dt_type)r->a->dtype.type;
  if (r->version < 203) return 1e8;
  if (t == DT_FLOAT16) return 1e3;
  if (t == DT_FLOAT32 || t == DT_COMPLEX64) return 1e6;
  return 1e8;
}

static void float_fill(repr_ctx *r, float_fmt *f, int imag) {
  float_scan fs;
  memset(&fs, 0, sizeof(fs));
  memset(f, 0, sizeof(*f));
  f->plus = imag;
  fs.f = f;
  fs.imag = imag;
  fs.t = (dt_type)r->a->dtype.type;
  for_each_shown(r, scan_range, &fs);
  if (fs.any_nonzero && (fs.hi >= exp_cutoff(r) || fs.lo < 0.0001 || fs.hi / fs.lo > 1000.)) f->sci = 1;
  if (fs.any_finite) {
    for_each_shown(r, scan_widths, &fs);
    if (f->sci) f->pad_right = f->exp_size + 2 + f->prec;
  }
  if (fs.any_nonfinite) {
    int offset = f->pad_right + 1, inflen = 3 + (f->plus || fs.neg_inf);
    f->pad_left = max_int(f->pad_left, max_int(3 - offset, inflen - offset));
  }
}

static int float_word(const float_fmt *f, double x, dt_type t, char *w) {
  char ip[48], fp[48];
  int e, n = 0, i;
  if (!isfinite(x)) {
    const char *s = x != x ? (f->plus ? "+nan" : "nan") : x < 0 ? "-inf" : f->plus ? "+inf" : "inf";
    int width = f->pad_left + f->pad_right + 1, len = (int)strlen(s);
    for (i = len; i < width; i++) w[n++] = ' ';
    memcpy(w + n, s, (size_t)len + 1);
    return n + len;
  }
  if (f->sci) {
    /* Every value gets `prec` digits: Dragon4 given min_digits goes on with
    ** the exact value's digits rather than padding with zeros. */
    char s[64], *m;
    const char *sign = signbit(x) ? "-" : f->plus ? "+" : "";
    snprintf(s, sizeof(s), "%.*e", f->prec, fabs(x));
    m = strchr(s, 'e');
    e = atoi(m + 1);
    *m = 0;
    for (i = (int)(strlen(sign) + 1); i < f->pad_left; i++) w[n++] = ' ';
    n += sprintf(w + n, "%s%s%se%c%0*d", sign, s, f->prec ? "" : ".", e < 0 ? '-' : '+', f->exp_size, e < 0 ? -e : e);
    return n;
  }
  float_parts(x, t, 0, f->plus, ip, fp, &e);
  for (i = (int)strlen(ip); i < f->pad_left; i++) w[n++] = ' ';
  n += sprintf(w + n, "%s.%s", ip, fp);
  {
    for (i = (int)strlen(fp); i < f->pad_right; i++) w[n++] = ' ';
    w[n] = 0;
  }
  return n;
}

/* --- integers ------------------------------------------------------------------ */

static void scan_int(void *arg, const dt_value *v) {
  repr_ctx *r = arg;
  char s[24];
  int n = v->kind == DT_KIND_UINT ? snprintf(s, sizeof(s), "%llu", (unsigned long long)v->u)
                                  : snprintf(s, sizeof(s), "%lld", (long long)v->i);
  r->int_width = max_int(r->int_width, n);
}

/* --- one element ------------------------------------------------------------------ */

static int element_word(repr_ctx *r, char *w) {
  dt_value v;
  dt_type t = (dt_type)r->a->dtype.type;
  int n;
  load_at(r, &v);
  switch (dt_kind(t)) {
    case DT_KIND_BOOL: return sprintf(w, "%s", v.i ? (r->a->ndim ? " True" : "True") : "False");
    case DT_KIND_UINT: return sprintf(w, "%*llu", r->int_width, (unsigned long long)v.u);
    case DT_KIND_INT: return sprintf(w, "%*lld", r->int_width, (long long)v.i);
    case DT_KIND_COMPLEX: {
      /* The 'j' goes before the imaginary part's padding. */
      int m, sp;
      n = float_word(&r->re, v.re, t, w);
      m = float_word(&r->im, v.im, t, w + n);
      for (sp = m; sp > 0 && w[n + sp - 1] == ' '; sp--) {}
      memmove(w + n + sp + 1, w + n + sp, (size_t)(m - sp) + 1);
      w[n + sp] = 'j';
      return n + m + 1;
    }
    default: return float_word(&r->re, v.re, t, w);
  }
}

/* --- layout (numpy's _formatArray) ---------------------------------------------- */

static void put(repr_ctx *r, const char *s, size_t n) {
  buf_append(r->out, s, n);
  r->col += n;
}

static void put_indent(repr_ctx *r, uint64_t n) {
  while (n--) put(r, " ", 1);
}

/* numpy's _extendLine: wrap before the word when it would pass `width`,
** unless the line holds nothing but its indent. */
static void extend_line(repr_ctx *r, const char *w, size_t n, uint64_t width, uint64_t indent) {
  if (r->col + n > width && r->col > indent) {
    if (r->out->rc == CODEC_OK)
      while (r->col > 0 && r->out->n > 0 && r->out->p[r->out->n - 1] == ' ') {
        r->out->n--;
        r->col--;
      }
    buf_putc(r->out, '\n');
    r->col = 0;
    put_indent(r, indent);
  }
  put(r, w, n);
}

/* Between the rows of an axis with `left` axes from here on: a comma and a
** blank line per axis below the rows. */
static void axis_sep(repr_ctx *r, int left, uint64_t indent) {
  int nl;
  put(r, ",", 1);
  for (nl = 0; nl < left - 1; nl++) buf_putc(r->out, '\n');
  r->col = 0;
  put_indent(r, indent);
}

/* One axis from its '[' to its ']'; its items start at column `indent`. */
static void format_axis(repr_ctx *r, int axis, uint64_t indent, uint64_t width) {
  int left = r->a->ndim - axis;
  int64_t i;
  char w[WORD_MAX];
  put(r, "[", 1);
  for (i = 0; i >= 0; i = next_index(r, axis, i)) {
    int gap = axis_summarized(r, axis) && i == r->a->shape[axis] - EDGEITEMS;
    r->idx[axis] = i;
    if (left == 1) {
      if (gap) {
        extend_line(r, "...", 3, width - 1, indent);
        put(r, ", ", 2);
      }
      extend_line(r, w, (size_t)element_word(r, w), width - 1, indent);
      if (i + 1 < r->a->shape[axis]) put(r, ", ", 2);
    } else {
      if (gap) {
        axis_sep(r, left, indent);
        put(r, "...", 3);
      }
      if (i > 0) axis_sep(r, left, indent);
      format_axis(r, axis + 1, indent + 1, width - 1);
    }
  }
  put(r, "]", 1);
}

/* --- repr --------------------------------------------------------------------------- */

static int dtype_implied(dt_type t) { return t == DT_FLOAT64 || t == DT_INT64 || t == DT_BOOL || t == DT_COMPLEX128; }

/* Python's repr of the shape tuple: "(3,)", "(0, 3)". */
static int shape_tuple(const npy_array *a, char *out) {
  int n = 0, k;
  out[n++] = '(';
  for (k = 0; k < a->ndim; k++) n += sprintf(out + n, k ? ", %lld" : "%lld", (long long)a->shape[k]);
  if (a->ndim == 1) out[n++] = ',';
  out[n++] = ')';
  out[n] = 0;
  return n;
}

void repr_array(buf_t *out, const npy_array *a, uint64_t threshold, int numpy_version) {
  repr_ctx r;
  dt_type t = (dt_type)a->dtype.type;
  /* NumPy 2 names a byte order other than the machine's ('>f4') and never
  ** leaves such a dtype implied; NumPy 1.24 names the type alone. */
  int swapped = numpy_version >= 200 && dt_swapped(a->dtype);
  int implied = dtype_implied(t) && a->numel > 0 && !swapped;
  /* NumPy 2.2 and later add the shape to summarised arrays, and put the
  ** shape of an empty one in the same suffix. */
  int shape_extra = numpy_version >= 202 && (a->numel > threshold || (a->numel == 0 && a->ndim != 1));
  char w[WORD_MAX], extra[NPY_MAX_DIMS * 24 + 64];
  size_t len;
  memset(&r, 0, sizeof(r));
  r.out = out;
  r.a = a;
  r.version = numpy_version;
  r.summarize = a->numel > threshold;
  put(&r, PREFIX, sizeof(PREFIX) - 1);
  if (a->numel > 0) {
    switch (dt_kind(t)) {
      case DT_KIND_INT:
      case DT_KIND_UINT: for_each_shown(&r, scan_int, &r); break;
      case DT_KIND_FLOAT: float_fill(&r, &r.re, 0); break;
      case DT_KIND_COMPLEX:
        float_fill(&r, &r.re, 0);
        float_fill(&r, &r.im, 1);
        break;
      default: break;
    }
    if (a->ndim == 0) put(&r, w, (size_t)element_word(&r, w));
    /* The line is one shorter for the closing ")" or ",". */
    else
      format_axis(&r, 0, sizeof(PREFIX), LINEWIDTH - 1);
  } else if (a->ndim == 1 || shape_extra) {
    put(&r, "[]", 2);
  } else {
    put(&r, "[], shape=", 10);
    put(&r, w, (size_t)shape_tuple(a, w));
  }
  if (implied && !shape_extra) {
    put(&r, ")", 1);
    return;
  }
  put(&r, ",", 1);
  /* The suffix "shape=(...), dtype=...)" goes on a new line if it would
  ** make this one longer than the line width. */
  len = 0;
  if (shape_extra) {
    len += (size_t)sprintf(extra, "shape=");
    len += (size_t)shape_tuple(a, extra + len);
  }
  if (!implied) {
    char name[16];
    if (swapped) {
      dt_descr(a->dtype, name);
      len += (size_t)sprintf(extra + len, "%sdtype='%s'", len ? ", " : "", name);
    } else {
      len += (size_t)sprintf(extra + len, "%sdtype=%s", len ? ", " : "", dt_type_name(t));
    }
  }
  extra[len++] = ')';
  extra[len] = 0;
  if (r.col + len + 1 > LINEWIDTH) {
    buf_putc(out, '\n');
    r.col = 0;
    put_indent(&r, sizeof(PREFIX) - 1);
  } else {
    put(&r, " ", 1);
  }
  put(&r, extra, len);
}

void repr_key(buf_t *out, const unsigned char *key, uint64_t n) {
  uint64_t i;
  int has_single = 0, has_double = 0;
  char q;
  for (i = 0; i < n; i++) {
    if (key[i] == '\'') has_single = 1;
    if (key[i] == '"') has_double = 1;
  }
  q = has_single && !has_double ? '"' : '\'';
  buf_putc(out, q);
  for (i = 0; i < n; i++) {
    unsigned char c = key[i];
    if (c == '\\' || c == (unsigned char)q) {
      buf_putc(out, '\\');
      buf_putc(out, (char)c);
    } else if (c == '\n') {
      buf_puts(out, "\\n");
    } else if (c == '\t') {
      buf_puts(out, "\\t");
    } else if (c == '\r') {
      buf_puts(out, "\\r");
    } else if (c < 0x20 || c == 0x7f) {
      buf_printf(out, "\\x%02x", c);
    } else {
      buf_putc(out, (char)c);
    }
  }
  buf_putc(out, q);
}
