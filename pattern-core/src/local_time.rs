//! The article's local time: MongoDB stores UTC, so keep the client's UTC offset beside it
//! and rebuild the local time from both.
//!
//! [`LocalTime`] is stored as `{date: <BSON date>, offset: <minutes>}`, `offset` with
//! JavaScript's sign (`Date.getTimezoneOffset()`: minutes from local time to UTC, so UTC+2 is
//! `-120`), the layout of the article's shell snippet, which reads it back as
//! `new Date(record.date.getTime() - record.offset * 60000)`.
//!
//! It converts to and from [`time::OffsetDateTime`] exactly. What the layout cannot hold is
//! refused with a [`LocalTimeError`], never changed: a time with a fraction of a millisecond
//! (BSON dates count milliseconds), an offset with seconds (historical ones such as
//! Amsterdam's +00:19:32 before 1937: the layout counts minutes), and a time the time crate
//! cannot represent, local or UTC (beyond years ±999,999 with the `large-dates` feature that
//! bson turns on; a BSON date reaches ±292 million years).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};
use time::{OffsetDateTime, PrimitiveDateTime, UtcOffset};

/// The largest offset a [`UtcOffset`] holds, in minutes (25:59).
const MAX_OFFSET_MINUTES: i32 = 25 * 60 + 59;

/// A UTC instant with the UTC offset of the clock that read it: the original local time,
/// exactly. Stored as `{date, offset}` (a UTC date and the client's offset in minutes, JavaScript's sign).
///
/// ```
/// use pattern_core::document::LocalTime;
/// use time::macros::datetime;
///
/// // 09:30 in Paris in summer (UTC+2).
/// let t = LocalTime::try_from(datetime!(2024-07-01 09:30 +2))?;
/// assert_eq!(t.offset_minutes(), -120); // JavaScript's sign
/// assert_eq!(t.date().timestamp_millis(), 1_719_819_000_000); // 07:30 UTC
/// let doc = bson::to_document(&t)?;
/// assert_eq!(doc, bson::doc! {"date": t.date(), "offset": -120});
/// let back: LocalTime = bson::from_document(doc)?;
/// assert_eq!(back.to_offset_datetime(), datetime!(2024-07-01 09:30 +2));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct LocalTime {
    date: bson::DateTime,
    offset: i32,
}

/// Why a time cannot be a [`LocalTime`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LocalTimeError {
    /// The time has a fraction of a millisecond (its nanoseconds past the millisecond): a
    /// BSON date counts milliseconds. Truncate it first if that is what you mean.
    #[error("{nanos} ns past the millisecond: a BSON date holds milliseconds")]
    SubMillisecond {
        /// The nanoseconds past the last whole millisecond.
        nanos: u32,
    },
    /// The offset has seconds (`+00:17:30`): the layout counts minutes.
    #[error("offset {offset} has seconds: the layout counts whole minutes")]
    OffsetSeconds {
        /// The offset, as `+HH:MM:SS`.
        offset: String,
    },
    /// An offset (in JavaScript's minutes) beyond ±25:59, which no `UtcOffset` holds.
    #[error("offset {minutes} minutes is beyond ±25:59")]
    OffsetOutOfRange {
        /// The offset in minutes, JavaScript's sign.
        minutes: i32,
    },
    /// The UTC or the local time is outside the years the time crate holds (±999,999 with
    /// its `large-dates` feature, which bson turns on).
    #[error("{millis} ms since the epoch at offset {offset} minutes is outside the years the time crate holds")]
    OutOfRange {
        /// The date, in milliseconds since the epoch (UTC).
        millis: i64,
        /// The offset in minutes, JavaScript's sign.
        offset: i32,
    },
}

impl LocalTime {
    /// The time `date` (UTC) read on a clock `offset` minutes behind UTC (JavaScript's
    /// `getTimezoneOffset()`: `-120` for UTC+2). Refused when the offset is beyond ±25:59 or
    /// the UTC or local time is outside years -9999..=9999.
    pub fn new(date: bson::DateTime, offset: i32) -> Result<Self, LocalTimeError> {
        let t = LocalTime { date, offset };
        t.checked().map(|_| t)
    }

    /// The offset and the local time, checked to be representable.
    fn checked(&self) -> Result<OffsetDateTime, LocalTimeError> {
        if self.offset.abs() > MAX_OFFSET_MINUTES {
            return Err(LocalTimeError::OffsetOutOfRange {
                minutes: self.offset,
            });
        }
        let out = || LocalTimeError::OutOfRange {
            millis: self.date.timestamp_millis(),
            offset: self.offset,
        };
        let nanos = i128::from(self.date.timestamp_millis()) * 1_000_000;
        let offset = UtcOffset::from_whole_seconds(-self.offset * 60).map_err(|_| out())?;
        let utc = OffsetDateTime::from_unix_timestamp_nanos(nanos).map_err(|_| out())?;
        utc.checked_to_offset(offset).ok_or_else(out)
    }

    /// The instant, in UTC (the stored `date`).
    pub fn date(&self) -> bson::DateTime {
        self.date
    }

    /// The stored offset: minutes from local time to UTC, JavaScript's sign (UTC+2: `-120`).
    pub fn offset_minutes(&self) -> i32 {
        self.offset
    }

    /// The offset as a [`UtcOffset`] (UTC+2: `+02:00`).
    pub fn utc_offset(&self) -> UtcOffset {
        self.to_offset_datetime().offset()
    }

    /// The original time: the instant at its offset, exactly as it was given.
    pub fn to_offset_datetime(&self) -> OffsetDateTime {
        self.checked()
            .expect("a LocalTime is checked when it is made")
    }

    /// The local wall-clock time (the article's `new Date(date - offset * 60000)`).
    pub fn local(&self) -> PrimitiveDateTime {
        let t = self.to_offset_datetime();
        PrimitiveDateTime::new(t.date(), t.time())
    }
}

impl TryFrom<OffsetDateTime> for LocalTime {
    type Error = LocalTimeError;

    /// Refuses a time with a fraction of a millisecond and an offset with seconds.
    fn try_from(t: OffsetDateTime) -> Result<Self, LocalTimeError> {
        let nanos = t.nanosecond() % 1_000_000;
        if nanos != 0 {
            return Err(LocalTimeError::SubMillisecond { nanos });
        }
        let offset = t.offset();
        if offset.seconds_past_minute() != 0 {
            return Err(LocalTimeError::OffsetSeconds {
                offset: offset.to_string(),
            });
        }
        let millis = (t.unix_timestamp_nanos() / 1_000_000) as i64;
        LocalTime::new(
            bson::DateTime::from_millis(millis),
            -(offset.whole_seconds() / 60),
        )
    }
}

impl From<LocalTime> for OffsetDateTime {
    fn from(t: LocalTime) -> OffsetDateTime {
        t.to_offset_datetime()
    }
}

impl fmt::Display for LocalTime {
    /// The original time in RFC 3339 (`2024-07-01T09:30:00+02:00`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = self.to_offset_datetime();
        let (y, m, d) = (t.year(), u8::from(t.month()), t.day());
        let (o, ms) = (t.offset(), t.millisecond());
        let sign = if o.is_negative() { '-' } else { '+' };
        write!(
            f,
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
            t.hour(),
            t.minute(),
            t.second()
        )?;
        if ms != 0 {
            write!(f, ".{ms:03}")?;
        }
        write!(
            f,
            "{sign}{:02}:{:02}",
            o.whole_hours().unsigned_abs(),
            o.minutes_past_hour().unsigned_abs()
        )
    }
}

impl<'de> Deserialize<'de> for LocalTime {
    /// Reads `{date, offset}`; the offset may be any integral number (the legacy shell writes
    /// `getTimezoneOffset()` as a double: `-120.0`). Refuses what [`LocalTime::new`] refuses.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        #[derive(Deserialize)]
        struct Stored {
            date: bson::DateTime,
            offset: bson::Bson,
        }
        let s = Stored::deserialize(d)?;
        let offset = match s.offset {
            bson::Bson::Int32(n) => Some(n),
            bson::Bson::Int64(n) => i32::try_from(n).ok(),
            bson::Bson::Double(x) if x.fract() == 0.0 && x.abs() < 1e9 => Some(x as i32),
            _ => None,
        }
        .ok_or_else(|| {
            D::Error::custom(format!(
                "offset {} is not a whole number of minutes",
                s.offset
            ))
        })?;
        LocalTime::new(s.date, offset).map_err(D::Error::custom)
    }
}
