//! Local time on both stores: `LocalTime` stored in the article's layout (`{date, offset}`,
//! offset in minutes with JavaScript's sign) and read back as the original local time,
//! exactly; what the layout cannot hold refused with a typed error; a property test of the
//! round trip over offsets -14:00..+14:00 and dates across the BSON range.

use bson::{doc, Bson, DateTime, Document};
use pattern_core::document::{LocalTime, LocalTimeError};
use pattern_core::store::query::Filter;
use pattern_core::store::AnyStore;
use pattern_core::store::Store;
use pattern_tests::{documents, on_both_stores, read_back};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use time::macros::datetime;
use time::{Duration, OffsetDateTime, UtcOffset};

/// A document of the article's `db.data`: the reading and what it measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Reading {
    #[serde(rename = "_id")]
    id: i64,
    #[serde(flatten)]
    at: LocalTime,
    value: i32,
}

/// The article's rebuild: `new Date(record.date.getTime() - record.offset * 60000)`, as
/// the local wall-clock time in a UTC-labelled date (what JavaScript prints).
fn article_local(doc: &Document) -> OffsetDateTime {
    let date = doc.get_datetime("date").unwrap().timestamp_millis();
    let offset = match doc.get("offset").unwrap() {
        Bson::Int32(n) => i64::from(*n),
        Bson::Double(x) => *x as i64,
        other => panic!("{other}"),
    };
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(date - offset * 60_000) * 1_000_000)
        .unwrap()
}

async fn local_times_round_trip_through_the_store(store: AnyStore) {
    let times = [
        datetime!(2024-07-01 09:30 +2),        // Paris, summer: offset -120
        datetime!(2024-01-15 23:59:59.999 -5), // New York, winter: 300
        datetime!(2024-03-10 12:00 +5:45),     // Kathmandu: -345
        datetime!(1970-01-01 00:00 UTC),       // 0
        datetime!(1900-02-28 18:00 -3:30),     // before the epoch: 210
        datetime!(2024-12-31 23:30 +14),       // Kiribati, the largest: -840
        datetime!(2024-12-31 23:30 -12),       // Baker Island: 720
    ];
    let readings: Vec<Reading> = times
        .iter()
        .enumerate()
        .map(|(i, t)| Reading {
            id: i as i64,
            at: LocalTime::try_from(*t).unwrap(),
            value: i as i32 * 10,
        })
        .collect();
    for r in &readings {
        store
            .insert_one("data", bson::to_document(r).unwrap())
            .await
            .unwrap();
    }
    let stored = documents(&store, "data").await;
    let offsets: Vec<&Bson> = stored.iter().map(|d| d.get("offset").unwrap()).collect();
    assert_eq!(
        offsets,
        [-120, 300, -345, 0, 210, -840, 720]
            .map(Bson::Int32)
            .iter()
            .collect::<Vec<_>>()
    );
    for ((d, t), r) in stored.iter().zip(times).zip(&readings) {
        // The layout: a BSON date (the UTC instant) and the offset, nothing else.
        assert_eq!(
            d,
            &doc! {"_id": r.id, "date": DateTime::from_millis((t.unix_timestamp_nanos() / 1_000_000) as i64), "offset": d.get("offset").unwrap(), "value": r.value}
        );
        // Read back: the original local time, offset and all.
        let back: Reading = bson::from_document(d.clone()).unwrap();
        assert_eq!(back, *r);
        let again = back.at.to_offset_datetime();
        assert_eq!((again, again.offset()), (t, t.offset()));
        // The article's arithmetic gives the same wall clock.
        let local = back.at.local();
        assert_eq!(article_local(d), local.assume_utc(), "{t}");
        assert_eq!((local.date(), local.time()), (t.date(), t.time()));
    }
    assert_eq!(readings[0].at.to_string(), "2024-07-01T09:30:00+02:00");
    assert_eq!(readings[1].at.to_string(), "2024-01-15T23:59:59.999-05:00");
    // Queried by instant: the date is a real BSON date.
    let after = store
        .find(
            "data",
            &Filter::Gt("date".into(), Bson::DateTime(DateTime::from_millis(0))),
            &read_back(),
        )
        .await
        .unwrap();
    assert_eq!(after.len(), 5);
}

async fn the_shells_documents_read_back(store: AnyStore) {
    // `db.data.save({date: now, offset: now.getTimezoneOffset()})`: the shell's numbers are
    // doubles.
    let now = DateTime::from_millis(1_719_819_000_000);
    store
        .insert_one("data", doc! {"_id": 1, "date": now, "offset": -120.0})
        .await
        .unwrap();
    store
        .insert_one("data", doc! {"_id": 2, "date": now, "offset": 90.5})
        .await
        .unwrap();
    store
        .insert_one("data", doc! {"_id": 3, "date": now, "offset": 99_999})
        .await
        .unwrap();
    store
        .insert_one("data", doc! {"_id": 4, "date": DateTime::MAX, "offset": 0})
        .await
        .unwrap();
    let stored = documents(&store, "data").await;
    let read = |i: usize| bson::from_document::<LocalTime>(stored[i].clone());
    let t = read(0).unwrap();
    assert_eq!(t.to_offset_datetime(), datetime!(2024-07-01 09:30 +2));
    assert_eq!(article_local(&stored[0]), t.local().assume_utc());
    assert!(read(1)
        .unwrap_err()
        .to_string()
        .contains("whole number of minutes"));
    assert!(read(2).unwrap_err().to_string().contains("beyond ±25:59"));
    assert!(read(3)
        .unwrap_err()
        .to_string()
        .contains("outside the years"));
}

#[test]
fn what_the_layout_cannot_hold_is_refused() {
    let sub_ms = datetime!(2024-07-01 09:30:00.000_000_5 +2);
    assert_eq!(
        LocalTime::try_from(sub_ms),
        Err(LocalTimeError::SubMillisecond { nanos: 500 })
    );
    // Truncating is the caller's explicit choice.
    let truncated = sub_ms.replace_millisecond(sub_ms.millisecond()).unwrap();
    assert!(LocalTime::try_from(truncated).is_ok());
    // Amsterdam before 1937: +00:19:32; and a +00:17:30 offset.
    for (h, m, s) in [(0, 19, 32), (0, 17, 30), (-1, -59, -59)] {
        let odd = datetime!(1930-05-01 12:00 UTC).to_offset(UtcOffset::from_hms(h, m, s).unwrap());
        assert!(
            matches!(
                LocalTime::try_from(odd),
                Err(LocalTimeError::OffsetSeconds { .. })
            ),
            "{odd}"
        );
    }
    assert_eq!(
        LocalTime::new(DateTime::from_millis(0), 26 * 60),
        Err(LocalTimeError::OffsetOutOfRange { minutes: 1560 })
    );
    assert!(LocalTime::new(DateTime::from_millis(0), 25 * 60 + 59).is_ok());
    assert!(matches!(
        LocalTime::new(DateTime::MIN, 0),
        Err(LocalTimeError::OutOfRange { .. })
    ));
    // At the edge of the time crate's range, the local time decides.
    let millis = *representable().end();
    assert!(LocalTime::new(DateTime::from_millis(millis), 0).is_ok());
    assert!(LocalTime::new(DateTime::from_millis(millis), 60).is_ok());
    assert!(matches!(
        LocalTime::new(DateTime::from_millis(millis), -60),
        Err(LocalTimeError::OutOfRange { .. })
    ));
}

/// The BSON dates (milliseconds) the time crate holds, from its first to its last instant.
fn representable() -> std::ops::RangeInclusive<i64> {
    let ms =
        |t: time::PrimitiveDateTime| (t.assume_utc().unix_timestamp_nanos() / 1_000_000) as i64;
    ms(time::PrimitiveDateTime::MIN)..=ms(time::PrimitiveDateTime::MAX)
}

/// Offsets -14:00..=+14:00 in minutes.
fn offsets() -> impl Strategy<Value = i32> {
    -14 * 60..=14 * 60
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Any instant of the BSON range at any offset: representable ones round-trip exactly
    /// (through a document, its bytes and back), the others are refused as out of range.
    #[test]
    fn round_trip_across_the_bson_range(millis in any::<i64>(), offset in offsets()) {
        round_trip(millis, offset)?;
    }

    /// The same over the years the time crate holds (where almost every case is representable).
    #[test]
    fn round_trip_over_representable_years(
        millis in representable(),
        offset in offsets(),
    ) {
        round_trip(millis, offset)?;
    }
}

fn round_trip(millis: i64, offset: i32) -> Result<(), TestCaseError> {
    let utc = OffsetDateTime::from_unix_timestamp_nanos(i128::from(millis) * 1_000_000).ok();
    let zone = UtcOffset::from_whole_seconds(-offset * 60).unwrap();
    let original = utc.and_then(|u| u.checked_to_offset(zone));
    match (
        LocalTime::new(DateTime::from_millis(millis), offset),
        original,
    ) {
        (Ok(t), Some(original)) => {
            let from_time = LocalTime::try_from(original).unwrap();
            prop_assert_eq!(from_time, t);
            let doc = bson::to_document(&t).unwrap();
            prop_assert_eq!(
                &doc,
                &doc! {"date": DateTime::from_millis(millis), "offset": offset}
            );
            let bytes = bson::to_vec(&doc).unwrap();
            let back: LocalTime = bson::from_slice(&bytes).unwrap();
            let rebuilt = back.to_offset_datetime();
            prop_assert_eq!(rebuilt, original);
            prop_assert_eq!(rebuilt.offset(), original.offset());
            // The wall clock is the article's `date - offset * 60000`.
            let wall = back.local().assume_utc() - Duration::minutes(i64::from(-offset));
            prop_assert_eq!(wall.unix_timestamp_nanos(), i128::from(millis) * 1_000_000);
        }
        (Err(LocalTimeError::OutOfRange { .. }), None) => {}
        (got, original) => prop_assert!(false, "{millis} ms at {offset}: {got:?} vs {original:?}"),
    }
    Ok(())
}

on_both_stores!(
    local_times_round_trip_through_the_store,
    the_shells_documents_read_back,
);
