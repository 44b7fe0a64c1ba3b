/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_json.c — libFuzzer harness for the JSON readers: json_parse_array
** (npy_from_json) and json_parse_shape (npy's shape argument). The first
** byte picks the reader and the dtype; the rest is the JSON text. A parsed
** array printed back with json_put_array must parse to the same values.
**
** seeds: (the corpus only)
*/
#include "fuzz.h"
#include "codec/json.h"

#define FUZZ_LIMIT (1u << 20)

/* Same element values (NaN equals NaN; bool compares as stored). */
static int same_payload(const unsigned char *x, const unsigned char *y, uint64_t numel, dt_dtype d) {
  size_t size = dt_size(d.type);
  uint64_t i;
  for (i = 0; i < numel; i++) {
    dt_value a, b;
    dt_load(x + i * size, d, &a);
    dt_load(y + i * size, d, &b);
    if (a.kind == DT_KIND_FLOAT || a.kind == DT_KIND_COMPLEX) {
      if (!((a.re == b.re || (a.re != a.re && b.re != b.re)) && (a.im == b.im || (a.im != a.im && b.im != b.im))))
        return 0;
    } else if (a.i != b.i || a.u != b.u) {
      return 0;
    }
  }
  return 1;
}

static void check_array(const char *s, size_t n, int has_dtype, dt_dtype d) {
  int ndim, ndim2, rc, k;
  int64_t shape[NPY_MAX_DIMS], shape2[NPY_MAX_DIMS];
  uint64_t numel = 1;
  buf_t out, text, again;
  codec_err err;
  buf_init(&out, FUZZ_LIMIT);
  err.msg[0] = 0;
  rc = json_parse_array(s, n, has_dtype, &d, &ndim, shape, &out, &err);
  if (rc != CODEC_OK) {
    fuzz_check_error(rc, &err);
    buf_free(&out);
    return;
  }
  FUZZ_CHECK(ndim >= 0 && ndim <= NPY_MAX_DIMS);
  for (k = 0; k < ndim; k++) {
    FUZZ_CHECK(shape[k] >= 0);
    numel *= (uint64_t)shape[k];
  }
  FUZZ_CHECK(out.n == numel * dt_size(d.type));

  /* Print and read back with the same dtype. */
  buf_init(&text, FUZZ_LIMIT * 8);
  json_put_array(&text, out.p, d, ndim, shape);
  if (text.rc == CODEC_OK) {
    buf_init(&again, FUZZ_LIMIT);
    rc = json_parse_array((const char *)text.p, text.n, 1, &d, &ndim2, shape2, &again, &err);
    if (rc != CODEC_OK) fprintf(stderr, "re-parse of %.*s: %s\n", (int)(text.n > 200 ? 200 : text.n), text.p, err.msg);
    FUZZ_CHECK(rc == CODEC_OK);
    /* A zero-size array prints as nested [] only down to its first empty axis. */
    if (numel > 0) {
      FUZZ_CHECK(ndim2 == ndim && memcmp(shape, shape2, sizeof(int64_t) * (size_t)ndim) == 0);
      FUZZ_CHECK(same_payload(out.p, again.p, numel, d));
    }
    buf_free(&again);
  }
  buf_free(&text);
  buf_free(&out);
}

static void check_shape(const char *s, size_t n) {
  int ndim, rc, k;
  int64_t shape[NPY_MAX_DIMS];
  codec_err err;
  err.msg[0] = 0;
  rc = json_parse_shape(s, n, &ndim, shape, &err);
  if (rc != CODEC_OK) {
    fuzz_check_error(rc, &err);
    return;
  }
  FUZZ_CHECK(ndim >= 0 && ndim <= NPY_MAX_DIMS);
  for (k = 0; k < ndim; k++) FUZZ_CHECK(shape[k] >= 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *s;
  size_t n;
  dt_dtype d;
  if (size < 1) return 0;
  s = (const char *)data + 1;
  n = size - 1;
  if (data[0] == 0xff) {
    check_shape(s, n);
    return 0;
  }
  /* Low bits: the dtype (or none, to infer it); bit 7: big-endian. */
  d.type = (unsigned char)((data[0] & 0x3f) % (DT_NTYPES + 1));
  d.big = (unsigned char)(data[0] >> 7);
  if (d.type == DT_NTYPES) {
    d = dt_native(DT_FLOAT64);
    check_array(s, n, 0, d);
  } else {
    if (dt_size(d.type) == 1) d.big = 0;
    check_array(s, n, 1, d);
  }
  return 0;
}
