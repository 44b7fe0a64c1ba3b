/* SPDX-License-Identifier: Apache-2.0 */
/*
** valrec.h — Flower's MetricRecord and ConfigRecord wire formats
** (flwr/proto/recorddict.proto), their JSON spelling, and the canonical
** writer:
**
**   MetricRecordValue { oneof value { double double = 1; sint64 sint64 = 2;
**     uint64 uint64 = 3; DoubleList double_list = 21; SintList sint_list = 22;
**     UintList uint_list = 23; } }
**   ConfigRecordValue { the same, and bool bool = 4; string string = 5;
**     bytes bytes = 6; BoolList bool_list = 24; StringList string_list = 25;
**     BytesList bytes_list = 26; }
**   XList { repeated T vals = 1; }
**   MetricRecord { message Item { string key = 1; MetricRecordValue value = 2; }
**                  repeated Item items = 1; }      ConfigRecord likewise.
**
** Reading is lenient as for ArrayRecords (record.h): unknown fields skipped
** (a metric record's bool/string/bytes members are unknown to it), lists
** packed or not. A field written more than once reads as protobuf reads
** it: a scalar's last occurrence wins; an item's value messages are
** merged (a scalar member sets the value, a list member of the list type
** held appends its elements, of another type starts a new list, an empty
** value message changes nothing). Wrong wire types, strings
** that are not UTF-8, items without a value and duplicate keys are errors.
** Parsing yields views into the BLOB; list elements are walked in place.
**
** Writing is canonical, byte-identical to Flower's serde: fields in number
** order, the oneof member always written (zero values included), numeric
** lists packed.
**
** JSON: an object, keys in record order. double -> a JSON real ("3.0",
** "-0.0"; shortest round-trip digits), sint64 / uint64 -> integer, bool ->
** true/false, string -> string, lists -> arrays; bytes -> {"bytes":"<base64>"},
** non-finite doubles -> {"double":"NaN"} / {"double":"Infinity"} /
** {"double":"-Infinity"}. Reading types values as Flower types Python ones.
*/
#ifndef AR_VALREC_H
#define AR_VALREC_H

#include "codec/buf.h"
#include "codec/pb.h"

/* Value types: the oneof's field numbers. */
enum {
  VALREC_NONE = 0,
  VALREC_DOUBLE = 1,
  VALREC_SINT64 = 2,
  VALREC_UINT64 = 3,
  VALREC_BOOL = 4,
  VALREC_STRING = 5,
  VALREC_BYTES = 6,
  VALREC_DOUBLE_LIST = 21,
  VALREC_SINT_LIST = 22,
  VALREC_UINT_LIST = 23,
  VALREC_BOOL_LIST = 24,
  VALREC_STRING_LIST = 25,
  VALREC_BYTES_LIST = 26
};
#define VALREC_IS_LIST(t) ((t) >= VALREC_DOUBLE_LIST)

/* One scalar, or one list element. */
typedef struct valrec_elem {
  double d;     /* double */
  int64_t i;    /* sint64 */
  uint64_t u;   /* uint64; bool as 0/1 */
  codec_span s; /* string, bytes */
} valrec_elem;

typedef struct valrec_item {
  codec_span key;
  int type;
  valrec_elem v;   /* scalars */
  codec_span list; /* lists: the list message (its occurrences merged: then a copy in `owned`) */
  pb_owned owned;  /* freed by valrec_clear */
  uint64_t nvals;  /* lists: element count */
  uint64_t offset; /* where the item starts, in the BLOB */
} valrec_item;

typedef struct valrec_t {
  valrec_item *items;
  int n, cap;
  int config;
  valrec_item small[8];
} valrec_t;

void valrec_init(valrec_t *vr);
void valrec_clear(valrec_t *vr);

/* Parse a MetricRecord (config 0) or ConfigRecord (config 1) at
** blob[start..end); offsets in messages count from blob. name says what the
** bytes are ("metric record 'metrics'"). CODEC_CORRUPT with a message like
** "metric record 'm' truncated at byte 57 (item 2, key 'loss')", or
** CODEC_NOMEM. */
int valrec_parse(valrec_t *vr, int config, const unsigned char *blob, uint64_t start, uint64_t end, const char *name,
                 codec_err *err);

/* A record written in several pieces (a RecordDict item's record field
** written more than once: protobuf merges them, their items together):
** valrec_parse the first, valrec_parse_more each further one (items
** appended, numbered on), then valrec_check_unique. */
int valrec_parse_more(valrec_t *vr, const unsigned char *blob, uint64_t start, uint64_t end, const char *name,
                      codec_err *err);
int valrec_check_unique(const valrec_t *vr, const char *name, codec_err *err);

/* Index of the item with this key, or -1. */
int valrec_find(const valrec_t *vr, const void *key, uint64_t n);

/* "double", "sint64", ... "bytes_list" ("" for VALREC_NONE). */
const char *valrec_type_name(int type);

/* Walk a parsed list's elements in place. */
typedef struct valrec_iter {
  pb_reader list, packed;
  int type;
} valrec_iter;
void valrec_iter_init(valrec_iter *it, const valrec_item *item);
/* 1 with *e set, 0 at the end. */
int valrec_iter_next(valrec_iter *it, valrec_elem *e);

/* JSON: the whole record as an object, or one item's value. */
void valrec_to_json(buf_t *out, const valrec_t *vr);
void valrec_value_json(buf_t *out, const valrec_item *item);
/* One scalar of a scalar type (VALREC_DOUBLE ... VALREC_BYTES) in the same
** spelling, for other messages' values (message.h's Scalars). */
void valrec_scalar_json(buf_t *out, int type, const valrec_elem *e);

/* A JSON object text as a record's canonical bytes, appended to out.
** `what` names the text in messages ("rd_set argument 4"). Errors name the
** key: "value of key 'lr' must be a number or a list of numbers in a metric
** record". */
int valrec_from_json(buf_t *out, int config, const unsigned char *json, uint64_t n, const char *what, codec_err *err);

/* The canonical bytes of a parsed record. */
void valrec_write(buf_t *out, const valrec_t *vr);
/* The bytes Flower writes for the record after reading it into Python
** (MetricRecord/ConfigRecord.deflate, recorddict_to_proto of what
** recorddict_from_proto made): canonical, with uint64 values up to
** INT64_MAX as sint64 (lists: when every element is), and empty lists as
** double lists (metrics) or bool lists (configs). */
void valrec_write_flower(buf_t *out, const valrec_t *vr);

/* Base64 (RFC 4648, padded), for the bytes spelling. */
void valrec_put_base64(buf_t *out, const unsigned char *p, uint64_t n);

#endif
