/* SPDX-License-Identifier: Apache-2.0 */
/*
** recorddict.h — Flower's RecordDict wire format (flwr/proto/recorddict.proto):
**
**   RecordDict { message Item { string key = 1; oneof value {
**     ArrayRecord array_record = 2; MetricRecord metric_record = 3;
**     ConfigRecord config_record = 4; } } repeated Item items = 1; }
**
** A RecordDict BLOB is recorddict_to_proto(rd).SerializeToString(). Reading
** is lenient as for ArrayRecords and reads what protobuf reads (unknown
** fields skipped, the last occurrence of a singular scalar field wins, an
** item's record written more than once is the merge of its occurrences:
** their items concatenated, while the oneof member stays the same; another
** member replaces it); an item without a record, a name
** that is not UTF-8 and duplicate names are errors. Parsing finds each
** item's record bytes without reading them (record.h and valrec.h read
** those). Writing is canonical: the oneof member is written even when the
** record is empty.
**
** Builders re-encode every record too (recorddict_canon below): the bytes
** are those Flower's serde writes for the RecordDict it reads from the input,
** recorddict_to_proto(recorddict_from_proto(...)), so equal content gives
** equal bytes whatever wrote the input. ArrayRecords are written item by
** item as record.h writes them (the arrays' data copied as they are, in one
** pass); metric and config records as valrec_write_flower writes them.
*/
#ifndef AR_RECORDDICT_H
#define AR_RECORDDICT_H

#include "codec/buf.h"
#include "codec/record.h"
#include "codec/valrec.h"

/* Item kinds: the oneof's field numbers. */
enum { RECORDDICT_ARRAY = 2, RECORDDICT_METRIC = 3, RECORDDICT_CONFIG = 4 };

typedef struct recorddict_item {
  codec_span name;
  int kind;
  codec_span record;  /* the item's ArrayRecord / MetricRecord / ConfigRecord bytes:
                         a view of the BLOB, or of `owned` when merged */
  uint64_t record_at; /* where they (their first occurrence) start in the BLOB */
  pb_owned owned;     /* a merged record's bytes (freed by recorddict_clear) */
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
/* Everything of such an item but its record's bytes, which the caller
** appends (record_len of them). */
void recorddict_write_item_head(buf_t *out, codec_span name, int kind, uint64_t record_len);

/* Is the item's record a merge of several occurrences (not a view of the
** blob at record_at)? Its bytes then live in rd, as long as rd. */
int recorddict_item_merged(const recorddict_item *it, const unsigned char *blob);
/* Parse a metric or config item's record (valrec_parse; a merged one
** occurrence by occurrence): offsets in messages count from the blob. */
int recorddict_item_valrec(valrec_t *vr, const recorddict_item *it, const unsigned char *blob, const char *label,
                           codec_err *err);

/* Check an item's record as rd_valid does: an ArrayRecord as ar_valid does
** (its structure and every array's header), metric and config records by
** parsing every value. Messages name the item ("array record 'a' (at byte
** 5): ..."). */
int recorddict_item_check(const recorddict_item *it, const unsigned char *blob, codec_err *err);

/* "metric record 'metrics'": what messages call an item's record. out
** holds CODEC_QUOTE_MAX + 32 bytes. */
const char *recorddict_item_label(char *out, size_t cap, codec_span name, int kind);

/* --- canonical re-encoding ---------------------------------------------------- */

/* One item to write canonically: its name and its record, read. */
typedef struct recorddict_canon {
  codec_span name;
  int kind;
  record_t rec;  /* RECORDDICT_ARRAY: the record's items (views into its bytes) */
  buf_t vals;    /* metric and config records: their canonical bytes */
  uint64_t size; /* the record's canonical size */
} recorddict_canon;

/* limit bounds c->vals (the caller's result limit). */
void recorddict_canon_init(recorddict_canon *c, uint64_t limit);
void recorddict_canon_clear(recorddict_canon *c);

/* Item `it` of the RecordDict blob. Errors as rd_error words them: "metric
** record 'm' truncated at byte 13 (item 0, key 'k')" (bytes counted from
** the start of blob), "array record 'a' (at byte 5): record blob truncated
** at byte 1". */
int recorddict_canon_item(recorddict_canon *c, const recorddict_item *it, const unsigned char *blob, codec_err *err);
/* An ArrayRecord BLOB p[0..n) as item `name` (record_parse's errors). */
int recorddict_canon_array(recorddict_canon *c, codec_span name, const unsigned char *p, uint64_t n, codec_err *err);
/* A metric (config 0) or config record from JSON object text as item
** `name` (valrec_from_json's errors; `what` names the text). */
int recorddict_canon_json(recorddict_canon *c, codec_span name, int config, const unsigned char *json, uint64_t n,
                          const char *what, codec_err *err);

/* Append the item (framing included); its size first. */
uint64_t recorddict_canon_item_size(const recorddict_canon *c);
void recorddict_canon_write(buf_t *out, const recorddict_canon *c);
/* Items c[0..n), in order, their total size reserved first (out->rc is
** CODEC_TOOBIG when it does not fit). */
void recorddict_canon_write_all(buf_t *out, const recorddict_canon *c, int n);

/* The RecordDict blob[0..n), every item re-encoded, appended to out:
** recorddict_parse's errors, then recorddict_canon_item's, then out's
** (CODEC_NOMEM, CODEC_TOOBIG). */
int recorddict_canonical(buf_t *out, const unsigned char *blob, uint64_t n, codec_err *err);

#endif
