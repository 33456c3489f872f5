"""What the same writes cost the server sent as one client `bulkWrite` or as the `insert` and
`update` commands (TEST-SERVER.md, T29; `pattern-mongo/src/runs.rs`).

Plain pymongo, no library code. The writes of an ingest batch of the `timeseries` benchmark
(BENCHMARKS.md, section 8): 1,000 bucket documents of 10 trades each, inserted into a
collection with a bucket series' five indexes; 1,000 roll-up upserts by `_id` in a collection
of their own; 1,000 fills of open buckets by `_id` (`$push`, `$inc`). Each kind sent both ways
in turn, the order alternating, 14 rounds; medians of the rounds after the first two.

Then an ingest batch with roll-ups (`Store::write_batch_over`): 1,000 bucket inserts and 1,000
roll-up upserts as one `bulkWrite` over both collections, as the `insert` and `update` commands
outside a transaction, and as those commands in one transaction (the design TEST-SERVER.md T30
rules out here), the three in a random order each round, medians of the rounds after the first
two.

Run: MONGODB_URI=mongodb://... python3 benchmarks/scripts/bulk_write_cost.py (needs pymongo
4.9 or later, for `MongoClient.bulk_write`).
"""
import os, random, statistics, time
from bucket_docs import bucket, create_indexes
from pymongo import MongoClient, InsertOne, UpdateOne

c = MongoClient(os.environ["MONGODB_URI"])
c.drop_database("bulk_write_cost")
db = c["bulk_write_cost"]
for v in ("bulk", "cmd"):
    b = db[v]
    create_indexes(b)

def inserts(r):
    return [bucket(k, 2 * r, 10) for k in range(1000)]

def rollups():
    return [({"_id": k}, {"$inc": {"rollup_items": 10, "qty_sum": random.randint(1, 999)},
                          "$setOnInsert": {"rollup_summarized": ["qty_sum"]}}) for k in range(1000)]

def fills(r):
    return [({"_id": "%d_%d" % (k, 1_700_000_000 + (2 * r + 1) * 10_000)},
             {"$push": {"history": {"$each": [{"qty": 5, "price": 1.0}]}}, "$inc": {"count": 1, "qty_sum": 5}})
            for k in range(1000)]

def open_buckets(coll, r):
    coll.insert_many([bucket(k, 2 * r + 1, 3) for k in range(1000)])

def send(way, coll, kind, ops, upsert=False):
    if way == "bulkWrite":
        ns = "bulk_write_cost." + coll.name
        models = [InsertOne(d, namespace=ns) for d in ops] if kind == "insert" else \
                 [UpdateOne(f, u, upsert=upsert, namespace=ns) for f, u in ops]
        c.bulk_write(models, ordered=True)
    elif kind == "insert":
        coll.insert_many(ops, ordered=True)
    else:
        coll.bulk_write([UpdateOne(f, u, upsert=upsert) for f, u in ops], ordered=True)

times = {}
for r in range(14):
    for coll in (db.bulk, db.cmd):
        open_buckets(coll, r)
    ways = [("bulkWrite", db.bulk, db["bulk.rollups"]), ("insert/update", db.cmd, db["cmd.rollups"])]
    for way, coll, rolls in (ways if r % 2 else ways[::-1]):
        for kind, target, ops, upsert in (("1,000 bucket inserts", coll, inserts(r), False),
                                          ("1,000 roll-up upserts", rolls, rollups(), True),
                                          ("1,000 fills by _id", coll, fills(r), False)):
            k = "insert" if kind.endswith("inserts") else "update"
            s = time.perf_counter()
            send(way, target, k, ops, upsert)
            if r >= 2:
                times.setdefault((kind, way), []).append((time.perf_counter() - s) * 1000)
print("| writes | one client bulkWrite | the insert or update command |")
print("|---|---|---|")
for kind in ("1,000 bucket inserts", "1,000 roll-up upserts", "1,000 fills by _id"):
    a, b = (statistics.median(times[(kind, w)]) for w in ("bulkWrite", "insert/update"))
    print("| %s | %.1f ms | %.1f ms |" % (kind, a, b))

# An ingest batch with roll-ups, three ways.
ways = ("one bulkWrite", "two commands", "one transaction")
for w in ways:
    db["batch " + w].create_index([("customerId", 1), ("page", -1)], unique=True,
                                  partialFilterExpression={"page": {"$exists": True}})
    db["batch " + w + ".rollups"].insert_one({"_id": -1})
batch = {}
for r in range(14):
    order = list(ways)
    random.shuffle(order)
    for way in order:
        coll, rolls = db["batch " + way], db["batch " + way + ".rollups"]
        docs, rolled = inserts(r), rollups()
        ups = [UpdateOne(f, u, upsert=True) for f, u in rolled]
        s = time.perf_counter()
        if way == "one bulkWrite":
            ns = "bulk_write_cost." + coll.name
            models = [InsertOne(d, namespace=ns) for d in docs] + \
                     [UpdateOne(f, u, upsert=True, namespace=ns + ".rollups") for f, u in rolled]
            c.bulk_write(models, ordered=True)
        elif way == "two commands":
            coll.insert_many(docs, ordered=True)
            rolls.bulk_write(ups, ordered=True)
        else:
            with c.start_session() as session, session.start_transaction():
                coll.insert_many(docs, ordered=True, session=session)
                rolls.bulk_write(ups, ordered=True, session=session)
        if r >= 2:
            batch.setdefault(way, []).append((time.perf_counter() - s) * 1000)
print()
print("| 1,000 bucket inserts and 1,000 roll-up upserts | " + " | ".join(ways) + " |")
print("|---|---|---|---|")
print("| median | " + " | ".join("%.1f ms" % statistics.median(batch[w]) for w in ways) + " |")
c.drop_database("bulk_write_cost")
