# SPDX-License-Identifier: Apache-2.0
"""Flower's wire bytes of the records the logger stores, and back.

The logger encodes ArrayRecords itself, byte-identical to Flower's serde
(array_record_to_proto(record).SerializeToString()) with each array's data
copied once where serde copies it twice; MetricRecords and ConfigRecords go
through Flower's serde. Decoding is Flower's own.
"""

from flwr.app import ArrayRecord, RecordDict
from flwr.common import serde
from flwr.proto.recorddict_pb2 import ArrayRecord as _ProtoArrayRecord
from flwr.proto.recorddict_pb2 import RecordDict as _ProtoRecordDict

from .._protobuf import varint
from ..record import _build_pieces


def rd_bytes(rd):
    """Flower's serde bytes of a RecordDict, recorddict_to_proto(rd)
    .SerializeToString(), with each array's data copied once (serde copies
    it into the proto, then into the string): ArrayRecords are encoded
    here, Metric and ConfigRecords by Flower's serde."""
    pieces = []
    for key, record in rd.items():
        if isinstance(record, ArrayRecord):
            body = _len_field(2, _ar_pieces(record))
        else:  # the Item serde writes for it under an empty key: the record's field alone
            body = [serde.recorddict_to_proto(RecordDict({"": record})).items[0].SerializeToString()]
        pieces += _len_field(1, ([] if not key else _len_field(1, [key.encode()])) + body)
    return b"".join(pieces)


def ar_bytes(rec):
    """Flower's serde bytes of an ArrayRecord (as rd_bytes writes them)."""
    return b"".join(_ar_pieces(rec))


def ar_from_bytes(blob):
    return serde.array_record_from_proto(_ProtoArrayRecord.FromString(bytes(blob)))


def rd_from_bytes(blob):
    return serde.recorddict_from_proto(_ProtoRecordDict.FromString(bytes(blob)))


def array_item_size(key, record_size):
    """Bytes a RecordDict item (key, ArrayRecord of record_size bytes) takes
    in Flower's RecordDict message: Item {1: key, 2: record}, as field 1."""
    k = len(key.encode())
    body = 1 + len(varint(k)) + k + 1 + len(varint(record_size)) + record_size
    return 1 + len(varint(body)) + body


def int64(n):
    """Flower's unsigned 64-bit ids (node and run ids) as the signed 64-bit
    integer of the same bits, as the SuperLink's own database stores them
    (SQLite's INTEGER holds no value of 2**63 and above). None stays None."""
    return n - (1 << 64) if n is not None and n >= 1 << 63 else n


def _ar_pieces(record):
    """An ArrayRecord's bytes as pieces, each Array's fields as they are
    (to_record's writer: the data bytes are not copied until joined)."""
    items = [(key, (a.dtype, list(a.shape), a.stype, a.data)) for key, a in record.items()]
    return _build_pieces(items, "LoggingStrategy")


def _len_field(num, pieces):
    return [bytes([num << 3 | 2]) + varint(sum(len(p) for p in pieces))] + pieces
