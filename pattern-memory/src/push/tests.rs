//! The native push against the generic upsert, side by side: the same documents, the same errors.

use super::super::index::MemIndex;
use super::super::MemoryStore;
use super::*;
use crate::tests::index;
use bson::doc;
use pattern_store::error::MAX_DOCUMENT_BYTES;
use pattern_store::query::{Filter, IndexSpec, Path};
use pattern_store::{KeptOps, OpenPush, Store, Window};

/// A series as pattern-core's `SeriesSpec` lays it out and prepares its pushes, written here
/// in the contract's terms alone: its indexes (the open-document index on `{key, newest
/// first}`, partial on `count < size`, or on the window's earliest time for a series cut by
/// span) and its [`OpenPush`]es. The oracle tests drive the store with nothing else.
pub(crate) struct TestSeries {
    pub(crate) collection: &'static str,
    pub(crate) key_field: &'static str,
    pub(crate) items_field: &'static str,
    pub(crate) count_field: &'static str,
    pub(crate) size: u32,
    /// How the documents are numbered and named (the tests give each `_id` themselves).
    #[allow(dead_code)]
    pub(crate) order: TestOrder,
    pub(crate) keeps: TestKeeps,
}

/// A series' numbering: a plain number, or a number with a time-named `_id`.
#[allow(dead_code)]
pub(crate) enum TestOrder {
    Seq(&'static str),
    TimeId(&'static str),
}

/// What each document keeps: time bounds (fields of the earliest and latest time), cut into
/// windows of `span` milliseconds.
#[derive(Clone, Copy)]
pub(crate) struct TestKeeps {
    pub(crate) bounds: Option<(&'static str, &'static str)>,
    pub(crate) span: Option<i64>,
}

impl TestKeeps {
    pub(crate) const NONE: TestKeeps = TestKeeps {
        bounds: None,
        span: None,
    };
}

/// What one push's items keep: their earliest and latest time, their size when measured.
pub(crate) struct TestKept {
    pub(crate) bounds: Option<(i64, i64)>,
    pub(crate) items_bytes: Option<usize>,
}

impl TestKept {
    pub(crate) const NONE: TestKept = TestKept {
        bounds: None,
        items_bytes: None,
    };
}

impl TestSeries {
    fn number_field(&self) -> &'static str {
        match self.order {
            TestOrder::Seq(f) | TestOrder::TimeId(f) => f,
        }
    }

    fn span_bounds(&self) -> Option<(&'static str, &'static str, i64)> {
        let (min, max) = self.keeps.bounds?;
        Some((min, max, self.keeps.span.filter(|s| *s > 0)?))
    }

    fn open_order(&self) -> [(&'static str, i32); 2] {
        match self.span_bounds() {
            Some((min, _, _)) => [(min, -1), ("_id", -1)],
            None => [(self.number_field(), -1), ("_id", -1)],
        }
    }

    /// The series' indexes, as pattern-core creates them.
    pub(crate) fn indexes(&self) -> Vec<IndexSpec> {
        let (k, seq) = (self.key_field, self.number_field());
        let [a, b] = self.open_order();
        let mut all = vec![
            IndexSpec {
                name: format!("pattern_{k}_1_{seq}_1__id_1"),
                keys: vec![(k.into(), 1), (seq.into(), 1), ("_id".into(), 1)],
                unique: false,
                partial: None,
            },
            IndexSpec {
                name: format!(
                    "0_pattern_open_{k}_{}_{}_lt_{}",
                    a.0, self.count_field, self.size
                ),
                keys: vec![(k.into(), 1), (a.0.into(), a.1), (b.0.into(), b.1)],
                unique: false,
                partial: Some(Filter::Lt(
                    Path::from(self.count_field),
                    Bson::Int32(self.size as i32),
                )),
            },
            IndexSpec {
                name: format!("pattern_{k}_1_{seq}_-1_unique"),
                keys: vec![(k.into(), 1), (seq.into(), -1)],
                unique: true,
                partial: Some(Filter::Exists(Path::from(seq), true)),
            },
        ];
        if let Some((min, max)) = self.keeps.bounds {
            all.push(IndexSpec {
                name: format!("pattern_{k}_1_bounded_1_{max}_1_{min}_1"),
                keys: vec![
                    (k.into(), 1),
                    ("bounded".into(), 1),
                    (max.into(), 1),
                    (min.into(), 1),
                ],
                unique: false,
                partial: None,
            });
        }
        all
    }

    pub(crate) async fn ensure_indexes<S: Store>(&self, store: &S) -> pattern_store::Result<()> {
        for index in self.indexes() {
            store.create_index(self.collection, &index).await?;
        }
        Ok(())
    }

    /// The marks a new document gets: `bounded` when the series keeps time bounds.
    pub(crate) fn marks(&self) -> Vec<(&'static str, Bson)> {
        match self.keeps.bounds {
            Some(_) => vec![("bounded", Bson::Boolean(true))],
            None => Vec::new(),
        }
    }

    /// The push of items keeping `kept` to `key`'s open document, or opening document `seq`.
    pub(crate) fn open_push<'p>(
        &'p self,
        key: &'p Bson,
        kept: &TestKept,
        seq: i64,
        new_id: &'p (dyn Fn() -> Bson + Sync),
        marks: &'p (dyn Fn() -> Vec<(&'p str, Bson)> + Sync),
    ) -> OpenPush<'p> {
        let mut ops = KeptOps::default();
        if let (Some((min, max)), Some((fmin, fmax))) = (kept.bounds, self.keeps.bounds) {
            let date = |ms: i64| Bson::DateTime(bson::DateTime::from_millis(ms));
            ops.min.push((Path::from(fmin), date(min)));
            ops.max.push((Path::from(fmax), date(max)));
        }
        let window = self
            .span_bounds()
            .zip(kept.bounds)
            .map(|((min, max, span), (t, _))| {
                let start = t.div_euclid(span) * span;
                Window {
                    min_field: min,
                    max_field: max,
                    start,
                    end: start.saturating_add(span),
                }
            });
        OpenPush {
            collection: self.collection,
            key_field: self.key_field,
            key,
            items_field: self.items_field,
            count_field: self.count_field,
            size: self.size,
            number_field: self.number_field(),
            open_order: self.open_order(),
            window,
            kept: ops,
            items_bytes: kept.items_bytes,
            seq,
            new_id,
            marks,
        }
    }
}

/// A collection with a series' three indexes (size 3) and `extra`, holding documents of
/// every shape a push can meet: open, about to fill, full, a count that is not an Int32 or
/// would overflow, items missing or not an array, and one too large for another item.
pub(super) fn series_collection(extra: Option<IndexSpec>, big: bool) -> Collection {
    let spec = TestSeries {
        collection: "c",
        key_field: "k",
        items_field: "items",
        count_field: "count",
        size: 3,
        order: TestOrder::Seq("seq"),
        keeps: TestKeeps::NONE,
    };
    let mut c = Collection::default();
    for index in spec.indexes().into_iter().chain(extra) {
        c.indexes.push(MemIndex::new(index));
    }
    let big = "x".repeat(if big { MAX_DOCUMENT_BYTES - 100 } else { 1 });
    let docs = [
        doc! {"_id": "a1", "k": 1, "count": 3, "items": [1, 2, 3], "seq": 1_i64},
        doc! {"_id": "a2", "k": 1, "count": 2, "items": [4, 5], "seq": 2_i64},
        doc! {"_id": "b1", "k": 2, "count": 0, "items": [], "seq": 1_i64},
        doc! {"_id": "c1", "k": 3, "count": 1_i64, "items": [1], "seq": 1_i64},
        doc! {"_id": "d1", "k": 4, "count": 1, "seq": 1_i64},
        doc! {"_id": "e1", "k": 5, "count": 1, "items": "x", "seq": 1_i64},
        doc! {"_id": "f1", "k": 6, "count": i32::MAX, "items": [1], "seq": 1_i64},
        doc! {"_id": "g1", "k": 7, "count": 1, "items": [big], "seq": 1_i64},
        doc! {"_id": "h1", "k": 8, "count": 5, "items": [1], "seq": 1_i64},
    ];
    for d in docs {
        c.insert("c", d).unwrap();
    }
    c
}

/// Runs `update` on document `id` of `start` both ways, in place (the generic update where
/// that declines) and generically, and asserts the same result, update, documents, sizes and
/// index entries; whether it ran in place.
fn in_place_is_generic(
    start: &Collection,
    id: &Key,
    update: &Update,
    fields: Option<&[&str]>,
    case: &str,
) -> bool {
    let mut fast = start.clone();
    let mut fast_update = update.clone();
    let (fast_result, in_place) = match fast.push_in_place("c", id, &mut fast_update, fields, 0) {
        // An in-place push reports the document modified (`ops::update`): the generic
        // update must find it changed too.
        Some(r) => (r.map(|before| (before, true)), true),
        None => (fast.update("c", id, &mut fast_update, fields), false),
    };
    let mut generic = start.clone();
    let mut generic_update = update.clone();
    let generic_result = generic.update("c", id, &mut generic_update, fields);
    assert_eq!(
        format!("{fast_result:?}"),
        format!("{generic_result:?}"),
        "{case}"
    );
    assert_eq!(fast_update, generic_update, "{case}");
    assert_eq!(fast.docs.len(), generic.docs.len(), "{case}");
    for ((k, a), (l, b)) in fast.docs.iter().zip(&generic.docs) {
        assert!(k == l && a.doc == b.doc && a.bytes == b.bytes, "{case}");
    }
    for (a, b) in fast.indexes.iter().zip(&generic.indexes) {
        assert_eq!(
            format!("{:?}", a.entries),
            format!("{:?}", b.entries),
            "{case}"
        );
    }
    in_place
}

/// The in-place push gives exactly what the generic update gives (result, documents,
/// sizes, index entries), and declines what it does not handle.
#[test]
pub(super) fn in_place_push_is_the_generic_update() {
    let by_count = index("by_count", &["count"], false);
    let unique_open = IndexSpec {
        name: "unique_open".into(),
        keys: vec![("k".into(), 1)],
        unique: true,
        partial: Some(Filter::Lt("count".into(), Bson::Int32(3))),
    };
    // Filters on the count beside the open-document index's: of its form at another size
    // (read off the new count), and of another form (matched).
    let below_two = IndexSpec {
        name: "below_two".into(),
        keys: vec![("k".into(), 1)],
        unique: false,
        partial: Some(Filter::Lt("count".into(), Bson::Int32(2))),
    };
    let up_to_one = IndexSpec {
        name: "up_to_one".into(),
        keys: vec![("k".into(), 1)],
        unique: false,
        partial: Some(Filter::Lte("count".into(), Bson::Int64(1))),
    };
    let mut in_place = 0;
    let extras = [by_count, unique_open, below_two, up_to_one];
    for extra in [None].into_iter().chain(extras.map(Some)) {
        let (small, large) = (
            series_collection(extra.clone(), false),
            series_collection(extra.clone(), true),
        );
        for id in ["a1", "a2", "b1", "c1", "d1", "e1", "f1", "g1", "h1"] {
            for (n, pushed) in [(1, 1), (2, 2), (-3, 1), (1, 0)] {
                for fields in [None, Some(&[][..]), Some(&["seq"][..])] {
                    let update = Update {
                        inc: vec![("count".into(), n)],
                        push: vec![("items".into(), vec![Bson::Int32(9); pushed])],
                        ..Update::default()
                    };
                    let start = if id == "g1" { &large } else { &small };
                    let case = format!("{id:?} {n} {pushed} {fields:?} {extra:?}");
                    let id = Key::new(Bson::String(id.into()));
                    in_place +=
                        usize::from(in_place_is_generic(start, &id, &update, fields, &case));
                }
            }
        }
    }
    assert!(in_place >= 20, "the in-place path ran {in_place} times");
}

/// The in-place push with kept values (`$inc` of a sum, `$min`/`$max` of the time bounds)
/// gives exactly what the generic update gives (result, documents, sizes, index entries,
/// the bounds' entries moved only when a bound does), and declines what it does not handle:
/// a kept field missing or of another type, a sum that overflows or changes type, a unique
/// index on a kept field.
#[test]
pub(super) fn in_place_keeping_push_is_the_generic_update() {
    let date = |s: i64| Bson::DateTime(bson::DateTime::from_millis(s * 1_000));
    let bounds = index("bounds", &["k", "date_max", "date_min"], false);
    let unique_max = index("unique_max", &["_id", "date_max"], true);
    let kept = [
        doc! {"date_min": date(10), "date_max": date(20), "qty": 5_i64},
        doc! {"date_min": date(10), "date_max": date(20), "qty": 5_i32},
        doc! {"date_min": date(10), "date_max": date(20), "qty": i32::MAX},
        doc! {"date_min": date(10), "date_max": date(20), "qty": 1.5},
        doc! {"date_min": date(10), "date_max": date(20), "qty": "x"},
        doc! {"date_min": date(10), "date_max": 20_i64, "qty": 5_i64},
        doc! {"date_min": date(10), "qty": 5_i64},
    ];
    let mut in_place = 0;
    for extra in [Some(bounds), Some(unique_max)] {
        let mut start = series_collection(extra.clone(), false);
        for (i, fields) in kept.iter().enumerate() {
            let id = format!("z{i}");
            let mut d =
                doc! {"_id": &id, "k": 100 + i as i32, "count": 1, "items": [1], "seq": 1_i64};
            d.extend(fields.clone());
            start.insert("c", d).unwrap();
        }
        let ids = (0..kept.len())
            .map(|i| format!("z{i}"))
            .chain(["a2".into()]);
        for id in ids {
            for (at, qty) in [
                (15, Bson::Int64(2)),
                (25, Bson::Int32(1)),
                (5, Bson::Double(0.5)),
            ] {
                let update = Update {
                    inc: vec![("count".into(), 1)],
                    push: vec![("items".into(), vec![Bson::Int32(9)])],
                    sum: vec![("qty".into(), qty.clone())],
                    min: vec![("date_min".into(), date(at))],
                    max: vec![("date_max".into(), date(at))],
                    ..Update::default()
                };
                let case = format!("{id:?} {at} {qty:?} {extra:?}");
                let id = Key::new(Bson::String(id.clone()));
                in_place += usize::from(in_place_is_generic(&start, &id, &update, None, &case));
            }
        }
    }
    // z0 (every time and sum) and z3 (a double, where the sum is one) in the bounds' case.
    assert!(in_place >= 5, "the in-place path ran {in_place} times");
}

/// The native series push leaves the store exactly as the conditional upsert does (result,
/// items given back or taken, documents, index entries), over buckets of every shape, new
/// keys, numbers and `_id`s already taken, and without the open-document index.
#[tokio::test]
pub(super) async fn native_push_is_the_upsert() {
    let spec = TestSeries {
        collection: "c",
        key_field: "k",
        items_field: "items",
        count_field: "count",
        size: 3,
        order: TestOrder::TimeId("seq"),
        keeps: TestKeeps::NONE,
    };
    let docs = [
        doc! {"_id": "1_1", "k": 1, "count": 3, "items": [1, 2, 3], "seq": 1_i64},
        doc! {"_id": "1_2", "k": 1, "count": 1, "items": [4], "seq": 2_i64},
        doc! {"_id": "2_1", "k": 2, "count": 3, "items": [1, 2, 3], "seq": 1_i64},
        doc! {"_id": "3_1", "k": 3, "count": 1_i64, "items": [1], "seq": 1_i64},
        doc! {"_id": "4_1", "k": 4, "count": 1, "items": "x", "seq": 1_i64},
        doc! {"_id": "5_1", "k": 5, "count": 1, "seq": 1_i64},
        // Numbers that are not numbers: not of the series, passed over (the string sorts
        // first, newest first).
        doc! {"_id": "7_1", "k": 7, "count": 1, "items": [1], "seq": 1_i64},
        doc! {"_id": "7_x", "k": 7, "count": 1, "items": [2], "seq": "x"},
        doc! {"_id": "8_x", "k": 8, "count": 1, "items": [1], "seq": null},
    ];
    let native = MemoryStore::new();
    let upsert = MemoryStore::new();
    for s in [&native, &upsert] {
        spec.ensure_indexes(s).await.unwrap();
        s.insert_raw("c", docs.clone()).unwrap();
    }
    // The usual case is native (not the upsert behind it).
    let (one, marks) = (Bson::Int32(1), || spec.marks());
    let new_id = || Bson::String("1_3".into());
    let push = spec.open_push(&one, &TestKept::NONE, 3, &new_id, &marks);
    let handled = (native.lock().collection("c")).push_open(&push, &mut vec![Bson::Int32(0)]);
    assert!(matches!(handled, Some(Ok(false))), "{handled:?}");
    upsert
        .update_one(
            "c",
            &Filter::eq("_id", "1_2"),
            &mut spec_push(&spec, 0),
            false,
        )
        .await
        .unwrap();
    // (key, seq, _id) of each push.
    let pushes = [
        (1, 3, "1_3"),
        (1, 3, "1_3"),
        (1, 4, "1_4"),
        (2, 2, "2_2"),
        (2, 2, "2_1"),
        (2, 1, "2_9"),
        (3, 2, "3_2"),
        (4, 2, "4_2"),
        (5, 2, "5_2"),
        (6, 1, "6_1"),
        (6, 1, "6_1"),
        (7, 2, "7_2"),
        (8, 1, "8_1"),
    ];
    let mut checks = 0;
    for dropped in [false, true] {
        if dropped {
            let open = native.index_names("c").await.unwrap();
            let open = open.iter().find(|n| n.starts_with("0_")).unwrap();
            for s in [&native, &upsert] {
                s.drop_index("c", open).await.unwrap();
            }
        }
        for round in 0..4 {
            for (k, seq, id) in pushes {
                let key = Bson::Int32(k);
                let item = || vec![Bson::Int32(100 * round + k)];
                let new_id = || Bson::String(id.into());
                let (mut a, mut b) = (item(), item());
                let marks = || spec.marks();
                let push = spec.open_push(&key, &TestKept::NONE, seq, &new_id, &marks);
                let ra = native.push_open(&push, &mut a).await;
                let rb = pattern_store::push_open_upsert(&upsert, &push, &mut b).await;
                let case = format!("{k} {seq} {id} round {round}, index dropped: {dropped}");
                assert_eq!(format!("{ra:?}"), format!("{rb:?}"), "{case}");
                assert_eq!(a.is_empty(), b.is_empty(), "{case}");
                assert_same_collection(&native, &upsert, &case);
                checks += 1;
            }
        }
    }
    assert_eq!(checks, 2 * 4 * pushes.len());
}

/// Collection `c` of both stores holds the same documents and the same index entries (read
/// settled).
fn assert_same_collection(a: &MemoryStore, b: &MemoryStore, case: &str) {
    assert_eq!(a.dump("c"), b.dump("c"), "{case}");
    let (mut sa, mut sb) = (a.lock(), b.lock());
    let (ca, cb) = (sa.get("c").unwrap(), sb.get("c").unwrap());
    for (x, y) in ca.indexes.iter().zip(&cb.indexes) {
        let (x, y) = (format!("{:?}", x.entries), format!("{:?}", y.entries));
        assert_eq!(x, y, "{case}");
    }
}

/// The update of one push of `n` into `spec`'s series.
pub(super) fn spec_push(spec: &TestSeries, n: i32) -> Update {
    Update {
        inc: vec![(spec.count_field.into(), 1)],
        push: vec![(spec.items_field.into(), vec![Bson::Int32(n)])],
        ..Update::default()
    }
}

/// A push into an open bucket leaves its bounds-index entry where it was (pending) and the
/// next read files it under the bucket's bounds: after pushes in and out of time order over
/// three keys (buckets filling and opening, a span's windows), with a transaction begun and a
/// range read between them, the documents and every index's entries are the generic
/// upsert's, and the range reads answer alike.
#[tokio::test]
pub(super) async fn pending_bounds_entries_settle_to_the_upsert() {
    for span in [None, Some(86_400_000)] {
        let spec = TestSeries {
            collection: "c",
            key_field: "k",
            items_field: "items",
            count_field: "count",
            size: 4,
            order: TestOrder::TimeId("seq"),
            keeps: TestKeeps {
                bounds: Some(("t_min", "t_max")),
                span,
            },
        };
        let (native, upsert) = (MemoryStore::new(), MemoryStore::new());
        // Key 3 has an open document that is not of the series (its number is text): the
        // upsert's query passes over it, and so must the native push.
        let t0 = bson::DateTime::from_millis(1_700_000_000_000);
        let stray = doc! {"_id": "3_x", "k": 3_i64, "count": 1, "items": [0_i64], "seq": "x",
        "t_min": t0, "t_max": t0, "bounded": true};
        for s in [&native, &upsert] {
            spec.ensure_indexes(s).await.unwrap();
            s.insert_raw("c", [stray.clone()]).unwrap();
        }
        let mut waited = 0;
        let mut seqs = std::collections::HashMap::new();
        for i in 0..80_i64 {
            let k = i % 4;
            // Mostly in order, every 7th push back by two days: a window's bucket again.
            let t = 1_700_000_000_000 + i * 3_600_000 - if i % 7 == 6 { 172_800_000 } else { 0 };
            let kept = TestKept {
                bounds: Some((t, t)),
                // One Int64 item: its value's size, as a push measures it (the native push
                // adds it up; its size check in debug builds compares with the document's).
                items_bytes: Some(8),
            };
            let key = Bson::Int64(k);
            let mut attempt = 0;
            loop {
                let seq = *seqs.entry(k).or_insert(1_i64);
                let new_id = || Bson::String(format!("{k}_{seq}"));
                let (mut a, mut b) = (vec![Bson::Int64(i)], vec![Bson::Int64(i)]);
                let marks = || spec.marks();
                let push = spec.open_push(&key, &kept, seq, &new_id, &marks);
                let ra = native.push_open(&push, &mut a).await;
                let rb = pattern_store::push_open_upsert(&upsert, &push, &mut b).await;
                assert_eq!(format!("{ra:?}"), format!("{rb:?}"), "push {i}");
                waited = waited.max(native.lock().unsettled("c").pending.len());
                match ra {
                    Ok(_) => break,
                    // Document `seq` is full or of another window: the next one.
                    Err(_) if attempt < 3 => {
                        attempt += 1;
                        *seqs.get_mut(&k).unwrap() += 1;
                    }
                    Err(e) => panic!("push {i}: {e}"),
                }
            }
            // (The next push learns a full document from its refusal.)
            if i == 30 {
                drop(native.start_transaction().await.unwrap());
            }
            if i % 10 == 9 {
                // A range read by the bounds index (what a pending entry would fool).
                let range = Filter::and([
                    Filter::eq("k", k),
                    Filter::Eq("bounded".into(), Bson::Boolean(true)),
                    Filter::Gte(
                        "t_max".into(),
                        Bson::DateTime(bson::DateTime::from_millis(t - 7_200_000)),
                    ),
                ]);
                let (x, y) = (
                    native.find("c", &range, &Default::default()).await.unwrap(),
                    upsert.find("c", &range, &Default::default()).await.unwrap(),
                );
                assert_eq!(x, y, "range after push {i}");
            }
            if i % 5 != 4 {
                continue; // pushes pile up pending entries in between
            }
            assert_same_collection(&native, &upsert, &format!("push {i}"));
        }
        assert!(waited > 0, "no entry ever waited (span {span:?})");
    }
}
