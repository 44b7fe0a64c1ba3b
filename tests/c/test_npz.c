/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_npz.c — the .npz codec: round trips (stored and deflated), the
** ZIP64 fields NumPy writes, and malformed archives: truncation, bad CRC,
** unsupported methods, encryption, non-.npy members, lying sizes (zip
** bombs) and the caller's size limit.
*/
#include <stdlib.h>
#include <zlib.h>

#include "codec/npz.h"
#include "unit.h"

static uint32_t rd32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static void wr32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)v, p[1] = (unsigned char)(v >> 8), p[2] = (unsigned char)(v >> 16),
  p[3] = (unsigned char)(v >> 24);
}

/* list_3.pb (float32 [2,3], int64 [2], bool scalar) as an archive. */
static int archive_of(const char *rel, int compress, buf_t *out) {
  uint64_t n;
  unsigned char *blob = unit_read_file(rel, &n);
  record_t rec;
  codec_err err;
  int rc;
  if (!blob) return -1;
  record_init(&rec);
  rc = record_parse(&rec, blob, n, &err);
  if (!rc) rc = npz_from_record(&rec, compress, out, &err);
  record_clear(&rec);
  free(blob);
  return rc;
}

TEST(npz_round_trips_records) {
  static const char *files[] = {"records/list_3.pb", "records/mlp_dict.pb", "records/unicode_keys.pb",
                                "records/empty.pb"};
  size_t k;
  int compress;
  for (k = 0; k < sizeof(files) / sizeof(files[0]); k++) {
    for (compress = 0; compress < 2; compress++) {
      buf_t zip, back;
      codec_err err;
      uint64_t n;
      unsigned char *blob = unit_read_file(files[k], &n);
      buf_init(&zip, UINT64_MAX);
      buf_init(&back, UINT64_MAX);
      CHECK(archive_of(files[k], compress, &zip) == CODEC_OK);
      CHECK(npz_to_record(zip.p, zip.n, UINT64_MAX, &back, &err) == CODEC_OK);
      CHECK(back.n == n && (n == 0 || memcmp(back.p, blob, (size_t)n) == 0));
      free(blob);
      buf_free(&zip);
      buf_free(&back);
    }
  }
}

TEST(npz_converts_raw_items_to_npy) {
  buf_t zip, back;
  record_t rec;
  codec_err err;
  buf_init(&zip, UINT64_MAX);
  buf_init(&back, UINT64_MAX);
  CHECK(archive_of("records/legacy_raw.pb", 0, &zip) == CODEC_OK);
  CHECK(npz_to_record(zip.p, zip.n, UINT64_MAX, &back, &err) == CODEC_OK);
  record_init(&rec);
  CHECK(record_parse(&rec, back.p, back.n, &err) == CODEC_OK);
  CHECK(rec.n == 2 && record_item_is_numpy(&rec.items[0]) && record_item_is_numpy(&rec.items[1]));
  CHECK(rec.items[0].data.n == 128 + 24); /* a numpy.save file of float32 [2,3] */
  record_clear(&rec);
  buf_free(&zip);
  buf_free(&back);
}

static int read_npz(const buf_t *zip, uint64_t limit, codec_err *err) {
  buf_t back;
  int rc;
  buf_init(&back, UINT64_MAX);
  rc = npz_to_record(zip->p, zip->n, limit, &back, err);
  buf_free(&back);
  return rc;
}

/* Offset of the first central directory entry. */
static unsigned char *central(buf_t *zip) { return zip->p + rd32(zip->p + zip->n - 22 + 16); }

TEST(npz_rejects_malformed_archives) {
  buf_t zip;
  codec_err err;
  unsigned char *c;
  buf_init(&zip, UINT64_MAX);
  CHECK(archive_of("records/list_3.pb", 0, &zip) == CODEC_OK);

  /* truncated: no end record */
  {
    buf_t cut = zip;
    cut.n = zip.n - 30;
    CHECK(read_npz(&cut, UINT64_MAX, &err) == CODEC_CORRUPT);
    CHECK_STR(err.msg, "not a zip archive (no end of central directory record)");
    cut.n = 10;
    CHECK(read_npz(&cut, UINT64_MAX, &err) == CODEC_CORRUPT);
    CHECK_STR(err.msg, "not a zip archive (10 bytes)");
  }
  /* a flipped data byte: CRC-32 */
  zip.p[200] ^= 0xff;
  CHECK(read_npz(&zip, UINT64_MAX, &err) == CODEC_CORRUPT);
  CHECK_STR(err.msg, "member '0.npy' fails its CRC-32 check");
  zip.p[200] ^= 0xff;
  CHECK(read_npz(&zip, UINT64_MAX, &err) == CODEC_OK);

  c = central(&zip);
  /* compression method 12 (bzip2) */
  c[10] = 12;
  CHECK(read_npz(&zip, UINT64_MAX, &err) == CODEC_UNSUPPORTED);
  CHECK_STR(err.msg, "member '0.npy' uses compression method 12 (only stored and deflate are read)");
  c[10] = 0;
  /* encrypted */
  c[8] = 1;
  CHECK(read_npz(&zip, UINT64_MAX, &err) == CODEC_UNSUPPORTED);
  CHECK_STR(err.msg, "member '0.npy' is encrypted");
  c[8] = 0;
  /* not a .npy member */
  c[46 + 2] = 'x';
  CHECK(read_npz(&zip, UINT64_MAX, &err) == CODEC_UNSUPPORTED);
  CHECK_STR(err.msg, "member '0.xpy' is not a .npy file");
  c[46 + 2] = 'n';
  /* a local header offset that points nowhere */
  wr32(c + 42, 7);
  CHECK(read_npz(&zip, UINT64_MAX, &err) == CODEC_CORRUPT);
  CHECK_STR(err.msg, "member '0.npy': no local header at byte 7");
  wr32(c + 42, 0);
  /* stored sizes that disagree */
  wr32(c + 24, rd32(c + 24) + 1);
  CHECK(read_npz(&zip, UINT64_MAX, &err) == CODEC_CORRUPT);
  CHECK_STR(err.msg, "stored member '0.npy' has sizes 152 and 153");
  wr32(c + 24, rd32(c + 24) - 1);
  /* the caller's limit */
  CHECK(read_npz(&zip, 100, &err) == CODEC_TOOBIG);
  CHECK_STR(err.msg, "member '0.npy' would be 152 bytes");
  /* ZIP64 placeholders without a ZIP64 end record */
  wr32(zip.p + zip.n - 22 + 16, 0xffffffffu);
  CHECK(read_npz(&zip, UINT64_MAX, &err) == CODEC_CORRUPT);
  CHECK_STR(err.msg, "zip archive needs a ZIP64 end record but has none");
  /* a central directory beyond the end */
  wr32(zip.p + zip.n - 22 + 16, (uint32_t)zip.n);
  CHECK(read_npz(&zip, UINT64_MAX, &err) == CODEC_CORRUPT);
  CHECK(strncmp(err.msg, "central directory (", 19) == 0);
  buf_free(&zip);
}

TEST(npz_caps_lying_deflate_members) {
  /* One deflated member holding 1 MiB of zeros inside a valid .npy, whose
  ** directory claims 200 bytes: inflating must stop at 200. */
  buf_t zip;
  codec_err err;
  unsigned char *c;
  uint32_t real;
  buf_init(&zip, UINT64_MAX);
  CHECK(archive_of("records/mlp_dict.pb", 1, &zip) == CODEC_OK);
  c = central(&zip);
  real = rd32(c + 24);
  CHECK(real == 2176);
  wr32(c + 24, 200);
  CHECK(read_npz(&zip, UINT64_MAX, &err) == CODEC_CORRUPT);
  CHECK_STR(err.msg, "member 'fc1.weight.npy' inflates to more than its stated 200 bytes");
  wr32(c + 24, real + 10);
  CHECK(read_npz(&zip, UINT64_MAX, &err) == CODEC_CORRUPT);
  CHECK_STR(err.msg, "member 'fc1.weight.npy' inflates to 2176 bytes, its header says 2186");
  wr32(c + 24, real);
  /* corrupt deflate data */
  zip.p[30 + 14 + 20 + 3] ^= 0x55;
  CHECK(read_npz(&zip, UINT64_MAX, &err) == CODEC_CORRUPT);
  CHECK(strstr(err.msg, "member 'fc1.weight.npy'") == err.msg);
  buf_free(&zip);
}

TEST(npz_bomb_is_stopped_by_the_limit) {
  /* 64 MiB of zeros deflate to ~64 KiB; with a 1 MiB limit nothing big is
  ** ever allocated: the stated size is refused first. */
  uint64_t big = 64u << 20, bound;
  unsigned char *zeros = calloc(1, (size_t)big), *def;
  z_stream zs;
  buf_t zip;
  codec_err err;
  uint64_t csize;
  static const char name[] = "bomb.npy";
  CHECK(zeros != NULL);
  memset(&zs, 0, sizeof(zs));
  CHECK(deflateInit2(&zs, 9, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  bound = deflateBound(&zs, (uLong)big);
  def = malloc((size_t)bound);
  CHECK(def != NULL);
  zs.next_in = zeros, zs.avail_in = (uInt)big, zs.next_out = def, zs.avail_out = (uInt)bound;
  CHECK(deflate(&zs, Z_FINISH) == Z_STREAM_END);
  csize = zs.total_out;
  deflateEnd(&zs);
  buf_init(&zip, UINT64_MAX);
  {
    unsigned char h[30], cd[46], e[22];
    memset(h, 0, sizeof(h));
    wr32(h, 0x04034b50u);
    h[4] = 20, h[8] = 8;
    wr32(h + 14, (uint32_t)crc32(0, zeros, (uInt)big));
    wr32(h + 18, (uint32_t)csize);
    wr32(h + 22, (uint32_t)big);
    h[26] = sizeof(name) - 1;
    buf_append(&zip, h, 30);
    buf_append(&zip, name, sizeof(name) - 1);
    buf_append(&zip, def, csize);
    memset(cd, 0, sizeof(cd));
    wr32(cd, 0x02014b50u);
    cd[10] = 8;
    memcpy(cd + 16, h + 14, 12);
    cd[28] = sizeof(name) - 1;
    buf_append(&zip, cd, 46);
    buf_append(&zip, name, sizeof(name) - 1);
    memset(e, 0, sizeof(e));
    wr32(e, 0x06054b50u);
    e[8] = e[10] = 1;
    wr32(e + 12, 46 + sizeof(name) - 1);
    wr32(e + 16, (uint32_t)(30 + sizeof(name) - 1 + csize));
    buf_append(&zip, e, 22);
  }
  CHECK(read_npz(&zip, 1u << 20, &err) == CODEC_TOOBIG);
  CHECK_STR(err.msg, "member 'bomb.npy' would be 67108864 bytes");
  /* with room for it, it inflates, and then is no .npy file */
  CHECK(read_npz(&zip, big, &err) == CODEC_CORRUPT);
  CHECK_STR(err.msg, "member 'bomb.npy': not a .npy file (bad magic)");
  buf_free(&zip);
  free(def);
  free(zeros);
}

TEST(npz_survives_allocation_failures) {
  buf_t zip;
  long k;
  int ok = 0;
  buf_init(&zip, UINT64_MAX);
  CHECK(archive_of("records/list_3.pb", 1, &zip) == CODEC_OK);
  for (k = 0; k < 100 && !ok; k++) {
    buf_t back, again;
    record_t rec;
    codec_err err;
    int rc;
    buf_init(&back, UINT64_MAX);
    buf_init(&again, UINT64_MAX);
    record_init(&rec);
    unit_fail_alloc_after(k);
    rc = npz_to_record(zip.p, zip.n, UINT64_MAX, &back, &err);
    if (!rc) rc = record_parse(&rec, back.p, back.n, &err);
    if (!rc) rc = npz_from_record(&rec, 1, &again, &err);
    unit_fail_alloc_after(-1);
    CHECK(rc == CODEC_OK || rc == CODEC_NOMEM);
    if (rc == CODEC_OK) {
      CHECK(again.n == zip.n && memcmp(again.p, zip.p, (size_t)zip.n) == 0);
      ok = 1;
    }
    record_clear(&rec);
    buf_free(&back);
    buf_free(&again);
  }
  CHECK(ok);
  buf_free(&zip);
}

TEST(npz_refuses_keys_zip_cannot_name) {
  static const int64_t one[1] = {1};
  buf_t blob, zip;
  record_t rec;
  codec_err err;
  record_item_spec spec;
  buf_init(&blob, UINT64_MAX);
  buf_init(&zip, UINT64_MAX);
  memset(&spec, 0, sizeof(spec));
  spec.key.p = (const unsigned char *)"a\0b";
  spec.key.n = 3;
  spec.dtype.p = (const unsigned char *)"uint8";
  spec.dtype.n = 5;
  spec.ndim = 1;
  spec.shape = one;
  spec.data.p = (const unsigned char *)"x";
  spec.data.n = 1;
  record_write_item(&blob, &spec);
  record_init(&rec);
  CHECK(record_parse(&rec, blob.p, blob.n, &err) == CODEC_OK);
  CHECK(npz_from_record(&rec, 0, &zip, &err) == CODEC_UNSUPPORTED);
  CHECK_STR(err.msg, "key 'a?b' cannot be a zip member name (it holds a NUL, item 0)");
  record_clear(&rec);
  buf_free(&blob);
  buf_free(&zip);
}
