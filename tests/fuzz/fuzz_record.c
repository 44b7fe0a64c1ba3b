/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_record.c — libFuzzer harness for the Flower ArrayRecord reader
** (record_parse) and what runs on its items: record_item_shape, array_open,
** array_validate, array_write_npy, key lookup and quoting, and a canonical
** re-encode that must parse back to the same keys, dtypes, shapes and data.
**
** seeds: tests/data/records tests/data/bad_records tests/data/fedavg
*/
#include "codec/array.h"
#include "fuzz.h"
#include "codec/record.h"

static void check_item(const record_t *rec, int i) {
  const record_item *it = &rec->items[i];
  int64_t shape[RECORD_MAX_DIMS];
  char q[CODEC_QUOTE_MAX];
  npy_array a;
  codec_err err;
  int ndim, rc, k;

  FUZZ_CHECK(codec_utf8_valid(it->key.p, it->key.n));
  FUZZ_CHECK(record_find(rec, it->key.p, it->key.n) == i);
  codec_quote(q, sizeof(q), it->key.p, it->key.n);
  FUZZ_CHECK(fuzz_utf8_valid((const unsigned char *)q, strlen(q)));

  ndim = record_item_shape(it, shape);
  FUZZ_CHECK(ndim == it->ndim && ndim >= 0 && ndim <= RECORD_MAX_DIMS);
  for (k = 0; k < ndim; k++) FUZZ_CHECK(shape[k] >= 0 && shape[k] <= INT32_MAX);

  err.msg[0] = 0;
  rc = array_open(it, i, &a, &err);
  if (rc != CODEC_OK) {
    fuzz_check_error(rc, &err);
  } else {
    buf_t out;
    FUZZ_CHECK(a.data >= it->data.p && a.data + a.nbytes <= it->data.p + it->data.n);
    buf_init(&out, 1u << 20);
    array_write_npy(&out, it, &a);
    if (out.rc == CODEC_OK) {
      npy_array b;
      FUZZ_CHECK(npy_parse(out.p, out.n, &b, &err) == CODEC_OK);
      FUZZ_CHECK(b.nbytes == a.nbytes && b.ndim == a.ndim);
    }
    buf_free(&out);
  }
  err.msg[0] = 0;
  rc = array_validate(it, i, &err);
  if (rc != CODEC_OK) fuzz_check_error(rc, &err);
}

/* Re-encode every item canonically; the result parses to the same items. */
static void check_reencode(const record_t *rec) {
  buf_t out;
  record_t again;
  codec_err err;
  int i, rc;
  buf_init(&out, UINT64_MAX);
  for (i = 0; i < rec->n; i++) {
    int64_t shape[RECORD_MAX_DIMS];
    record_item_spec spec;
    record_item_spec_from_item(&spec, &rec->items[i], shape);
    record_write_item(&out, &spec);
  }
  if (out.rc != CODEC_OK) {
    FUZZ_CHECK(out.rc == CODEC_NOMEM);
    buf_free(&out);
    return;
  }
  record_init(&again);
  rc = record_parse(&again, out.p ? out.p : (const unsigned char *)"", out.n, &err);
  FUZZ_CHECK(rc == CODEC_OK || rc == CODEC_NOMEM);
  if (rc == CODEC_OK) {
    FUZZ_CHECK(again.n == rec->n);
    for (i = 0; i < rec->n; i++) {
      const record_item *x = &rec->items[i], *y = &again.items[i];
      int64_t sx[RECORD_MAX_DIMS], sy[RECORD_MAX_DIMS];
      int nx = record_item_shape(x, sx), ny = record_item_shape(y, sy);
      FUZZ_CHECK(x->key.n == y->key.n && memcmp(x->key.p, y->key.p, (size_t)x->key.n) == 0);
      FUZZ_CHECK(x->dtype.n == y->dtype.n && memcmp(x->dtype.p, y->dtype.p, (size_t)x->dtype.n) == 0);
      FUZZ_CHECK(x->stype.n == y->stype.n && memcmp(x->stype.p, y->stype.p, (size_t)x->stype.n) == 0);
      FUZZ_CHECK(x->data.n == y->data.n && memcmp(x->data.p, y->data.p, (size_t)x->data.n) == 0);
      FUZZ_CHECK(nx == ny && memcmp(sx, sy, sizeof(int64_t) * (size_t)nx) == 0);
    }
    /* Canonical bytes are a fixed point. */
    if (out.n) {
      buf_t twice;
      buf_init(&twice, UINT64_MAX);
      for (i = 0; i < again.n; i++) {
        int64_t shape[RECORD_MAX_DIMS];
        record_item_spec spec;
        record_item_spec_from_item(&spec, &again.items[i], shape);
        record_write_item(&twice, &spec);
      }
      FUZZ_CHECK(twice.rc != CODEC_OK || (twice.n == out.n && memcmp(twice.p, out.p, (size_t)out.n) == 0));
      buf_free(&twice);
    }
  }
  record_clear(&again);
  buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  record_t rec;
  codec_err err;
  int rc, i;
  record_init(&rec);
  err.msg[0] = 0;
  rc = record_parse(&rec, size ? data : (const uint8_t *)"", size, &err);
  if (rc != CODEC_OK) {
    fuzz_check_error(rc, &err);
    FUZZ_CHECK(rc == CODEC_CORRUPT || rc == CODEC_NOMEM);
  } else {
    for (i = 0; i < rec.n; i++) check_item(&rec, i);
    check_reencode(&rec);
  }
  record_clear(&rec);
  return 0;
}
