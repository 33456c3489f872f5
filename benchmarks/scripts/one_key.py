"""One key on the server alone (no library code): single-writer push latency and `explain` as
the key grows (part 1), then 1 and 8 threads pushing to the key's one open bucket (part 2).
Cited in BENCHMARKS.md, section 5.

Run: MONGODB_URI=mongodb://... python3 benchmarks/scripts/one_key.py (needs pymongo).
"""
import os
import statistics, threading, time, uuid

import pymongo

item={"type":"buy","ticker":"MDB","qty":1,"price":250.0}

def library_collection(db_name, **client_options):
    """A fresh collection `lib` with the library's three bucket indexes; its client and db."""
    c = pymongo.MongoClient(os.environ["MONGODB_URI"], **client_options)
    c.drop_database(db_name); db = c[db_name]
    lib = db.lib
    lib.create_index([("customerId",1),("page",1),("_id",1)], name="read")
    lib.create_index([("customerId",1),("page",-1),("_id",-1)], name="open", partialFilterExpression={"count":{"$lt":10}})
    lib.create_index([("customerId",1),("page",-1)], name="uniq", unique=True, partialFilterExpression={"page":{"$exists":True}})
    return c, db, lib

# Part 1
c, db, lib = library_collection("diag_onekey")
have=0
for target in (100, 1000, 7800):
    docs=[{"_id": f"0_{p}", "customerId": 0, "count": 10, "page": p+1, "history":[item]*10} for p in range(have, target)]
    if docs: lib.insert_many(docs)
    have=target
    # open bucket
    lib.insert_one({"_id": f"0_open{target}", "customerId": 0, "count": 0, "page": target+1, "history": []})
    ts=[]
    for i in range(9):
        t=time.perf_counter()
        lib.update_one({"customerId":0,"count":{"$lt":10}},{"$push":{"history":item},"$inc":{"count":1}})
        ts.append(time.perf_counter()-t)
    lib.update_one({"customerId":0,"count":{"$lt":10}},{"$push":{"history":item},"$inc":{"count":1}})
    ex=db.command("explain", {"update":"lib","updates":[{"q":{"customerId":0,"count":{"$lt":10}},"u":{"$inc":{"count":0}}}]}, verbosity="executionStats")
    st=ex.get("executionStats",{})
    print(target+1, "buckets: median update", f"{statistics.median(ts)*1e3:.2f} ms", "keysExamined", st.get("totalKeysExamined"), "docsExamined", st.get("totalDocsExamined"), "winning", ex["queryPlanner"]["winningPlan"].get("inputStage",{}).get("indexName", ex["queryPlanner"]["winningPlan"].get("inputStage",{}).get("inputStage",{}).get("indexName")))
    have+=1
c.drop_database("diag_onekey")

# Part 2
c, db, lib = library_collection("diag_onekey2", maxPoolSize=16)
have=0
def run(threads, n):
    lat=[]; lock=threading.Lock()
    def w():
        for i in range(n):
            t=time.perf_counter()
            lib.update_one({"customerId":0,"count":{"$lt":10}},{"$push":{"history":item},"$inc":{"count":1},"$setOnInsert":{"_id":uuid.uuid4().hex}}, upsert=True)
            d=time.perf_counter()-t
            with lock: lat.append(d)
    ts=[threading.Thread(target=w) for _ in range(threads)]
    t0=time.perf_counter(); [t.start() for t in ts]; [t.join() for t in ts]; wall=time.perf_counter()-t0
    return len(lat)/wall, statistics.median(lat)*1e3
for target in (1000, 7800):
    docs=[{"_id": f"0_{p}", "customerId": 0, "count": 10, "page": p+1, "history":[item]*10} for p in range(have, target)]
    lib.insert_many(docs); have=target
    for th in (1, 8):
        r, m = run(th, 200 if th==1 else 50)
        print(f"{target} numbered buckets, {th} threads: {r:.0f} pushes/s, median {m:.2f} ms", flush=True)
c.drop_database("diag_onekey2")
