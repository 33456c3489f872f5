//! Exactness.

use bson::{doc, Bson, Document};
use futures::TryStreamExt;
use mongodb::Database;
use pattern_tests::as_int;

use crate::seed::{Books, Trades};
use crate::{BOOKS, BUCKET_SIZE, CHUNK, SOURCE, THRESHOLD};

/// What a check of a migrated layout found: how many problems, the first few.
#[derive(Default)]
pub(crate) struct Exact {
    items: u64,
    problems: u64,
    first: Vec<String>,
}

impl Exact {
    fn bad(&mut self, what: String) {
        self.problems += 1;
        if self.first.len() < 3 {
            self.first.push(what);
        }
    }
    pub(crate) fn ok(&self) -> bool {
        self.problems == 0
    }
    pub(crate) fn summary(&self) -> String {
        if self.ok() {
            format!("exact ({} items)", self.items)
        } else {
            format!(
                "NOT exact: {} problems, e.g. {}",
                self.problems,
                self.first.join("; ")
            )
        }
    }
}

fn int(d: &Document, f: &str) -> Option<i64> {
    d.get(f).and_then(as_int)
}

/// Streams a bucket collection in key and page order and checks it against the trades seeded:
/// each customer's buckets numbered 1, 2, 3..., all full but the last, counts right, time bounds
/// right, and its items exactly its trades in time order, each as seeded.
pub(crate) async fn check_buckets(db: &Database, coll: &str, t: Trades) -> Exact {
    let mut ex = Exact::default();
    let mut cur = db
        .collection::<Document>(coll)
        .find(doc! {})
        .sort(doc! {"customerId": 1, "page": 1, "_id": 1})
        .batch_size(1_000)
        .await
        .unwrap();
    let mut per_customer = vec![0i64; t.customers as usize];
    // (customer, next page, last item's millis, last bucket full)
    let mut at: Option<(i64, i64, i64, bool)> = None;
    while let Some(b) = cur.try_next().await.unwrap() {
        let id = b.get("_id").cloned().unwrap_or(Bson::Null);
        let Some(c) = int(&b, "customerId").filter(|c| (0..t.customers).contains(c)) else {
            ex.bad(format!("bucket {id}: customerId {:?}", b.get("customerId")));
            continue;
        };
        if at.map(|a| a.0) != Some(c) {
            at = Some((c, 1, i64::MIN, true));
        }
        let (_, next, last, full) = at.as_mut().unwrap();
        if !*full {
            ex.bad(format!("customer {c}: bucket {id} after one not full"));
        }
        if int(&b, "page") != Some(*next) {
            ex.bad(format!(
                "customer {c}: page {:?}, expected {next}",
                b.get("page")
            ));
        }
        *next += 1;
        let Ok(items) = b.get_array("history") else {
            ex.bad(format!("bucket {id}: no history"));
            continue;
        };
        if int(&b, "count") != Some(items.len() as i64) {
            ex.bad(format!(
                "bucket {id}: count {:?}, {} items",
                b.get("count"),
                items.len()
            ));
        }
        if items.is_empty() || items.len() > BUCKET_SIZE as usize {
            ex.bad(format!("bucket {id}: {} items", items.len()));
        }
        *full = items.len() == BUCKET_SIZE as usize;
        let (mut lo, mut hi) = (i64::MAX, i64::MIN);
        for item in items {
            ex.items += 1;
            per_customer[c as usize] += 1;
            let Some(item) = item.as_document() else {
                ex.bad(format!("bucket {id}: an item is not a document"));
                continue;
            };
            let Ok(date) = item.get_datetime("date") else {
                ex.bad(format!("bucket {id}: an item without a date"));
                continue;
            };
            let ms = date.timestamp_millis();
            if ms <= *last {
                ex.bad(format!(
                    "customer {c}: items out of time order in bucket {id}"
                ));
            }
            *last = ms;
            lo = lo.min(ms);
            hi = hi.max(ms);
            match t.at(ms) {
                Some(i) if t.customer(i) == c && *item == t.item(i) => {}
                _ => ex.bad(format!("customer {c}: item {item} was not seeded as such")),
            }
        }
        let bound = |f: &str| b.get_datetime(f).ok().map(|d| d.timestamp_millis());
        if !items.is_empty() && (bound("date_min") != Some(lo) || bound("date_max") != Some(hi)) {
            ex.bad(format!(
                "bucket {id}: time bounds {:?}..{:?}",
                b.get("date_min"),
                b.get("date_max")
            ));
        }
    }
    for (c, &got) in per_customer.iter().enumerate() {
        let want = t.of_customer(c as i64);
        if got != want {
            ex.bad(format!("customer {c}: {got} items, {want} seeded"));
        }
    }
    ex
}

/// A bucket collection's items in key and page order, with their key.
pub(crate) async fn bucket_items(db: &Database, coll: &str) -> Vec<(i64, Bson)> {
    let buckets: Vec<Document> = db
        .collection::<Document>(coll)
        .find(doc! {})
        .sort(doc! {"customerId": 1, "page": 1, "_id": 1})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let mut out = Vec::new();
    for b in buckets {
        let c = int(&b, "customerId").unwrap_or(-1);
        for item in b.get_array("history").cloned().unwrap_or_default() {
            out.push((c, item));
        }
    }
    out
}

/// The source trades as the server holds them, in the migration's order, as items.
pub(crate) async fn source_items(db: &Database) -> Vec<(i64, Bson)> {
    let docs: Vec<Document> = db
        .collection::<Document>(SOURCE.collection)
        .find(doc! {})
        .sort(doc! {"customerId": 1, "date": 1, "_id": 1})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    docs.into_iter()
        .map(|mut d| {
            d.remove("_id");
            let c = d
                .remove("customerId")
                .as_ref()
                .and_then(as_int)
                .unwrap_or(-1);
            (c, Bson::Document(d))
        })
        .collect()
}

/// Streams the books and their overflow and checks them against the books seeded: at most
/// 50 buyers in each main document, flagged exactly when it has overflow, chunks numbered 1,
/// 2, 3... of at most 500, all full but the last, counts right, and main + overflow exactly
/// the buyers seeded, in order.
pub(crate) async fn check_books(db: &Database, overflow: &str, b: Books) -> Exact {
    let mut ex = Exact::default();
    let mut mains = db
        .collection::<Document>(BOOKS.collection)
        .find(doc! {})
        .sort(doc! {"_id": 1})
        .batch_size(1_000)
        .await
        .unwrap();
    let mut chunks = db
        .collection::<Document>(overflow)
        .find(doc! {})
        .sort(doc! {"book_id": 1, "seq": 1, "_id": 1})
        .batch_size(1_000)
        .await
        .unwrap();
    let mut pending = chunks.try_next().await.unwrap();
    let mut expected_id = 0i32;
    let ints = |a: &[Bson]| -> Option<Vec<i32>> {
        a.iter()
            .map(|v| match v {
                Bson::Int32(x) => Some(*x),
                _ => None,
            })
            .collect()
    };
    while let Some(m) = mains.try_next().await.unwrap() {
        let Some(i) = int(&m, "_id") else {
            ex.bad(format!("a book with _id {:?}", m.get("_id")));
            continue;
        };
        let i = i as i32;
        if i != expected_id {
            ex.bad(format!("book {i}, expected book {expected_id}"));
        }
        expected_id = i + 1;
        if m.get_str("title").ok() != Some(format!("Book {i}").as_str()) {
            ex.bad(format!("book {i}: title {:?}", m.get("title")));
        }
        let Some(mut got) = m.get_array("buyers").ok().and_then(|a| ints(a)) else {
            ex.bad(format!("book {i}: buyers {:?}", m.get("buyers")));
            continue;
        };
        if got.len() > THRESHOLD {
            ex.bad(format!(
                "book {i}: {} buyers in the main document",
                got.len()
            ));
        }
        // Its chunks; any of a book before it is an orphan.
        let mut seq = 1;
        let mut full = true;
        while let Some(ch) = pending.take() {
            let parent = int(&ch, "book_id").unwrap_or(i64::MIN);
            if parent > i64::from(i) {
                pending = Some(ch);
                break;
            }
            if parent < i64::from(i) {
                ex.bad(format!("overflow chunk {:?} of no book", ch.get("_id")));
            } else {
                if !full {
                    ex.bad(format!("book {i}: a chunk after one not full"));
                }
                if int(&ch, "seq") != Some(seq) {
                    ex.bad(format!(
                        "book {i}: chunk seq {:?}, expected {seq}",
                        ch.get("seq")
                    ));
                }
                seq += 1;
                match ch
                    .get_array(BOOKS.overflow.items_field)
                    .ok()
                    .and_then(|a| ints(a))
                {
                    Some(items) => {
                        if int(&ch, "count") != Some(items.len() as i64) {
                            ex.bad(format!(
                                "book {i}: chunk count {:?}, {} items",
                                ch.get("count"),
                                items.len()
                            ));
                        }
                        if items.is_empty() || items.len() > CHUNK as usize {
                            ex.bad(format!("book {i}: a chunk of {} items", items.len()));
                        }
                        full = items.len() == CHUNK as usize;
                        got.extend(items);
                    }
                    None => ex.bad(format!("book {i}: chunk without an array of integers")),
                }
            }
            pending = chunks.try_next().await.unwrap();
        }
        let flagged = m.get_bool(BOOKS.flag_field).unwrap_or(false);
        if flagged != (seq > 1) {
            ex.bad(format!("book {i}: flagged {flagged}, {} chunks", seq - 1));
        }
        ex.items += got.len() as u64;
        let want: Vec<i32> = (0..b.len(i)).map(|j| b.buyer(i, j)).collect();
        if got != want {
            let at = got.iter().zip(&want).position(|(g, w)| g != w);
            ex.bad(format!(
                "book {i}: {} buyers (want {}), first difference at {:?}",
                got.len(),
                want.len(),
                at
            ));
        }
    }
    if expected_id != b.n {
        ex.bad(format!("{expected_id} books, {} seeded", b.n));
    }
    while let Some(ch) = pending {
        ex.bad(format!("overflow chunk {:?} of no book", ch.get("_id")));
        pending = chunks.try_next().await.unwrap();
    }
    ex
}

/// Every book's buyers, main then overflow chunks in order (smoke scale: held whole).
pub(crate) async fn book_buyers(db: &Database, overflow: Option<&str>) -> Vec<(i64, Vec<Bson>)> {
    let mains: Vec<Document> = db
        .collection::<Document>(BOOKS.collection)
        .find(doc! {})
        .sort(doc! {"_id": 1})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let mut out: Vec<(i64, Vec<Bson>)> = mains
        .iter()
        .map(|m| {
            (
                int(m, "_id").unwrap(),
                m.get_array("buyers").cloned().unwrap_or_default(),
            )
        })
        .collect();
    if let Some(ov) = overflow {
        let chunks: Vec<Document> = db
            .collection::<Document>(ov)
            .find(doc! {})
            .sort(doc! {"book_id": 1, "seq": 1, "_id": 1})
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        for ch in chunks {
            let parent = int(&ch, "book_id").unwrap();
            let at = out.binary_search_by_key(&parent, |(id, _)| *id).unwrap();
            out[at].1.extend(
                ch.get_array(BOOKS.overflow.items_field)
                    .cloned()
                    .unwrap_or_default(),
            );
        }
    }
    out
}
