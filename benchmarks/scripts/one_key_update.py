"""The library's push filter as a plain pymongo `update` (and its `explain`) on the trade
collection a run of `one_key_probe` kept (`ONE_KEY_PROBE_KEEP=1`). Cited in BENCHMARKS.md,
section 5: it showed the slow `update` was the server's, not the library's (the server tried
the indexes in name order; fixed by naming the open-bucket index to sort first).

Run: MONGODB_URI=mongodb://... python3 benchmarks/scripts/one_key_update.py <database>
"""
import os, statistics, sys, time

import pymongo
from bson.int64 import Int64

c = pymongo.MongoClient(os.environ["MONGODB_URI"])
db = c[sys.argv[1]]
trades = db.trades
query = {"customerId": Int64(0), "count": {"$lt": 10}}
times = []
for _ in range(9):
    t = time.perf_counter()
    trades.update_one(query, {"$inc": {"count": 0}})
    times.append(time.perf_counter() - t)
ex = db.command("explain", {"update": "trades", "updates": [{"q": query, "u": {"$inc": {"count": 0}}}]},
                verbosity="executionStats")
st = ex.get("executionStats", {})
print(f"{trades.estimated_document_count()} documents: median update {statistics.median(times) * 1e3:.2f} ms, "
      f"keys examined {st.get('totalKeysExamined')}, documents examined {st.get('totalDocsExamined')}")
c.drop_database(sys.argv[1])
