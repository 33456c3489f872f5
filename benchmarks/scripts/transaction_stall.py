"""The test server's transactions stall once enough has been written through them
(TEST-SERVER.md, T30).

Plain pymongo, no library code. Each round is one transaction holding what an ingest batch
with roll-ups writes (BENCHMARKS.md, section 8): 1,000 bucket documents of 10 trades each,
inserted into a collection with a bucket series' four indexes, and 1,000 roll-up upserts by
`_id` in a collection of their own. Rounds that take over a second, every 25th, and every
failed one are printed with their time. On the test server (`--cache-size 256M`) rounds take
about 0.1 s up to round 100 or so; then one takes about 45 s, and every transaction after it
waits 60 s and fails with `InternalError` "transaction already closed".

Run: MONGODB_URI=mongodb://... python3 benchmarks/scripts/transaction_stall.py [ROUNDS]
(default 140; about 40 minutes once the stall begins).
"""
import os, sys, time
from bucket_docs import bucket, create_indexes
from pymongo import MongoClient, UpdateOne

c = MongoClient(os.environ["MONGODB_URI"])
c.drop_database("transaction_stall")
db = c["transaction_stall"]
b = db["b"]
create_indexes(b)
rolls = db["b.rollups"]
rolls.insert_one({"_id": -1})

for r in range(int(sys.argv[1]) if len(sys.argv) > 1 else 140):
    docs = [bucket(k, r, 10) for k in range(1000)]
    ups = [UpdateOne({"_id": k}, {"$inc": {"rollup_items": 10, "qty_sum": 5}}, upsert=True)
           for k in range(1000)]
    s = time.perf_counter()
    try:
        with c.start_session() as session, session.start_transaction():
            b.insert_many(docs, ordered=True, session=session)
            rolls.bulk_write(ups, ordered=True, session=session)
    except Exception as e:
        print(r, "failed after %.1f s:" % (time.perf_counter() - s), str(e)[:60], flush=True)
        continue
    t = time.perf_counter() - s
    if t > 1 or r % 25 == 0:
        print(r, "%.2f s" % t, flush=True)
c.drop_database("transaction_stall")
