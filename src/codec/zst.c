/* SPDX-License-Identifier: Apache-2.0 */
/*
** zst.c — zstd contexts on the codec allocator (see zst.h).
*/
#include "codec/zst.h"

#include <stdio.h>

static void *zst_alloc(void *opaque, size_t size) {
  (void)opaque;
  return codec_malloc(size);
}

static void zst_free(void *opaque, void *p) {
  (void)opaque;
  codec_free(p);
}

static const ZSTD_customMem zst_mem = {zst_alloc, zst_free, NULL};

ZSTD_CCtx *zst_cctx(int level) {
  ZSTD_CCtx *c = ZSTD_createCCtx_advanced(zst_mem);
  if (!c) return NULL;
  /* Setting parameters allocates nothing; they fail only for values out
  ** of range, which the callers' checks exclude. */
  ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 1);
  ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 0);
  return c;
}

ZSTD_DCtx *zst_dctx(void) { return ZSTD_createDCtx_advanced(zst_mem); }

int zst_min_level(void) { return ZSTD_minCLevel(); }
int zst_max_level(void) { return ZSTD_maxCLevel(); }

int zst_decompress_exact(ZSTD_DCtx *d, unsigned char *dst, uint64_t want, const unsigned char *src, uint64_t n,
                         codec_err *err) {
  size_t frame = ZSTD_findFrameCompressedSize(src, (size_t)n), got;
  if (ZSTD_isError(frame)) return codec_fail(err, CODEC_CORRUPT, "zstd: %s", ZSTD_getErrorName(frame));
  if (frame != n)
    return codec_fail(err, CODEC_CORRUPT, "a frame of %llu bytes, not %llu", (unsigned long long)frame,
                      (unsigned long long)n);
  got = ZSTD_decompressDCtx(d, dst, (size_t)want, src, (size_t)n);
  if (ZSTD_isError(got)) {
    if (ZSTD_getErrorCode(got) == ZSTD_error_memory_allocation) return codec_nomem(err);
    return codec_fail(err, CODEC_CORRUPT, "zstd: %s", ZSTD_getErrorName(got));
  }
  if (got != want)
    return codec_fail(err, CODEC_CORRUPT, "holds %llu bytes, not %llu", (unsigned long long)got,
                      (unsigned long long)want);
  return CODEC_OK;
}
