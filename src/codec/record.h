/* SPDX-License-Identifier: Apache-2.0 */
/*
** record.h — Flower's ArrayRecord wire format (flwr/proto/recorddict.proto):
**
**   message Array       { string dtype = 1; repeated int32 shape = 2;
**                         string stype = 3; bytes data = 4; }
**   message ArrayRecord { message Item { string key = 1; Array value = 2; }
**                         repeated Item items = 1; }
**
** Reading follows proto3: fields in any order, unknown fields of any wire type
** skipped, `shape` packed or not, a repeated occurrence of a singular field
** replaces it (a repeated `value` message merges, as protobuf does). Known
** fields with the wrong wire type, invalid UTF-8 in strings, negative
** dimensions and duplicate keys are errors. Parsing yields views into the
** BLOB; nothing is copied.
**
** Writing is canonical, byte-identical to Flower's serde (protobuf's own
** serializer): fields in number order, default values omitted, `shape`
** packed, every item's `value` present.
*/
#ifndef AR_RECORD_H
#define AR_RECORD_H

#include "codec/buf.h"
#include "codec/npy.h"

#define RECORD_MAX_DIMS NPY_MAX_DIMS
#define RECORD_STYPE_NUMPY "numpy.ndarray"

typedef struct record_item {
  codec_span key, dtype, stype, data;
  codec_span msg;  /* the Item message body, rescanned for the shape */
  uint64_t offset; /* where the item starts in the record */
  int ndim;
} record_item;

typedef struct record_t {
  record_item *items;
  int n, cap;
  record_item small[8]; /* most records fit without an allocation */
} record_t;

void record_init(record_t *rec);
void record_clear(record_t *rec);

/* Parse blob[0..n) into rec (views into blob). CODEC_CORRUPT with a message
** like "record blob truncated at byte 812 (item 3, key 'fc.weight')", or
** CODEC_NOMEM. */
int record_parse(record_t *rec, const unsigned char *blob, uint64_t n, codec_err *err);

/* Does blob[0..n) parse as a record of one item or more (unknown fields
** allowed, keys not checked for duplicates)? Allocates nothing; for error
** messages that tell a record given where a .npy belongs. */
int record_looks_like(const unsigned char *blob, uint64_t n);

/* The item's shape (shape must hold RECORD_MAX_DIMS); returns ndim. */
int record_item_shape(const record_item *item, int64_t *shape);

/* Index of the item with this key, or -1. */
int record_find(const record_t *rec, const void *key, uint64_t klen);

/* Is the item's data a .npy file (stype "numpy.ndarray")? */
int record_item_is_numpy(const record_item *item);

/* --- writing ---------------------------------------------------------------- */

/* One item to write. */
typedef struct record_item_spec {
  codec_span key, dtype, stype;
  int ndim;
  const int64_t *shape;
  codec_span data;      /* stored bytes, or ... */
  codec_span data_head; /* ... when set, data = data_head || data (npy header + payload) */
} record_item_spec;

/* Bytes the item adds to a record (its field tag and length included). */
uint64_t record_item_encoded_size(const record_item_spec *spec);
void record_write_item(buf_t *out, const record_item_spec *spec);
/* Everything record_write_item writes except the data bytes, which are the last
** thing in an item: the caller appends exactly data_head.n + data.n bytes
** (data.p may be NULL). Lets data gathered from pieces (chunks, inflated
** members) go straight into the record without an intermediate copy. */
void record_write_item_head(buf_t *out, const record_item_spec *spec);

/* A spec that re-encodes a parsed item as is (shape must hold RECORD_MAX_DIMS). */
void record_item_spec_from_item(record_item_spec *spec, const record_item *item, int64_t *shape);

#endif
