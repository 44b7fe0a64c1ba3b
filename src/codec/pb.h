/* SPDX-License-Identifier: Apache-2.0 */
/*
** pb.h — the protobuf wire format as Flower's codecs read and write it
** (ArrayRecord, and the RecordDict family): a bounded reader whose errors
** name the byte, the item and its key, and the writer's varint and
** length-delimited field helpers.
**
** Reading follows proto3 as protobuf (upb, Flower's Python protobuf) reads
** it: fields in any order, unknown fields of any wire type skipped (groups
** to their end, nested at most PB_MAX_GROUP_DEPTH), tags longer than 5
** bytes, field 0 or above 2^29 - 1 and wire types 6/7 rejected; a singular
** message field that occurs more than once is the merge of its occurrences
** (pb_join: for the messages read here, their bytes concatenated). Offsets are absolute in the blob so
** messages can point at the byte.
*/
#ifndef AR_PB_H
#define AR_PB_H

#include "codec/buf.h"

/* protobuf wire types */
enum { PB_WT_VARINT = 0, PB_WT_I64 = 1, PB_WT_LEN = 2, PB_WT_SGROUP = 3, PB_WT_EGROUP = 4, PB_WT_I32 = 5 };

#define PB_MAX_GROUP_DEPTH 64
#define PB_MAX_TAG_BYTES 5

/* A bounded reader over blob[pos..end). */
typedef struct pb_reader {
  const unsigned char *blob;
  uint64_t pos, end;
} pb_reader;

enum { PB_OK = 0, PB_TRUNCATED, PB_VARINT_TOO_LONG };

/* The next varint: PB_OK, PB_TRUNCATED or PB_VARINT_TOO_LONG (no message). */
int pb_varint(pb_reader *r, uint64_t *out);

/* Where a reader is, for messages: "<blob> truncated at byte 812 (item 3,
** key 'fc.weight')". blob names the bytes ("record blob"); item is -1
** outside items; key.p is NULL while the item's key is not known (or not
** printable). err NULL: no message (a quiet probe). */
typedef struct pb_ctx {
  codec_err *err;
  const char *blob;
  int item;
  codec_span key;
} pb_ctx;

/* codec_fail with "<what> at byte <at>" and the item's place; returns code. */
int pb_error(const pb_ctx *ctx, int code, const char *what, uint64_t at);
/* "<blob> truncated" / "<blob> has a varint longer than 10 bytes" for a
** pb_varint result rc, read from `start`. Returns CODEC_CORRUPT. */
int pb_read_error(const pb_ctx *ctx, int rc, const pb_reader *r, uint64_t start);
/* A field tag: "<blob> has a tag longer than 5 bytes at byte N", ... */
int pb_tag(pb_reader *r, const pb_ctx *ctx, uint64_t *field, int *wt);
/* A length-delimited payload: its [start, start + len) in the blob. */
int pb_len(pb_reader *r, const pb_ctx *ctx, uint64_t *start, uint64_t *len);
/* Skip one field (tag already read at tag_at); depth counts nested groups. */
int pb_skip(pb_reader *r, const pb_ctx *ctx, uint64_t field, int wt, int depth, uint64_t tag_at);
/* "<blob> has wrong wire type <wt> for <field>". */
int pb_wrong_type(const pb_ctx *ctx, const char *field, int wt, uint64_t at);
/* The next entry of a message's `repeated Item items = 1` (other fields
** skipped; `field` names it in messages): PB_ITEM with its tag at *at, its
** payload at [*start, *start + *len) and ctx->item = item; CODEC_OK at the
** end of the message; or the error. */
#define PB_ITEM (-1)
int pb_next_item(pb_reader *r, pb_ctx *ctx, const char *field, int item, uint64_t *at, uint64_t *start, uint64_t *len);

/* A block of merged bytes some reader owns (codec_malloc'd; NULL: none). */
typedef struct pb_owned {
  unsigned char *p;
  uint64_t cap;
} pb_owned;

/* Merge one more occurrence p[0..n) of a message field into *dst, as
** protobuf merges a message field that occurs again: the serialized
** occurrences concatenated. *dst stays a view of the blob while it has one
** non-empty occurrence; from the second on it is a copy in *own (grown
** geometrically, reused after a reset to {.., 0}). CODEC_NOMEM or CODEC_OK. */
int pb_join(codec_span *dst, pb_owned *own, const unsigned char *p, uint64_t n);
void pb_owned_free(pb_owned *own);

/* --- writing (canonical: what protobuf's own serializer writes) ----------- */

unsigned pb_varint_size(uint64_t v);
void pb_put_varint(buf_t *out, uint64_t v);
/* A length-delimited field with a one-byte tag: its size, and the field,
** both nothing when len is 0 (proto3 omits defaults). */
uint64_t pb_len_field_size(uint64_t len);
void pb_put_len_field(buf_t *out, unsigned char tag, const unsigned char *p, uint64_t n);

#endif
