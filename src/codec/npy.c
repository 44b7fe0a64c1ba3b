/* SPDX-License-Identifier: Apache-2.0 */
/*
** npy.c — .npy parsing and writing (see npy.h).
**
** The header is a Python literal that NumPy reads with ast.literal_eval, so
** the reader is a small recursive-descent parser of that literal subset:
** dicts, tuples, lists, strings, integers (with Python 2's 'L' suffix in
** versions 1.0/2.0, as NumPy's _filter_header allows), True/False/None.
** It never evaluates anything and bounds nesting depth.
**
** The writer reproduces numpy.save (NumPy >= 1.23): keys in sorted order,
** repr() of each value, spare spaces for the growth axis
** (GROWTH_AXIS_MAX_DIGITS = 21), padding to a 64-byte boundary, final '\n',
** version 1.0 unless the header needs more than 65535 bytes.
*/
#include "codec/npy.h"

#include <stdio.h>
#include <string.h>

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_ARRAY_ALIGN 64
#define NPY_GROWTH_AXIS_MAX_DIGITS 21
#define NPY_MAX_NESTING 32

/* --- header literal parser --------------------------------------------- */

enum { PV_STR, PV_INT, PV_BOOL, PV_NONE, PV_TUPLE, PV_LIST, PV_DICT, PV_OTHER };

typedef struct pyval {
  int kind;
  const char *s; /* PV_STR: contents between the quotes */
  size_t slen;
  int64_t i;        /* PV_INT */
  int int_overflow; /* PV_INT that does not fit in int64 */
  int b;            /* PV_BOOL */
  /* PV_TUPLE: its direct elements, when all are integers */
  int nitems;
  int all_ints;
  int64_t ints[NPY_MAX_DIMS];
  int any_overflow;
} pyval;

typedef struct hdr_cursor {
  const char *p, *end;
  const unsigned char *file; /* start of the file, for byte offsets */
  int version;
  codec_err *err;
} hdr_cursor;

static uint64_t hdr_offset(const hdr_cursor *c) { return (uint64_t)((const unsigned char *)c->p - c->file); }

static int hdr_syntax(hdr_cursor *c) {
  return codec_fail(c->err, CODEC_CORRUPT, "cannot parse header: unexpected %s at byte %llu",
                    c->p < c->end ? "character" : "end", (unsigned long long)hdr_offset(c));
}

static void hdr_skip_space(hdr_cursor *c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r' || *c->p == '\f')) c->p++;
}

static int is_digit(char ch) { return ch >= '0' && ch <= '9'; }
static int is_ident(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' || is_digit(ch);
}

static int hdr_value(hdr_cursor *c, pyval *v, int depth);

/* Items of a tuple/list/dict up to `close`; for tuples, collect integers. */
static int hdr_sequence(hdr_cursor *c, pyval *v, char close, int is_dict, int depth) {
  pyval item;
  int rc, first = 1, saw_comma = 0;
  item.kind = PV_OTHER;
  item.i = 0;
  item.int_overflow = 0;
  v->nitems = 0;
  v->all_ints = 1;
  v->any_overflow = 0;
  for (;;) {
    hdr_skip_space(c);
    if (c->p < c->end && *c->p == close) {
      c->p++;
      break;
    }
    if (!first) {
      if (c->p >= c->end || *c->p != ',') return hdr_syntax(c);
      c->p++;
      saw_comma = 1;
      hdr_skip_space(c);
      if (c->p < c->end && *c->p == close) {
        c->p++;
        break;
      }
    }
    first = 0;
    if ((rc = hdr_value(c, &item, depth + 1)) != CODEC_OK) return rc;
    if (is_dict) {
      hdr_skip_space(c);
      if (c->p >= c->end || *c->p != ':') return hdr_syntax(c);
      c->p++;
      if ((rc = hdr_value(c, &item, depth + 1)) != CODEC_OK) return rc;
    }
    if (item.kind != PV_INT)
      v->all_ints = 0;
    else if (v->nitems < NPY_MAX_DIMS)
      v->ints[v->nitems] = item.i;
    if (item.kind == PV_INT && item.int_overflow) v->any_overflow = 1;
    v->nitems++;
  }
  /* "(x)" is just x in Python (so "((2, 3))" is the tuple (2, 3) and "(3)"
  ** the integer 3); only "(x,)", "()" or "(x, y)" make a tuple. */
  if (close == ')' && v->nitems == 1 && !saw_comma) *v = item;
  return CODEC_OK;
}

static int hdr_int(hdr_cursor *c, pyval *v, int negative) {
  uint64_t mag = 0;
  int overflow = 0, digits = 0;
  while (c->p < c->end && (is_digit(*c->p) || (*c->p == '_' && digits))) {
    if (*c->p != '_') {
      unsigned dgt = (unsigned)(*c->p - '0');
      if (mag > (UINT64_MAX - dgt) / 10)
        overflow = 1;
      else
        mag = mag * 10 + dgt;
      digits++;
    }
    c->p++;
  }
  if (c->p < c->end && (*c->p == '.' || *c->p == 'e' || *c->p == 'E' || *c->p == 'j')) {
    /* A float or complex literal: parse past it, but it is never an int. */
    while (c->p < c->end && (is_ident(*c->p) || *c->p == '.' ||
                             ((*c->p == '+' || *c->p == '-') && (c->p[-1] == 'e' || c->p[-1] == 'E'))))
      c->p++;
    v->kind = PV_OTHER;
    return CODEC_OK;
  }
  if (c->version <= 2 && c->p < c->end && *c->p == 'L') c->p++;
  if (c->p < c->end && is_ident(*c->p)) return hdr_syntax(c);
  v->kind = PV_INT;
  if (mag > (uint64_t)INT64_MAX + (negative ? 1u : 0u)) overflow = 1;
  v->int_overflow = overflow;
  v->i = overflow ? 0 : (negative ? (int64_t)(0 - mag) : (int64_t)mag);
  return CODEC_OK;
}

static int hdr_value(hdr_cursor *c, pyval *v, int depth) {
  char ch;
  v->kind = PV_OTHER;
  if (depth > NPY_MAX_NESTING)
    return codec_fail(c->err, CODEC_CORRUPT, "cannot parse header: nested too deeply at byte %llu",
                      (unsigned long long)hdr_offset(c));
  hdr_skip_space(c);
  if (c->p >= c->end) return hdr_syntax(c);
  ch = *c->p;
  if (ch == '{' || ch == '(' || ch == '[') {
    c->p++;
    v->kind = ch == '{' ? PV_DICT : ch == '(' ? PV_TUPLE : PV_LIST;
    return hdr_sequence(c, v, ch == '{' ? '}' : ch == '(' ? ')' : ']', ch == '{', depth);
  }
  if (ch == '\'' || ch == '"') {
    const char *start = ++c->p;
    while (c->p < c->end && *c->p != ch && *c->p != '\n') {
      if (*c->p == '\\' && c->p + 1 < c->end) c->p++;
      c->p++;
    }
    if (c->p >= c->end || *c->p != ch) return hdr_syntax(c);
    v->kind = PV_STR;
    v->s = start;
    v->slen = (size_t)(c->p - start);
    c->p++;
    return CODEC_OK;
  }
  if (ch == '-' || ch == '+') {
    c->p++;
    hdr_skip_space(c);
    if (c->p >= c->end || !is_digit(*c->p)) return hdr_syntax(c);
    return hdr_int(c, v, ch == '-');
  }
  if (is_digit(ch)) return hdr_int(c, v, 0);
  if (is_ident(ch)) {
    const char *start = c->p;
    size_t len;
    while (c->p < c->end && is_ident(*c->p)) c->p++;
    len = (size_t)(c->p - start);
    if (len == 4 && memcmp(start, "True", 4) == 0) {
      v->kind = PV_BOOL;
      v->b = 1;
    } else if (len == 5 && memcmp(start, "False", 5) == 0) {
      v->kind = PV_BOOL;
      v->b = 0;
    } else if (len == 4 && memcmp(start, "None", 4) == 0) {
      v->kind = PV_NONE;
    } else {
      c->p = start;
      return hdr_syntax(c);
    }
    return CODEC_OK;
  }
  return hdr_syntax(c);
}

/* The top-level dict: exactly the keys descr, fortran_order, shape. */
static int hdr_parse_dict(hdr_cursor *c, npy_array *a) {
  int rc, first = 1, have_descr = 0, have_fortran = 0, have_shape = 0;
  pyval key, val, descr, shape;
  descr.kind = shape.kind = PV_OTHER;
  descr.s = NULL;
  descr.slen = 0;
  hdr_skip_space(c);
  if (c->p >= c->end || *c->p != '{') {
    return codec_fail(c->err, CODEC_CORRUPT, "header is not a dictionary (byte %llu)",
                      (unsigned long long)hdr_offset(c));
  }
  c->p++;
  for (;;) {
    hdr_skip_space(c);
    if (c->p < c->end && *c->p == '}') break;
    if (!first) {
      if (c->p >= c->end || *c->p != ',') return hdr_syntax(c);
      c->p++;
      hdr_skip_space(c);
      if (c->p < c->end && *c->p == '}') break;
    }
    first = 0;
    if ((rc = hdr_value(c, &key, 1)) != CODEC_OK) return rc;
    hdr_skip_space(c);
    if (c->p >= c->end || *c->p != ':') return hdr_syntax(c);
    c->p++;
    if ((rc = hdr_value(c, &val, 1)) != CODEC_OK) return rc;
    if (key.kind == PV_STR && key.slen == 5 && memcmp(key.s, "descr", 5) == 0) {
      descr = val;
      have_descr = 1;
    } else if (key.kind == PV_STR && key.slen == 13 && memcmp(key.s, "fortran_order", 13) == 0) {
      if (val.kind != PV_BOOL) return codec_fail(c->err, CODEC_CORRUPT, "header: fortran_order is not True or False");
      a->fortran_order = val.b;
      have_fortran = 1;
    } else if (key.kind == PV_STR && key.slen == 5 && memcmp(key.s, "shape", 5) == 0) {
      shape = val;
      have_shape = 1;
    } else if (key.kind == PV_STR) {
      char q[CODEC_QUOTE_MAX];
      return codec_fail(c->err, CODEC_CORRUPT, "header has unexpected key '%s'",
                        codec_quote(q, sizeof(q), key.s, key.slen));
    } else {
      return codec_fail(c->err, CODEC_CORRUPT, "header has a key that is not a string");
    }
  }
  c->p++; /* '}' */
  hdr_skip_space(c);
  if (c->p != c->end) {
    return codec_fail(c->err, CODEC_CORRUPT, "cannot parse header: text after the dictionary at byte %llu",
                      (unsigned long long)hdr_offset(c));
  }
  if (!have_descr || !have_fortran || !have_shape) {
    return codec_fail(c->err, CODEC_CORRUPT, "header has no '%s' key",
                      !have_descr     ? "descr"
                      : !have_fortran ? "fortran_order"
                                      : "shape");
  }

  if (descr.kind == PV_LIST) {
    return codec_fail(c->err, CODEC_UNSUPPORTED,
                      "unsupported dtype: structured (record) dtypes are not numeric arrays");
  }
  if (descr.kind != PV_STR) {
    return codec_fail(c->err, CODEC_UNSUPPORTED, "unsupported dtype: descr is not a type string");
  }
  if ((rc = dt_parse(descr.s, descr.slen, &a->dtype, c->err)) != CODEC_OK) return rc;

  if (shape.kind != PV_TUPLE || !shape.all_ints) {
    return codec_fail(c->err, CODEC_CORRUPT, "header: shape is not a tuple of integers");
  }
  if (shape.nitems > NPY_MAX_DIMS) {
    return codec_fail(c->err, CODEC_UNSUPPORTED, "shape has %d dimensions (at most %d)", shape.nitems, NPY_MAX_DIMS);
  }
  if (shape.any_overflow) return codec_fail(c->err, CODEC_CORRUPT, "shape dimension does not fit in 64 bits");
  a->ndim = shape.nitems;
  memcpy(a->shape, shape.ints, sizeof(int64_t) * (size_t)shape.nitems);
  return CODEC_OK;
}

/* --- parse --------------------------------------------------------------- */

int npy_shape_numel(int ndim, const int64_t *shape, uint64_t *numel, codec_err *err) {
  uint64_t n = 1;
  int k, overflow = 0;
  for (k = 0; k < ndim; k++) {
    if (shape[k] < 0) {
      return codec_fail(err, CODEC_CORRUPT, "negative dimension %lld in shape", (long long)shape[k]);
    }
  }
  for (k = 0; k < ndim; k++) {
    if (size_mul(n, (uint64_t)shape[k], &n)) overflow = 1;
  }
  /* A zero anywhere makes the product 0 even if a partial product overflowed. */
  for (k = 0; k < ndim; k++)
    if (shape[k] == 0) {
      *numel = 0;
      return CODEC_OK;
    }
  if (overflow) return codec_fail(err, CODEC_CORRUPT, "shape has more than 2^64 elements");
  *numel = n;
  return CODEC_OK;
}

static uint32_t read_le32(const unsigned char *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

int npy_bad_magic(const unsigned char *buf, uint64_t n) {
  if (n < NPY_MAGIC_LEN) return memcmp(buf, NPY_MAGIC, (size_t)n) != 0;
  return memcmp(buf, NPY_MAGIC, NPY_MAGIC_LEN) != 0;
}

int npy_parse(const unsigned char *buf, uint64_t n, npy_array *a, codec_err *err) {
  uint64_t len_size, hlen, start, avail;
  hdr_cursor c;
  int rc;

  memset(a, 0, sizeof(*a));
  if (n == 0) return codec_fail(err, CODEC_CORRUPT, "empty blob is not a .npy file");
  if (n < NPY_MAGIC_LEN || memcmp(buf, NPY_MAGIC, NPY_MAGIC_LEN) != 0) {
    if (n < NPY_MAGIC_LEN && memcmp(buf, NPY_MAGIC, (size_t)n) == 0)
      return codec_fail(err, CODEC_CORRUPT, "truncated at byte %llu: no .npy version", (unsigned long long)n);
    return codec_fail(err, CODEC_CORRUPT, "not a .npy file (bad magic)");
  }
  if (n < 8) return codec_fail(err, CODEC_CORRUPT, "truncated at byte %llu: no .npy version", (unsigned long long)n);
  if (!((buf[6] == 1 || buf[6] == 2 || buf[6] == 3) && buf[7] == 0)) {
    return codec_fail(err, CODEC_UNSUPPORTED, "unsupported .npy format version %u.%u", buf[6], buf[7]);
  }
  a->version = buf[6];
  len_size = a->version == 1 ? 2 : 4;
  if (n < 8 + len_size) {
    return codec_fail(err, CODEC_CORRUPT, "truncated at byte %llu: no header length", (unsigned long long)n);
  }
  hlen = len_size == 2 ? (uint64_t)(buf[8] | (buf[9] << 8)) : read_le32(buf + 8);
  start = 8 + len_size;
  if (hlen > n - start) {
    return codec_fail(err, CODEC_CORRUPT, "header truncated at byte %llu (header length %llu needs %llu bytes)",
                      (unsigned long long)n, (unsigned long long)hlen, (unsigned long long)(start + hlen));
  }
  c.p = (const char *)buf + start;
  c.end = c.p + hlen;
  c.file = buf;
  c.version = a->version;
  c.err = err;
  if ((rc = hdr_parse_dict(&c, a)) != CODEC_OK) return rc;

  if ((rc = npy_shape_numel(a->ndim, a->shape, &a->numel, err)) != CODEC_OK) return rc;
  if (size_mul(a->numel, dt_size(a->dtype.type), &a->nbytes)) {
    return codec_fail(err, CODEC_CORRUPT, "shape has more bytes than fit in 64 bits");
  }
  a->header_len = start + hlen;
  avail = n - a->header_len;
  if (a->nbytes > avail) {
    return codec_fail(err, CODEC_CORRUPT, "data truncated at byte %llu: shape needs %llu payload bytes, blob has %llu",
                      (unsigned long long)n, (unsigned long long)a->nbytes, (unsigned long long)avail);
  }
  a->data = buf + a->header_len;
  a->trailing = avail - a->nbytes;
  return CODEC_OK;
}

/* --- write ---------------------------------------------------------------- */

/* The dict text numpy.save writes, growth-axis spaces included (no padding).
** Returns its length; out must hold NPY_DICT_MAX bytes. */
#define NPY_DICT_MAX (96 + NPY_MAX_DIMS * 22 + NPY_GROWTH_AXIS_MAX_DIGITS)
static size_t npy_dict_text(char *out, dt_dtype d, int ndim, const int64_t *shape, int fortran) {
  char descr[DT_NAME_MAX];
  size_t n;
  int k;
  dt_descr(d, descr);
  n = (size_t)snprintf(out, NPY_DICT_MAX, "{'descr': '%s', 'fortran_order': %s, 'shape': (", descr,
                       fortran ? "True" : "False");
  for (k = 0; k < ndim; k++) {
    n += (size_t)snprintf(out + n, NPY_DICT_MAX - n, k ? ", %lld" : "%lld", (long long)shape[k]);
  }
  if (ndim == 1) out[n++] = ',';
  n += (size_t)snprintf(out + n, NPY_DICT_MAX - n, "), }");
  if (ndim > 0) {
    char digits[24];
    int axis = fortran ? ndim - 1 : 0;
    int used = snprintf(digits, sizeof(digits), "%lld", (long long)shape[axis]);
    while (used < NPY_GROWTH_AXIS_MAX_DIGITS) {
      out[n++] = ' ';
      used++;
    }
  }
  return n;
}

/* Header length fields: version 1.0 has 2 bytes, 2.0 has 4. */
static uint64_t npy_padded(size_t dict_len, int len_size) {
  uint64_t hlen = dict_len + 1; /* + '\n' */
  uint64_t pad = NPY_ARRAY_ALIGN - ((NPY_MAGIC_LEN + 2 + len_size + hlen) % NPY_ARRAY_ALIGN);
  return hlen + pad;
}

uint64_t npy_header_size(dt_dtype d, int ndim, const int64_t *shape, int fortran_order) {
  char text[NPY_DICT_MAX];
  size_t len = npy_dict_text(text, d, ndim, shape, fortran_order);
  uint64_t body = npy_padded(len, 2);
  if (body > 65535) return 8 + 4 + npy_padded(len, 4);
  return 8 + 2 + body;
}

void npy_write_header(buf_t *out, dt_dtype d, int ndim, const int64_t *shape, int fortran_order) {
  char text[NPY_DICT_MAX];
  size_t len = npy_dict_text(text, d, ndim, shape, fortran_order);
  uint64_t body = npy_padded(len, 2);
  unsigned char prefix[12];
  int len_size = 2;
  unsigned char *dst;
  if (body > 65535) {
    len_size = 4;
    body = npy_padded(len, 4);
  }
  memcpy(prefix, NPY_MAGIC, NPY_MAGIC_LEN);
  prefix[6] = len_size == 2 ? 1 : 2;
  prefix[7] = 0;
  prefix[8] = (unsigned char)(body & 0xff);
  prefix[9] = (unsigned char)((body >> 8) & 0xff);
  prefix[10] = (unsigned char)((body >> 16) & 0xff);
  prefix[11] = (unsigned char)((body >> 24) & 0xff);
  buf_append(out, prefix, 8 + (uint64_t)len_size);
  dst = buf_extend(out, body);
  if (!dst) return;
  memcpy(dst, text, len);
  memset(dst + len, ' ', (size_t)(body - len - 1));
  dst[body - 1] = '\n';
}

void npy_write(buf_t *out, dt_dtype d, int ndim, const int64_t *shape, const void *payload, uint64_t nbytes) {
  npy_write_header(out, d, ndim, shape, 0);
  buf_append(out, payload, nbytes);
}

/* --- layout helpers ---------------------------------------------------------- */

void npy_fortran_to_c(const unsigned char *src, unsigned char *dst, int ndim, const int64_t *shape, size_t itemsize) {
  uint64_t fstride[NPY_MAX_DIMS], idx[NPY_MAX_DIMS];
  uint64_t numel = 1, i, off = 0;
  int k;
  for (k = 0; k < ndim; k++) {
    fstride[k] = k ? fstride[k - 1] * (uint64_t)shape[k - 1] : 1;
    numel *= (uint64_t)shape[k];
    idx[k] = 0;
  }
  if (numel == 0) return;
  if (ndim <= 1) {
    memcpy(dst, src, (size_t)(numel * itemsize));
    return;
  }
  /* Walk the destination in C order with an odometer over the indices,
  ** keeping the Fortran source offset in step. */
  for (i = 0; i < numel; i++) {
    memcpy(dst + i * itemsize, src + off * itemsize, itemsize);
    for (k = ndim - 1; k >= 0; k--) {
      idx[k]++;
      off += fstride[k];
      if (idx[k] < (uint64_t)shape[k]) break;
      off -= fstride[k] * (uint64_t)shape[k];
      idx[k] = 0;
    }
  }
}

uint64_t npy_element_offset(const npy_array *a, uint64_t i) {
  size_t itemsize = dt_size(a->dtype.type);
  uint64_t off = 0, stride = 1;
  int k;
  if (!a->fortran_order || a->ndim <= 1) return i * itemsize;
  /* Decompose the C-order index (last axis fastest), then apply Fortran
  ** strides (first axis fastest). */
  {
    uint64_t idx[NPY_MAX_DIMS];
    for (k = a->ndim - 1; k >= 0; k--) {
      uint64_t dim = (uint64_t)a->shape[k];
      idx[k] = i % dim;
      i /= dim;
    }
    for (k = 0; k < a->ndim; k++) {
      off += idx[k] * stride;
      stride *= (uint64_t)a->shape[k];
    }
  }
  return off * itemsize;
}

/* Digits by hand: metadata queries format a shape per row, and printf was
** most of their cost. */
size_t npy_shape_format(char *out, int ndim, const int64_t *shape) {
  size_t len = 0;
  int k;
  out[len++] = '[';
  for (k = 0; k < ndim; k++) {
    char digits[20];
    uint64_t v = shape[k] < 0 ? 0 - (uint64_t)shape[k] : (uint64_t)shape[k];
    int nd = 0;
    if (k) out[len++] = ',';
    if (shape[k] < 0) out[len++] = '-';
    do {
      digits[nd++] = (char)('0' + v % 10);
      v /= 10;
    } while (v);
    while (nd) out[len++] = digits[--nd];
  }
  out[len++] = ']';
  return len;
}

void npy_shape_json(buf_t *out, int ndim, const int64_t *shape) {
  char text[NPY_SHAPE_JSON_MAX];
  buf_append(out, text, npy_shape_format(text, ndim, shape));
}

unsigned char *npy_begin(buf_t *out, const npy_array *res) {
  if (buf_reserve(out, npy_header_size(res->dtype, res->ndim, res->shape, res->fortran_order) + res->nbytes))
    return NULL;
  npy_write_header(out, res->dtype, res->ndim, res->shape, res->fortran_order);
  return buf_extend(out, res->nbytes);
}

const unsigned char *npy_c_payload(const npy_array *a, unsigned char **owned) {
  *owned = NULL;
  if (!a->fortran_order || a->ndim <= 1 || a->numel <= 1) return a->data;
  *owned = codec_malloc(a->nbytes ? a->nbytes : 1);
  if (!*owned) return NULL;
  npy_fortran_to_c(a->data, *owned, a->ndim, a->shape, dt_size(a->dtype.type));
  return *owned;
}
