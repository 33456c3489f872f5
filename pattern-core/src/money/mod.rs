//! Money stored exactly: [`rust_decimal::Decimal`] as BSON Decimal128, and the article's two
//! older forms read exactly: a scaled Int64 with a declared scale (`1999` at scale 2 is
//! 19.99) and the display string (`"24.95"`).
//!
//! - Serde adapters for a `Decimal` field, one per form: [`decimal128`] (the form to store),
//!   [`text`], [`scaled`] (the scale as a const argument), [`any_form`] (reads whichever form a
//!   document has, writes Decimal128: for a collection in the middle of a conversion), each
//!   with an `option` twin for `Option<Decimal>`. Wrapper types do the same for a field whose
//!   type may change: [`Scaled<N>`](Scaled), [`AnyForm<N>`](AnyForm).
//! - The conversions behind them, as plain functions: [`to_decimal128`], [`from_decimal128`],
//!   [`from_scaled`], [`to_scaled`], [`parse_text`], and [`Form`] (one form's reader and
//!   writer, what [`adopt::money::convert_money`](crate::adopt::money::convert_money) converts from).
//!
//! Every conversion is exact or refused ([`MoneyError`]): nothing is rounded and no value goes
//! through `f64`. A Decimal128 always holds a `Decimal` (at most 29 digits, 28 places); the
//! other way, a Decimal128 with more than 28 decimal places or a coefficient past 2^96 (once
//! trailing zeros are dropped), NaN and infinities are refused.

use std::fmt;

use bson::{Bson, Decimal128};
pub use rust_decimal::Decimal;
use serde::Serialize;

use crate::codec::number::{decimal_from_parts, decimal_parts};
use crate::codec::BsonType;

mod adapters;

pub use adapters::{any_form, decimal128, scaled, text, AnyForm, Scaled};

/// The most decimal places a [`Decimal`] holds (and so the largest scale of [`Form::Scaled`]).
pub const MAX_SCALE: u32 = 28;

/// A `Decimal`'s coefficient is below 2^96.
const COEF_END: u128 = 1 << 96;

/// Why an amount was refused: it cannot be converted exactly.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MoneyError {
    /// NaN or an infinity: not an amount.
    #[error("{value} is not an amount")]
    NotFinite {
        /// The value, as text.
        value: String,
    },
    /// The value does not fit the target: a `Decimal` (a coefficient below 2^96, at most 28
    /// places), an Int64, or a Decimal128 (34 digits).
    #[error("{value} does not fit {target}")]
    OutOfRange {
        /// The value, as text.
        value: String,
        /// What it does not fit.
        target: &'static str,
    },
    /// More decimal places than the scale: converting would round (`19.999` at scale 2).
    #[error("{value} has more decimal places than scale {scale}: it would be rounded")]
    TooManyPlaces {
        /// The value, as text.
        value: String,
        /// The places allowed.
        scale: u32,
    },
    /// A string that is not a plain decimal number (`[+-]digits[.digits]`).
    #[error("{value:?} is not a display amount ({reason})")]
    Syntax {
        /// The string.
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A BSON value of a type the form does not read (a double with a fraction for a scaled
    /// amount, a number for a string...).
    #[error("a BSON {found} is not {form}")]
    WrongType {
        /// The BSON type found (with the value, for a double).
        found: String,
        /// The form that was expected.
        form: String,
    },
    /// A scale past [`MAX_SCALE`].
    #[error("scale {0} is past the 28 places a Decimal holds")]
    Scale(u32),
}

/// One way of storing an amount in a field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Form {
    /// BSON Decimal128: exact, queryable, server arithmetic (`NumberDecimal("19.99")`).
    Decimal128,
    /// An integer holding the amount times 10^scale (`NumberLong(1999)` at scale 2). Read from
    /// an Int32, an Int64, or a double holding an integer of magnitude at most 2^53 (the legacy
    /// shell writes numbers as doubles; such a double is exact); written as an Int64.
    Scaled(u32),
    /// The display string (`"24.95"`): an optional sign, digits, and optionally a point and
    /// more digits. Exponents, spaces, separators, `NaN` are refused, never guessed at.
    Text,
}

impl fmt::Display for Form {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Form::Decimal128 => f.write_str("a Decimal128 amount"),
            Form::Scaled(s) => write!(f, "an amount scaled by 10^{s}"),
            Form::Text => f.write_str("a display string"),
        }
    }
}

impl Form {
    /// The amount `v` holds in this form, exactly, or why not.
    pub fn read(self, v: &Bson) -> Result<Decimal, MoneyError> {
        match (self, v) {
            (Form::Decimal128, Bson::Decimal128(d)) => from_decimal128(d),
            (Form::Scaled(s), Bson::Int32(n)) => from_scaled((*n).into(), s),
            (Form::Scaled(s), Bson::Int64(n)) => from_scaled(*n, s),
            (Form::Scaled(s), Bson::Double(x)) if x.fract() == 0.0 && x.abs() <= 2f64.powi(53) => {
                from_scaled(*x as i64, s)
            }
            (Form::Text, Bson::String(t)) => parse_text(t),
            _ => Err(MoneyError::WrongType {
                found: BsonType::of(v).map_or_else(
                    || format!("{:?}", v.element_type()),
                    |t| match v {
                        Bson::Double(x) => format!("{t} ({x})"),
                        _ => t.to_string(),
                    },
                ),
                form: self.to_string(),
            }),
        }
    }

    /// `amount` in this form, exactly, or why not (too many places for the scale, past i64).
    pub fn write(self, amount: &Decimal) -> Result<Bson, MoneyError> {
        Ok(match self {
            Form::Decimal128 => Bson::Decimal128(to_decimal128(amount)),
            Form::Scaled(s) => Bson::Int64(to_scaled(amount, s)?),
            Form::Text => Bson::String(amount.to_string()),
        })
    }
}

/// `d` as a Decimal128: always exact, its scale kept (`80.00` stays `80.00`), and its sign
/// (`-0`).
pub fn to_decimal128(d: &Decimal) -> Decimal128 {
    decimal_from_parts(
        d.is_sign_negative(),
        d.mantissa().unsigned_abs(),
        -(d.scale() as i32),
    )
}

/// The `Decimal` a Decimal128 holds, exactly. Trailing zeros are dropped only when the value
/// does not fit otherwise (`1.000…0` with 40 places reads as `1.000…0` with 28); a value that
/// still does not fit, NaN and infinities are refused.
pub fn from_decimal128(d: &Decimal128) -> Result<Decimal, MoneyError> {
    let Some((neg, mut c, mut e)) = decimal_parts(d) else {
        return Err(MoneyError::NotFinite {
            value: d.to_string(),
        });
    };
    let out_of_range = || MoneyError::OutOfRange {
        value: d.to_string(),
        target: "a Decimal (29 digits, 28 places)",
    };
    while e < 0 && (e < -(MAX_SCALE as i32) || c >= COEF_END) && c % 10 == 0 {
        c /= 10;
        e += 1;
    }
    if e > 0 {
        if c != 0 {
            c = u32::try_from(e)
                .ok()
                .and_then(|e| 10u128.checked_pow(e))
                .and_then(|p| c.checked_mul(p))
                .ok_or_else(out_of_range)?;
        }
        e = 0;
    }
    if e < -(MAX_SCALE as i32) {
        return Err(MoneyError::TooManyPlaces {
            value: d.to_string(),
            scale: MAX_SCALE,
        });
    }
    if c >= COEF_END {
        return Err(out_of_range());
    }
    Ok(decimal(neg, c, (-e) as u32))
}

/// The `Decimal` `(-1)^neg * c * 10^-scale` (`c < 2^96`, `scale <= 28`), a negative zero kept.
fn decimal(neg: bool, c: u128, scale: u32) -> Decimal {
    let mut d = Decimal::from_i128_with_scale(c as i128, scale);
    d.set_sign_negative(neg);
    d
}

/// The amount an integer scaled by 10^`scale` stands for: `from_scaled(1999, 2)` is `19.99`
/// (exact for every i64: the scale becomes the `Decimal`'s).
pub fn from_scaled(n: i64, scale: u32) -> Result<Decimal, MoneyError> {
    if scale > MAX_SCALE {
        return Err(MoneyError::Scale(scale));
    }
    Ok(Decimal::from_i128_with_scale(n.into(), scale))
}

/// `d` times 10^`scale` as an integer: `to_scaled(19.99, 2)` is `1999`. Refused when `d` has
/// more places than `scale` (`19.999` at scale 2: it would round) or the result leaves i64.
pub fn to_scaled(d: &Decimal, scale: u32) -> Result<i64, MoneyError> {
    if scale > MAX_SCALE {
        return Err(MoneyError::Scale(scale));
    }
    let (m, s) = (d.mantissa(), d.scale());
    let n = if s > scale {
        let f = 10i128.pow(s - scale);
        if m % f != 0 {
            return Err(MoneyError::TooManyPlaces {
                value: d.to_string(),
                scale,
            });
        }
        Some(m / f)
    } else {
        m.checked_mul(10i128.pow(scale - s))
    };
    n.and_then(|n| i64::try_from(n).ok())
        .ok_or_else(|| MoneyError::OutOfRange {
            value: d.to_string(),
            target: "an Int64 at this scale",
        })
}

/// The amount of a display string, exactly: `"24.95"`, `"-0.50"`, `"+3"`, `"80.00"` (its
/// places kept). Refused: exponents (`"1e3"`), spaces, separators (`"1,000"`, `"1_000"`), an
/// empty part (`".5"`, `"5."`), `NaN`, and values a `Decimal` cannot hold (more than 28
/// places, a coefficient past 2^96).
pub fn parse_text(s: &str) -> Result<Decimal, MoneyError> {
    let syntax = |reason| MoneyError::Syntax {
        value: s.to_owned(),
        reason,
    };
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    if !digits(int) || (body.contains('.') && !digits(frac)) {
        return Err(syntax(if s.trim() != s || s.contains(' ') {
            "spaces"
        } else if s.contains(['e', 'E']) && !s.eq_ignore_ascii_case("NaN") {
            "an exponent is not a display form"
        } else if s.is_empty() {
            "empty"
        } else {
            "not [+-]digits[.digits]"
        }));
    }
    let scale = frac.len() as u32;
    if scale > MAX_SCALE {
        return Err(MoneyError::TooManyPlaces {
            value: s.to_owned(),
            scale: MAX_SCALE,
        });
    }
    let mut c = 0u128;
    for b in int.bytes().chain(frac.bytes()) {
        c = c * 10 + u128::from(b - b'0');
        if c >= COEF_END {
            return Err(MoneyError::OutOfRange {
                value: s.to_owned(),
                target: "a Decimal (29 digits, 28 places)",
            });
        }
    }
    Ok(decimal(neg, c, scale))
}

#[cfg(test)]
mod tests;
