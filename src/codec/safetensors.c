/* SPDX-License-Identifier: Apache-2.0 */
/*
** safetensors.c — safetensors reader/writer and record conversion (see
** safetensors.h).
*/
#include "codec/safetensors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/array.h"
#include "codec/json.h"
#include "codec/json_read.h"
#include "codec/keyset.h"

/* Every dtype of the reference implementation, its size in bits and the
** NumPy type it is (-1: none). */
static const struct {
  const char *name;
  int bits;
  int np;
} st_dtypes[] = {
    {"BOOL", 8, DT_BOOL},      {"U8", 8, DT_UINT8},     {"I8", 8, DT_INT8},     {"I16", 16, DT_INT16},
    {"U16", 16, DT_UINT16},    {"F16", 16, DT_FLOAT16}, {"I32", 32, DT_INT32},  {"U32", 32, DT_UINT32},
    {"F32", 32, DT_FLOAT32},   {"F64", 64, DT_FLOAT64}, {"I64", 64, DT_INT64},  {"U64", 64, DT_UINT64},
    {"C64", 64, DT_COMPLEX64}, {"BF16", 16, -1},        {"F8_E5M2", 8, -1},     {"F8_E4M3", 8, -1},
    {"F8_E8M0", 8, -1},        {"F8_E4M3FNUZ", 8, -1},  {"F8_E5M2FNUZ", 8, -1}, {"F4", 4, -1},
    {"F6_E2M3", 6, -1},        {"F6_E3M2", 6, -1},
};
#define ST_NDTYPES ((int)(sizeof(st_dtypes) / sizeof(st_dtypes[0])))

int st_dtype_code(const unsigned char *name, uint64_t n) {
  int k;
  for (k = 0; k < ST_NDTYPES; k++)
    if (strlen(st_dtypes[k].name) == n && memcmp(st_dtypes[k].name, name, (size_t)n) == 0) return k;
  return -1;
}

int st_dtype_bits(int code) { return code >= 0 && code < ST_NDTYPES ? st_dtypes[code].bits : 0; }

/* The code of a dtype name as the header spells it: JSON escapes are
** decoded first, as any JSON reader does ("F\u0033\u0032" is F32). */
static int dtype_code_json(const json_str *v) {
  int k;
  if (!v->escaped) return st_dtype_code(v->p, v->n);
  for (k = 0; k < ST_NDTYPES; k++)
    if (json_str_eq(v, st_dtypes[k].name)) return k;
  return -1;
}

static int st_code_of_type(int t) {
  int k;
  for (k = 0; k < ST_NDTYPES; k++)
    if (st_dtypes[k].np == t) return k;
  return -1;
}

void st_file_init(st_file *f) {
  memset(f, 0, sizeof(*f));
  buf_init(&f->names, UINT64_MAX);
}

void st_file_free(st_file *f) {
  codec_free(f->t);
  codec_free(f->dims);
  buf_free(&f->names);
  st_file_init(f);
}

static uint64_t le64(const unsigned char *p) {
  uint64_t v = 0;
  int k;
  for (k = 7; k >= 0; k--) v = v << 8 | p[k];
  return v;
}

static const char *tensor_name(const st_file *f, const st_tensor *t, char *q) {
  return codec_quote(q, CODEC_QUOTE_MAX, buf_at(&f->names, t->name_off), t->name_len);
}

/* {"k": "v", ...}: strings only, no key twice. With out, written compactly. */
static int string_map(json_reader *r, buf_t *out, const char *what) {
  keyset_t seen;
  buf_t key;
  json_str k, v;
  int more, rc, count = 0;
  char problem[96];
  snprintf(problem, sizeof(problem), "%s must be an object of strings", what);
  if (json_peek(r) != '{') return json_fail(r, problem);
  if ((rc = json_begin(r, '{')) != CODEC_OK) return rc;
  keyset_init(&seen);
  buf_init(&key, UINT64_MAX);
  if (out) buf_putc(out, '{');
  for (;;) {
    if ((rc = json_next_key(r, &more, &k)) != CODEC_OK || !more) break;
    if (json_peek(r) != '"') {
      rc = json_fail(r, problem);
      break;
    }
    if ((rc = json_string(r, &v)) != CODEC_OK) break;
    key.n = 0;
    if (json_unescape(&k, &key)) {
      rc = codec_nomem(r->err);
      break;
    }
    if (keyset_get(&seen, key.p, key.n) >= 0) {
      snprintf(problem, sizeof(problem), "%s has a duplicate key", what);
      rc = json_fail_str(r, &k, problem);
      break;
    }
    if (keyset_put(&seen, key.p, key.n, count)) {
      rc = codec_nomem(r->err);
      break;
    }
    if (out) {
      if (count) buf_putc(out, ',');
      json_put_string(out, buf_at(&key, 0), key.n);
      buf_putc(out, ':');
      key.n = 0;
      if (json_unescape(&v, &key)) { /* not a shortened value */
        rc = codec_nomem(r->err);
        break;
      }
      json_put_string(out, buf_at(&key, 0), key.n);
    }
    count++;
  }
  if (out) buf_putc(out, '}');
  buf_free(&key);
  keyset_free(&seen);
  if (rc == CODEC_OK && out && out->rc) rc = codec_fail_rc(r->err, out->rc);
  return rc;
}

static int push_tensor(st_file *f, st_tensor **t) {
  if (f->n == f->cap && buf_grow(&f->t, &f->cap, sizeof(st_tensor))) return CODEC_NOMEM;
  *t = &f->t[f->n++];
  memset(*t, 0, sizeof(**t));
  return CODEC_OK;
}

static int push_dim(st_file *f, uint64_t d) {
  if (f->ndims == f->dims_cap && buf_grow(&f->dims, &f->dims_cap, sizeof(int64_t))) return CODEC_NOMEM;
  /* Dimensions beyond int64 cannot describe bytes in a BLOB anyway; keep
  ** them saturated so the size check below rejects them. */
  f->dims[f->ndims++] = d > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)d;
  return CODEC_OK;
}

/* One tensor entry: {"dtype": ..., "shape": [...], "data_offsets": [b, e]}. */
static int tensor_entry(st_file *f, json_reader *r, st_tensor *t) {
  json_str k, v;
  int more, rc, seen = 0;
  char q[CODEC_QUOTE_MAX], problem[CODEC_QUOTE_MAX + 64];
  if (json_peek(r) != '{') {
    snprintf(problem, sizeof(problem), "entry of tensor '%s' is not an object", tensor_name(f, t, q));
    return json_fail(r, problem);
  }
  if ((rc = json_begin(r, '{')) != CODEC_OK) return rc;
  t->dims_off = f->ndims;
  for (;;) {
    int field;
    if ((rc = json_next_key(r, &more, &k)) != CODEC_OK) return rc;
    if (!more) break;
    field = json_str_eq(&k, "dtype") ? 1 : json_str_eq(&k, "shape") ? 2 : json_str_eq(&k, "data_offsets") ? 4 : 0;
    if (!field) { /* unknown fields are ignored, as serde does */
      if ((rc = json_skip(r)) != CODEC_OK) return rc;
      continue;
    }
    if (seen & field) return json_fail_str(r, &k, "duplicate field");
    seen |= field;
    if (field == 1) {
      if ((rc = json_string(r, &v)) != CODEC_OK) return rc;
      t->code = dtype_code_json(&v);
      if (t->code < 0) {
        char quoted[CODEC_QUOTE_MAX];
        snprintf(problem, sizeof(problem), "unknown dtype '%s'", codec_quote(quoted, sizeof(quoted), v.p, v.n));
        return json_fail_str(r, &v, problem);
      }
    } else if (field == 2) {
      if ((rc = json_begin(r, '[')) != CODEC_OK) return rc;
      for (;;) {
        uint64_t d;
        if ((rc = json_next(r, &more)) != CODEC_OK) return rc;
        if (!more) break;
        if (t->ndim == RECORD_MAX_DIMS) return json_fail(r, "shape has more than 64 dimensions");
        if ((rc = json_uint(r, &d)) != CODEC_OK) return rc;
        if (push_dim(f, d)) return codec_nomem(r->err);
        t->ndim++;
      }
    } else {
      uint64_t *dst[2] = {&t->begin, &t->end};
      int count = 0;
      if ((rc = json_begin(r, '[')) != CODEC_OK) return rc;
      for (;;) {
        if ((rc = json_next(r, &more)) != CODEC_OK) return rc;
        if (!more) break;
        if (count == 2) return json_fail(r, "data_offsets must hold two integers");
        if ((rc = json_uint(r, dst[count++])) != CODEC_OK) return rc;
      }
      if (count != 2) return json_fail(r, "data_offsets must hold two integers");
    }
  }
  if (seen != 7) {
    return codec_fail(r->err, CODEC_CORRUPT, "tensor '%s' lacks \"%s\"", tensor_name(f, t, q),
                      !(seen & 1)   ? "dtype"
                      : !(seen & 2) ? "shape"
                                    : "data_offsets");
  }
  return CODEC_OK;
}

static int by_offset(const void *a, const void *b) {
  const st_tensor *x = a, *y = b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  return x->order < y->order ? -1 : x->order > y->order;
}

/* Offsets contiguous from 0, sizes matching shape x dtype, covering the data. */
static int check_layout(st_file *f, codec_err *err) {
  uint64_t start = 0;
  uint32_t i;
  char q[CODEC_QUOTE_MAX];
  if (f->n > 1) qsort(f->t, f->n, sizeof(st_tensor), by_offset);
  for (i = 0; i < f->n; i++) {
    const st_tensor *t = &f->t[i];
    uint64_t numel = 1, bits, want;
    int k;
    if (t->begin != start || t->end < t->begin)
      return codec_fail(err, CODEC_CORRUPT, "tensor '%s' has data_offsets [%llu, %llu], expected it to start at %llu",
                        tensor_name(f, t, q), (unsigned long long)t->begin, (unsigned long long)t->end,
                        (unsigned long long)start);
    for (k = 0; k < t->ndim; k++)
      if (size_mul(numel, (uint64_t)f->dims[t->dims_off + (uint64_t)k], &numel))
        return codec_fail(err, CODEC_CORRUPT, "shape of tensor '%s' overflows", tensor_name(f, t, q));
    if (size_mul(numel, (uint64_t)st_dtypes[t->code].bits, &bits))
      return codec_fail(err, CODEC_CORRUPT, "shape of tensor '%s' overflows", tensor_name(f, t, q));
    if (bits % 8)
      return codec_fail(err, CODEC_CORRUPT, "tensor '%s' of %s does not fill whole bytes", tensor_name(f, t, q),
                        st_dtypes[t->code].name);
    want = bits / 8;
    if (t->end - t->begin != want)
      return codec_fail(err, CODEC_CORRUPT,
                        "tensor '%s' needs %llu bytes for its shape and dtype %s, data_offsets give %llu",
                        tensor_name(f, t, q), (unsigned long long)want, st_dtypes[t->code].name,
                        (unsigned long long)(t->end - t->begin));
    start = t->end;
  }
  if (start != f->data_len)
    return codec_fail(err, CODEC_CORRUPT, "the tensors cover %llu bytes but the data section has %llu",
                      (unsigned long long)start, (unsigned long long)f->data_len);
  return CODEC_OK;
}

int st_parse(st_file *f, const unsigned char *blob, uint64_t n, codec_err *err) {
  json_reader r;
  json_str key;
  keyset_t names;
  int more, rc;
  uint64_t hlen;
  f->blob = blob;
  if (n < 8)
    return codec_fail(err, CODEC_CORRUPT, "file too short (%llu bytes; the header length takes 8)",
                      (unsigned long long)n);
  hlen = le64(blob);
  if (hlen > ST_MAX_HEADER)
    return codec_fail(err, CODEC_CORRUPT, "header length %llu exceeds the limit of %d bytes", (unsigned long long)hlen,
                      ST_MAX_HEADER);
  if (hlen > n - 8)
    return codec_fail(err, CODEC_CORRUPT, "header length %llu runs past the end of the file (%llu bytes)",
                      (unsigned long long)hlen, (unsigned long long)n);
  f->header_len = hlen;
  f->data = blob + 8 + hlen;
  f->data_len = n - 8 - hlen;
  if ((rc = json_reader_init(&r, blob + 8, hlen, 8, "safetensors header", err)) != CODEC_OK) return rc;
  if ((rc = json_begin(&r, '{')) != CODEC_OK) return rc;
  keyset_init(&names);
  for (;;) {
    st_tensor *t;
    if ((rc = json_next_key(&r, &more, &key)) != CODEC_OK || !more) break;
    if (json_str_eq(&key, "__metadata__")) {
      if (f->has_metadata) {
        rc = json_fail_str(&r, &key, "duplicate __metadata__");
        break;
      }
      f->has_metadata = 1;
      json_peek(&r);
      f->meta_start = r.pos;
      if ((rc = string_map(&r, NULL, "__metadata__")) != CODEC_OK) break;
      f->meta_len = r.pos - f->meta_start;
      continue;
    }
    if (push_tensor(f, &t)) {
      rc = codec_nomem(err);
      break;
    }
    t->order = f->n - 1;
    t->name_off = f->names.n;
    if (json_unescape(&key, &f->names)) {
      rc = codec_nomem(err);
      break;
    }
    t->name_len = f->names.n - t->name_off;
    if (keyset_get(&names, buf_at(&f->names, t->name_off), t->name_len) >= 0) {
      char q[CODEC_QUOTE_MAX], problem[CODEC_QUOTE_MAX + 32];
      snprintf(problem, sizeof(problem), "duplicate tensor '%s'", tensor_name(f, t, q));
      rc = json_fail_str(&r, &key, problem);
      break;
    }
    if (keyset_put(&names, buf_at(&f->names, t->name_off), t->name_len, (int)t->order)) {
      rc = codec_nomem(err);
      break;
    }
    if ((rc = tensor_entry(f, &r, t)) != CODEC_OK) break;
  }
  keyset_free(&names);
  if (rc == CODEC_OK) rc = json_end(&r);
  if (rc == CODEC_OK) rc = check_layout(f, err);
  return rc;
}

int st_metadata_json(const st_file *f, buf_t *out, codec_err *err) {
  json_reader r;
  int rc;
  if ((rc = json_reader_init(&r, f->blob + 8 + f->meta_start, f->meta_len, 8 + f->meta_start, "__metadata__", err)))
    return rc;
  return string_map(&r, out, "__metadata__");
}

/* --- records ----------------------------------------------------------------- */

int st_to_record(const st_file *f, buf_t *out, codec_err *err) {
  buf_t head;
  uint32_t i;
  buf_init(&head, UINT64_MAX);
  for (i = 0; i < f->n; i++) {
    const st_tensor *t = &f->t[i];
    const int64_t *shape = f->dims + t->dims_off;
    record_item_spec spec;
    char dtname[DT_NAME_MAX], q[CODEC_QUOTE_MAX];
    int big = array_dim_over_int32(t->ndim, shape), np = st_dtypes[t->code].np;
    if (big >= 0) {
      buf_free(&head);
      return codec_fail(err, CODEC_UNSUPPORTED, "tensor '%s': dimension %lld does not fit Flower's int32 shape",
                        tensor_name(f, t, q), (long long)shape[big]);
    }
    memset(&spec, 0, sizeof(spec));
    spec.key.p = buf_at(&f->names, t->name_off);
    spec.key.n = t->name_len;
    spec.ndim = t->ndim;
    spec.shape = shape;
    spec.data.p = f->data + t->begin;
    spec.data.n = t->end - t->begin;
    if (np >= 0) {
      dt_dtype d;
      d.type = (unsigned char)np;
      d.big = 0; /* safetensors data is little-endian */
      dt_name(d, dtname);
      spec.dtype.p = (const unsigned char *)dtname;
      spec.dtype.n = strlen(dtname);
      spec.stype.p = (const unsigned char *)RECORD_STYPE_NUMPY;
      spec.stype.n = sizeof(RECORD_STYPE_NUMPY) - 1;
      head.n = 0;
      npy_write_header(&head, d, t->ndim, shape, 0);
      if (head.rc) break;
      spec.data_head.p = head.p;
      spec.data_head.n = head.n;
    } else {
      spec.dtype.p = (const unsigned char *)st_dtypes[t->code].name;
      spec.dtype.n = strlen(st_dtypes[t->code].name);
      spec.stype.p = (const unsigned char *)ST_STYPE;
      spec.stype.n = sizeof(ST_STYPE) - 1;
    }
    record_write_item(out, &spec);
  }
  if (head.rc || out->rc) {
    int rc = head.rc ? head.rc : out->rc;
    buf_free(&head);
    return codec_fail_rc(err, rc);
  }
  buf_free(&head);
  return CODEC_OK;
}

int st_is_raw_item(const record_item *it) {
  return it->stype.n == sizeof(ST_STYPE) - 1 && memcmp(it->stype.p, ST_STYPE, sizeof(ST_STYPE) - 1) == 0;
}

int st_is_raw_dtype(const unsigned char *name, uint64_t n) {
  int code = st_dtype_code(name, n);
  return code >= 0 && st_dtypes[code].np < 0;
}

int st_raw_item_validate(const record_item *it, int index, codec_err *err) {
  char where[CODEC_QUOTE_MAX + 40];
  uint64_t numel, bits;
  int64_t shape[RECORD_MAX_DIMS];
  codec_err tmp;
  int code = st_dtype_code(it->dtype.p, it->dtype.n), ndim;
  if (code < 0 || st_dtypes[code].np >= 0) {
    char q[CODEC_QUOTE_MAX];
    return codec_fail(err, CODEC_CORRUPT, "stype 'safetensors' with dtype '%s', which is not a raw safetensors dtype%s",
                      codec_quote(q, sizeof(q), it->dtype.p, it->dtype.n),
                      array_where(where, sizeof(where), it, index));
  }
  ndim = record_item_shape(it, shape);
  if (npy_shape_numel(ndim, shape, &numel, &tmp) || size_mul(numel, (uint64_t)st_dtypes[code].bits, &bits))
    return codec_fail(err, CODEC_CORRUPT, "shape overflows%s", array_where(where, sizeof(where), it, index));
  if (bits % 8 || bits / 8 != it->data.n)
    return codec_fail(err, CODEC_CORRUPT, "data has %llu bytes, shape and dtype %s need %llu%s%s",
                      (unsigned long long)it->data.n, st_dtypes[code].name, (unsigned long long)(bits / 8),
                      bits % 8 ? " and a fraction" : "", array_where(where, sizeof(where), it, index));
  return CODEC_OK;
}

/* What one item becomes: dtype code, shape and byte length. */
typedef struct st_plan {
  int code;
  int ndim;
  int64_t shape[RECORD_MAX_DIMS];
  uint64_t nbytes;
} st_plan;

static int plan_item(const record_item *it, int index, st_plan *p, codec_err *err) {
  char where[CODEC_QUOTE_MAX + 40];
  int rc;
  if (it->key.n == 12 && memcmp(it->key.p, "__metadata__", 12) == 0)
    return codec_fail(err, CODEC_UNSUPPORTED, "key '__metadata__' is reserved in safetensors (item %d)", index);
  if (st_is_raw_item(it)) {
    if ((rc = st_raw_item_validate(it, index, err)) != CODEC_OK) return rc;
    p->code = st_dtype_code(it->dtype.p, it->dtype.n);
    p->ndim = record_item_shape(it, p->shape);
    p->nbytes = it->data.n;
    return CODEC_OK;
  }
  {
    npy_array a;
    if ((rc = array_open(it, index, &a, err)) != CODEC_OK) return rc;
    p->code = st_code_of_type(a.dtype.type);
    if (p->code < 0)
      return codec_fail(err, CODEC_UNSUPPORTED, "%s has no safetensors dtype%s", dt_type_name((dt_type)a.dtype.type),
                        array_where(where, sizeof(where), it, index));
    p->ndim = a.ndim;
    memcpy(p->shape, a.shape, sizeof(int64_t) * (size_t)a.ndim);
    p->nbytes = a.nbytes;
  }
  return CODEC_OK;
}

/* Append an item's data, little-endian and in C order. */
static int put_data(buf_t *out, const record_item *it, int index, codec_err *err) {
  npy_array a;
  unsigned char *dst;
  int rc;
  if (st_is_raw_item(it)) {
    buf_append(out, it->data.p, it->data.n);
    return CODEC_OK;
  }
  if ((rc = array_open(it, index, &a, err)) != CODEC_OK) return rc;
  if (!(dst = buf_extend(out, a.nbytes))) return CODEC_OK; /* out->rc tells */
  if (a.fortran_order && a.ndim > 1 && a.numel > 1)
    npy_fortran_to_c(a.data, dst, a.ndim, a.shape, dt_size(a.dtype.type));
  else if (a.nbytes)
    memcpy(dst, a.data, (size_t)a.nbytes);
  if (a.dtype.big && dt_size(a.dtype.type) > 1) dt_byteswap(dst, a.numel, a.dtype);
  return CODEC_OK;
}

int st_from_record(const record_t *rec, const char *metadata, uint64_t metadata_len, buf_t *out, codec_err *err) {
  buf_t header;
  st_plan p;
  uint64_t offset = 0, hlen;
  unsigned char len8[8];
  int i, k, rc = CODEC_OK;
  buf_init(&header, UINT64_MAX);
  buf_putc(&header, '{');
  if (metadata) {
    json_reader r;
    if ((rc = json_reader_init(&r, metadata, metadata_len, 0, "argument 2", err)) != CODEC_OK) goto done;
    buf_puts(&header, "\"__metadata__\":");
    if ((rc = string_map(&r, &header, "metadata")) != CODEC_OK) goto done;
    if ((rc = json_end(&r)) != CODEC_OK) goto done;
  }
  for (i = 0; i < rec->n; i++) {
    const record_item *it = &rec->items[i];
    if ((rc = plan_item(it, i, &p, err)) != CODEC_OK) goto done;
    if (i || metadata) buf_putc(&header, ',');
    json_put_string(&header, it->key.p, it->key.n);
    buf_printf(&header, ":{\"dtype\":\"%s\",\"shape\":[", st_dtypes[p.code].name);
    for (k = 0; k < p.ndim; k++) buf_printf(&header, k ? ",%lld" : "%lld", (long long)p.shape[k]);
    buf_printf(&header, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)offset,
               (unsigned long long)(offset + p.nbytes));
    offset += p.nbytes;
  }
  buf_putc(&header, '}');
  while (header.n % 8 && !header.rc) buf_putc(&header, ' '); /* data starts 8-byte aligned */
  if (header.rc) {
    rc = codec_fail_rc(err, header.rc);
    goto done;
  }
  if (header.n > ST_MAX_HEADER) {
    /* The format's limit, not the caller's: readers refuse such a file.
    ** CODEC_TOOBIG would lose this message for SQLite's generic one. */
    rc = codec_fail(err, CODEC_UNSUPPORTED, "header length %llu exceeds the limit of %d bytes",
                    (unsigned long long)header.n, ST_MAX_HEADER);
    goto done;
  }
  hlen = header.n;
  for (k = 0; k < 8; k++) len8[k] = (unsigned char)(hlen >> (8 * k));
  if (buf_reserve(out, 8 + hlen + offset) == CODEC_OK) {
    buf_append(out, len8, 8);
    buf_append(out, header.p, header.n);
    for (i = 0; i < rec->n && rc == CODEC_OK; i++) rc = put_data(out, &rec->items[i], i, err);
  }
  if (rc == CODEC_OK && out->rc) rc = codec_fail_rc(err, out->rc);
done:
  buf_free(&header);
  return rc;
}
