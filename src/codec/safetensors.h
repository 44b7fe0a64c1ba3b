/* SPDX-License-Identifier: Apache-2.0 */
/*
** safetensors.h — the safetensors format (huggingface/safetensors), read and
** written, and its conversion to and from records.
**
**   8 bytes   header length N, unsigned little-endian
**   N bytes   JSON header: {"__metadata__": {"k": "v", ...},
**                           "<name>": {"dtype": "F32", "shape": [2, 3],
**                                      "data_offsets": [begin, end]}, ...}
**   the rest  tensor bytes, little-endian, C order; offsets are relative to
**             the first byte after the header
**
** Reading validates like the reference implementation: N at most 100,000,000,
** the header UTF-8 JSON, every tensor's dtype known and its byte length =
** numel x dtype size, the tensors (sorted by offset) contiguous from 0 with
** no gap or overlap, and the last one ending exactly at the end of the file.
** Unknown fields of a tensor entry are ignored, as the reference does;
** duplicate names are errors.
**
** Records: tensors become items in data-offset order. Dtypes with a NumPy
** equivalent (BOOL, U8..U64, I8..I64, F16, F32, F64, C64) become ordinary
** numpy.ndarray items (a .npy of the little-endian data). The others (BF16,
** the F8_* and the sub-byte F4/F6_* types) have no NumPy dtype: they become
** raw items with stype "safetensors" and the safetensors dtype name as dtype
** ("BF16"), holding the bytes unchanged, so that writing the record back
** gives them back. Writing puts the tensors in record order, contiguous,
** after a compact header padded with spaces to a multiple of 8 bytes (as the
** reference writer does); big-endian and Fortran-order arrays are converted.
*/
#ifndef AR_SAFETENSORS_H
#define AR_SAFETENSORS_H

#include "codec/buf.h"
#include "codec/record.h"

#define ST_MAX_HEADER 100000000
#define ST_STYPE "safetensors"

typedef struct st_tensor {
  uint64_t name_off, name_len; /* decoded name in st_file.names */
  int code;                    /* index of the dtype in safetensors.c's table */
  int ndim;
  uint64_t dims_off;   /* shape in st_file.dims */
  uint64_t begin, end; /* data_offsets */
  uint32_t order;      /* position in the header */
} st_tensor;

typedef struct st_file {
  const unsigned char *blob;
  uint64_t header_len;       /* N */
  const unsigned char *data; /* blob + 8 + N */
  uint64_t data_len;
  st_tensor *t;
  uint32_t n, cap;
  int64_t *dims;
  uint32_t ndims, dims_cap;
  buf_t names;
  int has_metadata;
  uint64_t meta_start, meta_len; /* the __metadata__ object, in the header */
} st_file;

void st_file_init(st_file *f);
void st_file_free(st_file *f);

/* Parse and validate a whole file held in blob[0..n); f points into blob.
** Tensors are left sorted by data offset. */
int st_parse(st_file *f, const unsigned char *blob, uint64_t n, codec_err *err);

/* Is it a raw item (stype "safetensors": a dtype NumPy lacks, kept as the
** file's bytes)? Is it a valid one: a raw safetensors dtype name, and as
** many bytes as its shape needs? */
int st_is_raw_item(const record_item *it);
int st_raw_item_validate(const record_item *it, int index, codec_err *err);
/* Is name a safetensors dtype without a NumPy equivalent (BF16, F8_*, ...)? */
int st_is_raw_dtype(const unsigned char *name, uint64_t n);

/* The safetensors dtype name of code, and the code of a name (-1). */
int st_dtype_code(const unsigned char *name, uint64_t n);
/* A code's size in bits (BF16: 16; F4: 4), 0 for -1. */
int st_dtype_bits(int code);

/* Append the record of a parsed file to out. */
int st_to_record(const st_file *f, buf_t *out, codec_err *err);

/* Append the file's __metadata__ (when f->has_metadata) as compact JSON:
** {"k":"v",...}. */
int st_metadata_json(const st_file *f, buf_t *out, codec_err *err);

/* Write a record as a safetensors file. metadata is NULL or a JSON object
** of strings (n bytes), written as "__metadata__". */
int st_from_record(const record_t *rec, const char *metadata, uint64_t metadata_len, buf_t *out, codec_err *err);

#endif
