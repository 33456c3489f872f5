//! The embedded store's own primitives, through the contract alone (no pattern above them):
//! what one call of each costs on a collection of [`DOCS`] documents (at full scale) with an
//! `_id`, a secondary index `{k: 1, t: 1}` and the open-document index of a series.
//!
//! Groups (`primitives/...`):
//! - `insert_one`: a new document (removed again after each sample, untimed);
//! - `find_by_id`: one document by `_id`;
//! - `find_range`: 10 documents of one key by a range on `t` (the secondary index);
//! - `update_inc`: `$inc` of one field of one document by `_id`;
//! - `push_open`: one item into a key's open document ([`OpenPush`], the series push), over
//!   [`KEYS`] keys in turn, a new document opened every [`SIZE`] items;
//! - `transaction`: a transaction with one `$inc`, committed.
//!
//! The async calls are polled once (`now_or_never`): the store never waits, so this is the
//! call's own cost. Run: `cargo bench -p pattern-memory --bench primitives`; `cargo test -p
//! pattern-memory --bench primitives` runs each once, at a smoke scale (the test command does).

use std::hint::black_box;

use bson::{doc, Bson};
use criterion::{criterion_group, criterion_main, Criterion};
use futures::FutureExt;
use pattern_memory::MemoryStore;
use pattern_store::query::{Filter, FindOptions, IndexSpec, Path, Update};
use pattern_store::{KeptOps, OpenPush, Store, Transaction};

/// Documents in the collection at full scale (`cargo bench`).
const DOCS: i64 = 100_000;
/// Keys of the series the pushes go to.
const KEYS: i64 = 1_000;
/// Items per series document.
const SIZE: u32 = 100;

/// Full scale under `cargo bench` (criterion's `--bench`), a smoke scale otherwise.
fn docs() -> i64 {
    if std::env::args().any(|a| a == "--bench") {
        DOCS
    } else {
        1_000
    }
}

fn now<T>(f: impl std::future::Future<Output = T>) -> T {
    f.now_or_never().expect("the in-memory store never waits")
}

fn store() -> MemoryStore {
    let s = MemoryStore::new();
    let index = IndexSpec {
        name: "k_1_t_1".into(),
        keys: vec![("k".into(), 1), ("t".into(), 1)],
        unique: false,
        partial: None,
    };
    now(s.create_index("c", &index)).unwrap();
    let docs = (0..docs()).map(|i| doc! {"_id": i, "k": i % KEYS, "t": i, "n": 0_i64});
    now(s.insert_many("c", docs.collect())).unwrap();
    s
}

fn series(s: &MemoryStore) {
    let open = IndexSpec {
        name: "0_pattern_open_k_seq_count_lt_100".into(),
        keys: vec![("k".into(), 1), ("seq".into(), -1), ("_id".into(), -1)],
        unique: false,
        partial: Some(Filter::Lt(Path::from("count"), Bson::Int32(SIZE as i32))),
    };
    now(s.create_index("s", &open)).unwrap();
}

fn primitives(c: &mut Criterion) {
    let s = store();
    let n = docs();
    let mut g = c.benchmark_group("primitives");

    let mut next = n;
    g.bench_function("insert_one", |b| {
        b.iter(|| {
            next += 1;
            now(s.insert_one("c", doc! {"_id": next, "k": next % KEYS, "t": next})).unwrap()
        })
    });
    now(s.delete_many("c", &Filter::Gte(Path::from("_id"), Bson::Int64(n)))).unwrap();

    let mut i = 0_i64;
    g.bench_function("find_by_id", |b| {
        b.iter(|| {
            i = (i + 7919) % n;
            let found = now(s.find("c", &Filter::eq("_id", i), &FindOptions::default()));
            black_box(found.unwrap())
        })
    });

    let range = |k: i64| {
        Filter::and([
            Filter::eq("k", k),
            Filter::Gte(Path::from("t"), Bson::Int64(0)),
        ])
    };
    let ten = FindOptions {
        limit: Some(10),
        ..FindOptions::default()
    };
    g.bench_function("find_range", |b| {
        b.iter(|| {
            i = (i + 7919) % n;
            black_box(now(s.find("c", &range(i % KEYS), &ten)).unwrap())
        })
    });

    g.bench_function("update_inc", |b| {
        b.iter(|| {
            i = (i + 7919) % n;
            let mut inc = Update {
                inc: vec![("n".into(), 1)],
                ..Update::default()
            };
            now(s.update_one("c", &Filter::eq("_id", i), &mut inc, false)).unwrap()
        })
    });

    // A `$set` that changes the document (the value differs each time).
    let mut v = 0_i64;
    g.bench_function("update_set", |b| {
        b.iter(|| {
            i = (i + 7919) % n;
            v += 1;
            let mut set = Update {
                set: vec![("s".into(), Bson::Int64(v))],
                ..Update::default()
            };
            now(s.update_one("c", &Filter::eq("_id", i), &mut set, false)).unwrap()
        })
    });

    series(&s);
    let mut seqs = vec![0_i64; KEYS as usize];
    let mut pushed = 0_u64;
    g.bench_function("push_open", |b| {
        b.iter(|| {
            let k = (pushed % KEYS as u64) as usize;
            pushed += 1;
            let key = Bson::Int64(k as i64);
            let seq = seqs[k] + 1;
            let new_id = move || Bson::String(format!("{k}_{seq}"));
            let marks = Vec::new;
            let push = OpenPush {
                collection: "s",
                key_field: "k",
                key: &key,
                items_field: "items",
                count_field: "count",
                size: SIZE,
                number_field: "seq",
                open_order: [("seq", -1), ("_id", -1)],
                window: None,
                kept: KeptOps::default(),
                items_bytes: None,
                seq,
                new_id: &new_id,
                marks: &marks,
            };
            let opened = now(s.push_open(&push, &mut vec![Bson::Int64(pushed as i64)])).unwrap();
            if opened {
                seqs[k] = seq;
            }
        })
    });

    g.bench_function("transaction", |b| {
        b.iter(|| {
            i = (i + 7919) % n;
            let t = now(s.start_transaction()).unwrap();
            let mut inc = Update {
                inc: vec![("n".into(), 1)],
                ..Update::default()
            };
            now(t.update_one("c", &Filter::eq("_id", i), &mut inc, false)).unwrap();
            now(t.commit()).unwrap()
        })
    });
    g.finish();
}

criterion_group!(benches, primitives);
criterion_main!(benches);
