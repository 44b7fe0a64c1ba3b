/* SPDX-License-Identifier: Apache-2.0 */
/*
** zst.h — libzstd (Debian's libzstd-dev, 1.4 or later) with the codec
** allocator: every context allocates through codec_malloc / codec_free, so
** its memory is SQLite's (counted, limited, failed on purpose by the
** out-of-memory tests) like every other byte the extension holds.
** ZSTD_customMem and ZSTD_create*_advanced come from zstd.h's
** ZSTD_STATIC_LINKING_ONLY section; they have not changed since zstd 1.0
** and libzstd.so exports them.
*/
#ifndef AR_ZST_H
#define AR_ZST_H

#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>
#include <zstd_errors.h>

#include "codec/codec.h"

/* A compression context at this level (content size written in every
** frame, no checksum: packed records hash what they unpack to), or NULL
** when out of memory. Free with ZSTD_freeCCtx. */
ZSTD_CCtx *zst_cctx(int level);
/* A decompression context, or NULL when out of memory (ZSTD_freeDCtx). */
ZSTD_DCtx *zst_dctx(void);

/* The levels libzstd accepts. */
int zst_min_level(void);
int zst_max_level(void);

/* Decompress exactly one frame src[0..n) into exactly `want` bytes at dst.
** CODEC_OK, CODEC_NOMEM, or CODEC_CORRUPT with the reason ("zstd: Corrupted
** block detected", "a frame of 12 bytes, not 20", "holds 10 bytes, not
** 16") in err. */
int zst_decompress_exact(ZSTD_DCtx *d, unsigned char *dst, uint64_t want, const unsigned char *src, uint64_t n,
                         codec_err *err);

#endif
