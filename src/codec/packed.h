/* SPDX-License-Identifier: Apache-2.0 */
/*
** packed.h — packed records: an ArrayRecord or a RecordDict BLOB in a
** compact, self-describing form that unpacks to the very same bytes.
**
** Every array payload (the items of a .npy after its header, or a raw
** item's bytes) is stored in the smallest of these forms (the mode):
**
**   raw     as is
**   planes  byte planes (most significant byte first), zstd per plane
**   diff    the integer difference from the same key's array in a base
**           record (zigzag), byte planes, zstd
**   xor     the XOR with that array, byte planes, zstd
**   same    identical to that array: nothing stored
**   lossy   (only when asked for) the update x - b of a float32 / float64
**           array as a 16-bit float, two byte planes, zstd
**
** Everything else of the BLOB (protobuf framing, keys, .npy headers,
** metric and config records) is kept byte for byte, zstd-compressed, so
** any record unpacks bit for bit, however it was encoded. Planes are cut
** into chunks of 2^chunk_log2 items, each plane of each chunk one zstd
** frame, so that unpacking works in pieces that stay in the cache.
**
** The BLOB names the base it was packed against by the base's Flower object
** id (ar_object_id), its size and its XXH64; it names what it unpacks to by
** size and XXH64, which unpacking checks, so a wrong base or damaged bytes
** give an error, never a wrong record. docs/formats.md has the bytes; in
** short (integers little-endian):
**
**   header (104 bytes)  "\x07ARPACK", version 1, kind, flags, lossy format,
**                       chunk_log2, entry count, size, hash, max_error,
**                       meta sizes, base size, base hash, base object id
**   data                each entry's stored bytes, in entry order
**   meta (last)         entries (offset, length, stored, max_error, mode,
**                       width, flags, key) then the skeleton: the BLOB
**                       without the entries' payloads; raw or one zstd frame
**
** The magic's first byte, 0x07, is a protobuf tag of field 0 with wire
** type 7, which no ArrayRecord or RecordDict starts with; no .npy, ZIP or
** safetensors file starts with it either.
*/
#ifndef AR_PACKED_H
#define AR_PACKED_H

#include "codec/buf.h"
#include "codec/record.h"

#define PACKED_MAGIC \
  "\x07"             \
  "ARPACK"
#define PACKED_MAGIC_SIZE 7
#define PACKED_VERSION 1
#define PACKED_HEADER_SIZE 104
#define PACKED_ID_SIZE 32
#define PACKED_ENTRY_FIXED 40 /* an entry in the meta section, before its key */

/* Chunks: 2^chunk_log2 items; 2^16 by default. */
#define PACKED_CHUNK_LOG2 16
#define PACKED_CHUNK_LOG2_MIN 10
#define PACKED_CHUNK_LOG2_MAX 22
#define PACKED_LEVEL 3

/* What a packed BLOB holds. */
enum { PACKED_RECORD = 1, PACKED_RECORDDICT = 2 };
/* Header flags. */
enum { PACKED_HAS_BASE = 1, PACKED_IS_LOSSY = 2 };
/* Lossy formats (math/planes.h's BP_HALF, BP_BFLOAT16). */
enum { PACKED_LOSSLESS = 0, PACKED_FLOAT16 = 1, PACKED_BFLOAT16 = 2 };
/* Entry modes. */
enum { PACKED_RAW = 0, PACKED_PLANES, PACKED_DIFF, PACKED_XOR, PACKED_SAME, PACKED_LOSSY, PACKED_NMODES };
/* Entry flags. */
enum { PACKED_BIG = 1 };

typedef struct packed_head {
  int version, kind, flags, lossy, chunk_log2;
  uint32_t count;      /* entries */
  uint64_t size, hash; /* of the unpacked BLOB */
  double max_error;    /* largest |unpacked - original| of a lossy entry; 0 */
  uint64_t meta_raw, meta_stored;
  uint64_t base_size, base_hash;
  unsigned char base_id[PACKED_ID_SIZE]; /* the base's object id (binary) */
} packed_head;

/* One array payload. */
typedef struct packed_entry {
  uint64_t offset, length; /* where it lies in the unpacked BLOB */
  uint64_t stored, data;   /* its stored bytes: how many, where in the packed BLOB */
  double max_error;
  int mode, width, big;
  codec_span key;
} packed_entry;

/* A packed BLOB, opened: header, entries and skeleton (views into the BLOB
** or into `meta`, the unpacked meta section). */
typedef struct packed_view {
  packed_head h;
  packed_entry *e;
  unsigned char *meta; /* owned when the meta section was compressed */
  codec_span skeleton;
  const unsigned char *blob;
  uint64_t n;
} packed_view;

/* "arrayrecord", "recorddict"; "raw", "planes", ...; "float16", ... */
const char *packed_kind_name(int kind);
const char *packed_mode_name(int mode);
const char *packed_lossy_name(int lossy);
/* A lossy format's name ("float16", "bfloat16"): its code, or -1. */
int packed_lossy_from_name(const void *s, uint64_t n);

/* Does p[0..n) start with the magic? */
int packed_is(const unsigned char *p, uint64_t n);

/* The fixed header, checked (magic, version, codes in range, sizes that
** fit the BLOB). CODEC_CORRUPT: "packed record truncated at byte 0
** (header)", "packed record has version 9; this library reads version 1". */
int packed_head_parse(const unsigned char *p, uint64_t n, packed_head *h, codec_err *err);

/* What a packed BLOB is, for readers' messages: "a packed record (20480
** bytes packed into 9876, against base 3f2a9c01b2d4e5f6...)" or "a packed
** record dict (..., no base)"; "a damaged packed record" when the header
** does not read. Returns out. kind gets PACKED_RECORD or
** PACKED_RECORDDICT (the former for a damaged header). */
#define PACKED_HINT_MAX 128
const char *packed_hint(char *out, size_t cap, const unsigned char *p, uint64_t n, int *kind);

/* A reader's message for a packed BLOB p[0..n) given where a record
** (reader PACKED_RECORD), a record dict (PACKED_RECORDDICT) or a .npy (0)
** belongs: what it is and how to unpack it ("got a packed record (...):
** unpack it with ar_unpack(packed, base) first"). out holds
** sizeof(codec_err.msg) bytes; returns out. */
const char *packed_misread(char *out, size_t cap, const unsigned char *p, uint64_t n, int reader);

/* Open a packed BLOB: header, meta (decompressed), every entry checked
** against the others and the BLOB (sorted, inside the unpacked size, stored
** sizes and frame tables adding up, a base where a mode needs one, ...).
** An unpacked size above limit is CODEC_TOOBIG (checked before the meta
** section, whose size it bounds, is allocated). */
void packed_view_init(packed_view *v);
int packed_open(packed_view *v, const unsigned char *p, uint64_t n, uint64_t limit, codec_err *err);
void packed_view_clear(packed_view *v);

/* Byte planes an entry stores per chunk (0 for raw and same), and its
** chunks. Its frame table (little-endian uint32 sizes, chunk by chunk,
** plane by plane) starts at v->blob + e->data. */
int packed_entry_plane_count(const packed_entry *e);
uint64_t packed_entry_chunks(const packed_view *v, const packed_entry *e);
/* Stored bytes of each byte plane of an entry (planes: 8), zstd frames
** with their table entries, summed over its chunks; returns how many
** planes it has. */
int packed_entry_planes(const packed_view *v, const packed_entry *e, uint64_t *planes);

/* An item's payload as packing sees it: the items of its .npy (after the
** header; trailing bytes stay in the skeleton), a raw item's bytes (a
** legacy item of a NumPy dtype, or a dtype NumPy lacks such as BF16:
** little-endian items of its size), or, for anything that does not read,
** the whole data as bytes (width 1). real: float32 or float64, which
** lossy packing may round. */
typedef struct packed_payload {
  codec_span bytes;
  int width, big, real;
} packed_payload;
void packed_item_payload(const record_item *it, packed_payload *pl);

/* Little-endian fields of the format. */
uint64_t packed_get64(const unsigned char *p);
uint32_t packed_get32(const unsigned char *p);
double packed_get_double(const unsigned char *p);
void packed_put64(unsigned char *p, uint64_t v);
void packed_put32(unsigned char *p, uint32_t v);
void packed_put_double(unsigned char *p, double d);

/* --- packing --------------------------------------------------------------- */

typedef struct packed_options {
  int level;      /* zstd level (PACKED_LEVEL) */
  int lossy;      /* PACKED_LOSSLESS, PACKED_FLOAT16 or PACKED_BFLOAT16 */
  int chunk_log2; /* PACKED_CHUNK_LOG2 */
} packed_options;

void packed_options_init(packed_options *o);

/* Pack blob[0..n), an ArrayRecord (kind PACKED_RECORD) or a RecordDict
** (PACKED_RECORDDICT, whose ArrayRecords' arrays are packed), against the
** ArrayRecord base[0..base_n) (base NULL: none), appending to out. Errors:
** the record's or the base's parse errors ("base: ..." for the base),
** CODEC_RANGE for a lossy option without a base, CODEC_NOMEM, CODEC_TOOBIG. */
int packed_encode(buf_t *out, int kind, const unsigned char *blob, uint64_t n, const unsigned char *base,
                  uint64_t base_n, const packed_options *opt, codec_err *err);

/* --- unpacking --------------------------------------------------------------- */

/* Unpack into dst (v->h.size bytes). base NULL: none given (an error for a
** BLOB packed against one; a base given to a BLOB packed without one is
** not looked at). Errors: CODEC_CORRUPT ("packed record corrupt at byte
** 5123 (array 'fc.weight', chunk 2, plane 1): zstd: ...", "... does not
** unpack to the bytes it was packed from (hash)"), CODEC_RANGE for a
** missing or wrong base ("wrong base: packed against object 3f2a...
** (4567 bytes), got object 9c1b... (4560 bytes)"), CODEC_NOMEM. */
int packed_decode_into(const packed_view *v, const unsigned char *base, uint64_t base_n, unsigned char *dst,
                       codec_err *err);

/* Open and unpack p[0..n), appending to out (out's limit applies:
** CODEC_TOOBIG before anything is allocated). */
int packed_decode(buf_t *out, const unsigned char *p, uint64_t n, const unsigned char *base, uint64_t base_n,
                  codec_err *err);

#endif
