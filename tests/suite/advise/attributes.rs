//! `adopt::attributes::migrate_attributes`, the attribute finding's command, on both stores: the dry run,
//! the migration (every pair moved, sorted by name, the typed `Attributes` reading it and its
//! `$elemMatch` query finding what the fields held), a second run with nothing to do, a run
//! killed part-way and run again, the documents it refuses, and the arguments it refuses.

use bson::{doc, Bson};
use pattern_core::adopt::{
    attributes::{migrate_attributes, verify_attributes, AttributeMigration},
    LayoutDefect, Options,
};
use pattern_core::document::{Attributes, Filter};
use pattern_core::store;
use pattern_core::store::AnyStore;
use pattern_core::store::Store;
use pattern_core::{Document, Error};
use pattern_tests::advise as seed;
use pattern_tests::{documents, on_both_stores};
use serde::{Deserialize, Serialize};

/// The type the advice writes for `parts` (`tests/ui/examples/advise_attribute.rs`).
#[derive(Debug, Document, Serialize, Deserialize)]
#[document(collection = "parts")]
struct Part {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
    price: i64,
    #[document(attributes)]
    #[serde(default)]
    attributes: Attributes<i64>,
}

const PARTS: AttributeMigration<'static> = AttributeMigration {
    collection: "parts",
    fields: &seed::PART_SPECS,
    into: "attributes",
};

/// The pairs part `i` must hold, by name.
fn pairs_of(i: i64) -> Vec<(String, i64)> {
    let mut out: Vec<(String, i64)> = (0..12)
        .filter(|s| seed::part_holds(i, *s))
        .map(|s| (seed::PART_SPECS[s as usize].to_owned(), 10 + (i * s) % 90))
        .collect();
    out.sort();
    out
}

async fn fields_become_pairs(store: AnyStore) {
    seed::parts(&store).await;
    let held: u64 = (0..300).map(|i| pairs_of(i).len() as u64).sum();
    let before = documents(&store, "parts").await;
    let dry = migrate_attributes(
        &store,
        &PARTS,
        &Options {
            dry_run: true,
            ..Options::default()
        },
    )
    .await
    .unwrap();
    assert_eq!((dry.scanned, dry.changed, dry.moved), (300, 300, held));
    assert!(dry.refused.is_empty() && dry.verified.is_none());
    assert_eq!(
        documents(&store, "parts").await,
        before,
        "the dry run wrote"
    );

    let r = migrate_attributes(&store, &PARTS, &Options::default())
        .await
        .unwrap();
    assert_eq!(
        (r.scanned, r.changed, r.moved, r.retries),
        (300, 300, held, 0)
    );
    assert!(r.refused.is_empty());
    let v = r.verified.expect("verified");
    assert_eq!(v.documents, 300);
    assert!(v.is_clean(), "{:?}", v.defects);
    for d in documents(&store, "parts").await {
        let i = d.get_i64("_id").unwrap();
        for f in seed::PART_SPECS {
            assert!(!d.contains_key(f), "{d}");
        }
        let stored: Vec<(String, i64)> = (d.get_array("attributes").unwrap().iter())
            .map(|p| {
                let p = p.as_document().unwrap();
                (p.get_str("k").unwrap().to_owned(), p.get_i64("v").unwrap())
            })
            .collect();
        assert_eq!(
            stored,
            pairs_of(i),
            "part {i}: sorted by name, as Attributes stores them"
        );
        assert_eq!(
            (d.get_str("name").unwrap(), d.get_i64("price").unwrap()),
            (format!("part {i}").as_str(), 100 + i % 50)
        );
    }
    // The typed layout reads every part, and one attribute's condition holds in one pair.
    let all = Part::find(Filter::everything()).all(&store).await.unwrap();
    assert_eq!(all.len(), 300);
    assert_eq!(all[7].attributes.len(), pairs_of(7).len());
    let high = Part::find(Part::ATTRIBUTES.attribute("watts").gt(50))
        .all(&store)
        .await
        .unwrap();
    let want = (0..300)
        .filter(|i| pairs_of(*i).iter().any(|(k, v)| k == "watts" && *v > 50))
        .count();
    assert_eq!(high.len(), want);
    assert!(want > 0);

    // Nothing left to move.
    let again = migrate_attributes(&store, &PARTS, &Options::default())
        .await
        .unwrap();
    assert_eq!((again.scanned, again.changed, again.moved), (0, 0, 0));
    assert!(again.verified.unwrap().is_clean());
}

async fn a_killed_run_is_finished_by_the_next(store: AnyStore) {
    seed::parts(&store).await;
    let held: u64 = (0..300).map(|i| pairs_of(i).len() as u64).sum();
    let s = store.clone();
    let died = tokio::spawn(async move {
        let opts = pattern_tests::dying("migrate", 100, pattern_core::adopt::DEFAULT_BATCH_ITEMS);
        migrate_attributes(&s, &PARTS, &opts).await
    })
    .await;
    assert!(died.is_err(), "the first run dies");
    let half = documents(&store, "parts").await;
    let moved = half.iter().filter(|d| d.contains_key("attributes")).count();
    assert_eq!(moved, 100, "the first 100 documents, each whole");
    let r = migrate_attributes(&store, &PARTS, &Options::default())
        .await
        .unwrap();
    assert_eq!((r.scanned, r.changed), (200, 200));
    let first: u64 = (0..100).map(|i| pairs_of(i).len() as u64).sum();
    assert_eq!(r.moved, held - first);
    assert!(r.verified.unwrap().is_clean());
    let all = Part::find(Filter::everything()).all(&store).await.unwrap();
    for p in all {
        let got: Vec<(String, i64)> = p.attributes.iter().map(|(k, v)| (k.clone(), *v)).collect();
        assert_eq!(got, pairs_of(p.id), "part {}", p.id);
    }
}

async fn documents_it_cannot_rewrite_are_left_and_listed(store: AnyStore) {
    let docs = vec![
        doc! {"_id": 1_i64, "name": "a", "voltage": 5_i64},
        // The array is not one of pairs.
        doc! {"_id": 2_i64, "name": "b", "voltage": 6_i64, "attributes": "none"},
        // A pair of that name already.
        doc! {"_id": 3_i64, "name": "c", "voltage": 7_i64, "attributes": [{"k": "voltage", "v": 1_i64}]},
        // Pairs already, and a new field: merged, by name.
        doc! {"_id": 4_i64, "name": "d", "watts": 8_i64, "attributes": [{"k": "zeta", "v": 2_i64}, {"k": "amps", "v": 3_i64}]},
        // Nothing to move: not touched.
        doc! {"_id": 5_i64, "name": "e"},
    ];
    store.insert_many("parts", docs).await.unwrap();
    let r = migrate_attributes(&store, &PARTS, &Options::default())
        .await
        .unwrap();
    assert_eq!((r.scanned, r.changed, r.moved), (4, 2, 2));
    let refused: Vec<&Bson> = (r.refused.iter())
        .map(|d| match d {
            LayoutDefect::Malformed { id, .. } => id,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(refused, [&Bson::Int64(2), &Bson::Int64(3)]);
    let v = r.verified.unwrap();
    assert_eq!(v.defects.len(), 3, "{:?}", v.defects); // 2 (field left, not an array), 3
    let after = documents(&store, "parts").await;
    assert_eq!(
        after[1],
        doc! {"_id": 2_i64, "name": "b", "voltage": 6_i64, "attributes": "none"}
    );
    assert_eq!(
        after[3].get_array("attributes").unwrap(),
        &vec![
            Bson::Document(doc! {"k": "amps", "v": 3_i64}),
            Bson::Document(doc! {"k": "watts", "v": 8_i64}),
            Bson::Document(doc! {"k": "zeta", "v": 2_i64}),
        ]
    );
    assert_eq!(after[4], doc! {"_id": 5_i64, "name": "e"});
    let v = verify_attributes(&store, &PARTS, &Options::default())
        .await
        .unwrap();
    assert_eq!((v.documents, v.defects.len()), (5, 3));

    // Refused arguments, and data that is not there.
    for bad in [
        AttributeMigration {
            fields: &[],
            ..PARTS
        },
        AttributeMigration {
            fields: &["a.b"],
            ..PARTS
        },
        AttributeMigration {
            fields: &["_id"],
            ..PARTS
        },
        AttributeMigration {
            fields: &["attributes"],
            ..PARTS
        },
    ] {
        let e = migrate_attributes(&store, &bad, &Options::default())
            .await
            .unwrap_err();
        assert!(
            matches!(e, Error::Store(store::Error::InvalidInput(_))),
            "{e}"
        );
    }
    let e = migrate_attributes(
        &store,
        &AttributeMigration {
            collection: "nope",
            ..PARTS
        },
        &Options::default(),
    )
    .await
    .unwrap_err();
    assert!(matches!(e, Error::SourceNotFound { .. }), "{e}");
    let e = migrate_attributes(
        &store,
        &AttributeMigration {
            fields: &["colour"],
            into: "specs",
            ..PARTS
        },
        &Options::default(),
    )
    .await
    .unwrap_err();
    assert!(matches!(e, Error::SourceNotFound { .. }), "{e}");
}

on_both_stores!(
    fields_become_pairs,
    a_killed_run_is_finished_by_the_next,
    documents_it_cannot_rewrite_are_left_and_listed,
);
