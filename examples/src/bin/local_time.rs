//! Replays the time section of the data-modeling article: MongoDB stores UTC, so a client
//! saves `{date: now, offset: now.getTimezoneOffset()}` and rebuilds its local time from both
//! (`new Date(record.date.getTime() - record.offset * 60000)`). `LocalTime` writes exactly
//! that layout and gives back the original time, offset included; what the layout cannot
//! hold (a fraction of a millisecond, an offset with seconds) is refused.
//!
//! In memory by default; on MongoDB (database `pattern_local_time`) when `MONGODB_URI` is set:
//!
//!     cargo run -p examples --bin local_time

use bson::{doc, Bson};
use pattern_core::document::LocalTime;
use pattern_core::store::AnyStore;
use pattern_core::store::Store;
use pattern_core::testing::Fixtures;
use serde::{Deserialize, Serialize};
use time::macros::datetime;
use time::UtcOffset;

/// A document of the article's `db.data`.
#[derive(Debug, Serialize, Deserialize)]
struct Reading {
    #[serde(rename = "_id")]
    id: i32,
    #[serde(flatten)]
    at: LocalTime,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let store = AnyStore::from_env("pattern_local_time").await?;
    println!("store: {}", store.kind());
    store.drop_collection("data").await?;

    // Three clients: Paris in summer, New York in winter, Kathmandu.
    let clocks = [
        datetime!(2024-07-01 09:30 +2),
        datetime!(2024-01-15 23:59:59.999 -5),
        datetime!(2024-03-10 12:00 +5:45),
    ];
    for (i, now) in clocks.iter().enumerate() {
        let reading = Reading {
            id: i as i32 + 1,
            at: LocalTime::try_from(*now)?,
        };
        store
            .insert_one("data", bson::to_document(&reading)?)
            .await?;
    }
    // The shell's own document: its numbers are doubles.
    store
        .insert_one(
            "data",
            doc! {"_id": 4, "date": bson::DateTime::from_millis(1_719_819_000_000), "offset": -120.0},
        )
        .await?;
    println!("stored:");
    for d in store.documents("data").await? {
        println!("  {}", Bson::Document(d).into_relaxed_extjson());
    }
    println!("read back:");
    for d in store.documents("data").await? {
        let r: Reading = bson::from_document(d)?;
        let local = r.at.local();
        println!(
            "  {}: {} (wall clock {} {:02}:{:02}, offset {} minutes)",
            r.id,
            r.at,
            local.date(),
            local.hour(),
            local.minute(),
            r.at.offset_minutes()
        );
    }
    let back: Vec<Reading> = store
        .documents("data")
        .await?
        .into_iter()
        .map(bson::from_document)
        .collect::<Result<_, _>>()?;
    let exact = back
        .iter()
        .zip(&clocks)
        .all(|(r, t)| r.at.to_offset_datetime() == *t && r.at.utc_offset() == t.offset());
    println!("every original time and offset given back exactly: {exact}");

    // Refused, never changed.
    let fine = datetime!(2024-07-01 09:30:00.000_000_5 +2);
    println!("refused: {}", LocalTime::try_from(fine).unwrap_err());
    let amsterdam_1930 = datetime!(1930-05-01 12:00 UTC).to_offset(UtcOffset::from_hms(0, 19, 32)?);
    println!(
        "refused: {}",
        LocalTime::try_from(amsterdam_1930).unwrap_err()
    );
    if !exact {
        return Err("a local time did not round-trip".into());
    }
    Ok(())
}
