//! What `push_many` costs on a series with roll-ups (`History`, the `timeseries` benchmark's
//! buckets): 1,000 trades onto a key with none (100 new buckets, one batch), and 25 onto a key
//! whose open bucket holds 3 (a fill, then new buckets), in turn, medians. Commands sent, from a
//! monitored client, once each.
//!
//! Run: `MONGODB_URI=... cargo run --release -p pattern-bench --example push_many_rollup_probe`
//! (`PUSH_MANY_PROBE_ROUNDS`, default 60).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mongodb::event::command::CommandEvent;
use pattern_bench::{market_trade, median, History, Trade};

#[tokio::main]
async fn main() {
    let rounds: i64 = pattern_bench::env_number("PUSH_MANY_PROBE_ROUNDS", 60);
    let store = pattern_tests::mongo_store("push_many_probe").await;
    let sent: Arc<Mutex<Vec<String>>> = Arc::default();
    let spy = {
        let sink = sent.clone();
        let mut opts = pattern_tests::client_options().await;
        pattern_tests::monitor(&mut opts, move |ev| {
            if let CommandEvent::Started(s) = ev {
                sink.lock().unwrap().push(s.command_name);
            }
        });
        let db = store.database().name().to_owned();
        pattern_core::store::MongoStore::with_options(opts, &db).expect("client")
    };
    let trades = |key: i64, n: i64| -> Vec<Trade> {
        (0..n)
            .map(|i| market_trade(key * 10_000 + i, 6_000))
            .collect()
    };
    // The commands of each kind, once, on the monitored client.
    History::push_many(&spy, &-1, &trades(1, 1_000))
        .await
        .unwrap();
    println!(
        "1,000 onto a new key: {:?}",
        sent.lock().unwrap().drain(..).collect::<Vec<_>>()
    );
    let all = trades(2, 28);
    for t in &all[..3] {
        History::push(&spy, &-2, t.clone()).await.unwrap();
    }
    sent.lock().unwrap().clear();
    History::push_many(&spy, &-2, &all[3..]).await.unwrap();
    println!(
        "25 onto 3: {:?}",
        sent.lock().unwrap().drain(..).collect::<Vec<_>>()
    );
    let (mut many, mut onto): (Vec<Duration>, Vec<Duration>) = (Vec::new(), Vec::new());
    for r in 0..rounds {
        let (a, b) = (2 * r + 10, 2 * r + 11);
        let t = Instant::now();
        History::push_many(&store, &a, &trades(a, 1_000))
            .await
            .unwrap();
        many.push(t.elapsed());
        let all = trades(b, 28);
        for t in &all[..3] {
            History::push(&store, &b, t.clone()).await.unwrap();
        }
        let t = Instant::now();
        History::push_many(&store, &b, &all[3..]).await.unwrap();
        onto.push(t.elapsed());
    }
    println!(
        "| push_many of 1,000 onto a new key | {:.3} ms |",
        median(many).as_secs_f64() * 1e3
    );
    println!(
        "| push_many of 25 onto an open bucket holding 3 | {:.3} ms |",
        median(onto).as_secs_f64() * 1e3
    );
    store.database().drop().await.ok();
}
