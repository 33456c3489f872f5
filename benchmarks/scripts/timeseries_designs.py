"""Designs for issue 70 measured on the server alone (no library code), the `timeseries`
benchmark's data (1,000,000 trades over 1,000 customers, one every 6 s, 10 a bucket).
Cited in BENCHMARKS.md, section 8 ("Designs measured").

Part 1, range reads without a span: the same 100,000 buckets in copies that differ only in
what a read can bound its scan by, and a time-series collection of the same trades; one hour,
one day and one month from the middle of the history, 25 customers x 3 rounds, each query in
turn, medians; keys and documents examined from `explain`. Also the bucket inserts' time per
copy (what keeping the field costs an ingest).

Part 2, ingest with roll-ups: 40 batches of 10,000 trades, each layout's batch built before it
is timed, the layouts' order rotating every batch: the time-series collection's `insert_many`;
1,000 bucket inserts; the same inserts with 1,000 roll-up upserts in one `bulkWrite` (the
layout today); the same two kinds of write as two `bulkWrite`s sent at once on two connections;
the inserts carrying each key's running totals (one document a key a batch).

Part 3, where a roll-up lives: 30 batches of 1,000 keys, each batch 1,000 bucket inserts then
1,000 roll-up upserts in one unordered `bulkWrite`, the roll-ups found by `{key, page: "rollup"}`
among the buckets (an older version's layout), by a string `_id` among the buckets, and by the
key as `_id` in a collection of their own (the layout now); the three copies in turn, the order
rotating; the roll-ups' part timed alone, medians.

Part 4, an exact roll-up without a `bulkWrite` (issue 70 point 2): 40 batches of 10,000 trades,
the layouts in turn, the order rotating, each batch built before it is timed: the time-series
collection's `insert_many`; the layout today (one client `bulkWrite`: each key's bucket insert,
then its roll-up upsert by `_id` in `<collection>.rollups`); a pending token per key (an
`update` command of 1,000 `$addToSet`s on the roll-ups, the buckets' `insert`, then an `update`
of the increments, each `$pull`ing its token); one pending document a batch (its keys, inserted
in the roll-ups' collection, then the buckets' `insert`, the increments' `update`, and its
`delete`); and the `insert` then the `update` with no mark (not exact: a process dying between
them leaves the roll-ups behind).

Run: MONGODB_URI=mongodb://... python3 benchmarks/scripts/timeseries_designs.py
[reads|ingest|rollups|pending] (needs pymongo; every part by default; about 6, 2, 1 and 2
minutes on the test server).
"""
import datetime
import os
import statistics
import sys
import threading
import time

import pymongo
from pymongo import InsertOne, UpdateOne

T0, STEP, KEYS = 1_700_000_000_000, 6_000, 1_000
H, D = 3_600_000, 86_400_000


def dt(ms):
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)


def trade(i):
    return {"type": "sell" if i % 3 == 0 else "buy", "ticker": ["MDB", "MSFT", "GOOG", "AAPL"][i % 4],
            "qty": 1 + (i * 7919) % 500, "price": 100.0 + (i % 1000) / 8.0, "date": dt(T0 + i * STEP)}


# The library's bucket indexes for a series with `time` (the open, read and bounds indexes).
BASE = [[("customerId", 1), ("page", -1), ("_id", -1)], [("customerId", 1), ("page", 1), ("_id", 1)],
        [("customerId", 1), ("bounded", 1), ("date_max", 1), ("date_min", 1)]]


def bucket(k, page, items):
    ms = [int(x["date"].timestamp() * 1000) for x in items]
    return {"_id": f"{k}_{ms[0] // 1000}", "customerId": k, "bounded": True, "count": len(items),
            "date_max": dt(max(ms)), "date_min": dt(min(ms)), "history": items, "page": page,
            "qty_sum": sum(x["qty"] for x in items), "summarized": ["qty_sum"]}, ms


def batches(n, size):
    for b in range(0, n, size):
        groups = {}
        for i in range(b, b + size):
            groups.setdefault(i % KEYS, []).append(trade(i))
        yield b // size, groups


def rotate(b, order, times):
    """Runs batch `b` of each layout, timed, the order rotating by one every batch."""
    r = b % len(order)
    for name, f in order[r:] + order[:r]:
        s = time.perf_counter()
        f()
        times[name].append(time.perf_counter() - s)


def reads(client):
    db = client["designs_reads"]
    client.drop_database("designs_reads")
    n = 1_000_000
    db.create_collection("ts", timeseries={"timeField": "date", "metaField": "customerId", "granularity": "hours"})
    # plain: the layout today. cells_h / cells_d: each bucket also lists "<key>_<hour>" (or day)
    # of its items, one multikey index on it alone. cells_num: the hours as numbers, indexed
    # after the key.
    copies = {"plain": None, "cells_h": H, "cells_d": D, "cells_num": -H}
    for name, g in copies.items():
        for ix in BASE:
            db[name].create_index(ix)
        if g and g > 0:
            db[name].create_index([("cells", 1)])
        if g and g < 0:
            db[name].create_index([("customerId", 1), ("cells", 1)])
    took = {name: 0.0 for name in copies}
    for page, groups in batches(n, 10_000):
        db.ts.insert_many([dict(t, customerId=k) for k, items in groups.items() for t in items])
        for name, g in copies.items():
            docs = []
            for k, items in groups.items():
                d, ms = bucket(k, page + 1, items)
                if g and g > 0:
                    d["cells"] = sorted({f"{k}_{m // g}" for m in ms})
                if g and g < 0:
                    d["cells"] = sorted({m // -g for m in ms})
                docs.append(d)
            s = time.perf_counter()
            db[name].insert_many(docs)
            took[name] += time.perf_counter() - s
    print("bucket inserts, s:", {k: round(v, 2) for k, v in took.items()})
    width = max((d["date_max"] - d["date_min"]).total_seconds() * 1000
                for d in db.plain.find({}, {"date_max": 1, "date_min": 1}))
    print(f"widest bucket: {width / H:.1f} h")
    mid = T0 + (n // 2) * STEP

    def cells(c, f, t, g):
        return [f"{c}_{x}" for x in range(f // g, (t - 1) // g + 1)]

    w = int(width)
    queries = {
        "today (bounds index, one side)": lambda c, f, t: db.plain.find(
            {"customerId": c, "bounded": True, "date_max": {"$gte": dt(f)}, "date_min": {"$lt": dt(t)}}),
        "widest width, bounds index": lambda c, f, t: db.plain.find(
            {"customerId": c, "bounded": True, "date_max": {"$gte": dt(f), "$lt": dt(t + w)},
             "date_min": {"$lt": dt(t)}}),
        "widest width, _id range": lambda c, f, t: db.plain.find(
            {"_id": {"$gte": f"{c}_{(f - w) // 1000}", "$lt": f"{c}_{(t + w) // 1000}"}}),
        "hour cells, numbers after key": lambda c, f, t: db.cells_num.find(
            {"customerId": c, "cells": {"$elemMatch": {"$gte": f // H, "$lte": (t - 1) // H}}}),
        "hour cells, $in": lambda c, f, t: db.cells_h.find({"cells": {"$in": cells(c, f, t, H)}}),
        "hour cells, range": lambda c, f, t: db.cells_h.find(
            {"cells": {"$elemMatch": {"$gte": f"{c}_{f // H}", "$lte": f"{c}_{(t - 1) // H}"}}}),
        "day cells, $in": lambda c, f, t: db.cells_d.find({"cells": {"$in": cells(c, f, t, D)}}),
        "time-series collection": lambda c, f, t: db.ts.find(
            {"customerId": c, "date": {"$gte": dt(f), "$lt": dt(t)}}).sort("date", 1),
        "a find of an absent _id": lambda c, f, t: db.plain.find({"_id": "absent"}),
    }
    picks = [(i * 7919 + 13) % KEYS for i in range(25)]
    for window, length in [("one hour", H), ("one day", D), ("one month", 30 * D)]:
        times = {k: [] for k in queries}
        for _ in range(3):
            for c in picks:
                for k, q in queries.items():
                    s = time.perf_counter()
                    list(q(c, mid, mid + length))
                    times[k].append(time.perf_counter() - s)
        print(f"\n{window}: | query | ms | keys / documents examined, returned |")
        for k, q in queries.items():
            ex = q(picks[0], mid, mid + length).explain()["executionStats"]
            print(f"| {k} | {statistics.median(times[k]) * 1000:.3f} | "
                  f"{ex['totalKeysExamined']} / {ex['totalDocsExamined']}, {ex['nReturned']} |")
    for name in copies:
        s = db.command("collStats", name)
        print(name, "indexes", round(s["totalIndexSize"] / 1e6, 1), "MB")
    client.drop_database("designs_reads")


def ingest(client):
    db = client["designs_ingest"]
    client.drop_database("designs_ingest")
    db.create_collection("ts", timeseries={"timeField": "date", "metaField": "customerId", "granularity": "hours"})
    for name in ["inserts", "rollups", "apart", "totals"]:
        for ix in BASE:
            db[name].create_index(ix)
    db.rollups.create_index([("customerId", 1), ("page", 1)])
    db.apart.create_index([("customerId", 1), ("page", 1)])
    # The second connection, for the roll-ups sent beside the inserts.
    other = pymongo.MongoClient(os.environ["MONGODB_URI"])["designs_ingest"]
    times = {k: [] for k in ["time-series insert_many", "bucket inserts", "inserts + roll-up upserts",
                             "inserts, roll-up upserts beside them", "inserts carrying running totals"]}
    totals = {}
    for b, groups in batches(400_000, 10_000):
        ts = [dict(t, customerId=k) for k, items in groups.items() for t in items]
        inserts = [bucket(k, b + 1, items)[0] for k, items in groups.items()]
        def upserts():
            return [UpdateOne({"customerId": k, "page": "rollup"},
                              {"$inc": {"qty_sum": sum(x["qty"] for x in items), "count": len(items)},
                               "$min": {"date_min": items[0]["date"]}, "$max": {"date_max": items[-1]["date"]}},
                              upsert=True) for k, items in groups.items()]
        rollups = [InsertOne(d) for d in inserts] + upserts()
        apart = ([InsertOne(dict(d)) for d in inserts], upserts())

        def beside(apart=apart):
            t = threading.Thread(target=lambda: other.apart.bulk_write(apart[1], ordered=False))
            t.start()
            db.apart.bulk_write(apart[0], ordered=False)
            t.join()
        carried = []
        for d in inserts:
            k = d["customerId"]
            q, c = totals.get(k, (0, 0))
            totals[k] = (q + d["qty_sum"], c + d["count"])
            carried.append(dict(d, total_qty_sum=totals[k][0], total_count=totals[k][1]))
        order = [("time-series insert_many", lambda: db.ts.insert_many(ts)),
                 ("bucket inserts", lambda: db.inserts.insert_many([dict(d) for d in inserts])),
                 ("inserts + roll-up upserts", lambda: db.rollups.bulk_write(rollups)),
                 ("inserts, roll-up upserts beside them", beside),
                 ("inserts carrying running totals", lambda: db.totals.insert_many(carried))]
        rotate(b, order, times)
    print("\n| layout | a batch of 10,000 trades (median of 40) | items/s |")
    for k, v in times.items():
        print(f"| {k} | {statistics.median(v) * 1000:.1f} ms | {len(v) * 10_000 / sum(v):,.0f} |")
    client.drop_database("designs_ingest")


def rollups(client):
    db = client["designs_rollups"]
    client.drop_database("designs_rollups")
    for name in ["by_key", "by_id", "apart"]:
        for ix in BASE:
            db[name].create_index(ix)
        db[name].create_index([("customerId", 1), ("page", -1)], unique=True,
                              partialFilterExpression={"page": {"$exists": True}})
    db.create_collection("apart.rollups")
    inc = lambda items: {"$inc": {"qty_sum": sum(x["qty"] for x in items), "rollup_items": len(items)}}
    layouts = {
        "by key and page, among the buckets": ("by_key", "by_key",
                                               lambda k: {"customerId": k, "page": "rollup"}, {}),
        "by a string _id, among the buckets": ("by_id", "by_id", lambda k: {"_id": f"{k}_rollup"},
                                               {"$setOnInsert": None}),
        "by the key as _id, a collection of their own": ("apart", "apart.rollups",
                                                         lambda k: {"_id": k}, {}),
    }
    times = {name: [] for name in layouts}
    for b, groups in batches(300_000, 10_000):
        names = list(layouts)
        r = b % len(names)
        for name in names[r:] + names[:r]:
            buckets, rolled, key_filter, extra = layouts[name]
            db[buckets].insert_many([bucket(k, b + 1, items)[0] for k, items in groups.items()])
            ops = []
            for k, items in groups.items():
                update = inc(items)
                if extra:
                    update["$setOnInsert"] = {"customerId": k, "page": "rollup"}
                ops.append(UpdateOne(key_filter(k), update, upsert=True))
            s = time.perf_counter()
            db[rolled].bulk_write(ops, ordered=False)
            times[name].append(time.perf_counter() - s)
    print("\n| where the roll-ups live | 1,000 roll-up upserts (median of 30) |")
    for k, v in times.items():
        print(f"| {k} | {statistics.median(v) * 1000:.1f} ms |")
    client.drop_database("designs_rollups")


def pending(client):
    from pymongo import DeleteOne
    from pymongo.operations import InsertOne as CInsert, UpdateOne as CUpdate
    db = client["designs_pending"]
    client.drop_database("designs_pending")
    db.create_collection("ts", timeseries={"timeField": "date", "metaField": "customerId", "granularity": "hours"})
    names = ["today", "token", "token, one update", "document", "no mark"]
    for name in names:
        for ix in BASE:
            db[name].create_index(ix)
        db[name].create_index([("customerId", 1), ("page", 1)], unique=True)
        db.create_collection(name + ".rollups")
    times = {k: [] for k in ["time-series insert_many"] + names}
    for b, groups in batches(400_000, 10_000):
        ts = [dict(t, customerId=k) for k, items in groups.items() for t in items]
        inserts = [bucket(k, b + 1, items)[0] for k, items in groups.items()]
        token = f"t{b}"

        def inc(k, items, pull=None):
            u = {"$inc": {"rollup_items": len(items), "qty_sum": sum(x["qty"] for x in items)},
                 "$min": {"date_min": items[0]["date"]}, "$max": {"date_max": items[-1]["date"]}}
            if pull:
                u["$pull"] = {"rollup_pending": pull}
            return u

        def today(n="today"):
            ops = []
            for d, (k, items) in zip(inserts, groups.items()):
                ops.append(CInsert(namespace=f"designs_pending.{n}", document=dict(d)))
                ops.append(CUpdate(namespace=f"designs_pending.{n}.rollups", filter={"_id": k},
                                   update=inc(k, items), upsert=True))
            client.bulk_write(ops)

        def token_way(n="token"):
            r = db[n + ".rollups"]
            r.bulk_write([UpdateOne({"_id": k}, {"$addToSet": {"rollup_pending": token}}, upsert=True)
                          for k in groups])
            db[n].insert_many([dict(d) for d in inserts])
            r.bulk_write([UpdateOne({"_id": k}, inc(k, items, token)) for k, items in groups.items()])

        def token_many(n="token, one update"):
            r = db[n + ".rollups"]
            r.update_many({"_id": {"$in": list(groups)}}, {"$addToSet": {"rollup_pending": token}})
            db[n].insert_many([dict(d) for d in inserts])
            r.bulk_write([UpdateOne({"_id": k}, inc(k, items, token), upsert=True)
                          for k, items in groups.items()])

        def document_way(n="document"):
            r = db[n + ".rollups"]
            r.insert_one({"_id": {"rollup_pending": token}, "keys": list(groups)})
            db[n].insert_many([dict(d) for d in inserts])
            r.bulk_write([UpdateOne({"_id": k}, inc(k, items), upsert=True) for k, items in groups.items()]
                         + [DeleteOne({"_id": {"rollup_pending": token}})])

        def no_mark(n="no mark"):
            db[n].insert_many([dict(d) for d in inserts])
            db[n + ".rollups"].bulk_write([UpdateOne({"_id": k}, inc(k, items), upsert=True)
                                           for k, items in groups.items()])
        order = [("time-series insert_many", lambda: db.ts.insert_many(ts)), ("today", today),
                 ("token", token_way), ("token, one update", token_many), ("document", document_way),
                 ("no mark", no_mark)]
        rotate(b, order, times)
    print("\n| an ingest batch of 10,000 trades | median of 40 | items/s | against the time-series collection |")
    base = statistics.median(times["time-series insert_many"])
    for k, v in times.items():
        m = statistics.median(v)
        print(f"| {k} | {m * 1000:.1f} ms | {len(v) * 10_000 / sum(v):,.0f} | {base / m:.2f}x |")
    client.drop_database("designs_pending")


if __name__ == "__main__":
    client = pymongo.MongoClient(os.environ["MONGODB_URI"])
    parts = sys.argv[1:] or ["reads", "ingest", "rollups", "pending"]
    if "reads" in parts:
        reads(client)
    if "ingest" in parts:
        ingest(client)
    if "rollups" in parts:
        rollups(client)
    if "pending" in parts:
        pending(client)
