# SPDX-License-Identifier: Apache-2.0
"""Short labels for the clients of a heatmap's axis. Flower's node ids are
19-20 digits, too long for an axis: a client is labelled by its stable
label where the logger found one in clients.info ("partition_id" as p3, a
SuperNode's "name"), else by the last digits of its node id (…48213, as
few as keep the labels apart, 4 at least). Labels stay unique: two clients
of one partition (node ids change with every Flower run in simulation)
get their id's last digits added. The full id goes in the axis label's
tooltip and in the page's table of clients."""

import json

NAME_CHARS = 12  # a SuperNode's name is cut beyond this on an axis
MIN_DIGITS = 4


def _cut(text, n):
    return text if len(text) <= n else text[: n - 1] + "\u2026"


def _suffixes(ids):
    """{id: its last k characters} for the smallest k >= MIN_DIGITS that
    tells every id apart (an id no longer than k + 2 stays whole)."""
    ids = list(dict.fromkeys(ids))
    longest = max((len(i) for i in ids), default=0)
    k = MIN_DIGITS
    while k < longest and len({i[-k:] for i in ids}) < len(ids):
        k += 1
    return {i: i if len(i) <= k + 2 else "\u2026" + i[-k:] for i in ids}


def stable_label(info):
    """The client's own label from its clients.info, or None."""
    if not isinstance(info, dict):
        return None
    if info.get("partition_id") is not None:
        return f"p{info['partition_id']}"
    if isinstance(info.get("name"), str) and info["name"]:
        return _cut(info["name"], NAME_CHARS)
    return None


def short_labels(clients, infos):
    """{client: short label} for the clients (node ids as text), given
    {client: info dict} (clients.info, parsed; missing ones have none)."""
    clients = [str(c) for c in clients]
    own = {c: stable_label(infos.get(c)) for c in clients}
    ids = _suffixes(clients)
    out = {c: own[c] or ids[c] for c in clients}
    taken = {}
    for c in clients:
        taken.setdefault(out[c], []).append(c)
    for label, same in taken.items():
        if len(same) > 1:
            tails = _suffixes(same)
            for c in same:
                out[c] = f"{label} {tails[c]}" if own[c] else tails[c]
    return out


def read_infos(conn, clients):
    """{client: info dict} from the clients table (fn for _web.call); {}
    when the database has none."""
    has = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'clients'").fetchone()
    if not has or not clients:
        return {}
    out = {}
    for c in clients:
        row = conn.execute("SELECT info FROM clients WHERE client = ?", (str(c),)).fetchone()
        if row:
            try:
                out[str(c)] = json.loads(row[0])
            except (TypeError, ValueError):
                out[str(c)] = None
    return out


def describe(client, label, info):
    """The tooltip of an axis label: the label, then the full node id and the
    client's stable labels."""
    parts = [f"node {client}"]
    if isinstance(info, dict):
        if info.get("partition_id") is not None:
            parts.append(f"partition {info['partition_id']}")
        if info.get("name"):
            parts.append(f"name {info['name']}")
    return f"{label}: " + ", ".join(parts)
