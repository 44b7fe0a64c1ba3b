/* SPDX-License-Identifier: Apache-2.0 */
/*
** array.c — record items as n-dimensional arrays (see array.h).
*/
#include "codec/array.h"
#include "codec/safetensors.h"

#include <stdio.h>
#include <string.h>

const char *array_where(char *out, size_t cap, const record_item *item, int index) {
  char q[CODEC_QUOTE_MAX];
  snprintf(out, cap, " (item %d, key '%s')", index, codec_quote(q, sizeof(q), item->key.p, item->key.n));
  return out;
}

/* Re-raise a codec error with the item's place appended. */
static int with_where(int rc, codec_err *err, const record_item *item, int index) {
  char where[CODEC_QUOTE_MAX + 40];
  char msg[sizeof(err->msg)];
  if (rc == CODEC_OK || rc == CODEC_NOMEM) return rc;
  memcpy(msg, err->msg, sizeof(msg));
  array_where(where, sizeof(where), item, index);
  return codec_fail(err, rc, "%s%s", msg, where);
}

int array_open(const record_item *item, int index, npy_array *a, codec_err *err) {
  int rc;
  if (record_item_is_numpy(item)) {
    rc = npy_parse(item->data.p, item->data.n, a, err);
    return with_where(rc, err, item, index);
  }
  /* Legacy raw buffer: dtype and shape come from the message. */
  memset(a, 0, sizeof(*a));
  rc = dt_parse((const char *)item->dtype.p, item->dtype.n, &a->dtype, err);
  if (rc) return with_where(rc, err, item, index);
  a->ndim = record_item_shape(item, a->shape);
  rc = npy_shape_numel(a->ndim, a->shape, &a->numel, err);
  if (rc) return with_where(rc, err, item, index);
  if (size_mul(a->numel, dt_size(a->dtype.type), &a->nbytes)) {
    rc = codec_fail(err, CODEC_CORRUPT, "raw array dtype and shape need more than 2^64 bytes");
    return with_where(rc, err, item, index);
  }
  if (a->nbytes != item->data.n) {
    char q[CODEC_QUOTE_MAX];
    return codec_fail(err, CODEC_CORRUPT,
                      "raw array data has %llu bytes, dtype and shape need %llu (item %d, key '%s')",
                      (unsigned long long)item->data.n, (unsigned long long)a->nbytes, index,
                      codec_quote(q, sizeof(q), item->key.p, item->key.n));
  }
  a->version = 0;
  a->data = item->data.p;
  return CODEC_OK;
}

int array_validate(const record_item *item, int index, codec_err *err) {
  npy_array a;
  int64_t shape[RECORD_MAX_DIMS];
  int rc, ndim;
  char name[DT_NAME_MAX], where[CODEC_QUOTE_MAX + 40], q[CODEC_QUOTE_MAX];
  /* A dtype NumPy lacks (bfloat16, float8, ...), as ar_from_safetensors and
  ** from_state_dict keep it: valid when its byte count fits its shape. Any
  ** other raw item is read as a legacy one (its dtype a NumPy name). */
  if (st_is_raw_item(item) && st_is_raw_dtype(item->dtype.p, item->dtype.n))
    return st_raw_item_validate(item, index, err);
  rc = array_open(item, index, &a, err);
  if (rc || !record_item_is_numpy(item)) return rc;
  /* Flower writes dtype = str(arr.dtype) and shape = list(arr.shape). */
  dt_name(a.dtype, name);
  array_where(where, sizeof(where), item, index);
  if (item->dtype.n != strlen(name) || memcmp(item->dtype.p, name, (size_t)item->dtype.n) != 0) {
    return codec_fail(err, CODEC_CORRUPT, "dtype '%s' does not match the .npy dtype '%s'%s",
                      codec_quote(q, sizeof(q), item->dtype.p, item->dtype.n), name, where);
  }
  ndim = record_item_shape(item, shape);
  if (ndim != a.ndim || memcmp(shape, a.shape, sizeof(int64_t) * (size_t)ndim) != 0) {
    return codec_fail(err, CODEC_CORRUPT, "shape does not match the .npy shape%s", where);
  }
  return CODEC_OK;
}

void array_write_npy(buf_t *out, const record_item *item, const npy_array *a) {
  if (record_item_is_numpy(item)) {
    buf_append(out, item->data.p, item->data.n);
  } else {
    npy_write(out, a->dtype, a->ndim, a->shape, a->data, a->nbytes);
  }
}

void array_numpy_spec(record_item_spec *spec, codec_span key, const npy_array *a, codec_span bytes, char *dtname) {
  memset(spec, 0, sizeof(*spec));
  dt_name(a->dtype, dtname);
  spec->key = key;
  spec->dtype.p = (const unsigned char *)dtname;
  spec->dtype.n = strlen(dtname);
  spec->stype.p = (const unsigned char *)RECORD_STYPE_NUMPY;
  spec->stype.n = sizeof(RECORD_STYPE_NUMPY) - 1;
  spec->ndim = a->ndim;
  spec->shape = a->shape;
  spec->data = bytes;
}

int array_dim_over_int32(int ndim, const int64_t *shape) {
  int k;
  for (k = 0; k < ndim; k++)
    if (shape[k] > INT32_MAX) return k;
  return -1;
}

void array_result_spec(record_item_spec *spec, codec_span key, const npy_array *res, char *dtname) {
  codec_span no_data = {NULL, 0};
  array_numpy_spec(spec, key, res, no_data, dtname);
  spec->data_head.n = npy_header_size(res->dtype, res->ndim, res->shape, res->fortran_order);
  spec->data.n = res->nbytes;
}

uint64_t array_result_size(codec_span key, const npy_array *res) {
  record_item_spec spec;
  char dtname[DT_NAME_MAX];
  array_result_spec(&spec, key, res, dtname);
  return record_item_encoded_size(&spec);
}

unsigned char *array_begin_result(buf_t *out, codec_span key, const npy_array *res) {
  record_item_spec spec;
  char dtname[DT_NAME_MAX];
  array_result_spec(&spec, key, res, dtname);
  record_write_item_head(out, &spec);
  return npy_begin(out, res);
}
