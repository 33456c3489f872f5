//! The values a bucket summary is made of: [`Number`] (a kept value as BSON stores it) and
//! [`Totals`] (the item count and each aggregate), and how they add up by MongoDB's rules.

use std::fmt;

use bson::{Bson, Decimal128};

use crate::codec::number;
use crate::spec::SeriesSpec;
use crate::{Error, Result};

/// A number as BSON stores it: a summary's value. Sums follow MongoDB's `$inc` types (Int32
/// widens to Int64; with a Double, a Double; with a Decimal128, an exact Decimal128).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Number {
    /// A 32-bit integer (MongoDB's `int`).
    Int32(i32),
    /// A 64-bit integer (`long`).
    Int64(i64),
    /// A double.
    Double(f64),
    /// A Decimal128, exact.
    Decimal128(Decimal128),
}

impl Number {
    /// The number a BSON value holds; `None` for anything else.
    pub fn from_bson(b: &Bson) -> Option<Number> {
        match b {
            Bson::Int32(x) => Some(Number::Int32(*x)),
            Bson::Int64(x) => Some(Number::Int64(*x)),
            Bson::Double(x) => Some(Number::Double(*x)),
            Bson::Decimal128(x) => Some(Number::Decimal128(*x)),
            _ => None,
        }
    }

    /// The BSON value.
    pub fn to_bson(&self) -> Bson {
        match *self {
            Number::Int32(x) => Bson::Int32(x),
            Number::Int64(x) => Bson::Int64(x),
            Number::Double(x) => Bson::Double(x),
            Number::Decimal128(x) => Bson::Decimal128(x),
        }
    }

    /// The value as an `i64` when it is an integer that fits (a Double or Decimal128 with no
    /// fraction included).
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Number::Int32(x) => Some(i64::from(x)),
            Number::Int64(x) => Some(x),
            Number::Double(x) => crate::codec::as_int(&Bson::Double(x)),
            Number::Decimal128(d) => {
                let (negative, coefficient, exponent) = number::decimal_parts(&d)?;
                let mut v = i128::try_from(coefficient).ok()?;
                let mut e = exponent;
                while e < 0 {
                    if v % 10 != 0 {
                        return None;
                    }
                    v /= 10;
                    e += 1;
                }
                for _ in 0..e {
                    v = v.checked_mul(10)?;
                }
                i64::try_from(if negative { -v } else { v }).ok()
            }
        }
    }

    /// The value as an `f64` (rounded where it has more precision).
    pub fn as_f64(&self) -> f64 {
        match *self {
            Number::Int32(x) => f64::from(x),
            Number::Int64(x) => x as f64,
            Number::Double(x) => x,
            Number::Decimal128(d) => d.to_string().parse().unwrap_or(f64::NAN),
        }
    }
}

impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Number::Int32(x) => write!(f, "{x}"),
            Number::Int64(x) => write!(f, "{x}"),
            Number::Double(x) => write!(f, "{x}"),
            Number::Decimal128(x) => write!(f, "{x}"),
        }
    }
}

/// A summary as the library computes it: how many items, and each aggregate of
/// `#[bucket(summary(...))]` in its order (`None`: no item had a number there). The derive's
/// `<Name>Summary` is built from it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Totals {
    /// Items summarized.
    pub items: u64,
    /// One per aggregate, in the attribute's order.
    pub values: Vec<Option<Number>>,
}

impl Totals {
    pub(super) fn new(n: usize) -> Totals {
        Totals {
            items: 0,
            values: vec![None; n],
        }
    }

    /// Adds aggregate `i`'s value `v` (a bucket's kept value, or an item's field).
    pub(super) fn add(
        &mut self,
        spec: &SeriesSpec<'_>,
        i: usize,
        v: &Bson,
        id: Option<&Bson>,
    ) -> Result<()> {
        let agg = spec.keeps.summary[i];
        let Some(n) = Number::from_bson(v) else {
            return Err(Error::decode(
                spec.collection,
                id,
                format!("`{}` is not a number but {:?}", agg.field, v.element_type()),
            ));
        };
        let slot = &mut self.values[i];
        let acc = slot.map(|n| n.to_bson());
        let sum = crate::series::combine(spec.collection, &agg, acc, &n.to_bson())?;
        *slot = Number::from_bson(&sum);
        Ok(())
    }
}

impl Totals {
    /// Whether `other` holds the same totals as MongoDB compares numbers: by value (an Int32 5
    /// and an Int64 5 are one total, whichever program wrote it).
    pub(crate) fn same_as(&self, other: &Totals) -> bool {
        let same = |a: &Option<Number>, b: &Option<Number>| match (a, b) {
            (Some(a), Some(b)) => crate::codec::order::values_equal(&a.to_bson(), &b.to_bson()),
            (a, b) => a.is_none() && b.is_none(),
        };
        self.items == other.items
            && self.values.len() == other.values.len()
            && (self.values.iter().zip(&other.values)).all(|(a, b)| same(a, b))
    }

    /// These totals and `other`'s (another set of buckets of the same key), combined by each
    /// aggregate's rule.
    pub(super) fn merged(mut self, spec: &SeriesSpec<'_>, other: Totals) -> Result<Totals> {
        self.items += other.items;
        for (i, v) in other.values.into_iter().enumerate() {
            if let Some(v) = v {
                self.add(spec, i, &v.to_bson(), None)?;
            }
        }
        Ok(self)
    }
}
