//! What schema versioning and document history cost, measured:
//!
//! - On MongoDB: a write with history (`Note::update_one`: one transaction that reads the
//!   document, records it in the history collection and updates it) against hand-written
//!   driver code doing the same (a session, `startTransaction`, `find_one`, `insert_one` into
//!   the history, `update_one` by `_id`, `commitTransaction`), through the same client,
//!   interleaved operation by operation; and against a plain `update_one` with no history.
//!   Medians and ratios.
//! - In memory: the read-time cost of upgrading, `get` of a document stored at the current
//!   version, one version behind (one hop) and two behind (two hops), interleaved: medians, and
//!   the cost per hop.
//!
//!     cargo bench -p pattern-bench --bench versions
//!
//! Needs `MONGODB_URI` (`scripts/test.sh` starts a server and sets it). Under `cargo test` it
//! runs small (20 operations of each instead of 500).

use std::time::{Duration, Instant};

use bson::doc;
use mongodb::bson::Document as BsonDocument;
use pattern_bench::scale;
use pattern_core::document::Update;
use pattern_core::{store::Store, Document, MemoryStore};
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
struct V1 {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
    likes: i64,
}

#[derive(Deserialize)]
struct V2 {
    #[serde(rename = "_id")]
    id: i64,
    full_name: String,
    likes: i64,
}

impl From<V1> for V2 {
    fn from(v: V1) -> Self {
        V2 {
            id: v.id,
            full_name: v.name,
            likes: v.likes,
        }
    }
}

/// Version 3, with history.
#[derive(Clone, Serialize, Deserialize, Document)]
#[document(
    collection = "notes",
    version = 3,
    previous(V1 = 1, V2 = 2),
    history = "notes_history"
)]
struct Note {
    #[serde(rename = "_id")]
    id: i64,
    first: String,
    last: String,
    likes: i64,
}

impl From<V2> for Note {
    fn from(v: V2) -> Self {
        let (first, last) = v.full_name.split_once(' ').unwrap_or((&v.full_name, ""));
        Note {
            id: v.id,
            first: first.into(),
            last: last.into(),
            likes: v.likes,
        }
    }
}

/// The same document without history.
#[derive(Clone, Serialize, Deserialize, Document)]
#[document(collection = "plain_notes", version = 3, previous(V1 = 1, V2 = 2))]
struct PlainNote {
    #[serde(rename = "_id")]
    id: i64,
    first: String,
    last: String,
    likes: i64,
}

impl From<V2> for PlainNote {
    fn from(v: V2) -> Self {
        let n = Note::from(v);
        PlainNote {
            id: n.id,
            first: n.first,
            last: n.last,
            likes: n.likes,
        }
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

/// The driver's version of `Note::update_one` with history: the same commands.
async fn driver_write(client: &mongodb::Client, db: &mongodb::Database, id: i64) {
    let notes = db.collection::<BsonDocument>("driver_notes");
    let history = db.collection::<BsonDocument>("driver_notes_history");
    let mut session = client.start_session().await.unwrap();
    loop {
        session.start_transaction().await.unwrap();
        let result: mongodb::error::Result<()> = async {
            let cur = notes
                .find_one(doc! {"_id": id})
                .session(&mut session)
                .await?
                .expect("the note");
            let rev = cur.get_i64("revision").unwrap_or(0);
            let now = bson::DateTime::now();
            let mut state = cur.clone();
            state.remove("revision");
            state.remove("revised_at");
            history
                .insert_one(doc! {
                    "_id": {"id": id, "revision": rev}, "id": id, "revision": rev,
                    "since": cur.get("revised_at").cloned(), "until": now, "state": state,
                })
                .session(&mut session)
                .await?;
            notes
                .update_one(
                    doc! {"_id": id},
                    doc! {"$inc": {"likes": 1}, "$set": {"revision": rev + 1, "revised_at": now}},
                )
                .session(&mut session)
                .await?;
            session.commit_transaction().await
        }
        .await;
        match result {
            Ok(()) => return,
            Err(e) if e.contains_label("TransientTransactionError") => continue,
            Err(e) => panic!("{e}"),
        }
    }
}

#[tokio::main]
async fn main() {
    let n: usize = scale(500, 20);

    // MongoDB: a write with history against the driver's transaction doing the same.
    let store = pattern_tests::mongo_store("bench_versions").await;
    let db = store.database().clone();
    let client = db.client().clone();
    Note::ensure_indexes(&store).await.unwrap();
    let note = Note {
        id: 1,
        first: "Ada".into(),
        last: "Lovelace".into(),
        likes: 0,
    };
    note.insert(&store).await.unwrap();
    PlainNote {
        id: 1,
        first: "Ada".into(),
        last: "Lovelace".into(),
        likes: 0,
    }
    .insert(&store)
    .await
    .unwrap();
    let driver_doc = pattern_core::document::to_document(&note).unwrap();
    db.collection::<BsonDocument>("driver_notes")
        .insert_one(driver_doc)
        .await
        .unwrap();
    db.collection::<BsonDocument>("driver_notes_history")
        .create_index(
            mongodb::IndexModel::builder()
                .keys(doc! {"id": 1, "revision": -1})
                .build(),
        )
        .await
        .unwrap();
    let (mut lib, mut drv, mut plain) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..n {
        let t = Instant::now();
        let u = Update::new().inc(Note::LIKES, 1);
        assert!(Note::update_one(&store, Note::ID.eq(1), u).await.unwrap());
        lib.push(t.elapsed());
        let t = Instant::now();
        driver_write(&client, &db, 1).await;
        drv.push(t.elapsed());
        let t = Instant::now();
        let u = Update::new().inc(PlainNote::LIKES, 1);
        assert!(PlainNote::update_one(&store, PlainNote::ID.eq(1), u)
            .await
            .unwrap());
        plain.push(t.elapsed());
    }
    let (lib, drv, plain) = (median(lib), median(drv), median(plain));
    println!("\nwrite with history on MongoDB ({n} interleaved operations each, medians):");
    println!("| operation | median | ratio |");
    println!("|---|---|---|");
    println!(
        "| library: Note::update_one with history (one transaction) | {} | {:.2}x the driver |",
        us(lib),
        lib.as_secs_f64() / drv.as_secs_f64()
    );
    println!(
        "| driver: find_one, insert_one, update_one in a transaction | {} | 1.00x |",
        us(drv)
    );
    println!("| library: update_one without history (one update) | {} | {:.2}x the driver's transaction |", us(plain), plain.as_secs_f64() / drv.as_secs_f64());
    let stored = store
        .find(
            "notes",
            &pattern_core::store::query::Filter::eq("_id", 1_i64),
            &Default::default(),
        )
        .await
        .unwrap();
    assert_eq!(stored[0].get_i64("likes"), Ok(n as i64));
    let _ = db.drop().await;

    // In memory: the read-time cost of upgrading, per version hop.
    let mem = MemoryStore::new();
    let reads = scale(100_000, 1_000);
    mem.insert_one("plain_notes", doc! {"_id": 1_i64, "schema_version": 3, "first": "Ada", "last": "Lovelace", "likes": 1_i64})
        .await
        .unwrap();
    mem.insert_one(
        "plain_notes",
        doc! {"_id": 2_i64, "schema_version": 2, "full_name": "Ada Lovelace", "likes": 1_i64},
    )
    .await
    .unwrap();
    mem.insert_one(
        "plain_notes",
        doc! {"_id": 3_i64, "name": "Ada Lovelace", "likes": 1_i64},
    )
    .await
    .unwrap();
    // Samples of 100 gets of one version each, interleaved by sample: the median time per get.
    const PER: u32 = 100;
    let mut times = [Vec::new(), Vec::new(), Vec::new()];
    for _ in 0..reads / PER as usize {
        for (i, t) in times.iter_mut().enumerate() {
            let id = i as i64 + 1;
            let s = Instant::now();
            for _ in 0..PER {
                let p = PlainNote::get(&mem, &id).await.unwrap().unwrap();
                assert_eq!(p.first, "Ada");
            }
            t.push(s.elapsed() / PER);
        }
    }
    let [v3, v2, v1] = times.map(median);
    let ns = |d: Duration| format!("{} ns", d.as_nanos());
    println!("\nread-time cost of upgrading, in memory ({reads} gets each, in interleaved samples of {PER}; medians per get):");
    println!("| stored at | get | over the current version |");
    println!("|---|---|---|");
    println!("| version 3 (current) | {} | |", ns(v3));
    println!(
        "| version 2 (1 hop) | {} | +{} |",
        ns(v2),
        ns(v2.saturating_sub(v3))
    );
    println!(
        "| version 1 (2 hops) | {} | +{} (+{} per hop) |",
        ns(v1),
        ns(v1.saturating_sub(v3)),
        ns(v1.saturating_sub(v3) / 2)
    );

    // The decoding alone (no store): the current type from its document, against the chain
    // from versions 2 and 1 (`Document::upgrade`: decode as the old type, then each `From`).
    let docs = [
        doc! {"_id": 1_i64, "first": "Ada", "last": "Lovelace", "likes": 1_i64},
        doc! {"_id": 2_i64, "full_name": "Ada Lovelace", "likes": 1_i64},
        doc! {"_id": 3_i64, "name": "Ada Lovelace", "likes": 1_i64},
    ];
    const DECODES: u32 = 1_000;
    let mut times = [Vec::new(), Vec::new(), Vec::new()];
    for _ in 0..reads / DECODES as usize * 10 {
        for (i, t) in times.iter_mut().enumerate() {
            let s = Instant::now();
            for _ in 0..DECODES {
                let d = std::hint::black_box(docs[i].clone());
                let p: PlainNote = match i {
                    0 => bson::from_document(d).unwrap(),
                    n => PlainNote::upgrade(3 - n as u32, d).unwrap(),
                };
                std::hint::black_box(p);
            }
            t.push(s.elapsed() / DECODES);
        }
    }
    let [d3, d2, d1] = times.map(median);
    println!("\ndecoding alone, no store (medians per document, samples of {DECODES}):");
    println!("| stored at | decode | over the current version |");
    println!("|---|---|---|");
    println!("| version 3 (current) | {} | |", ns(d3));
    println!(
        "| version 2 (1 hop) | {} | {:+} ns |",
        ns(d2),
        d2.as_nanos() as i64 - d3.as_nanos() as i64
    );
    println!(
        "| version 1 (2 hops) | {} | {:+} ns |",
        ns(d1),
        d1.as_nanos() as i64 - d3.as_nanos() as i64
    );
}
