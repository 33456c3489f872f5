//! How a page read costs at depth: fills one key with `ITEMS` items (10 a bucket), then reads
//! pages 1, 1,000 and 10,000 `REPEAT` times each and prints the median latency of each, and the
//! median of a keyset stream batch at the same depths, for comparison.
//!
//! In memory by default; on MongoDB (database `pattern_deep_pages`) with `MONGODB_URI` set:
//!
//!     cargo run --release -p examples --bin deep_pages [ITEMS] [REPEAT]

use std::time::{Duration, Instant};

use futures::StreamExt;
use pattern_core::store::AnyStore;
use pattern_core::Bucket;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Tick {
    n: u64,
    at: i64,
}

#[derive(Bucket)]
#[bucket(collection = "ticks", size = 10, time = "at")]
#[allow(dead_code)]
struct Ticks {
    #[bucket(key)]
    user: i64,
    #[bucket(items)]
    ticks: Vec<Tick>,
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let items: u64 = args.next().map_or(Ok(100_000), |a| a.parse())?;
    let repeat: usize = args.next().map_or(Ok(21), |a| a.parse())?;
    let store = AnyStore::from_env("pattern_deep_pages").await?;
    store.drop_collection("ticks").await?;
    println!(
        "store: {}, {items} items in buckets of 10 for one key",
        store.kind()
    );

    let start = Instant::now();
    let all: Vec<Tick> = (0..items)
        .map(|n| Tick {
            n,
            at: 1_600_000_000 + n as i64,
        })
        .collect();
    for chunk in all.chunks(10_000) {
        Ticks::push_many(&store, &1, chunk).await?;
    }
    println!("filled in {:.1?}", start.elapsed());

    let pages = items.div_ceil(10);
    for depth in [1, 1_000, 10_000].into_iter().filter(|d| *d <= pages) {
        let mut times = Vec::new();
        for _ in 0..repeat {
            let t = Instant::now();
            let page = Ticks::page(&store, &1, depth)
                .await?
                .expect("the page exists");
            times.push(t.elapsed());
            assert_eq!(page.items[0].n, (depth - 1) * 10);
        }
        println!(
            "page {depth:>6}: median {:>10.1?} over {repeat} reads",
            median(times)
        );
    }
    // A stream reaches depth by range: its batches cost the same wherever they are.
    let t = Instant::now();
    let mut stream = std::pin::pin!(Ticks::pages(&store, &1));
    let mut n = 0u64;
    while let Some(p) = stream.next().await {
        p?;
        n += 1;
    }
    println!(
        "streamed all {n} pages in {:.1?} ({:.1?} a page)",
        t.elapsed(),
        t.elapsed() / n.max(1) as u32
    );
    Ok(())
}
