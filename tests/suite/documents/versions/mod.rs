//! Schema versioning (`#[document(version = N, previous(...))]`) on both stores: reads upgrade
//! every version, writes stamp the current one and never overwrite a newer one, two builds'
//! types (v2 and v3) working one collection at once, the sweep (dry run, batches, kill and
//! resume, two at once, beside live writers of both versions), and what a typed filter on a
//! field that moved between versions matches.

mod sweep;

use pattern_core::store;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::StreamExt;
use pattern_core::adopt::Options;
use pattern_core::document::Sweep;

use super::*;

/// Version 1: one `name`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(super) struct P1 {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
    visits: i64,
}

/// Version 2: `name` renamed `full_name`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(super) struct P2 {
    #[serde(rename = "_id")]
    id: i64,
    full_name: String,
    visits: i64,
}

impl From<P1> for P2 {
    fn from(p: P1) -> Self {
        P2 {
            id: p.id,
            full_name: p.name,
            visits: p.visits,
        }
    }
}

/// The build that knows versions 1 and 2.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "people", version = 2, previous(P1 = 1))]
pub(super) struct Person2 {
    #[serde(rename = "_id")]
    id: i64,
    full_name: String,
    visits: i64,
}

impl From<P1> for Person2 {
    fn from(p: P1) -> Self {
        let P2 {
            id,
            full_name,
            visits,
        } = P2::from(p);
        Person2 {
            id,
            full_name,
            visits,
        }
    }
}

/// The build that knows versions 1 to 3: `full_name` split in two, and a new field with a
/// default.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "people", version = 3, previous(P1 = 1, P2 = 2))]
pub(super) struct Person3 {
    #[serde(rename = "_id")]
    id: i64,
    first: String,
    last: String,
    visits: i64,
    tier: String,
}

impl TryFrom<P2> for Person3 {
    type Error = String;
    fn try_from(p: P2) -> Result<Self, String> {
        let (first, last) = p
            .full_name
            .split_once(' ')
            .ok_or_else(|| format!("cannot split {:?} in two", p.full_name))?;
        Ok(Person3 {
            id: p.id,
            first: first.into(),
            last: last.into(),
            visits: p.visits,
            tier: "basic".into(),
        })
    }
}

/// One visit of document `id` (`$inc` of `visits`) by the version-2 build (`old`) or the
/// version-3 build: whether a document matched, or why not.
async fn visit(store: &AnyStore, old: bool, id: i64) -> pattern_core::Result<bool> {
    if old {
        let inc = Update::new().inc(Person2::VISITS, 1);
        Person2::update_one(store, Person2::ID.eq(id), inc).await
    } else {
        let inc = Update::new().inc(Person3::VISITS, 1);
        Person3::update_one(store, Person3::ID.eq(id), inc).await
    }
}

fn version_of(doc: &bson::Document) -> Option<i64> {
    doc.get("schema_version").and_then(pattern_tests::as_int)
}

async fn stored(store: &AnyStore, id: i64) -> bson::Document {
    documents(store, "people")
        .await
        .into_iter()
        .find(|d| d.get_i64("_id") == Ok(id))
        .expect("the document")
}

/// Documents of each version as the builds of each would have written them: 1 without the
/// field, 2 and 3 with it.
async fn seed(store: &AnyStore) {
    let docs = [
        doc! {"_id": 1_i64, "name": "Ada Lovelace", "visits": 1_i64},
        doc! {"_id": 2_i64, "schema_version": 2, "full_name": "Alan Turing", "visits": 2_i64},
        doc! {"_id": 3_i64, "schema_version": 3, "first": "Grace", "last": "Hopper", "visits": 3_i64, "tier": "gold"},
    ];
    for d in docs {
        store.insert_one("people", d).await.unwrap();
    }
}

async fn reads_upgrade_every_version(store: AnyStore) {
    seed(&store).await;
    let ada = Person3::get(&store, &1).await.unwrap().unwrap();
    assert_eq!(
        (
            ada.first.as_str(),
            ada.last.as_str(),
            ada.tier.as_str(),
            ada.visits
        ),
        ("Ada", "Lovelace", "basic", 1)
    );
    let alan = Person3::get(&store, &2).await.unwrap().unwrap();
    assert_eq!(
        (alan.first.as_str(), alan.last.as_str()),
        ("Alan", "Turing")
    );
    let all = Person3::find(Filter::everything())
        .all(&store)
        .await
        .unwrap();
    assert_eq!(all.len(), 3);
    // Reads do not write without `write_back`.
    assert_eq!(version_of(&stored(&store, 1).await), None);
    // The older build: versions 1 and 2 read, 3 refused with what was found and what it knows.
    let ada2 = Person2::get(&store, &1).await.unwrap().unwrap();
    assert_eq!(ada2.full_name, "Ada Lovelace");
    match Person2::get(&store, &3).await {
        Err(Error::NewerVersion { found, known, .. }) => assert_eq!((found, known), (3, 2)),
        other => panic!("expected NewerVersion, got {other:?}"),
    }
    let all2 = Person2::find(Filter::everything()).all(&store).await;
    assert!(
        matches!(all2, Err(Error::NewerVersion { found: 3, .. })),
        "{all2:?}"
    );
    // A streamed read decodes the same way.
    let every = Person3::find(Filter::everything()).ascending(Person3::ID);
    let streamed: Vec<_> = every.stream(&store).collect::<Vec<_>>().await;
    let ids: Vec<i64> = streamed.into_iter().map(|p| p.unwrap().id).collect();
    assert_eq!(ids, [1, 2, 3]);
    // A version field that holds no number is a decode error naming it, never a guess.
    store
        .insert_one(
            "people",
            doc! {"_id": 4_i64, "schema_version": "two", "full_name": "X Y", "visits": 0_i64},
        )
        .await
        .unwrap();
    match Person3::get(&store, &4).await {
        Err(Error::Store(store::Error::Decode { reason, .. })) => {
            assert!(reason.contains("schema_version"), "{reason}")
        }
        other => panic!("expected Decode, got {other:?}"),
    }
    // A projection reads the current version only, and says so for an older one.
    let names = Person3::find(Person3::ID.eq(1_i64))
        .project(Person3::VISITS)
        .all_as::<bson::Document, _>(&store)
        .await;
    match names {
        Err(Error::Store(store::Error::Decode { reason, .. })) => {
            assert!(reason.contains("older"), "{reason}")
        }
        other => panic!("expected Decode, got {other:?}"),
    }
}

async fn writes_stamp_the_version_and_never_overwrite_a_newer_one(store: AnyStore) {
    seed(&store).await;
    let p = Person3 {
        id: 10,
        first: "Edsger".into(),
        last: "Dijkstra".into(),
        visits: 0,
        tier: "basic".into(),
    };
    p.insert(&store).await.unwrap();
    assert_eq!(version_of(&stored(&store, 10).await), Some(3));
    // The older build neither saves nor updates a version-3 document.
    let before = stored(&store, 10).await;
    let old = Person2 {
        id: 10,
        full_name: "E W Dijkstra".into(),
        visits: 99,
    };
    match old.save(&store).await {
        Err(Error::NewerVersion {
            found: 3, known: 2, ..
        }) => {}
        other => panic!("expected NewerVersion, got {other:?}"),
    }
    let inc = Person2::update_one(
        &store,
        Person2::ID.eq(10_i64),
        Update::new().inc(Person2::VISITS, 1),
    )
    .await;
    assert!(
        matches!(inc, Err(Error::NewerVersion { found: 3, .. })),
        "{inc:?}"
    );
    assert_eq!(stored(&store, 10).await, before, "nothing written");
    // The older build upgrades a version-1 document to its own version, then updates it.
    assert!(Person2::update_one(
        &store,
        Person2::ID.eq(1_i64),
        Update::new().inc(Person2::VISITS, 1)
    )
    .await
    .unwrap());
    let ada = stored(&store, 1).await;
    assert_eq!(version_of(&ada), Some(2));
    assert_eq!(
        (ada.get_str("full_name"), ada.get_i64("visits")),
        (Ok("Ada Lovelace"), Ok(2))
    );
    // The newer build upgrades versions 1 and 2 to 3 when it updates them.
    assert!(Person3::update_one(
        &store,
        Person3::ID.eq(2_i64),
        Update::new().inc(Person3::VISITS, 1)
    )
    .await
    .unwrap());
    let alan = stored(&store, 2).await;
    assert_eq!(version_of(&alan), Some(3));
    assert_eq!(
        (alan.get_str("first"), alan.get_i64("visits")),
        (Ok("Alan"), Ok(3))
    );
    assert!(
        alan.get("full_name").is_none(),
        "the old shape is gone: {alan}"
    );
    // An update whose filter matches nothing at any version: false, nothing written.
    assert!(!Person3::update_one(
        &store,
        Person3::ID.eq(42_i64),
        Update::new().inc(Person3::VISITS, 1)
    )
    .await
    .unwrap());
    // A save over an older version writes the current one.
    Person2 {
        id: 1,
        full_name: "Ada King".into(),
        visits: 5,
    }
    .save(&store)
    .await
    .unwrap();
    let p3 = Person3::get(&store, &1).await.unwrap().unwrap();
    p3.save(&store).await.unwrap();
    assert_eq!(version_of(&stored(&store, 1).await), Some(3));
    // Delete takes any version.
    assert!(Person2::delete(&store, &3).await.unwrap());
    assert!(!Person2::delete(&store, &3).await.unwrap());
}

/// Write-back of upgraded documents.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(
    collection = "people",
    version = 3,
    previous(P1 = 1, P2 = 2),
    write_back
)]
struct Person3Wb {
    #[serde(rename = "_id")]
    id: i64,
    first: String,
    last: String,
    visits: i64,
    tier: String,
}

impl TryFrom<P2> for Person3Wb {
    type Error = String;
    fn try_from(p: P2) -> Result<Self, String> {
        let p = Person3::try_from(p)?;
        Ok(Person3Wb {
            id: p.id,
            first: p.first,
            last: p.last,
            visits: p.visits,
            tier: p.tier,
        })
    }
}

async fn write_back_upgrades_what_it_reads(store: AnyStore) {
    seed(&store).await;
    let ada = Person3Wb::get(&store, &1).await.unwrap().unwrap();
    assert_eq!(ada.first, "Ada");
    let doc = stored(&store, 1).await;
    assert_eq!(version_of(&doc), Some(3));
    assert_eq!(doc.get_str("last"), Ok("Lovelace"));
    let all = Person3Wb::find(Filter::everything())
        .all(&store)
        .await
        .unwrap();
    assert_eq!(all.len(), 3);
    for d in documents(&store, "people").await {
        assert_eq!(version_of(&d), Some(3), "{d}");
    }
}

/// A typed filter names the current version's paths: a document of an older version matches by
/// what it stores at those paths (a renamed or split field: not at all) until it is upgraded.
async fn a_filter_on_a_moved_field_matches_upgraded_documents(store: AnyStore) {
    seed(&store).await;
    let firsts = |f: &'static str| {
        let store = store.clone();
        async move {
            let found = Person3::find(Person3::FIRST.eq(f))
                .all(&store)
                .await
                .unwrap();
            found.into_iter().map(|p| p.id).collect::<Vec<_>>()
        }
    };
    assert_eq!(firsts("Ada").await, Vec::<i64>::new(), "v1 stores `name`");
    assert_eq!(firsts("Grace").await, [3]);
    // A field at the same path in every version matches every version.
    let busy = Person3::find(Person3::VISITS.gte(2_i64)).ascending(Person3::ID);
    let ids: Vec<i64> = busy
        .all(&store)
        .await
        .unwrap()
        .iter()
        .map(|p| p.id)
        .collect();
    assert_eq!(ids, [2, 3]);
    let swept = Person3::migrate(&store, &Options::default()).await.unwrap();
    assert_eq!(swept.upgraded, 2);
    assert_eq!(firsts("Ada").await, [1]);
    assert_eq!(firsts("Alan").await, [2]);
}

async fn older_docs(store: &AnyStore, n: i64) {
    for i in 0..n {
        let d = if i % 2 == 0 {
            doc! {"_id": 100 + i, "name": format!("First{i} Last{i}"), "visits": i}
        } else {
            doc! {"_id": 100 + i, "schema_version": 2, "full_name": format!("First{i} Last{i}"), "visits": i}
        };
        store.insert_one("people", d).await.unwrap();
    }
}

fn by_version(docs: &[bson::Document]) -> BTreeMap<Option<i64>, usize> {
    let mut m = BTreeMap::new();
    for d in docs {
        *m.entry(version_of(d)).or_default() += 1;
    }
    m
}

/// The rolling deploy: 16 tasks, half with the version-2 build's types and half with the
/// version-3 build's, insert and increment one collection interleaved. Nothing acknowledged is
/// lost, and no document is ever seen at an older version than before.
async fn two_builds_share_a_collection(store: AnyStore) {
    older_docs(&store, 8).await;
    let ids: Vec<i64> = (100..108).collect();
    let acked: Vec<AtomicU64> = (0..8).map(|_| AtomicU64::new(0)).collect();
    let refused = AtomicU64::new(0);
    let rounds = pattern_tests::scale(12, 100);
    let stop = AtomicBool::new(false);
    let watch = async {
        let mut seen: BTreeMap<i64, i64> = BTreeMap::new();
        while !stop.load(Ordering::SeqCst) {
            for d in documents(&store, "people").await {
                let id = d.get_i64("_id").unwrap();
                let v = version_of(&d).unwrap_or(1);
                let was = seen.insert(id, v).unwrap_or(0);
                assert!(v >= was, "document {id} moved from version {was} to {v}");
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    };
    let tasks = (0..16).map(|t| {
        let (store, ids, acked, refused) = (&store, &ids, &acked, &refused);
        async move {
            for r in 0..rounds {
                let i = (t * 7 + r as usize * 3) % ids.len();
                let id = ids[i];
                let done = visit(store, t % 2 == 0, id).await;
                match done {
                    Ok(true) => {
                        acked[i].fetch_add(1, Ordering::SeqCst);
                    }
                    Ok(false) => panic!("document {id} not found"),
                    Err(Error::NewerVersion {
                        found: 3, known: 2, ..
                    }) => {
                        refused.fetch_add(1, Ordering::SeqCst);
                    }
                    Err(e) => panic!("task {t}: {e}"),
                }
                // Each build also inserts documents of its own.
                let new_id = 1_000 + t as i64 * 1_000 + i64::from(r);
                if t % 2 == 0 {
                    Person2 {
                        id: new_id,
                        full_name: "N N".into(),
                        visits: 0,
                    }
                    .insert(store)
                    .await
                    .unwrap();
                } else {
                    Person3 {
                        id: new_id,
                        first: "N".into(),
                        last: "N".into(),
                        visits: 0,
                        tier: "basic".into(),
                    }
                    .insert(store)
                    .await
                    .unwrap();
                }
            }
        }
    });
    let work = async {
        futures::future::join_all(tasks).await;
        stop.store(true, Ordering::SeqCst);
    };
    tokio::join!(work, watch);
    for (i, id) in ids.iter().enumerate() {
        let d = stored(&store, *id).await;
        let start = id - 100;
        assert_eq!(
            d.get_i64("visits").unwrap(),
            start + acked[i].load(Ordering::SeqCst) as i64,
            "document {id}: {d}"
        );
    }
    assert_eq!(
        documents(&store, "people").await.len(),
        8 + 16 * rounds as usize
    );
    // Once the old build is gone, the sweep brings every document to version 3.
    Person3::migrate(&store, &Options::default()).await.unwrap();
    let docs = documents(&store, "people").await;
    assert_eq!(by_version(&docs).keys().collect::<Vec<_>>(), [&Some(3)]);
    eprintln!(
        "refused by the version-2 build: {}",
        refused.load(Ordering::SeqCst)
    );
}

/// A projection of a versioned type decodes the documents this build wrote (the version
/// field is read with the projected fields and left out of what is decoded), and says why it
/// cannot decode one an older build wrote.
async fn a_projection_reads_the_current_version(store: AnyStore) {
    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Visits {
        #[serde(rename = "_id")]
        id: i64,
        visits: i64,
    }
    Person3 {
        id: 1,
        first: "Ada".into(),
        last: "Lovelace".into(),
        visits: 3,
        tier: "gold".into(),
    }
    .insert(&store)
    .await
    .unwrap();
    let got = Person3::find(Person3::ID.eq(1_i64))
        .project(Person3::VISITS)
        .all_as::<Visits, _>(&store)
        .await
        .unwrap();
    assert_eq!(got, [Visits { id: 1, visits: 3 }]);
    let one = Person3::find(Person3::VISITS.gte(0_i64))
        .project(Person3::VISITS)
        .one_as::<Visits, _>(&store)
        .await
        .unwrap();
    assert_eq!(one, Some(Visits { id: 1, visits: 3 }));
    Person2 {
        id: 2,
        full_name: "Grace Hopper".into(),
        visits: 1,
    }
    .insert(&store)
    .await
    .unwrap();
    let e = Person3::find(Person3::ID.eq(2_i64))
        .project(Person3::VISITS)
        .all_as::<Visits, _>(&store)
        .await
        .unwrap_err();
    assert!(
        matches!(e, Error::Store(store::Error::Decode { .. }))
            && e.to_string().contains("schema version 2"),
        "{e}"
    );
}

on_both_stores!(
    reads_upgrade_every_version,
    writes_stamp_the_version_and_never_overwrite_a_newer_one,
    write_back_upgrades_what_it_reads,
    a_filter_on_a_moved_field_matches_upgraded_documents,
    two_builds_share_a_collection,
    a_projection_reads_the_current_version,
);
