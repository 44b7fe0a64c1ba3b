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

#define AR_MAX_DIMS NPY_MAX_DIMS
#define AR_STYPE_NUMPY "numpy.ndarray"

typedef struct ar_span {
  const unsigned char *p;
  uint64_t n;
} ar_span;

typedef struct ar_item {
  ar_span key, dtype, stype, data;
  ar_span msg;     /* the Item message body, rescanned for the shape */
  uint64_t offset; /* where the item starts in the record */
  int ndim;
} ar_item;

typedef struct ar_record {
  ar_item *items;
  int n, cap;
  ar_item small[8]; /* most records fit without an allocation */
} ar_record;

void ar_record_init(ar_record *rec);
void ar_record_clear(ar_record *rec);

/* Parse blob[0..n) into rec (views into blob). CODEC_CORRUPT with a message
** like "record blob truncated at byte 812 (item 3, key 'fc.weight')", or
** CODEC_NOMEM. */
int ar_record_parse(ar_record *rec, const unsigned char *blob, uint64_t n, codec_err *err);

/* The item's shape (shape must hold AR_MAX_DIMS); returns ndim. */
int ar_item_shape(const ar_item *item, int64_t *shape);

/* Index of the item with this key, or -1. */
int ar_record_find(const ar_record *rec, const void *key, uint64_t klen);

/* Is the item's data a .npy file (stype "numpy.ndarray")? */
int ar_item_is_numpy(const ar_item *item);

/* Number of Unicode code points in valid UTF-8 (Python's len(str)). */
uint64_t ar_utf8_length(const unsigned char *s, uint64_t n);
int ar_utf8_valid(const unsigned char *s, uint64_t n);

/* --- writing ---------------------------------------------------------------- */

/* One item to write. */
typedef struct ar_item_spec {
  ar_span key, dtype, stype;
  int ndim;
  const int64_t *shape;
  ar_span data;      /* stored bytes, or ... */
  ar_span data_head; /* ... when set, data = data_head || data (npy header + payload) */
} ar_item_spec;

/* Bytes the item adds to a record (its field tag and length included). */
uint64_t ar_item_encoded_size(const ar_item_spec *spec);
void ar_write_item(ar_buf *out, const ar_item_spec *spec);
/* Everything ar_write_item writes except the data bytes, which are the last
** thing in an item: the caller appends exactly data_head.n + data.n bytes
** (data.p may be NULL). Lets data gathered from pieces (chunks, inflated
** members) go straight into the record without an intermediate copy. */
void ar_write_item_head(ar_buf *out, const ar_item_spec *spec);

/* A spec that re-encodes a parsed item as is (shape must hold AR_MAX_DIMS). */
void ar_item_spec_from_item(ar_item_spec *spec, const ar_item *item, int64_t *shape);

/* Quote a key for an error message (codec_quote): printable UTF-8, at most
** ~48 bytes, never cutting a character, even for a key that is not UTF-8.
** Returns out. */
const char *ar_quote_key(char *out, size_t cap, const unsigned char *key, uint64_t n);
#define AR_QUOTE_MAX 64

#endif
