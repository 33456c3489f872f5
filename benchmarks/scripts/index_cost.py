"""What the library's bucket indexes cost the server, apart from the library's code.

Plain pymongo, no library code: the same conditional-upsert push sent (a) as the library sends
it, to a collection with the library's three indexes; (b) as the seed's recipe sends it, to a
collection with the seed's index {customerId: 1, count: 1}; (c) as the library sends it, to the
seed's collection. 1,000 customers x 5 full buckets each; 300 keys x 9 pushes per variant,
interleaved. Cited in BENCHMARKS.md, section 2.

Run: MONGODB_URI=mongodb://... python3 benchmarks/scripts/index_cost.py (needs pymongo).
"""
import os, pymongo, time, statistics
c = pymongo.MongoClient(os.environ["MONGODB_URI"])
db = c["diag_push"]; db.client.drop_database("diag_push")
lib, drv = db.lib, db.drv
lib.create_index([("customerId",1),("page",1),("_id",1)], name="read")
lib.create_index([("customerId",1),("page",-1),("_id",-1)], name="open", partialFilterExpression={"count":{"$lt":10}})
lib.create_index([("customerId",1),("page",-1)], name="uniq", unique=True, partialFilterExpression={"page":{"$exists":True}})
drv.create_index([("customerId",1),("count",1)])
# 1000 customers x 5 full buckets each
for coll, numbered in ((lib, True), (drv, False)):
    docs=[]
    for k in range(1000):
        for p in range(5):
            d={"_id": f"{k}_{p}", "customerId": k, "count": 10, "history": [{"type":"buy","ticker":"MDB","qty":i,"price":250.0} for i in range(10)]}
            if numbered: d["page"]=p+1
            docs.append(d)
    coll.insert_many(docs)
item={"type":"buy","ticker":"MDB","qty":1,"price":250.0}
def push_lib(k, n):
    lib.update_one({"customerId":k,"count":{"$lt":10}}, {"$setOnInsert":{"_id":f"{k}_x{n}","customerId":k,"page":6+n//10},"$inc":{"count":1},"$push":{"history":item}}, upsert=True)
def push_drv(k, n):
    drv.update_one({"customerId":k,"count":{"$lt":10}}, {"$push":{"history":item},"$inc":{"count":1},"$setOnInsert":{"_id":f"{k}_x{n}","customerId":k}}, upsert=True)
def push_lib_on_drv(k, n):
    drv.update_one({"customerId":k,"count":{"$lt":10}}, {"$setOnInsert":{"_id":f"{k}_y{n}","customerId":k,"page":6+n//10},"$inc":{"count":1},"$push":{"history":item}}, upsert=True)
def push_seed_on_lib(k, n):
    lib.update_one({"customerId":k,"count":{"$lt":10}}, {"$push":{"history":item},"$inc":{"count":1},"$setOnInsert":{"_id":f"{k}_y{n}","customerId":k, "page": 6+n//10}}, upsert=True)
fns={"lib cmd, lib idx":push_lib,"seed cmd, seed idx":push_drv,"lib cmd, seed idx":push_lib_on_drv}
times={k:[] for k in fns}
for n in range(9):  # stay within one bucket per key: 9 pushes
    for k in range(100, 400):
        for name, f in (list(fns.items()) if k%2 else list(fns.items())[::-1]):
            t=time.perf_counter(); f(k, n); times[name].append(time.perf_counter()-t)
for name,v in times.items(): print(name, f"{statistics.median(v)*1e3:.3f} ms")
print("ratio", statistics.median(times["lib cmd, lib idx"])/statistics.median(times["seed cmd, seed idx"]))
print(db.command("explain", {"update":"lib","updates":[{"q":{"customerId":5,"count":{"$lt":10}},"u":{"$inc":{"count":1}}}]}, verbosity="queryPlanner")["queryPlanner"].get("rejectedPlans","?").__len__(), "rejected plans (lib)")
c.drop_database("diag_push")
