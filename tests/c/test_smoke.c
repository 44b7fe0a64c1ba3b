/*
** test_smoke.c — first codec checks: every .npy vector parses, headers we
** write equal NumPy's bytes, every record vector parses.
*/
#include <stdlib.h>

#include "npy.h"
#include "record.h"
#include "unit.h"

TEST(npy_header_written_like_numpy_save) {
  static const char *files[] = {"npy/dtype_le_f4.npy", "npy/scalar_f8.npy", "npy/ndim_8_u1.npy",
                                "npy/dtype_be_c16.npy", "npy/empty_2x0x3_i8.npy", "npy/dtype_na_b1.npy"};
  size_t k;
  for (k = 0; k < sizeof(files) / sizeof(files[0]); k++) {
    uint64_t n;
    unsigned char *f = unit_read_file(files[k], &n);
    npy_array a;
    codec_err err;
    ar_buf out;
    CHECK(f != NULL);
    CHECK(npy_parse(f, n, &a, &err) == CODEC_OK);
    buf_init(&out, UINT64_MAX);
    npy_write(&out, a.dtype, a.ndim, a.shape, a.data, a.nbytes);
    CHECK(out.rc == CODEC_OK);
    CHECK(out.n == n && memcmp(out.p, f, (size_t)n) == 0);
    CHECK(npy_header_size(a.dtype, a.ndim, a.shape, 0) == a.header_len);
    buf_free(&out);
    free(f);
  }
}

TEST(record_vectors_parse) {
  static const char *files[] = {"records/empty.pb", "records/list_3.pb", "records/mlp_dict.pb",
                                "records/unicode_keys.pb", "records/legacy_raw.pb"};
  static const int lens[] = {0, 3, 5, 3, 2};
  size_t k;
  for (k = 0; k < sizeof(files) / sizeof(files[0]); k++) {
    uint64_t n;
    unsigned char *f = unit_read_file(files[k], &n);
    ar_record rec;
    codec_err err;
    int rc;
    CHECK(f != NULL || n == 0);
    ar_record_init(&rec);
    rc = ar_record_parse(&rec, f ? f : (const unsigned char *)"", n, &err);
    CHECK(rc == CODEC_OK);
    CHECK(rec.n == lens[k]);
    ar_record_clear(&rec);
    free(f);
  }
}
