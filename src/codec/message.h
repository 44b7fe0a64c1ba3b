/* SPDX-License-Identifier: Apache-2.0 */
/*
** message.h — Flower's Message and Context wire formats
** (flwr/proto/{message,error,transport}.proto) and their JSON:
**
**   Message  { Metadata metadata = 1; RecordDict content = 2; Error error = 3; }
**   Metadata { uint64 run_id = 1; string message_id = 2; uint64 src_node_id = 3;
**              uint64 dst_node_id = 4; string reply_to_message_id = 5;
**              string group_id = 6; double ttl = 7; string message_type = 8;
**              double created_at = 9; optional uint64 src_task_id = 10;
**              optional uint64 dst_task_id = 11; }
**   Error    { sint64 code = 1; string reason = 2; }
**   Context  { uint64 run_id = 1; uint64 node_id = 2; map<string, Scalar> node_config = 3;
**              RecordDict state = 4; map<string, Scalar> run_config = 5; uint64 series_id = 6; }
**   Scalar   { oneof scalar { double double = 1; uint64 uint64 = 6; sint64 sint64 = 8;
**              bool bool = 13; string string = 14; bytes bytes = 15; } }
**   map entry { string key = 1; Scalar value = 2; }
**
** Reading follows protobuf: fields in any order, unknown fields skipped,
** absent fields read as proto3 defaults, the last occurrence of a scalar
** field wins, and repeated occurrences of a message field merge: Metadata
** and Error occurrences are read in turn into the same fields, and the
** RecordDict occurrences' bytes are concatenated (which is protobuf's merge
** for a message whose only field is repeated). Map entries may come in any
** order; a duplicate key keeps the last entry's value, as protobuf does.
** Wrong wire types, strings that are not UTF-8 and a Scalar without a
** member set (Flower cannot read it) are errors.
**
** (The task ids and series_id came with Flower 1.42.)
**
** JSON: metadata keys in field order, every key always present (an unset
** optional task id as null); a map as
** an object sorted by key (bytewise), so a Context's JSON does not depend
** on the order its writer put the entries in; Scalar values and doubles as
** valrec.h spells them.
*/
#ifndef AR_MESSAGE_H
#define AR_MESSAGE_H

#include "codec/buf.h"
#include "codec/valrec.h"

typedef struct message_t {
  uint64_t run_id, src_node_id, dst_node_id;
  codec_span message_id, reply_to_message_id, group_id, message_type;
  double ttl, created_at;
  uint64_t src_task_id, dst_task_id;
  int has_src_task_id, has_dst_task_id; /* optional fields: set or not */
  int has_error;
  int64_t error_code;
  codec_span error_reason;
  int ncontent;       /* occurrences of the content field; 0: no content */
  codec_span content; /* the first occurrence's bytes */
  uint64_t content_at;
} message_t;

/* Parse a serialized Message (views into blob). CODEC_CORRUPT with a
** message like "message metadata truncated at byte 57", or CODEC_NOMEM. */
int message_parse(message_t *m, const unsigned char *blob, uint64_t n, codec_err *err);

/* The content RecordDict (several occurrences concatenated, as protobuf
** merges them), re-encoded as recorddict_canonical writes it, appended to
** out. Only when m->ncontent > 0. Errors name the content: "message content
** (at byte 2): record dict truncated at byte 1 (item 0)". */
int message_content(const message_t *m, const unsigned char *blob, uint64_t n, buf_t *out, codec_err *err);

/* {"run_id":...,...,"created_at":...,"src_task_id":null|..,"dst_task_id":null|..,
**  "error":null|{"code":..,"reason":".."}} */
void message_metadata_json(buf_t *out, const message_t *m);

/* One map<string, Scalar> entry. */
typedef struct message_entry {
  int map;   /* 3 node_config, 5 run_config */
  int index; /* the entry's place among its map's entries on the wire */
  codec_span key;
  int type; /* VALREC_DOUBLE, _UINT64, _SINT64, _BOOL, _STRING, _BYTES */
  valrec_elem v;
} message_entry;

typedef struct message_context_t {
  uint64_t run_id, node_id, series_id;
  message_entry *entries; /* after parsing: by map, then key; one per key */
  int n, cap;
  int nstate;
  codec_span state;
  uint64_t state_at;
  message_entry small[8];
} message_context_t;

void message_context_init(message_context_t *c);
void message_context_clear(message_context_t *c);
/* Parse a serialized Context. Errors name the map, the entry and its key:
** "context run_config truncated at byte 57 (item 3, key 'lr')". */
int message_context_parse(message_context_t *c, const unsigned char *blob, uint64_t n, codec_err *err);
/* The state RecordDict, as message_content (absent: empty). */
int message_context_state(const message_context_t *c, const unsigned char *blob, uint64_t n, buf_t *out,
                          codec_err *err);
/* {"run_id":..,"node_id":..,"series_id":..,"node_config":{..},"run_config":{..}} */
void message_context_json(buf_t *out, const message_context_t *c);

#endif
