/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_npy.c — libFuzzer harness for the .npy reader (npy_parse) and what
** runs on a parsed array: element offsets and loads, Fortran-to-C copies,
** JSON output, the NumPy repr (valid UTF-8 within its limit), and a write/re-parse round trip that must give the same
** array back.
**
** seeds: tests/data/npy tests/data/bad_npy
*/
#include "fuzz.h"
#include "codec/json.h"
#include "codec/npy.h"
#include "codec/repr.h"

/* Work on payloads up to this size only, to keep each run fast. */
#define FUZZ_MAX_PAYLOAD (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  npy_array a, b;
  codec_err err;
  buf_t out;
  int rc, k;
  err.msg[0] = 0;
  rc = npy_parse(data, size, &a, &err);
  if (rc != CODEC_OK) {
    fuzz_check_error(rc, &err);
    /* Parsing allocates nothing, and a hostile file is corrupt, not "too big". */
    FUZZ_CHECK(rc == CODEC_CORRUPT || rc == CODEC_UNSUPPORTED);
    return 0;
  }
  /* The view lies inside the input. */
  FUZZ_CHECK(a.ndim >= 0 && a.ndim <= NPY_MAX_DIMS);
  FUZZ_CHECK(a.header_len + a.nbytes + a.trailing == size);
  FUZZ_CHECK(a.data == data + a.header_len);
  for (k = 0; k < a.ndim; k++) FUZZ_CHECK(a.shape[k] >= 0);
  FUZZ_CHECK(a.nbytes == a.numel * dt_size(a.dtype.type));

  if (a.numel > 0) {
    dt_value v;
    uint64_t last = npy_element_offset(&a, a.numel - 1);
    FUZZ_CHECK(last + dt_size(a.dtype.type) <= a.nbytes);
    dt_load(a.data + npy_element_offset(&a, 0), a.dtype, &v);
    dt_load(a.data + last, a.dtype, &v);
  }

  buf_init(&out, 1u << 16);
  npy_shape_json(&out, a.ndim, a.shape);
  buf_free(&out);

  if (a.nbytes <= FUZZ_MAX_PAYLOAD) {
    unsigned char *c = malloc(a.nbytes ? (size_t)a.nbytes : 1);
    FUZZ_CHECK(c != NULL);
    /* The C-order payload, as npy_c_payload makes it. */
    if (a.fortran_order)
      npy_fortran_to_c(a.data, c, a.ndim, a.shape, dt_size(a.dtype.type));
    else if (a.nbytes)
      memcpy(c, a.data, (size_t)a.nbytes);
    if (a.fortran_order && a.numel > 0) {
      /* Element i of the C-order copy is where npy_element_offset says. */
      uint64_t i = a.numel / 2;
      size_t isize = dt_size(a.dtype.type);
      FUZZ_CHECK(memcmp(c + i * isize, a.data + npy_element_offset(&a, i), isize) == 0);
    }

    /* JSON output stays within its limit. */
    buf_init(&out, 1u << 16);
    json_put_array(&out, c, a.dtype, a.ndim, a.shape);
    FUZZ_CHECK(out.n <= out.limit);
    FUZZ_CHECK(out.rc == CODEC_OK || out.rc == CODEC_TOOBIG);
    buf_free(&out);

    /* The repr stays within its limit and is ASCII (a subset of UTF-8):
    ** summarised at a small threshold to keep each run fast. */
    buf_init(&out, 1u << 16);
    repr_array(&out, &a, 64, size % 2 ? REPR_NUMPY_1_24 : 204);
    FUZZ_CHECK(out.n <= out.limit);
    FUZZ_CHECK(out.rc == CODEC_OK || out.rc == CODEC_TOOBIG);
    if (out.rc == CODEC_OK) {
      uint64_t i;
      FUZZ_CHECK(out.n >= 8 && memcmp(out.p, "array(", 6) == 0 && out.p[out.n - 1] == ')');
      for (i = 0; i < out.n; i++) FUZZ_CHECK(out.p[i] == '\n' || (out.p[i] >= 0x20 && out.p[i] < 0x7f));
    }
    buf_free(&out);

    /* numpy.save of the same array parses back to the same array. */
    buf_init(&out, UINT64_MAX);
    npy_write(&out, a.dtype, a.ndim, a.shape, c, a.nbytes);
    FUZZ_CHECK(out.rc == CODEC_OK || out.rc == CODEC_NOMEM);
    if (out.rc == CODEC_OK) {
      FUZZ_CHECK(out.n == npy_header_size(a.dtype, a.ndim, a.shape, 0) + a.nbytes);
      rc = npy_parse(out.p, out.n, &b, &err);
      FUZZ_CHECK(rc == CODEC_OK);
      FUZZ_CHECK(b.dtype.type == a.dtype.type && b.dtype.big == a.dtype.big && !b.fortran_order);
      FUZZ_CHECK(b.ndim == a.ndim && memcmp(b.shape, a.shape, sizeof(int64_t) * (size_t)a.ndim) == 0);
      FUZZ_CHECK(b.trailing == 0 && b.header_len % 64 == 0);
      FUZZ_CHECK(a.nbytes == 0 || memcmp(b.data, c, (size_t)a.nbytes) == 0);
    }
    buf_free(&out);
    free(c);
  }
  return 0;
}
