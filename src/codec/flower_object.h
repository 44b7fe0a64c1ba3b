/* SPDX-License-Identifier: Apache-2.0 */
/*
** flower_object.h — Flower's content-addressed objects (flwr.supercore.
** inflatable, Flower >= 1.20): a record deflates into a tree of
** ArrayRecord / Array / ArrayChunk objects, each named by the SHA-256 of its
** content, and a set of such objects inflates back into the record.
**
**   content   = head "\0" body
**   head      = "<TypeName> <child ids joined by ','> <len(body)>"
**   object_id = sha256(content).hexdigest()
**
**   ArrayRecord body  json.dumps({key: array_object_id, ...})
**   Array body        json.dumps({"dtype": ..., "shape": [...], "stype": ...,
**                                 "arraychunk_ids": [index into the head's child ids, ...]})
**   ArrayChunk body   a slice of Array.data, at most 5 MiB
**
** JSON is written as Python's json.dumps writes it by default (separators
** ", " and ": ", ensure_ascii: non-ASCII as \uXXXX, astral characters as
** surrogate pairs, lowercase hex). Children are unique, in order of first
** appearance: identical chunks (say, runs of zeros) and identical arrays
** share one object. A tree lists its objects as Flower's
** get_all_nested_objects does: post-order, children before their parent,
** each object once, the ArrayRecord last.
**
** RecordDicts (flwr.common.record.recorddict) and Messages deflate too:
**
**   RecordDict body    json.dumps({name: record_object_id, ...}); children
**                      its unique records (ArrayRecord, MetricRecord,
**                      ConfigRecord objects) in item order
**   MetricRecord body  ProtoMetricRecord(items=...).SerializeToString(), no
**   ConfigRecord body  children (ConfigRecord likewise): the bytes Flower
**                      writes back from Python values (valrec_write_flower)
**   Message body       a protobuf Message with its metadata (message_id
**                      empty: the Message's object id is its message_id)
**                      and error, without content; its one child, if any,
**                      is the content RecordDict
*/
#ifndef AR_FLOWER_OBJECT_H
#define AR_FLOWER_OBJECT_H

#include "codec/keyset.h"
#include "codec/record.h"
#include "codec/sha256.h"

/* Flower's default FLWR_PRIVATE_MAX_ARRAY_CHUNK_SIZE. */
#define FO_CHUNK_SIZE 5242880

enum {
  FO_ARRAY_RECORD = 0,
  FO_ARRAY = 1,
  FO_ARRAY_CHUNK = 2,
  FO_RECORD_DICT = 3,
  FO_METRIC_RECORD = 4,
  FO_CONFIG_RECORD = 5,
  FO_MESSAGE = 6,
  FO_NTYPES = 7
};
const char *fo_type_name(int type);

/* Append s as a JSON string literal the way Python's json.dumps writes it
** (ensure_ascii=True). s must be valid UTF-8. */
void fo_put_pystring(buf_t *out, const unsigned char *s, uint64_t n);

/* --- deflate --------------------------------------------------------------- */

typedef struct fo_object {
  unsigned char id[SHA256_DIGEST_SIZE];
  unsigned char type;
  int item;                  /* Array, ArrayChunk: the item it was first made from */
  uint64_t off, len;         /* ArrayChunk: slice of the item's data; others: body in tree.text */
  const unsigned char *data; /* ArrayChunk: its bytes (the slice) */
  uint32_t child0, nchild;   /* unique children: tree.child[child0 .. child0 + nchild) */
} fo_object;

typedef struct fo_tree {
  const record_t *rec; /* fo_deflate's record (NULL for a RecordDict) */
  fo_object *obj;      /* post-order; the root is obj[n - 1] */
  uint32_t n, cap;
  uint32_t *child; /* object indices */
  uint32_t nchild_total, child_cap;
  buf_t text;    /* bodies, ArrayChunks' excepted */
  keyset_t seen; /* object id -> index in obj */
} fo_tree;

void fo_tree_init(fo_tree *t);
void fo_tree_free(fo_tree *t);

/* Deflate a parsed record (views stay pointing into its BLOB, which must
** outlive the tree). chunk_size is FO_CHUNK_SIZE except in tests.
** CODEC_NOMEM or CODEC_TOOBIG (more objects than fit an index). */
int fo_deflate(fo_tree *t, const record_t *rec, uint64_t chunk_size, codec_err *err);

/* Deflate a RecordDict BLOB (recorddict.h; views into it, which must
** outlive the tree): its records' trees, then the RecordDict. Errors name
** the item: "array record 'arrays' (at byte 2): ...". */
int fo_deflate_rd(fo_tree *t, const unsigned char *blob, uint64_t n, uint64_t chunk_size, codec_err *err);

/* The content of object i: its size, and appending it to out. */
uint64_t fo_content_size(const fo_tree *t, uint32_t i);
void fo_write_content(const fo_tree *t, uint32_t i, buf_t *out);
/* Object i's child ids as a JSON array: ["<id>","<id>"] ([] when none). */
void fo_write_children_json(const fo_tree *t, uint32_t i, buf_t *out);

/* The object id of one Array (dtype, shape, stype, data of spec; the key is
** not part of it), without building a tree. */
int fo_array_id(const record_item_spec *spec, uint64_t chunk_size, unsigned char id[SHA256_DIGEST_SIZE],
                codec_err *err);

/* --- inflate --------------------------------------------------------------- */

typedef struct fo_entry {
  unsigned char id[SHA256_DIGEST_SIZE];
  unsigned char type;
  unsigned char reached; /* found while walking from the ArrayRecord */
  unsigned char listed;  /* scratch: in the current parent's head */
  uint64_t off, len;     /* content in store.arena */
  uint64_t body;         /* body offset within the content */
  uint64_t children;     /* offset of the first child id within the content */
  uint32_t nchild;
} fo_entry;

typedef struct fo_store {
  buf_t arena; /* contents, copied as they arrive */
  fo_entry *e;
  uint32_t n, cap;
  keyset_t ids; /* id -> entry index */
} fo_store;

/* The head of one object's content: type, children (nchild, and their
** offset), body offset. `what` names the object in messages ("object <id>").
** CODEC_CORRUPT ("object <id>: head is not ..."), or CODEC_NOMEM. */
int fo_parse_head(const unsigned char *content, uint64_t n, fo_entry *e, const char *what, codec_err *err);

/* limit caps the bytes kept (CODEC_TOOBIG beyond it). */
void fo_store_init(fo_store *s, uint64_t limit);
void fo_store_free(fo_store *s);

/* Verify one object (its content hashes to id; its head is well formed:
** known type, unique lowercase-hex child ids, the body length it states)
** and keep it. An object seen before is ignored. */
int fo_store_add(fo_store *s, const unsigned char id[SHA256_DIGEST_SIZE], const unsigned char *content, uint64_t n,
                 codec_err *err);

/* Rebuild the record from the stored objects: exactly one ArrayRecord,
** every child present and of the right type, bodies well formed and
** consistent with their heads, every object part of the tree. The record
** BLOB (canonical Flower serde bytes) is appended to out. */
int fo_inflate(fo_store *s, buf_t *out, codec_err *err);

/* Rebuild a RecordDict likewise: the root is the one Message object if
** there is one (*has_content 0 when it has no content child: out stays
** empty), else the one RecordDict object. Its records inflate as above;
** metric and config records are written as valrec_write_flower writes
** them. The RecordDict BLOB (canonical serde bytes) is appended to out. */
int fo_inflate_rd(fo_store *s, buf_t *out, int *has_content, codec_err *err);

#endif
