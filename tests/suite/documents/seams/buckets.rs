//! A bucket's roll-up beside its archive: every path that writes a roll-up (a push, a push of
//! several, an ingest across keys, `backfill`, the archive's move) keeps it equal to the items
//! live and archived, which a model of each key's items says.

use std::collections::BTreeMap;

use bson::DateTime;
use futures::TryStreamExt;
use pattern_core::adopt::Options;
use pattern_core::bucket::{self, ArchiveAt, History};
use pattern_core::store::query;
use serde::{Deserialize, Serialize};

use super::Cells;
use crate::documents::*;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(super) struct Tick {
    id: i64,
    qty: i64,
    at: DateTime,
}

#[allow(dead_code)] // a layout: its documents are read through the functions
#[derive(pattern_core::Bucket)]
#[bucket(
    collection = "m_ticks",
    size = 5,
    time = "at",
    summary(sum = "qty"),
    rollup
)]
pub(super) struct Ticks {
    #[bucket(key)]
    key: i64,
    #[bucket(items)]
    items: Vec<Tick>,
}

const ARCHIVE: &str = "m_ticks_archive";
const DAY: i64 = 86_400_000;

/// The `i`th tick of a key: a day apart, its quantity `i + 1`.
fn tick(i: i64) -> Tick {
    Tick {
        id: i,
        qty: i + 1,
        at: DateTime::from_millis(DAY * i),
    }
}

/// Each key's items, in push order.
type Model = BTreeMap<i64, Vec<Tick>>;

async fn check(store: &AnyStore, m: &Model) {
    let to = ArchiveAt {
        store,
        collection: ARCHIVE,
    };
    let history = History::new(store, to);
    for (key, items) in m {
        let summary = history.summary::<Ticks, _>(key, ..).await.unwrap();
        let qty: i64 = items.iter().map(|t| t.qty).sum();
        assert_eq!(
            (summary.items, summary.qty_sum.as_i64()),
            (items.len() as u64, Some(qty)),
            "the summary of key {key}"
        );
        let read = history.items::<Ticks, _>(key).await.unwrap();
        assert_eq!(&read, items, "the items of key {key}");
        let live: Vec<Tick> = bucket::items::<Ticks, _, _>(store, key)
            .try_collect()
            .await
            .unwrap();
        assert!(
            items.ends_with(&live),
            "the live items of key {key} are its newest"
        );
    }
    let defects = bucket::verify_archive::<Ticks, _, _>(store, to)
        .await
        .unwrap();
    assert!(defects.is_empty(), "verify_archive: {defects:?}");
}

async fn empty(store: &AnyStore) {
    for c in ["m_ticks", ARCHIVE, "m_ticks_rollups", "pattern_migrations"] {
        let _ = store.delete_many(c, &query::Filter::And(vec![])).await;
    }
}

pub(super) async fn rollup(store: &AnyStore, cells: &mut Cells) {
    const ROW: &str = "bucket roll-up with its archive";
    bucket::ensure_validator::<Ticks, _>(store).await.unwrap();
    let mut m = Model::new();
    macro_rules! cell {
        ($path:expr, async $body:block) => {
            let ok = cells
                .cell(ROW, $path, async {
                    async $body.await;
                    check(store, &m).await;
                })
                .await;
            if !ok {
                empty(store).await;
                m = Model::new();
                let _ = &m;
            }
        };
    }
    let to = ArchiveAt {
        store,
        collection: ARCHIVE,
    };
    // The ticks of key 1 before this day are archived by the first move.
    let cut = DateTime::from_millis(DAY * 40);
    cell!("push", async {
        for i in 0..45 {
            bucket::push::<Ticks, _, _>(store, &1, &tick(i))
                .await
                .unwrap();
            m.entry(1).or_default().push(tick(i));
        }
    });
    cell!("push_many", async {
        let many: Vec<Tick> = (0..12).map(tick).collect();
        bucket::push_many::<Ticks, _, _>(store, &2, &many)
            .await
            .unwrap();
        m.entry(2).or_default().extend(many);
    });
    cell!("ingest", async {
        let items: Vec<(i64, Tick)> = (0..8).map(|i| (3 + i % 2, tick(i / 2))).collect();
        bucket::ingest::<Ticks, _>(store, &items).await.unwrap();
        for (k, t) in items {
            m.entry(k).or_default().push(t);
        }
    });
    cell!("the archive's move", async {
        let report = bucket::archive::<Ticks, _, _>(store, to, cut, &Options::default())
            .await
            .unwrap();
        assert!(report.moved > 0, "{report:?}");
    });
    cell!("push after the move", async {
        for i in 45..48 {
            bucket::push::<Ticks, _, _>(store, &1, &tick(i))
                .await
                .unwrap();
            m.entry(1).or_default().push(tick(i));
        }
    });
    cell!("backfill", async {
        bucket::backfill::<Ticks, _>(store).await.unwrap();
    });
    cell!("a second pass of the archive", async {
        let later = DateTime::from_millis(DAY * 46);
        bucket::archive::<Ticks, _, _>(store, to, later, &Options::default())
            .await
            .unwrap();
        bucket::backfill::<Ticks, _>(store).await.unwrap();
    });
}
