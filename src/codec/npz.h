/* SPDX-License-Identifier: Apache-2.0 */
/*
** npz.h — NumPy .npz archives (np.savez / np.savez_compressed): ZIP files
** whose members "<key>.npy" each hold one .npy file.
**
** Reading takes the central directory as the truth (as Python's zipfile
** does), follows each entry to its local header, and accepts the stored and
** deflate methods, ZIP64 extra fields (NumPy writes them in every local
** header) and the ZIP64 end records. Encrypted members, other methods,
** multi-disk archives and members that are not .npy files are errors. Every
** member's CRC-32 is checked. A member's stated size is checked against the
** caller's limit (SQLITE_LIMIT_LENGTH) before anything is allocated, and
** inflating stops at that size: a zip bomb gets CODEC_TOOBIG or an error,
** never a large allocation. Member names are taken as UTF-8.
**
** Writing reproduces np.savez byte for byte — same local headers (with the
** ZIP64 extra field NumPy's force_zip64 adds), central directory, fixed
** 1980-01-01 timestamps and attributes — and, with compress, deflates each
** member as np.savez_compressed does (zlib, default level, raw deflate).
** zlib's allocations go through codec_malloc/codec_free.
*/
#ifndef AR_NPZ_H
#define AR_NPZ_H

#include "codec/buf.h"
#include "codec/record.h"

/* Append the record of the archive blob[0..n) to out. Members become items
** in archive order, keyed by their names without ".npy", holding the .npy
** up to the end of its payload (as ar() stores it); a member's stated
** (uncompressed) size above limit gives CODEC_TOOBIG. */
int npz_to_record(const unsigned char *blob, uint64_t n, uint64_t limit, buf_t *out, codec_err *err);

/* Append an archive of the record's arrays to out (raw legacy items are
** written as the .npy numpy.save would make of them). */
int npz_from_record(const record_t *rec, int compress, buf_t *out, codec_err *err);

#endif
