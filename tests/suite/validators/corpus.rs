//! The differential corpus: both stores decide alike on every write under the same validators.

use super::*;
use pattern_core::store;

/// A deterministic generator (xorshift64*), so that a run's corpus is the next run's.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n
    }
}

fn dec(s: &str) -> Bson {
    Bson::Decimal128(s.parse().expect("a decimal"))
}

/// The values a corpus sets a field to, around `n` (the layout's size, threshold or chunk):
/// each number type at -1, 0, 1, n-1, n, n+1 and at its extremes, fractions, -0, NaN and the
/// infinities (double and decimal), null, booleans, strings, dates, ObjectIds, documents, and
/// arrays of n-1, n and n+1 numbers or strings; `ids_only`: the scalars an `_id` may hold.
fn pool(n: i64, ids_only: bool) -> Vec<Bson> {
    let mut v = Vec::new();
    for x in [-1, 0, 1, n - 1, n, n + 1] {
        v.push(Bson::Int32(x as i32));
        v.push(Bson::Int64(x));
        v.push(Bson::Double(x as f64));
        v.push(dec(&x.to_string()));
    }
    v.extend([
        Bson::Int32(i32::MIN),
        Bson::Int32(i32::MAX),
        Bson::Int64(i64::MIN),
        Bson::Int64(i64::MAX),
        Bson::Double(n as f64 + 0.5),
        Bson::Double(n as f64 - 1e-9),
        Bson::Double(-0.0),
        Bson::Double(f64::NAN),
        Bson::Double(f64::INFINITY),
        Bson::Double(f64::NEG_INFINITY),
        Bson::Double(9.3e18),
        dec(&format!("{n}.0")),
        dec(&format!("{n}.000000000000000000000000001")),
        dec(&format!("{}E-1", n * 10 + 1)),
        dec("-0"),
        dec("NaN"),
        dec("Infinity"),
        dec("-Infinity"),
        Bson::Null,
        Bson::Boolean(true),
        Bson::Boolean(false),
        Bson::String(String::new()),
        Bson::String("x".into()),
        Bson::String(n.to_string()),
        Bson::String(",Books,".into()),
        Bson::DateTime(bson::DateTime::from_millis(1_698_335_223_434)),
        Bson::ObjectId(bson::oid::ObjectId::from_bytes([7; 12])),
        Bson::Document(doc! {}),
        Bson::Document(doc! {"a": 1}),
        Bson::Binary(bson::Binary {
            subtype: bson::spec::BinarySubtype::Generic,
            bytes: vec![1, 2],
        }),
        Bson::Timestamp(bson::Timestamp {
            time: 1,
            increment: 1,
        }),
    ]);
    if ids_only {
        return v;
    }
    let ints = |k: i64| Bson::Array((0..k).map(Bson::Int64).collect());
    let strings = |k: i64| Bson::Array((0..k).map(|i| Bson::String(format!("s{i}"))).collect());
    v.extend([
        Bson::Array(vec![]),
        Bson::Array(vec![Bson::Null]),
        bson::bson!([1, "x"]),
        bson::bson!([[1]]),
        bson::bson!([{"a": 1}]),
        ints((n - 1).max(0)),
        ints(n),
        ints(n + 1),
        strings((n - 1).max(0)),
        strings(n),
        strings(n + 1),
    ]);
    v
}

/// One layout of the corpus: its collection, schema, a document it accepts, and the `n` its
/// boundaries are around.
struct Case {
    coll: &'static str,
    schema: pattern_core::store::query::Schema,
    base: Document,
    n: i64,
}

/// A schema that is none of the layouts', for the keywords' semantics beyond them: `minimum`
/// and `maximum` without a type (any number is compared, anything else passes), `number`,
/// `maxItems` without a type, `items` of several types, a nested object with its own
/// `required`.
fn probe() -> pattern_core::store::query::Schema {
    use pattern_core::spec::BsonType;
    use pattern_core::store::query::Schema;
    Schema::object()
        .require("r")
        .property("n", Schema::default().range(Some(0), Some(3)))
        .property("t", Schema::of(&[BsonType::Number]))
        .property(
            "a",
            Schema::default()
                .max_items(3)
                .items(Schema::of(&[BsonType::String, BsonType::Null])),
        )
        .property(
            "o",
            Schema::object()
                .require("x")
                .property("x", Schema::of(&[BsonType::Int]).range(None, Some(3))),
        )
}

fn cases() -> Vec<Case> {
    let date = Bson::DateTime(bson::DateTime::from_millis(1_698_335_223_434));
    let tree = |coll: &'static str, schema, fields: Document| {
        let mut base = doc! {"_id": "node", "label": "a node"};
        base.extend(fields);
        Case {
            coll,
            schema,
            base,
            n: 3,
        }
    };
    vec![
        Case {
            coll: "trades",
            schema: bucket::schemas::<TradeHistory>()[0].1.clone(),
            base: doc! {"_id": "1_1", "customerId": 1_i64, "count": 2, "history": trades(2), "page": 1_i64},
            n: 10,
        },
        Case {
            coll: "ticks",
            schema: bucket::schemas::<Ticks>()[0].1.clone(),
            base: doc! {"_id": "MDB_1", "symbol": "MDB", "count": 1, "ticks": trades(1), "page": 1_i64,
            "bounded": true, "date_min": date.clone(), "date_max": date, "summarized": ["qty_sum", "qty_max"],
            "qty_sum": 5_i64, "qty_max": 5_i64},
            n: 4,
        },
        Case {
            coll: "feeds",
            schema: outlier::schemas::<Feed>()[0].1.clone(),
            base: doc! {"_id": 1_i64, "title": "t", "posts": ["a"], "has_extras": true},
            n: 3,
        },
        Case {
            coll: "feed_overflow",
            schema: outlier::schemas::<Feed>()[1].1.clone(),
            base: doc! {"_id": 1, "feed_id": 1_i64, "count": 1, "posts_extra": ["x"], "seq": 1_i64},
            n: 4,
        },
        tree(
            "by_parent",
            tree::schemas::<ByParent>()[0].1.clone(),
            doc! {"parent": "Books"},
        ),
        tree(
            "by_children",
            tree::schemas::<ByChildren>()[0].1.clone(),
            doc! {"children": ["a", "b"]},
        ),
        tree(
            "by_ancestors",
            tree::schemas::<ByAncestors>()[0].1.clone(),
            doc! {"ancestors": ["Books"], "parent": "Books"},
        ),
        tree(
            "by_path",
            tree::schemas::<ByPath>()[0].1.clone(),
            doc! {"path": ",Books,"},
        ),
        tree(
            "by_nested_set",
            tree::schemas::<ByNestedSet>()[0].1.clone(),
            doc! {"parent": "Books", "left": 2, "right": 3},
        ),
        Case {
            coll: "numbered",
            schema: tree::schemas::<Numbered>()[0].1.clone(),
            base: doc! {"_id": 5_i64, "parent": 1_i64, "left": 2_i64, "right": 3_i64},
            n: 3,
        },
        Case {
            coll: "probe",
            schema: probe(),
            base: doc! {"_id": 1, "r": 1, "n": 2, "t": 1.5, "a": ["x"], "o": {"x": 1}},
            n: 3,
        },
    ]
}

/// The fields a case's corpus changes: `_id`, every field the schema names, one it does not.
fn fields_of(case: &Case) -> Vec<String> {
    let mut fields: Vec<String> = vec!["_id".into(), "other".into()];
    let named = (case.schema.properties.iter().map(|(k, _)| k)).chain(&case.schema.required);
    for f in named {
        if !fields.contains(f) {
            fields.push(f.clone());
        }
    }
    fields
}

/// `base` with `field` set to `value` (`None`: removed).
fn mutated(base: &Document, changes: &[(&str, Option<&Bson>)]) -> Document {
    let mut d = base.clone();
    for (field, value) in changes {
        match value {
            Some(v) => {
                d.insert(*field, (*v).clone());
            }
            None => {
                d.remove(*field);
            }
        }
    }
    d
}

/// SecantusDB's `minimum` and `maximum` let a Decimal128 or a NaN pass, which MongoDB
/// compares (a decimal by its value; NaN passes no bound): whether `doc` of the probe differs
/// only by that (the store refuses it, and accepts it with `n: 1`).
async fn secantus_bound_deviation(memory: &AnyStore, doc: &Document) -> bool {
    let decimal_or_nan = match doc.get("n") {
        Some(Bson::Decimal128(_)) => true,
        Some(Bson::Double(x)) => x.is_nan(),
        _ => false,
    };
    let mut fixed = doc.clone();
    fixed.insert("n", 1);
    memory.set_validator("probe_check", &probe()).await.unwrap();
    let ok = memory.insert_one("probe_check", fixed).await.is_ok();
    memory
        .delete_many("probe_check", &Filter::And(vec![]))
        .await
        .unwrap();
    decimal_or_nan && ok
}

/// Whether the server is SecantusDB (its `buildInfo` says `secantusVersion`).
async fn is_secantus(store: &AnyStore) -> bool {
    let AnyStore::Mongo(m) = store else {
        return false;
    };
    let info = m
        .database()
        .run_command(doc! {"buildInfo": 1})
        .await
        .unwrap();
    info.contains_key("secantusVersion")
}

/// Whether a store accepted a write: `Ok(true)`, refused by the validator: `Ok(false)`; any
/// other error is the corpus's mistake.
fn decision(r: Result<(), store::Error>, doc: &Document) -> bool {
    match r {
        Ok(()) => true,
        Err(store::Error::SchemaViolation { .. }) => false,
        Err(e) => panic!("{e} for {doc}"),
    }
}

/// Both stores, under the same validators, decide alike on every document of the corpus: each
/// layout's valid document with one field set to every value of [`pool`] or removed (inserted,
/// and as an update of the valid document), then 100 documents per layout (300 with
/// `PATTERN_FULL=1`) with one to four fields changed at random (seeded). On SecantusDB, the
/// probe's documents that differ only by its known deviation ([`secantus_bound_deviation`]) are
/// counted apart; on any other server, and on every layout's schema, no document may differ.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn differential_corpus() {
    let mongo = AnyStore::Mongo(pattern_tests::mongo_store("differential_corpus").await);
    let memory = pattern_tests::memory_store();
    let mut rng = Rng(0x5eed_0fc0_ffee);
    let mut tally = Tally {
        secantus: is_secantus(&mongo).await,
        ..Tally::default()
    };
    for case in cases() {
        for s in [&memory, &mongo] {
            s.set_validator(case.coll, &case.schema).await.unwrap();
        }
        let (ids, values) = (pool(case.n, true), pool(case.n, false));
        let fields = fields_of(&case);
        let mut corpus: Vec<Vec<(&str, Option<&Bson>)>> = Vec::new();
        for f in &fields {
            let pool = if f == "_id" { &ids } else { &values };
            corpus.extend(pool.iter().map(|v| vec![(f.as_str(), Some(v))]));
            if f != "_id" {
                corpus.push(vec![(f.as_str(), None)]);
            }
        }
        let single = corpus.len();
        let random = pattern_tests::scale(100, 300);
        for _ in 0..random {
            let changes = (0..1 + rng.below(4))
                .map(|_| {
                    let f = fields[rng.below(fields.len())].as_str();
                    match (f, rng.below(values.len() + 1)) {
                        ("_id", i) => (f, Some(&ids[i % ids.len()])),
                        (_, i) if i == values.len() => (f, None),
                        (_, i) => (f, Some(&values[i])),
                    }
                })
                .collect();
            corpus.push(changes);
        }
        let (accepted_before, total_before) = (tally.accepted, tally.total);
        for (i, changes) in corpus.iter().enumerate() {
            let doc = mutated(&case.base, changes);
            tally.insert(&case, &doc, [&memory, &mongo]).await;
            // The single changes again, as an update of the valid document.
            if let ([(field, value)], true) = (changes.as_slice(), i < single) {
                if *field != "_id" {
                    let change = match value {
                        Some(v) => set(vec![(field, (*v).clone())]),
                        None => Update {
                            unset: vec![field.to_string().into()],
                            ..Update::default()
                        },
                    };
                    tally.update(&case, &doc, change, [&memory, &mongo]).await;
                }
            }
        }
        println!(
            "{:>14}: {} documents inserted ({single} with one field changed, {random} at random) \
             and {} updates, {} writes accepted",
            case.coll,
            corpus.len(),
            tally.total - total_before - corpus.len(),
            tally.accepted - accepted_before,
        );
    }
    let Tally {
        total,
        accepted,
        differ,
        deviations,
        ..
    } = &tally;
    println!(
        "{total} writes, {accepted} accepted and {} refused by both stores alike, {} decided differently; \
         {deviations} probe documents refused by the in-memory store and accepted by SecantusDB (a Decimal128 \
         or NaN against minimum/maximum, which SecantusDB lets pass and MongoDB compares)",
        total - accepted - differ.len() - deviations,
        differ.len()
    );
    assert!(
        differ.is_empty(),
        "the stores decide differently:\n{}",
        differ.join("\n")
    );
    pattern_tests::drop_db(&mongo).await;
}

/// The differential corpus's decisions so far.
#[derive(Default)]
struct Tally {
    secantus: bool,
    total: usize,
    /// Writes the in-memory store accepted.
    accepted: usize,
    /// The writes the stores decided differently.
    differ: Vec<String>,
    /// Probe documents that differ only by SecantusDB's known deviation.
    deviations: usize,
}

impl Tally {
    /// Inserts `doc` into both stores (then deletes it where accepted) and records the
    /// decisions.
    async fn insert(&mut self, case: &Case, doc: &Document, stores: [&AnyStore; 2]) {
        let mut seen = [false; 2];
        for (s, ok) in stores.into_iter().zip(&mut seen) {
            *ok = decision(s.insert_one(case.coll, doc.clone()).await, doc);
            s.delete_many(case.coll, &Filter::And(vec![]))
                .await
                .unwrap();
        }
        self.record(case, "insert", doc, seen, stores[0]).await;
    }

    /// Applies `change` to the case's valid document in both stores and records the
    /// decisions (`doc`: what it makes of it).
    async fn update(
        &mut self,
        case: &Case,
        doc: &Document,
        change: Update,
        stores: [&AnyStore; 2],
    ) {
        let (mut seen, all) = ([false; 2], Filter::And(vec![]));
        for (s, ok) in stores.into_iter().zip(&mut seen) {
            s.insert_one(case.coll, case.base.clone()).await.unwrap();
            let r = update(s, case.coll, &all, change.clone(), false).await;
            *ok = decision(r.map(|_| ()), doc);
            s.delete_many(case.coll, &all).await.unwrap();
        }
        self.record(case, "update to", doc, seen, stores[0]).await;
    }

    async fn record(
        &mut self,
        case: &Case,
        what: &str,
        doc: &Document,
        seen: [bool; 2],
        memory: &AnyStore,
    ) {
        self.total += 1;
        self.accepted += usize::from(seen[0]);
        if seen[0] == seen[1] {
            return;
        }
        if self.secantus && case.coll == "probe" && secantus_bound_deviation(memory, doc).await {
            self.deviations += 1;
        } else {
            let [m, s] = seen;
            self.differ.push(format!(
                "{} {what} {doc}: memory {m}, MongoDB {s}",
                case.coll
            ));
        }
    }
}
