//! Replays a schema change deployed while the old program keeps running: a `customers`
//! collection evolving through three versions of its document,
//!
//! - v1, written before versioning was declared (no version field): `{_id, name: "Ada Lovelace",
//!   email}`;
//! - v2: `name` renamed `full_name`, and a `visits` counter (0 for a v1 document);
//! - v3: the full name split in two (`first`, `last`) and a new required field with a default
//!   (`tier: "standard"`),
//!
//! with a build of each version's types working the same collection (`Customer2`, the v2
//! build's, and `Customer`, the v3 build's), both keeping every revision in
//! `customers_history`. Step by step: v1 documents as an older program left them; the old
//! (v2) build counting visits in a loop and inserting customers of its own while the new (v3)
//! build reads everything (each older document upgraded on read, nothing written) and updates
//! some, which the old build then refuses to touch (`NewerVersion`: found 3, known 2) rather
//! than overwrite; the old build stopped, the sweep (`Customer::migrate`: a dry run, the run,
//! and a second run that finds nothing left); one customer's history, newest first, and the
//! customer at a past revision; and a last check that every document is at version 3 with
//! every acknowledged visit counted.
//!
//! In memory by default; on MongoDB (database `pattern_evolving`) when `MONGODB_URI` is set:
//!
//!     cargo run -p examples --bin evolving_documents

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bson::{doc, Bson, Document as BsonDocument};
use futures::TryStreamExt;
use pattern_core::adopt::{Options, Progress};
use pattern_core::document::{Filter, Revision, Update};
use pattern_core::store::AnyStore;
use pattern_core::testing::Fixtures;
use pattern_core::{Document, Error};
use serde::{Deserialize, Serialize};

/// Version 1, as the program before versioning wrote it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct CustomerV1 {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
    email: String,
}

/// Version 2: `name` renamed `full_name`, visits counted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct CustomerV2 {
    #[serde(rename = "_id")]
    id: i64,
    full_name: String,
    email: String,
    visits: i64,
}

impl From<CustomerV1> for CustomerV2 {
    fn from(c: CustomerV1) -> Self {
        CustomerV2 {
            id: c.id,
            full_name: c.name,
            email: c.email,
            visits: 0,
        }
    }
}

/// The old build's type: it knows versions 1 and 2.
#[derive(Document, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[document(
    collection = "customers",
    version = 2,
    previous(CustomerV1 = 1),
    history = "customers_history"
)]
struct Customer2 {
    #[serde(rename = "_id")]
    id: i64,
    full_name: String,
    email: String,
    visits: i64,
}

impl From<CustomerV1> for Customer2 {
    fn from(c: CustomerV1) -> Self {
        let CustomerV2 {
            id,
            full_name,
            email,
            visits,
        } = c.into();
        Customer2 {
            id,
            full_name,
            email,
            visits,
        }
    }
}

/// The new build's type: it knows versions 1 to 3.
#[derive(Document, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[document(
    collection = "customers",
    version = 3,
    previous(CustomerV1 = 1, CustomerV2 = 2),
    history = "customers_history"
)]
struct Customer {
    #[serde(rename = "_id")]
    id: i64,
    first: String,
    last: String,
    email: String,
    visits: i64,
    tier: String,
}

/// The split: at the first space; a name without one is refused (the sweep reports it and
/// leaves the document as it is).
impl TryFrom<CustomerV2> for Customer {
    type Error = String;
    fn try_from(c: CustomerV2) -> Result<Self, String> {
        let (first, last) = c
            .full_name
            .split_once(' ')
            .ok_or_else(|| format!("cannot split {:?} into first and last", c.full_name))?;
        Ok(Customer {
            id: c.id,
            first: first.into(),
            last: last.into(),
            email: c.email,
            visits: c.visits,
            tier: "standard".into(),
        })
    }
}

const COLLECTIONS: [&str; 3] = [
    "customers",
    "customers_history",
    pattern_core::adopt::CHECKPOINTS,
];

/// The customers the program before versioning wrote.
const BEFORE: [(i64, &str); 6] = [
    (1, "Ada Lovelace"),
    (2, "Alan Turing"),
    (3, "Grace Hopper"),
    (4, "Edsger Dijkstra"),
    (5, "John Backus"),
    (6, "Katherine Johnson"),
];

/// The customers the old build inserts while it runs.
const NEW: [(i64, &str); 3] = [
    (7, "Ken Thompson"),
    (8, "Dennis Ritchie"),
    (9, "Barbara Liskov"),
];

/// The customers whose visits the old build counts, in turn.
const VISITED: [i64; 3] = [2, 3, 4];

fn email(name: &str) -> String {
    format!("{}@example.com", name.to_lowercase().replace(' ', "."))
}

fn json(doc: &BsonDocument) -> String {
    Bson::Document(doc.clone())
        .into_relaxed_extjson()
        .to_string()
}

/// The stored version of each document: `schema_version`, 1 without it.
fn version_of(doc: &BsonDocument) -> i64 {
    match doc.get("schema_version") {
        Some(Bson::Int32(n)) => i64::from(*n),
        Some(Bson::Int64(n)) => *n,
        None => 1,
        Some(other) => panic!("a version that is no number: {other}"),
    }
}

/// `3 at v1, 6 at v2`.
async fn versions(store: &AnyStore) -> pattern_core::Result<String> {
    let mut by: BTreeMap<i64, usize> = BTreeMap::new();
    for d in store.documents("customers").await? {
        *by.entry(version_of(&d)).or_default() += 1;
    }
    let parts: Vec<String> = by.iter().map(|(v, n)| format!("{n} at v{v}")).collect();
    Ok(parts.join(", "))
}

async fn stored(store: &AnyStore, id: i64) -> pattern_core::Result<BsonDocument> {
    let all = store.documents("customers").await?;
    Ok(all
        .into_iter()
        .find(|d| d.get_i64("_id") == Ok(id))
        .expect("the customer"))
}

/// What the writers acknowledged: visits per customer, and the old build's refusals.
#[derive(Default)]
struct Tally {
    acked: [AtomicU64; 10],
    /// Of those, the old build's.
    old_acked: AtomicU64,
    refused: AtomicU64,
    rounds: AtomicU64,
    stop: AtomicBool,
}

impl Tally {
    fn ack(&self, id: i64) {
        self.acked[id as usize].fetch_add(1, Ordering::SeqCst);
    }
}

/// The old build: inserts its new customers, then counts a visit of 2, 3, 4, 2, 3... until
/// stopped. A customer the new build wrote is refused (`NewerVersion`), never overwritten.
async fn old_build(store: AnyStore, tally: Arc<Tally>) -> pattern_core::Result<()> {
    let mut round = 0usize;
    while !tally.stop.load(Ordering::SeqCst) {
        if let Some((id, name)) = NEW.get(round) {
            let c = Customer2 {
                id: *id,
                full_name: (*name).into(),
                email: email(name),
                visits: 0,
            };
            c.insert(&store).await?;
        }
        let id = VISITED[round % VISITED.len()];
        let visit = Update::new().inc(Customer2::VISITS, 1);
        match Customer2::update_one(&store, Customer2::ID.eq(id), visit).await {
            Ok(true) => {
                tally.ack(id);
                tally.old_acked.fetch_add(1, Ordering::SeqCst);
            }
            Ok(false) => panic!("customer {id} not found"),
            Err(Error::NewerVersion {
                found: 3, known: 2, ..
            }) => {
                tally.refused.fetch_add(1, Ordering::SeqCst);
            }
            Err(e) => return Err(e),
        }
        round += 1;
        tally.rounds.store(round as u64, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    Ok(())
}

/// Waits (at most 30 s) until `done` holds.
async fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "waited 30 s for {what}"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

fn newer(r: pattern_core::Result<impl std::fmt::Debug>) -> String {
    match r {
        Err(Error::NewerVersion { found, known, .. }) => {
            format!("NewerVersion (found {found}, known {known})")
        }
        other => panic!("expected NewerVersion, got {other:?}"),
    }
}

fn name(c: &Customer) -> String {
    format!("{} {}", c.first, c.last)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let store = AnyStore::from_env("pattern_evolving").await?;
    println!("store: {}", store.kind());
    for coll in COLLECTIONS {
        store.drop_collection(coll).await?;
    }

    // 1. The documents as the program before versioning wrote them.
    let v1 = BEFORE.map(|(id, name)| doc! {"_id": id, "name": name, "email": email(name)});
    store.seed("customers", v1).await?;
    println!("1. v1 documents, written before versioning (no version field):");
    for d in store.documents("customers").await? {
        println!("   {}", json(&d));
    }

    // 2. The old build writes while the new one reads and updates.
    let tally = Arc::new(Tally::default());
    let writer = tokio::spawn(old_build(store.clone(), tally.clone()));
    let rounds = 2 * VISITED.len() as u64;
    wait_until("the old build's first rounds", || {
        tally.rounds.load(Ordering::SeqCst) >= rounds
    })
    .await;
    println!(
        "2. the old build (v2) is running: it inserted {} customers and counts visits of {VISITED:?}",
        NEW.len()
    );
    let before_read = store.documents("customers").await?;
    let all = Customer::find(Filter::everything())
        .ascending(Customer::ID)
        .all(&store)
        .await?;
    let names: Vec<String> = all.iter().map(name).collect();
    println!(
        "   the new build (v3) reads {} customers: {}",
        all.len(),
        names.join(", ")
    );
    assert!(all.iter().all(|c| c.tier == "standard"));
    println!("   each upgraded on read to tier \"standard\"");
    println!(
        "   stored: {} (reads write nothing)",
        versions(&store).await?
    );
    let after_read = store.documents("customers").await?;
    let unchanged = |d: &BsonDocument| {
        let id = d.get_i64("_id").ok();
        let was = before_read.iter().find(|b| b.get_i64("_id").ok() == id);
        // The old build keeps counting visits: everything else is as it was.
        let strip = |d: &BsonDocument| {
            let mut d = d.clone();
            for k in ["visits", "revision", "revised_at"] {
                d.remove(k);
            }
            d
        };
        was.is_some_and(|b| strip(b) == strip(d))
    };
    assert!(after_read.iter().all(unchanged), "a read wrote");

    let gold = Update::new()
        .set(Customer::TIER, "gold")
        .inc(Customer::VISITS, 1);
    assert!(Customer::update_one(&store, Customer::ID.eq(1_i64), gold).await?);
    tally.ack(1);
    let visit = Update::new().inc(Customer::VISITS, 1);
    assert!(Customer::update_one(&store, Customer::ID.eq(3_i64), visit).await?);
    tally.ack(3);
    let (ada, grace) = (stored(&store, 1).await?, stored(&store, 3).await?);
    assert_eq!((version_of(&ada), version_of(&grace)), (3, 3));
    println!(
        "   the new build updates Ada Lovelace (tier gold, +1 visit) and Grace Hopper (+1 visit): both stored at v3"
    );
    println!("   {}", json(&ada));
    println!(
        "   old build, get of customer 1: {}",
        newer(Customer2::get(&store, &1).await)
    );
    let visit = Update::new().inc(Customer2::VISITS, 1);
    let r = Customer2::update_one(&store, Customer2::ID.eq(1_i64), visit).await;
    println!("   old build, update_one of customer 1: {}", newer(r));
    let overwrite = Customer2 {
        id: 1,
        full_name: "Ada King".into(),
        email: "ada.king@example.com".into(),
        visits: 0,
    };
    println!(
        "   old build, save of customer 1: {}",
        newer(overwrite.save(&store).await)
    );
    assert_eq!(stored(&store, 1).await?, ada, "the old build wrote");
    println!("   customer 1 unchanged: the old build never overwrites a newer version");
    wait_until("the old build to meet Grace Hopper at v3", || {
        tally.refused.load(Ordering::SeqCst) > 0
    })
    .await;

    // 3. The old build stopped, the sweep.
    tally.stop.store(true, Ordering::SeqCst);
    writer.await??;
    println!(
        "3. old build stopped: {} visits acknowledged, {} refused (NewerVersion) on customer 3",
        tally.old_acked.load(Ordering::SeqCst),
        tally.refused.load(Ordering::SeqCst)
    );
    assert_eq!(
        stored(&store, 3).await?.get_i64("visits")?,
        tally.acked[3].load(Ordering::SeqCst) as i64,
        "the old build's refused visits of customer 3 were not written"
    );
    println!("   stored: {}", versions(&store).await?);
    let before_dry = store.documents("customers").await?;
    let dry = Customer::migrate(
        &store,
        &Options {
            dry_run: true,
            ..Options::default()
        },
    )
    .await?;
    let found: Vec<String> = dry
        .found
        .iter()
        .map(|(v, n)| format!("v{v}: {n}"))
        .collect();
    println!(
        "   dry run: found {}; would upgrade {}, fail {}",
        found.join(", "),
        dry.upgraded,
        dry.failed
    );
    assert_eq!(
        store.documents("customers").await?,
        before_dry,
        "a dry run wrote"
    );
    let progress = |p: &Progress<'_>| println!("   sweep: {} read", p.done);
    let swept = Customer::migrate(
        &store,
        &Options {
            batch_items: 3,
            progress: Some(&progress),
            ..Options::default()
        },
    )
    .await?;
    println!(
        "   sweep: upgraded {}, failed {}",
        swept.upgraded, swept.failed
    );
    assert_eq!((swept.upgraded, swept.failed), (dry.upgraded, 0));
    let again = Customer::migrate(&store, &Options::default()).await?;
    println!(
        "   sweep again: upgraded {}, failed {}",
        again.upgraded, again.failed
    );
    assert_eq!(again.upgraded, 0);
    let john = stored(&store, 5).await?;
    println!(
        "   swept: {{_id: 5, first: {:?}, last: {:?}, tier: {:?}, schema_version: {}, revision: {}}}",
        john.get_str("first")?,
        john.get_str("last")?,
        john.get_str("tier")?,
        version_of(&john),
        john.get_i64("revision")?
    );

    // 4. One customer's history.
    let read = Customer::get_revision(&store, &1).await?.expect("Ada");
    let mut moved = read.document.clone();
    moved.email = "ada@analytical-engine.org".into();
    moved.save_if(&store, read.revision).await?;
    println!(
        "4. Ada's new email saved on the revision read ({})",
        read.revision
    );
    match moved.save_if(&store, read.revision).await {
        Err(Error::Conflict {
            expected, found, ..
        }) => println!(
            "   saved again on revision {expected}: Conflict (found {}), nothing written",
            found.map_or("none".into(), |f| f.to_string())
        ),
        other => panic!("expected Conflict, got {other:?}"),
    }
    println!("   history of customer 1, newest first:");
    let history: Vec<Revision<Customer>> = Customer::history(&store, &1).try_collect().await?;
    for r in &history {
        let since = match r.since {
            Some(t) => t.try_to_rfc3339_string()?,
            None => "before history".into(),
        };
        println!(
            "   revision {} since {since}: {}",
            r.revision,
            serde_json::to_string(&r.document)?
        );
    }
    let revisions: Vec<u64> = history.iter().map(|r| r.revision).collect();
    assert_eq!(revisions, [3, 2, 1, 0]);
    let first = Customer::at_revision(&store, &1, 0)
        .await?
        .expect("revision 0");
    println!(
        "   at revision 0: {}, {}, tier {}, {} visits",
        name(&first),
        first.email,
        first.tier,
        first.visits
    );
    let kept = (store.documents("customers_history").await?)
        .into_iter()
        .find(|h| h.get_i64("id") == Ok(1) && h.get_i64("revision") == Ok(0))
        .expect("revision 0 recorded");
    println!(
        "   revision 0 as kept in customers_history: {}",
        json(kept.get_document("state")?)
    );

    // 5. Everything at version 3, every acknowledged visit counted.
    let docs = store.documents("customers").await?;
    assert_eq!(docs.len(), BEFORE.len() + NEW.len());
    for d in &docs {
        assert_eq!(d.get("schema_version"), Some(&Bson::Int32(3)), "{d}");
        let id = d.get_i64("_id")?;
        let visits = tally.acked[id as usize].load(Ordering::SeqCst) as i64;
        assert_eq!(d.get_i64("visits")?, visits, "{d}");
    }
    let all = Customer::find(Filter::everything()).all(&store).await?;
    assert_eq!(all.len(), docs.len());
    let total: i64 = all.iter().map(|c| c.visits).sum();
    println!(
        "5. every customer at version 3; nothing lost ({} customers, {total} visits, as acknowledged)",
        all.len()
    );
    Ok(())
}
