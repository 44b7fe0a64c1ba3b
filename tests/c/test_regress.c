/*
** test_regress.c — regression tests for defects found by fuzzing and the
** hardening work (tests/fuzz, tests/bad); each names what it guards.
*/
#include "buf.h"
#include "json.h"
#include "unit.h"

/* buf_extend(b, 0) on a buffer that never allocated computed NULL + 0
** (undefined) and returned NULL, which callers read as failure. */
TEST(regress_buf_extend_zero_on_empty) {
  ar_buf b;
  int ndim;
  int64_t shape[NPY_MAX_DIMS];
  codec_err err;
  dt_dtype d = dt_native(DT_FLOAT64);
  buf_init(&b, 100);
  CHECK(buf_extend(&b, 0) != NULL);
  CHECK(b.rc == CODEC_OK && b.n == 0);
  /* npy_from_json('[]') takes that path. */
  CHECK(json_parse_array("[]", 2, 0, &d, &ndim, shape, &b, &err) == CODEC_OK);
  CHECK(ndim == 1 && shape[0] == 0 && b.n == 0);
  buf_free(&b);
}
