//! A store written outside the workspace's stores, against the contract crate alone
//! (`pattern_store`, not `pattern_core`), as a third party would write one: `Recording` implements
//! only the required primitives of `Store` and `Transaction`, each by handing it to an inner
//! in-memory store and recording its name, and takes every provided method as the contract
//! gives it (the series push as the seed's conditional upsert through `update_first`, batches
//! one write at a time, scans as one find...). The patterns run on it as on the stores of the
//! crate, with the same results, and what it records shows what they asked of it. Told to, it
//! loses the reply of an insert it applied (`lose_reply`), as a broken connection does, or
//! refuses every update of a collection (`refuse_updates_of`), as when a writer's connection
//! breaks, or the writer dies, between two commands.

use std::sync::{Arc, Mutex};

use bson::{Document as BsonDocument, RawDocumentBuf};
use pattern_core::{Bucket, Document, MemoryStore, Outlier, Tree};
use pattern_store::query::{Filter, FindOptions, Graph, GraphLookup, IndexSpec, Path, Update};
use pattern_store::{ArrayStats, Extensions, Result, Store, Transaction, UpdateOutcome};
use serde::{Deserialize, Serialize};

/// The primitives a [`Recording`] store was asked for, in order.
type Log = Arc<Mutex<Vec<&'static str>>>;

/// A store over another: each primitive recorded, then handed to the inner store.
struct Recording<S> {
    inner: S,
    log: Log,
    /// The patterns' per-store state, shared with the transactions it starts (as the stores
    /// of the crate share theirs).
    extensions: Arc<Extensions>,
    /// `Some(n)`: the `n`th `insert_one` from now is applied, then answered with
    /// `Unavailable`, as when the connection breaks before the reply.
    lose_reply: Arc<Mutex<Option<usize>>>,
    /// `Some(coll)`: every `update_one` of `coll` fails with `Unavailable`, applying nothing.
    refuse_updates_of: Arc<Mutex<Option<String>>>,
}

impl Recording<MemoryStore> {
    fn new() -> Self {
        Recording {
            inner: MemoryStore::new(),
            log: Log::default(),
            extensions: Arc::default(),
            lose_reply: Arc::default(),
            refuse_updates_of: Arc::default(),
        }
    }
}

impl<S> Recording<S> {
    fn record(&self, primitive: &'static str) {
        self.log.lock().unwrap().push(primitive);
    }

    /// The primitives recorded since the last call.
    fn take(&self) -> Vec<&'static str> {
        std::mem::take(&mut *self.log.lock().unwrap())
    }
}

impl<S: Store> Store for Recording<S> {
    async fn insert_one(&self, coll: &str, doc: BsonDocument) -> Result<()> {
        self.record("insert_one");
        self.inner.insert_one(coll, doc).await?;
        let mut lose = self.lose_reply.lock().unwrap();
        match lose.as_mut() {
            Some(1) => {
                *lose = None;
                Err(pattern_store::Error::Unavailable {
                    message: "the reply was lost (Recording::lose_reply)".into(),
                    source: None,
                })
            }
            Some(n) => {
                *n -= 1;
                Ok(())
            }
            None => Ok(()),
        }
    }

    async fn update_one(
        &self,
        coll: &str,
        filter: &Filter,
        update: &mut Update,
        upsert: bool,
    ) -> Result<UpdateOutcome> {
        self.record("update_one");
        if self.refuse_updates_of.lock().unwrap().as_deref() == Some(coll) {
            return Err(pattern_store::Error::Unavailable {
                message: "refused (Recording::refuse_updates_of)".into(),
                source: None,
            });
        }
        self.inner.update_one(coll, filter, update, upsert).await
    }

    async fn update_first(
        &self,
        coll: &str,
        filter: &Filter,
        sort: &[(Path, i32)],
        hint: &str,
        update: &mut Update,
        upsert: bool,
        fields: &[&str],
    ) -> Result<Option<BsonDocument>> {
        self.record("update_first");
        (self.inner)
            .update_first(coll, filter, sort, hint, update, upsert, fields)
            .await
    }

    async fn replace_one(
        &self,
        coll: &str,
        filter: &Filter,
        doc: BsonDocument,
        upsert: bool,
    ) -> Result<UpdateOutcome> {
        self.record("replace_one");
        self.inner.replace_one(coll, filter, doc, upsert).await
    }

    async fn find(
        &self,
        coll: &str,
        filter: &Filter,
        opts: &FindOptions,
    ) -> Result<Vec<BsonDocument>> {
        self.record("find");
        self.inner.find(coll, filter, opts).await
    }

    async fn array_stats(&self, coll: &str, filter: &Filter, array: &str) -> Result<ArrayStats> {
        self.record("array_stats");
        self.inner.array_stats(coll, filter, array).await
    }

    async fn update_many(&self, coll: &str, filter: &Filter, update: &Update) -> Result<u64> {
        self.record("update_many");
        self.inner.update_many(coll, filter, update).await
    }

    async fn graph_lookup(&self, coll: &str, query: &GraphLookup) -> Result<Option<Graph>> {
        self.record("graph_lookup");
        self.inner.graph_lookup(coll, query).await
    }

    async fn delete_many(&self, coll: &str, filter: &Filter) -> Result<u64> {
        self.record("delete_many");
        self.inner.delete_many(coll, filter).await
    }

    async fn create_index(&self, coll: &str, index: &IndexSpec) -> Result<()> {
        self.record("create_index");
        self.inner.create_index(coll, index).await
    }

    async fn index_names(&self, coll: &str) -> Result<Vec<String>> {
        self.record("index_names");
        self.inner.index_names(coll).await
    }

    async fn drop_index(&self, coll: &str, name: &str) -> Result<()> {
        self.record("drop_index");
        self.inner.drop_index(coll, name).await
    }

    async fn collection_names(&self) -> Result<Vec<String>> {
        self.record("collection_names");
        self.inner.collection_names().await
    }

    fn extensions(&self) -> &Extensions {
        &self.extensions
    }

    type Txn = Recording<S::Txn>;

    async fn start_transaction(&self) -> Result<Self::Txn> {
        self.record("start_transaction");
        Ok(Recording {
            inner: self.inner.start_transaction().await?,
            log: self.log.clone(),
            extensions: self.extensions.clone(),
            lose_reply: self.lose_reply.clone(),
            refuse_updates_of: self.refuse_updates_of.clone(),
        })
    }
}

impl<T: Transaction> Transaction for Recording<T> {
    async fn commit(&self) -> Result<()> {
        self.record("commit");
        self.inner.commit().await
    }

    async fn abort(&self) -> Result<()> {
        self.record("abort");
        self.inner.abort().await
    }
}

/// The raw documents of `coll`, by `_id`: what two stores hold, compared.
async fn stored<S: Store>(store: &S, coll: &str) -> Vec<RawDocumentBuf> {
    let by_id = FindOptions {
        sort: vec![(Path::from("_id"), 1)],
        ..FindOptions::default()
    };
    let all = Filter::And(vec![]);
    store.find_raw(coll, &all, &by_id).await.unwrap()
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Trade {
    qty: i64,
}

#[derive(Bucket, Serialize, Deserialize)]
#[bucket(collection = "tp_trades", size = 10)]
struct Trades {
    #[bucket(key)]
    customer: i64,
    #[bucket(items)]
    trades: Vec<Trade>,
}

/// The bucket pattern through the contract's own push: the seed's conditional upsert, one
/// `update_first` a push once the key is known, and the same buckets as the in-memory store's
/// native push makes.
#[tokio::test]
async fn buckets_on_a_store_of_the_primitives_alone() {
    let (third, memory) = (Recording::new(), MemoryStore::new());
    let trades: Vec<Trade> = (0..25).map(|qty| Trade { qty }).collect();
    for t in &trades {
        Trades::push(&third, &7, t.clone()).await.unwrap();
        Trades::push(&memory, &7, t.clone()).await.unwrap();
    }
    assert_eq!(Trades::all_items(&third, &7).await.unwrap(), trades);
    assert_eq!(Trades::counts(&third, &7).await.unwrap().pages, 3);
    let strip_ids = |docs: Vec<RawDocumentBuf>| {
        (docs.into_iter())
            .map(|d| {
                let mut d = d.to_document().unwrap();
                d.remove("_id"); // time-named: the two stores ran at other instants
                d
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        strip_ids(stored(&third, "tp_trades").await),
        strip_ids(stored(&memory, "tp_trades").await)
    );
    // Each push once the key is known: one conditional upsert.
    third.take();
    Trades::push(&third, &7, Trade { qty: 25 }).await.unwrap();
    assert_eq!(third.take(), ["update_first"]);
}

#[derive(Bucket, Serialize, Deserialize)]
#[bucket(collection = "tp_rolled", size = 3, summary(sum = "qty"), rollup)]
struct Rolled {
    #[bucket(key)]
    customer: i64,
    #[bucket(items)]
    trades: Vec<Trade>,
}

/// A batch of new buckets whose reply is lost after the second insert applied (the
/// connection broke): `push_many` reads the buckets back, so the roll-up counts exactly the
/// items stored, and reports the error.
#[tokio::test]
async fn a_lost_reply_in_a_batch_of_buckets_keeps_the_roll_up_exact() {
    let third = Recording::new();
    *third.lose_reply.lock().unwrap() = Some(2);
    let trades: Vec<Trade> = (1..=9).map(|qty| Trade { qty }).collect();
    let e = Rolled::push_many(&third, &1, &trades).await;
    assert!(
        matches!(
            e,
            Err(pattern_core::Error::Store(
                pattern_store::Error::Unavailable { .. }
            ))
        ),
        "{e:?}"
    );
    assert_eq!(Rolled::all_items(&third, &1).await.unwrap(), trades[..6]);
    let docs = stored(&third, "tp_rolled.rollups").await;
    let rollup = (docs.iter())
        .map(|d| d.to_document().unwrap())
        .find(|d| d.get_i64("_id") == Ok(1))
        .expect("a roll-up");
    assert_eq!(rollup.get_i64("qty_sum").ok(), Some(21), "{rollup}");
    assert_eq!(rollup.get_i64("rollup_items").ok(), Some(6), "{rollup}");
}

/// An ingest whose buckets are written and whose roll-ups are not (their updates refused, as
/// when the writer's connection breaks or it dies between the two commands): the error says
/// the items are written and no item is reported unwritten; the batch's pending mark stays,
/// so each key's whole-history summary counts its buckets and is exact, and `verify` is
/// clean. `backfill` recomputes the roll-ups and deletes the mark: the summary then reads the
/// roll-up again (the roll-up, then the marks, and no bucket).
#[tokio::test]
async fn an_ingest_whose_roll_ups_never_arrive_reads_its_buckets() {
    let third = Recording::new();
    let batch = |from: i64| -> Vec<(i64, Trade)> {
        (from..from + 12)
            .map(|qty| (qty % 3, Trade { qty }))
            .collect()
    };
    Rolled::ingest(&third, &batch(1)).await.unwrap();
    *third.refuse_updates_of.lock().unwrap() = Some("tp_rolled.rollups".into());
    let e = Rolled::ingest(&third, &batch(13)).await.unwrap_err();
    *third.refuse_updates_of.lock().unwrap() = None;
    match &e {
        pattern_core::Error::Ingest {
            written,
            unwritten,
            source,
        } => {
            assert_eq!((*written, unwritten.len()), (12, 0), "{e:?}");
            assert!(
                matches!(**source, pattern_core::Error::RollupBehind { .. }),
                "{e:?}"
            );
        }
        _ => panic!("{e:?}"),
    }
    let summaries_exact = || async {
        for key in 0..3i64 {
            let items = Rolled::all_items(&third, &key).await.unwrap();
            assert_eq!(items.len(), 8, "key {key}");
            let got = Rolled::summary(&third, &key, ..).await.unwrap();
            let qty: i64 = items.iter().map(|t| t.qty).sum();
            assert_eq!(got.items, 8, "key {key}");
            assert_eq!(got.qty_sum.as_i64(), Some(qty), "key {key}");
        }
    };
    // The roll-ups count the first batch alone; the mark lists the second's keys.
    let rolled = stored(&third, "tp_rolled.rollups").await;
    let counts: Vec<i64> = (rolled.iter())
        .map(|d| d.get_i64("rollup_items").unwrap())
        .collect();
    assert_eq!(counts, [4, 4, 4]);
    let marks: Vec<BsonDocument> = (stored(&third, "pattern_bounded").await.into_iter())
        .map(|d| d.to_document().unwrap())
        .filter(|d| d.contains_key("rollup_pending"))
        .collect();
    assert_eq!(marks.len(), 1, "{marks:?}");
    summaries_exact().await;
    assert!(Rolled::verify(&third).await.unwrap().is_clean());
    Rolled::backfill(&third).await.unwrap();
    let marks = stored(&third, "pattern_bounded").await;
    assert!(
        (marks.iter()).all(|d| d.get("rollup_pending").unwrap().is_none()),
        "{marks:?}"
    );
    summaries_exact().await;
    third.take();
    Rolled::summary(&third, &1, ..).await.unwrap();
    assert_eq!(third.take(), ["find", "find"]);
    let rolled = stored(&third, "tp_rolled.rollups").await;
    let counts: Vec<i64> = (rolled.iter())
        .map(|d| d.get_i64("rollup_items").unwrap())
        .collect();
    assert_eq!(counts, [8, 8, 8]);
}

#[derive(Outlier, Serialize, Deserialize)]
#[outlier(collection = "tp_books", threshold = 3, overflow = "tp_extra")]
struct Book {
    #[serde(rename = "_id")]
    #[outlier(id)]
    id: i64,
    #[outlier(items)]
    buyers: Vec<i64>,
}

/// The outlier pattern: a document past its threshold, read whole again.
#[tokio::test]
async fn outliers_on_a_store_of_the_primitives_alone() {
    let third = Recording::new();
    Book {
        id: 1,
        buyers: vec![],
    }
    .save(&third)
    .await
    .unwrap();
    for buyer in 0..8 {
        Book::push(&third, &1, buyer).await.unwrap();
    }
    let full = Book::full(&third, &1).await.unwrap().unwrap();
    assert_eq!(full.buyers, (0..8).collect::<Vec<_>>());
    assert!(Book::verify(&third).await.unwrap().is_clean());
}

#[derive(Tree, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[tree(collection = "tp_units", model = "nested_set")]
struct Unit {
    #[serde(rename = "_id")]
    #[tree(id)]
    id: i64,
}

/// A tree's moves: transactions started, committed (or aborted on a refused move) through
/// the store's own `start_transaction`, the tree sound after each.
#[tokio::test]
async fn trees_on_a_store_of_the_primitives_alone() {
    let third = Recording::new();
    Unit { id: 1 }.insert_root(&third).await.unwrap();
    for id in 2..6 {
        Unit { id }.insert_child(&third, &(id - 1)).await.unwrap();
    }
    third.take();
    Unit::move_to(&third, &5, Some(&2)).await.unwrap();
    let asked = third.take();
    assert!(asked.contains(&"start_transaction"), "{asked:?}");
    assert_eq!(asked.last(), Some(&"commit"), "{asked:?}");
    let e = Unit::move_to(&third, &2, Some(&5)).await;
    assert!(matches!(e, Err(pattern_core::Error::Cycle { .. })), "{e:?}");
    let below: Vec<i64> = (Unit::descendants(&third, &2, None).await.unwrap())
        .into_iter()
        .map(|u| u.id)
        .collect();
    assert_eq!(below, [3, 4, 5]);
    assert!(Unit::verify(&third).await.unwrap().defects.is_empty());
}

#[derive(Document, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[document(collection = "tp_notes", history = "tp_notes_history")]
struct Note {
    #[serde(rename = "_id")]
    id: i64,
    text: String,
}

/// The document features, history included: every write a transaction of the store's.
#[tokio::test]
async fn documents_on_a_store_of_the_primitives_alone() {
    let third = Recording::new();
    let note = Note {
        id: 1,
        text: "first".into(),
    };
    note.insert(&third).await.unwrap();
    let changed = Note {
        text: "second".into(),
        ..note.clone()
    };
    third.take();
    changed.save_if(&third, 1).await.unwrap();
    let asked = third.take();
    assert!(asked.contains(&"start_transaction"), "{asked:?}");
    assert_eq!(asked.last(), Some(&"commit"), "{asked:?}");
    let stale = changed.save_if(&third, 1).await;
    assert!(
        matches!(stale, Err(pattern_core::Error::Conflict { .. })),
        "{stale:?}"
    );
    assert_eq!(Note::get(&third, &1).await.unwrap(), Some(changed));
    assert_eq!(Note::at_revision(&third, &1, 1).await.unwrap(), Some(note));
    let found = Note::find(Note::TEXT.eq("second".to_owned()))
        .all(&third)
        .await
        .unwrap();
    assert_eq!(found.len(), 1);
    // The replaced revision, recorded in the transaction of the write that replaced it.
    assert_eq!(stored(&third, "tp_notes_history").await.len(), 1);
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "tp_labels", referenced_by(Disc = label), fan_out = 2)]
struct Label {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, pattern_core::Reference)]
#[reference(source = Label)]
struct LabelRef {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "tp_discs")]
struct Disc {
    #[serde(rename = "_id")]
    id: i64,
    #[document(reference)]
    label: LabelRef,
}

/// An extended reference's source update through the contract's defaults: the document after
/// the update read back around `update_one` (`update_returning`), the entry and the copies
/// written one after the other (`write_across`); past the fan-out, the transaction abandoned
/// and the batches run. Every copy follows.
#[tokio::test]
async fn references_on_a_store_of_the_primitives_alone() {
    let third = Recording::new();
    let label = |name: &str| Label {
        id: 1,
        name: name.to_owned(),
    };
    label("Blue Note").insert(&third).await.unwrap();
    for id in 0..2 {
        let copy = LabelRef {
            id: 1,
            name: String::new(),
        };
        Disc { id, label: copy }.insert(&third).await.unwrap();
    }
    third.take();
    let rename =
        |name: &str| pattern_core::document::Update::new().set(Label::NAME, name.to_owned());
    assert!(
        Label::update_one(&third, Label::ID.eq(1), rename("Blue Note Records"))
            .await
            .unwrap()
    );
    assert_eq!(
        third.take(),
        [
            "start_transaction",
            "find",
            "update_one",
            "find",
            "update_one",
            "update_many",
            "commit"
        ]
    );
    assert_eq!(disc_names(&third).await, ["Blue Note Records"; 2]);
    // Past the fan-out (2): abandoned, then 2 in the write and the rest in batches.
    for id in 2..7 {
        let copy = LabelRef {
            id: 1,
            name: String::new(),
        };
        Disc { id, label: copy }.insert(&third).await.unwrap();
    }
    third.take();
    assert!(Label::update_one(&third, Label::ID.eq(1), rename("Blue"))
        .await
        .unwrap());
    let asked = third.take();
    assert!(asked.contains(&"abort"), "{asked:?}");
    assert_eq!(disc_names(&third).await, ["Blue"; 7]);
    assert!(Disc::verify_copies(&third).await.unwrap().is_empty());
    assert!(Label::pending_propagations(&third)
        .await
        .unwrap()
        .is_empty());
}

async fn disc_names(third: &Recording<MemoryStore>) -> Vec<String> {
    (Disc::find(Disc::ID.gte(0))
        .all(third)
        .await
        .unwrap()
        .into_iter())
    .map(|d| d.label.name)
    .collect()
}
