"""The bucket documents and indexes the scripts beside it write: the `timeseries` benchmark's
buckets (BENCHMARKS.md, section 8) as plain pymongo documents, for `bulk_write_cost.py` and
`transaction_stall.py`."""
import datetime, random

T0 = datetime.datetime(2024, 1, 1)


def create_indexes(coll):
    """A bucket series' four indexes on `coll` (its `_id` the fifth)."""
    coll.create_index([("customerId", 1), ("page", -1), ("_id", -1)],
                      partialFilterExpression={"count": {"$lt": 10}})
    coll.create_index([("customerId", 1), ("bounded", 1), ("date_max", 1), ("date_min", 1)])
    coll.create_index([("customerId", 1), ("page", -1)], unique=True,
                      partialFilterExpression={"page": {"$exists": True}})
    coll.create_index([("customerId", 1), ("page", 1), ("_id", 1)])


def bucket(k, page, n):
    """Customer `k`'s bucket number `page`, holding `n` trades."""
    items = [{"type": "buy", "ticker": "MDB", "qty": random.randint(1, 999), "price": 250.0,
              "date": T0 + datetime.timedelta(minutes=page * 100 + i)} for i in range(n)]
    return {"_id": "%d_%d" % (k, 1_700_000_000 + page * 10_000), "customerId": k, "bounded": True,
            "count": n, "date_min": items[0]["date"], "date_max": items[-1]["date"], "history": items,
            "page": page, "qty_sum": sum(i["qty"] for i in items), "summarized": ["qty_sum"]}
