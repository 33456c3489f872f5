//! What a read of one variant of a polymorphic collection and a query on one attribute cost,
//! against hand-written driver code sending the same filter to the same index: the library's
//! `Novel::find(..).all` and `Gadget::find(..).all`, the driver's typed `find` and
//! `try_collect`, interleaved read by read; medians and ratios. Then what the server examined
//! for the command the library actually sent (recorded by the driver's command monitoring,
//! replayed through `explain`), and what the in-memory store examines for the filter it is
//! sent (`MemoryStore::explain` of `Find::sent_filter`): index keys and documents examined
//! against documents returned.
//!
//!     cargo bench -p pattern-bench --bench reads
//!
//! Needs `MONGODB_URI` (`scripts/test.sh` starts a server and sets it). Under `cargo test` it
//! runs small (200 documents, 5 reads each) and checks that both sides return the same
//! documents and that nothing examined exceeds what is returned.

use std::time::{Duration, Instant};

use bson::{doc, Document as BsonDocument};
use futures::TryStreamExt;
use pattern_bench::{median, ms, scale};
use pattern_core::document::{Attributes, Find};
use pattern_core::{Document, MemoryStore};
use serde::{Deserialize, Serialize};

/// A book, one variant of the catalogue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(variant_of = Item)]
struct Novel {
    #[serde(rename = "_id")]
    id: i64,
    price: i64,
    #[document(index)]
    author: String,
}

/// The catalogue: novels and shirts in one collection.
#[derive(Clone, Serialize, Deserialize, Document)]
#[serde(tag = "kind", rename_all = "lowercase")]
#[document(collection = "items", shared(price: i64))]
enum Item {
    Novel(Novel),
    Shirt {
        #[serde(rename = "_id")]
        id: i64,
        price: i64,
        size: String,
    },
}

/// A gadget and its technical attributes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "gadgets")]
struct Gadget {
    #[serde(rename = "_id")]
    id: i64,
    #[document(attributes)]
    specs: Attributes<i64>,
}

fn novel(i: i64) -> Novel {
    Novel {
        id: i,
        price: i % 40,
        author: format!("author {}", (i / 2) % 50),
    }
}

fn shirt(i: i64) -> ItemShirt {
    ItemShirt {
        id: i,
        price: i % 30,
        size: ["S", "M", "L"][(i % 3) as usize].into(),
    }
}

fn gadget(i: i64) -> Gadget {
    let specs = [
        ("voltage", 100 + i % 50),
        ("watts", i % 70),
        ("weight", i % 13),
    ];
    Gadget {
        id: i,
        specs: specs.into_iter().collect(),
    }
}

/// The reads: by author (`r` picks which), and by voltage.
fn by_author(r: i64) -> Find<Novel> {
    Novel::find(Novel::AUTHOR.eq(format!("author {}", r % 50)))
}

fn by_voltage(r: i64) -> Find<Gadget> {
    Gadget::find(Gadget::SPECS.attribute("voltage").eq(100 + r % 50))
}

#[tokio::main]
async fn main() {
    let (docs, reads): (i64, i64) = (scale(10_000, 200), scale(300, 5));
    let (store, log) = pattern_tests::recording_mongo_store("bench_reads").await;
    let db = store.database().clone();
    let memory = MemoryStore::new();
    Item::ensure_indexes(&store).await.unwrap();
    Gadget::ensure_indexes(&store).await.unwrap();
    Item::ensure_indexes(&memory).await.unwrap();
    Gadget::ensure_indexes(&memory).await.unwrap();
    for i in 0..docs {
        if i % 2 == 0 {
            novel(i).insert(&store).await.unwrap();
            novel(i).insert(&memory).await.unwrap();
        } else {
            shirt(i).insert(&store).await.unwrap();
            shirt(i).insert(&memory).await.unwrap();
        }
        gadget(i).insert(&store).await.unwrap();
        gadget(i).insert(&memory).await.unwrap();
    }

    println!("\nreads of one variant and of one attribute, on MongoDB ({docs} documents each; interleaved, medians):");
    println!("| read | reads | documents a read | library | driver: the same filter, typed `find` | ratio |");
    println!("|---|---|---|---|---|---|");
    let novels = db.collection::<Novel>(Novel::COLLECTION);
    let (lib, drv, returned) = race(&store, &novels, reads, by_author).await;
    report("one variant: `Novel` by author", reads, returned, lib, drv);
    let gadgets = db.collection::<Gadget>(Gadget::COLLECTION);
    let (lib, drv, returned) = race(&store, &gadgets, reads, by_voltage).await;
    report("one attribute: `voltage` equal", reads, returned, lib, drv);

    println!("\nwhat each store examined for the read the library sent (MongoDB: `explain` of the recorded command):");
    println!("| read | store | index | keys examined | documents examined | returned |");
    println!("|---|---|---|---|---|---|");
    // Against the documents the read returned: the test server's `explain` reports none
    // returned for a filter with `$elemMatch` (TEST-SERVER.md, T19).
    for (what, coll, find) in [
        (
            "one variant",
            Novel::COLLECTION,
            by_author(7).sent_filter().unwrap(),
        ),
        (
            "one attribute",
            Gadget::COLLECTION,
            by_voltage(7).sent_filter().unwrap(),
        ),
    ] {
        log.lock().unwrap().clear();
        let got = match what {
            "one variant" => by_author(7).all(&store).await.unwrap().len() as u64,
            _ => by_voltage(7).all(&store).await.unwrap().len() as u64,
        };
        let sent = (log.lock().unwrap().iter())
            .find(|(name, _)| name == "find")
            .map(|(_, cmd)| cmd.clone())
            .expect("the read sent a find");
        let mut cmd = BsonDocument::new();
        for (k, v) in &sent {
            if !k.starts_with('$') && k != "lsid" && k != "txnNumber" {
                cmd.insert(k.clone(), v.clone());
            }
        }
        let explained = db
            .run_command(doc! {"explain": cmd.clone(), "verbosity": "executionStats"})
            .await
            .unwrap();
        let stats = explained.get_document("executionStats").unwrap();
        let n = |k: &str| stats.get(k).and_then(as_u64).unwrap_or(u64::MAX);
        let (keys, examined) = (n("totalKeysExamined"), n("totalDocsExamined"));
        let index = winning_index(&explained).unwrap_or_else(|| "?".into());
        println!("| {what} | MongoDB | {index} | {keys} | {examined} | {got} |");
        assert!(got > 0, "{what}: nothing returned");
        assert!(
            keys <= got && examined <= got,
            "{what} on MongoDB examined more than it returned: {stats}"
        );
        let plan = memory.explain(coll, &find);
        println!(
            "| {what} | memory | {} | - | {} | {} |",
            plan.index.as_deref().unwrap_or("(documents)"),
            plan.examined,
            plan.returned
        );
        assert!(
            plan.returned > 0 && plan.examined <= plan.returned,
            "{what} in memory: {plan:?}"
        );
    }
    let _ = db.drop().await;
}

/// `reads` reads through the library and the same filter through the driver's typed
/// collection, interleaved: the times of each side, and the documents the last read returned
/// (the two sides' documents checked equal).
async fn race<D>(
    store: &pattern_core::store::MongoStore,
    driver: &mongodb::Collection<D>,
    reads: i64,
    find: fn(i64) -> Find<D>,
) -> (Vec<Duration>, Vec<Duration>, usize)
where
    D: Document + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug + Send + Sync,
{
    let (mut lib, mut drv, mut returned) = (Vec::new(), Vec::new(), 0);
    for r in 0..reads {
        let (find, sent) = (find(r), find(r).sent_filter().unwrap());
        let t = Instant::now();
        let ours = find.all(store).await.unwrap();
        lib.push(t.elapsed());
        // The driver's code builds its filter document too (as `doc!` would).
        let t = Instant::now();
        let found = driver.find(sent.to_document()).await.unwrap();
        let theirs: Vec<D> = found.try_collect().await.unwrap();
        drv.push(t.elapsed());
        assert_eq!(ours, theirs, "the library's documents and the driver's");
        returned = ours.len();
    }
    (lib, drv, returned)
}

/// A count in an `explain` reply (an Int32, Int64 or Double).
fn as_u64(v: &bson::Bson) -> Option<u64> {
    match v {
        bson::Bson::Int32(x) => u64::try_from(*x).ok(),
        bson::Bson::Int64(x) => u64::try_from(*x).ok(),
        bson::Bson::Double(x) if *x >= 0.0 => Some(*x as u64),
        _ => None,
    }
}

/// The index of the winning plan's `IXSCAN`, if it has one.
fn winning_index(explained: &BsonDocument) -> Option<String> {
    fn find(d: &BsonDocument) -> Option<String> {
        if d.get_str("stage").ok() == Some("IXSCAN") {
            return d.get_str("indexName").ok().map(str::to_owned);
        }
        for key in ["inputStage", "queryPlan"] {
            if let Ok(inner) = d.get_document(key) {
                if let Some(name) = find(inner) {
                    return Some(name);
                }
            }
        }
        None
    }
    find(
        explained
            .get_document("queryPlanner")
            .ok()?
            .get_document("winningPlan")
            .ok()?,
    )
}

/// One row: the medians and their ratio.
fn report(what: &str, reads: i64, returned: usize, lib: Vec<Duration>, drv: Vec<Duration>) {
    let (l, d) = (median(lib), median(drv));
    println!(
        "| {what} | {reads} | {returned} | {} | {} | {:.2}x |",
        ms(l),
        ms(d),
        l.as_secs_f64() / d.as_secs_f64()
    );
}
