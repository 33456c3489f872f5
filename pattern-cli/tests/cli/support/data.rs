//! The data the tests seed.

use bson::{doc, oid::ObjectId, DateTime, Document};

use super::Rng;

/// `books`: document `i` (1..=100) holds `i` customers: lengths 1..=100.
pub(crate) fn books_1_to_100() -> Vec<Document> {
    (1..=100i32)
        .map(|i| doc! {"_id": i, "title": format!("book {i}"), "customers_purchased": (0..i).collect::<Vec<i32>>()})
        .collect()
}

/// `trades`: customer `c` (0..10) has `10 (c + 1)` trades, 550 in all, in shuffled order.
pub(crate) fn trades_10_customers(rng: &mut Rng) -> Vec<Document> {
    let base = DateTime::parse_rfc3339_str("2024-01-01T00:00:00Z")
        .unwrap()
        .timestamp_millis();
    let mut docs: Vec<Document> = (0..10i32)
        .flat_map(|c| (0..10 * (c + 1)).map(move |j| (c, j)))
        .map(|(c, j)| {
            doc! {
                "_id": ObjectId::new(), "ticker": "MDB", "customerId": c, "type": "buy", "qty": j,
                "date": DateTime::from_millis(base + i64::from(j) * 60_000),
            }
        })
        .collect();
    shuffle(&mut docs, rng);
    docs
}

pub(crate) fn shuffle<T>(v: &mut [T], rng: &mut Rng) {
    for i in (1..v.len()).rev() {
        let j = rng.range(0, i as u64) as usize;
        v.swap(i, j);
    }
}

/// `migrate bucket` of [`trades_10_customers`]' collection `trades` into `trade_history`, 10
/// trades a bucket.
pub(crate) const MIGRATE_TRADES: [&str; 12] = [
    "migrate",
    "bucket",
    "--from",
    "trades",
    "--to",
    "trade_history",
    "--key",
    "customerId",
    "--time",
    "date",
    "--size",
    "10",
];
