//! Round trips per operation on MongoDB, counted with the driver's command monitoring (every
//! command the client sends, handshakes and monitoring aside), printed as a table.
//!
//!     cargo bench -p pattern-bench --bench round_trips
//!
//! Needs `MONGODB_URI` (`scripts/test.sh` starts a server and sets it). Under `cargo test` it
//! runs at a smaller scale (1,000 pushes instead of 10,000) and checks the targets the same way.
//!
//! Targets (issue 5): bucket push at most 1.1 round trips on average at size 10; page read 1;
//! outlier push below the threshold 1; full outlier read a fixed number whatever the overflow
//! size.

use futures::TryStreamExt;
use pattern_bench::scale;
use pattern_core::{Bucket, MongoStore, Outlier};
use pattern_tests::{counted_mongo_store, CommandLog};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Trade {
    ticker: String,
    qty: i64,
    date: bson::DateTime,
}

#[derive(Bucket)]
#[bucket(collection = "trades", size = 10, time = "date")]
#[allow(dead_code)]
struct TradeHistory {
    #[bucket(key)]
    #[serde(rename = "customerId")]
    customer_id: i64,
    #[bucket(items)]
    history: Vec<Trade>,
}

#[derive(Outlier, Clone, Debug, Serialize, Deserialize)]
#[outlier(collection = "sales", threshold = 50, overflow = "extra_sales")]
struct Book {
    #[outlier(id)]
    #[serde(rename = "_id")]
    id: i64,
    title: String,
    #[outlier(items)]
    customers_purchased: Vec<String>,
}

fn trade(i: i64) -> Trade {
    Trade {
        ticker: "MDB".into(),
        qty: i,
        date: bson::DateTime::from_millis(1_698_335_223_000 + i * 1000),
    }
}

/// One row of the table: what was done, how many times, the commands it sent.
struct Row {
    op: String,
    times: usize,
    commands: Vec<String>,
    target: &'static str,
    met: bool,
}

impl Row {
    fn new(op: impl Into<String>, times: usize, log: &CommandLog) -> Row {
        Row {
            op: op.into(),
            times,
            commands: log.names(),
            target: "",
            met: true,
        }
    }
    fn per_op(&self) -> f64 {
        self.commands.len() as f64 / self.times as f64
    }
    fn target(mut self, target: &'static str, met: impl Fn(f64) -> bool) -> Row {
        self.met = met(self.per_op());
        self.target = target;
        self
    }
    fn breakdown(&self) -> String {
        let mut names: Vec<(String, usize)> = Vec::new();
        for c in &self.commands {
            match names.iter_mut().find(|(n, _)| n == c) {
                Some((_, k)) => *k += 1,
                None => names.push((c.clone(), 1)),
            }
        }
        names
            .iter()
            .map(|(n, k)| format!("{k} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

async fn users(store: &MongoStore, id: i64, n: usize) {
    let all: Vec<String> = (0..n).map(|i| format!("user{i:05}")).collect();
    Book {
        id,
        title: format!("book {id}"),
        customers_purchased: all,
    }
    .save(store)
    .await
    .unwrap();
}

#[tokio::main]
async fn main() {
    let pushes: usize = scale(10_000, 1_000);
    let (store, log) = counted_mongo_store("bench_round_trips").await;
    TradeHistory::ensure_indexes(&store).await.unwrap();
    Book::ensure_indexes(&store).await.unwrap();
    let mut rows = Vec::new();

    // Bucket push, size 10, one key: every push, and the pushes that opened a bucket.
    let mut opening = Vec::new();
    log.clear();
    for i in 0..pushes as i64 {
        let before = log.len();
        TradeHistory::push(&store, &123, trade(i)).await.unwrap();
        if i % 10 == 0 {
            opening.push(log.names()[before..].to_vec());
        }
    }
    rows.push(
        Row::new(
            format!("bucket push, size 10, {pushes} pushes"),
            pushes,
            &log,
        )
        .target("<= 1.1", |x| x <= 1.1),
    );
    let opens = opening.len();
    let opening_log = CommandLog::default();
    let mut r = Row::new(
        format!("  of which pushes that open a bucket ({opens})"),
        opens,
        &opening_log,
    );
    r.commands = opening.concat();
    rows.push(r);
    // A push that opens a bucket in a process that has not pushed to the key before (its first
    // push to a key learns the page number).
    for i in 0..9 {
        TradeHistory::push(&store, &124, trade(i)).await.unwrap();
    }
    TradeHistory::push(&store, &124, trade(9)).await.unwrap();
    let cold = MongoStore::new(store.database().clone());
    log.clear();
    TradeHistory::push(&cold, &124, trade(10)).await.unwrap();
    let cold_row = Row::new(
        "bucket push opening a bucket, first push of a process to the key",
        1,
        &log,
    );
    let mut cold_row = cold_row;
    cold_row
        .commands
        .retain(|c| c != "createIndexes" && c != "listIndexes");
    rows.push(cold_row);

    // Page reads at several depths.
    let last_page = (pushes / 10) as u64;
    for n in [1, last_page / 2, last_page] {
        log.clear();
        let page = TradeHistory::page(&store, &123, n).await.unwrap().unwrap();
        assert_eq!(page.items.len(), 10);
        rows.push(
            Row::new(format!("bucket page read, page {n}"), 1, &log).target("1", |x| x == 1.0),
        );
    }
    log.clear();
    let all: Vec<Trade> = TradeHistory::items(&store, &123)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(all.len(), pushes);
    rows.push(Row::new(
        format!("bucket items stream, {pushes} items"),
        1,
        &log,
    ));

    // Outlier: pushes below and above the threshold (50), then the reads.
    users(&store, 1, 0).await;
    log.clear();
    for i in 0..50 {
        Book::push_customers_purchased(&store, &1, format!("u{i}"))
            .await
            .unwrap();
    }
    rows.push(Row::new("outlier push below the threshold", 50, &log).target("1", |x| x == 1.0));
    log.clear();
    let above = 1000;
    for i in 50..50 + above {
        Book::push_customers_purchased(&store, &1, format!("u{i}"))
            .await
            .unwrap();
    }
    rows.push(Row::new(
        format!("outlier push above the threshold ({above}, chunks of 500)"),
        above,
        &log,
    ));
    log.clear();
    let t = Book::typical(&store, &1).await.unwrap().unwrap();
    assert!(t.has_extras);
    rows.push(Row::new("outlier typical read", 1, &log).target("1", |x| x == 1.0));
    let mut full_costs = Vec::new();
    for (id, extras) in [
        (10, 0usize),
        (11, 200),
        (12, 2_000),
        (13, scale(20_000, 5_000)),
    ] {
        users(&store, id, 50 + extras).await;
        log.clear();
        let all = Book::all_customers_purchased(&store, &id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(all.len(), 50 + extras);
        full_costs.push(log.len());
        rows.push(Row::new(
            format!("outlier full read, {extras} extras"),
            1,
            &log,
        ));
    }
    let flagged = &full_costs[1..];
    let fixed = flagged.iter().all(|c| *c == flagged[0]);

    println!(
        "\nround trips per operation (MongoDB at {}):",
        pattern_tests::mongo_uri()
    );
    println!("| operation | round trips per op | commands | target | met |");
    println!("|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {:.3} | {} | {} | {} |",
            r.op,
            r.per_op(),
            r.breakdown(),
            if r.target.is_empty() { "" } else { r.target },
            if r.target.is_empty() {
                ""
            } else if r.met {
                "yes"
            } else {
                "NO"
            }
        );
    }
    println!(
        "| outlier full read independent of overflow size | {} | | fixed | {} |",
        flagged
            .iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(" / "),
        if fixed { "yes" } else { "NO" }
    );
    let _ = store.database().drop().await;
    let missed: Vec<&str> = rows
        .iter()
        .filter(|r| !r.met)
        .map(|r| r.op.as_str())
        .collect();
    assert!(missed.is_empty() && fixed, "targets missed: {missed:?}");
}
