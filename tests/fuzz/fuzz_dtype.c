/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_dtype.c — libFuzzer harness for dtype strings (dt_parse, as used for
** .npy descr, record dtype fields and SQL dtype arguments) and element
** conversion. The text before the first NUL is the dtype string; bytes after
** it are elements loaded, stored back and compared.
**
** seeds: (the corpus only)
*/
#include "codec/dtype.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *nul = memchr(data, 0, size);
  size_t n = nul ? (size_t)(nul - data) : size;
  dt_dtype d, again;
  codec_err err;
  char name[DT_NAME_MAX], descr[DT_NAME_MAX];
  int rc;
  err.msg[0] = 0;
  rc = dt_parse((const char *)data, n, &d, &err);
  if (rc != CODEC_OK) {
    fuzz_check_error(rc, &err);
    FUZZ_CHECK(rc == CODEC_UNSUPPORTED);
    return 0;
  }
  FUZZ_CHECK(d.type < DT_NTYPES && (d.big == 0 || d.big == 1));
  /* Names and descrs parse back to the same dtype. */
  dt_name(d, name);
  dt_descr(d, descr);
  FUZZ_CHECK(dt_parse(name, strlen(name), &again, &err) == CODEC_OK);
  FUZZ_CHECK(again.type == d.type && (dt_size(d.type) == 1 || again.big == d.big));
  FUZZ_CHECK(dt_parse(descr, strlen(descr), &again, &err) == CODEC_OK);
  FUZZ_CHECK(again.type == d.type && (dt_size(d.type) == 1 || again.big == d.big));

  if (nul) {
    /* Elements: load, store in the same dtype, load again: same value. */
    const uint8_t *p = nul + 1, *end = data + size;
    size_t size1 = dt_size(d.type);
    unsigned char tmp[16];
    while ((size_t)(end - p) >= size1) {
      dt_value v, w;
      dt_load(p, d, &v);
      FUZZ_CHECK(dt_store(tmp, d, &v) == 0);
      dt_load(tmp, d, &w);
      if (v.kind == DT_KIND_FLOAT || v.kind == DT_KIND_COMPLEX) {
        FUZZ_CHECK(v.re == w.re || (v.re != v.re && w.re != w.re));
        FUZZ_CHECK(v.im == w.im || (v.im != v.im && w.im != w.im));
      } else {
        FUZZ_CHECK(v.i == w.i && v.u == w.u);
      }
      /* Byte swapping twice is the identity. */
      memcpy(tmp, p, size1);
      dt_byteswap(tmp, 1, d);
      dt_byteswap(tmp, 1, d);
      FUZZ_CHECK(memcmp(tmp, p, size1) == 0);
      p += size1;
    }
  }
  return 0;
}
