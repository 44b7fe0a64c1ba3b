/* SPDX-License-Identifier: Apache-2.0 */
/*
** recorddict.h — Flower's RecordDict wire format (flwr/proto/recorddict.proto):
**
**   RecordDict { message Item { string key = 1; oneof value {
**     ArrayRecord array_record = 2; MetricRecord metric_record = 3;
**     ConfigRecord config_record = 4; } } repeated Item items = 1; }
**
** A RecordDict BLOB is recorddict_to_proto(rd).SerializeToString(). Reading
** is lenient as for ArrayRecords (unknown fields skipped, the last
** occurrence of a singular field wins); an item without a record, a name
** that is not UTF-8 and duplicate names are errors. Parsing finds each
** item's record bytes without reading them (record.h and valrec.h read
** those). Writing is canonical: the oneof member is written even when the
** record is empty.
*/
#ifndef AR_RECORDDICT_H
#define AR_RECORDDICT_H

#include "codec/buf.h"

/* Item kinds: the oneof's field numbers. */
enum { RECORDDICT_ARRAY = 2, RECORDDICT_METRIC = 3, RECORDDICT_CONFIG = 4 };

typedef struct recorddict_item {
  codec_span name;
  int kind;
  codec_span record;  /* the item's ArrayRecord / MetricRecord / ConfigRecord bytes */
  uint64_t record_at; /* where they start in the BLOB */
  uint64_t offset;    /* where the item starts */
} recorddict_item;

typedef struct recorddict_t {
  recorddict_item *items;
  int n, cap;
  recorddict_item small[8];
} recorddict_t;

void recorddict_init(recorddict_t *rd);
void recorddict_clear(recorddict_t *rd);

/* Parse blob[0..n) (views into blob). CODEC_CORRUPT with a message like
** "record dict truncated at byte 57 (item 2, key 'metrics')", or CODEC_NOMEM. */
int recorddict_parse(recorddict_t *rd, const unsigned char *blob, uint64_t n, codec_err *err);

/* Index of the item with this name, or -1. */
int recorddict_find(const recorddict_t *rd, const void *name, uint64_t n);

/* "array", "metric", "config"; and back (0 when s is none of them). */
const char *recorddict_kind_name(int kind);
int recorddict_kind_from_name(const void *s, uint64_t n);

/* An item, canonically (its field tag and length included). */
uint64_t recorddict_item_size(uint64_t name_len, uint64_t record_len);
void recorddict_write_item(buf_t *out, codec_span name, int kind, codec_span record);

#endif
