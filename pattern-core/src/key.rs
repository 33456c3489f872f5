//! The types that may key a series or identify a parent, and the types that may time an item.

use std::borrow::Borrow;

use bson::oid::ObjectId;
use bson::Bson;
use serde::Serialize;

use crate::codec::BsonType;

/// A value that keys a bucket series or identifies an outlier's parent: integers, strings and
/// ObjectIds. It is stored as its BSON value and, for bucket `_id`s, written as text. `Sync`:
/// a push holds the key while it awaits the store, and writes its text only if it opens a
/// bucket.
pub trait KeyPart: Sync {
    /// The BSON value stored in the key field.
    fn to_key_bson(&self) -> Bson;
    /// The text before `_` in a bucket's `_id` (`123` in `123_1698335223`).
    fn id_prefix(&self) -> String;
    /// The BSON types a key of this type is stored as, for the layouts' validators
    /// (`ensure_validator`): `int` and `long` for the integers (the server holds them equal,
    /// and a migration keeps the width its source had), `string`, `objectId`. Empty (the
    /// default, for a key type of your own): the validators require the key without
    /// constraining its type.
    const BSON_TYPES: &'static [BsonType] = &[];
}

/// A key of `K`'s series or parent as a call takes it: `K` itself, or what `K` borrows as
/// (`&str` for a `String` key), as a map's `get` takes one. Every [`KeyPart`] `K` borrows as is
/// one: nothing to implement.
pub trait KeyRef<K: ?Sized>: KeyPart {}

impl<K: Borrow<Q> + ?Sized, Q: KeyPart + ?Sized> KeyRef<K> for Q {}

/// A document's or node's `_id` of type `K` as a call takes it: `K` itself, or what `K` borrows
/// as (`&str` for a `String` `_id`). Every serializable type `K` borrows as is one: nothing to
/// implement.
pub trait IdRef<K: ?Sized>: Serialize {}

impl<K: Borrow<Q> + ?Sized, Q: Serialize + ?Sized> IdRef<K> for Q {}

macro_rules! int_key {
    ($($t:ty => $variant:ident as $as:ty),*) => {$(
        impl KeyPart for $t {
            fn to_key_bson(&self) -> Bson { Bson::$variant(*self as $as) }
            fn id_prefix(&self) -> String { self.to_string() }
            const BSON_TYPES: &'static [BsonType] = BsonType::INTEGERS;
        }
    )*};
}
int_key!(i32 => Int32 as i32, i64 => Int64 as i64, u32 => Int64 as i64, i16 => Int32 as i32, u16 => Int32 as i32, i8 => Int32 as i32, u8 => Int32 as i32);

impl KeyPart for str {
    fn to_key_bson(&self) -> Bson {
        Bson::String(self.to_owned())
    }
    fn id_prefix(&self) -> String {
        self.to_owned()
    }
    const BSON_TYPES: &'static [BsonType] = &[BsonType::String];
}

impl KeyPart for String {
    fn to_key_bson(&self) -> Bson {
        self.as_str().to_key_bson()
    }
    fn id_prefix(&self) -> String {
        self.clone()
    }
    const BSON_TYPES: &'static [BsonType] = &[BsonType::String];
}

impl KeyPart for ObjectId {
    fn to_key_bson(&self) -> Bson {
        Bson::ObjectId(*self)
    }
    fn id_prefix(&self) -> String {
        self.to_hex()
    }
    const BSON_TYPES: &'static [BsonType] = &[BsonType::ObjectId];
}

impl<T: KeyPart + ?Sized> KeyPart for &T {
    fn to_key_bson(&self) -> Bson {
        (**self).to_key_bson()
    }
    fn id_prefix(&self) -> String {
        (**self).id_prefix()
    }
    const BSON_TYPES: &'static [BsonType] = T::BSON_TYPES;
}

/// The text of a key in a bucket's `_id` (`123` in `123_1698335223`), as [`KeyPart`]
/// writes it for the typed keys. An integer by value is one, whatever its number type (a
/// `mongosh` double 5, a Decimal128 5: `5`), and a symbol is its text.
pub(crate) fn id_prefix(coll: &str, key: &Bson) -> crate::Result<String> {
    if let Some(Bson::Int64(n)) = crate::codec::number::canonical(key) {
        return Ok(n.id_prefix());
    }
    match key {
        Bson::String(s) | Bson::Symbol(s) => Ok(s.id_prefix()),
        Bson::ObjectId(o) => Ok(o.id_prefix()),
        other => Err(crate::Error::decode(
            coll,
            None,
            format!(
                "a key must be an integer, a string or an ObjectId, not {:?}",
                other.element_type()
            ),
        )),
    }
}

/// A time that names a bucket: the `_id` of a bucket is `<key>_<epoch seconds of its first
/// item>`, read from the item field named by `#[bucket(time = "...")]`.
pub trait EpochSeconds {
    /// Whole seconds since 1970-01-01T00:00:00Z (floored), or `None` to use the current time.
    fn epoch_seconds(&self) -> Option<i64>;

    /// Milliseconds since 1970-01-01T00:00:00Z (floored): what a bucket's time bounds keep.
    /// The default is [`EpochSeconds::epoch_seconds`] in milliseconds (saturating).
    fn epoch_millis(&self) -> Option<i64> {
        self.epoch_seconds().map(|s| s.saturating_mul(1000))
    }
}

impl EpochSeconds for bson::DateTime {
    fn epoch_seconds(&self) -> Option<i64> {
        Some(self.timestamp_millis().div_euclid(1000))
    }
    fn epoch_millis(&self) -> Option<i64> {
        Some(self.timestamp_millis())
    }
}

impl EpochSeconds for std::time::SystemTime {
    fn epoch_seconds(&self) -> Option<i64> {
        // Saturating: seconds past 2^63-1 do not fit in an `_id`'s i64.
        Some(since_epoch(self, 1_000_000_000))
    }
    fn epoch_millis(&self) -> Option<i64> {
        Some(since_epoch(self, 1_000_000))
    }
}

/// `t` in whole units of `unit` nanoseconds since the Unix epoch, rounded down (a time before
/// it counts the unit it falls in), saturating at the ends of `i64`.
fn since_epoch(t: &std::time::SystemTime, unit: u128) -> i64 {
    match t.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_nanos() / unit).unwrap_or(i64::MAX),
        Err(e) => {
            let nanos = e.duration().as_nanos();
            let whole = i64::try_from(nanos / unit).unwrap_or(i64::MAX);
            -whole - i64::from(nanos % unit > 0)
        }
    }
}

/// An integer time field holds epoch seconds.
impl EpochSeconds for i64 {
    fn epoch_seconds(&self) -> Option<i64> {
        Some(*self)
    }
}

impl<T: EpochSeconds> EpochSeconds for Option<T> {
    fn epoch_seconds(&self) -> Option<i64> {
        self.as_ref().and_then(T::epoch_seconds)
    }
    fn epoch_millis(&self) -> Option<i64> {
        self.as_ref().and_then(T::epoch_millis)
    }
}

impl<T: EpochSeconds + ?Sized> EpochSeconds for &T {
    fn epoch_seconds(&self) -> Option<i64> {
        (**self).epoch_seconds()
    }
    fn epoch_millis(&self) -> Option<i64> {
        (**self).epoch_millis()
    }
}

/// The current time in epoch milliseconds.
pub(crate) fn now_millis() -> i64 {
    std::time::SystemTime::now().epoch_millis().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_dates_give_utc_ids() {
        let d = bson::DateTime::parse_rfc3339_str("2023-10-26T15:47:03.434Z").unwrap();
        assert_eq!(d.epoch_seconds(), Some(1698335223));
        let before = bson::DateTime::from_millis(-1500);
        assert_eq!(before.epoch_seconds(), Some(-2));
    }
}
