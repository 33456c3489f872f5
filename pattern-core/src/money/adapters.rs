//! The serde side of [`money`](super): adapter modules for `Decimal` fields and wrapper types.
//!
//! Each reader deserializes the field as a [`Bson`] value first (what every BSON deserializer
//! and Extended JSON give for a Decimal128: its bytes, or `{"$numberDecimal": "..."}`), then
//! converts it with [`Form::read`]: exact, or a deserialization error that says why.

use bson::Bson;
use rust_decimal::Decimal;
use serde::de::Error as _;
use serde::ser::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{to_decimal128, Form, MAX_SCALE};

/// Reads a value in whichever form `form` picks for it.
fn read_with<'de, D: Deserializer<'de>>(
    d: D,
    form: impl FnOnce(&Bson) -> Form,
) -> Result<Decimal, D::Error> {
    let v = Bson::deserialize(d)?;
    form(&v).read(&v).map_err(D::Error::custom)
}

/// The same, for an `Option`: null (or `None`) is `None`.
fn read_option_with<'de, D: Deserializer<'de>>(
    d: D,
    form: impl FnOnce(&Bson) -> Form,
) -> Result<Option<Decimal>, D::Error> {
    match Option::<Bson>::deserialize(d)? {
        None | Some(Bson::Null) => Ok(None),
        Some(v) => form(&v).read(&v).map(Some).map_err(D::Error::custom),
    }
}

/// Writes `amount` in `form`.
fn write<S: Serializer>(amount: &Decimal, form: Form, s: S) -> Result<S::Ok, S::Error> {
    match form {
        Form::Decimal128 => to_decimal128(amount).serialize(s),
        Form::Scaled(scale) => {
            s.serialize_i64(super::to_scaled(amount, scale).map_err(S::Error::custom)?)
        }
        Form::Text => s.serialize_str(&amount.to_string()),
    }
}

/// Writes an `Option` in `form`: `None` as null.
fn write_option<S: Serializer>(
    amount: &Option<Decimal>,
    form: Form,
    s: S,
) -> Result<S::Ok, S::Error> {
    match amount {
        Some(a) => write(a, form, s),
        None => s.serialize_none(),
    }
}

/// Which form a stored value is in, for readers of any form: Decimal128, a string, or a
/// number scaled by 10^`scale`.
fn any(scale: u32) -> impl FnOnce(&Bson) -> Form {
    move |v| match v {
        Bson::Decimal128(_) => Form::Decimal128,
        Bson::String(_) => Form::Text,
        _ => Form::Scaled(scale),
    }
}

/// A serde adapter module for a `Decimal` field stored in one [`Form`], with its `option`
/// twin.
macro_rules! form_adapter {
    ($(#[$doc:meta])* $name:ident, $form:expr, $stored:literal) => {
        $(#[$doc])*
        pub mod $name {
            use super::*;

            #[doc = concat!("Writes a `Decimal` as ", $stored, ".")]
            pub fn serialize<S: Serializer>(amount: &Decimal, s: S) -> Result<S::Ok, S::Error> {
                write(amount, $form, s)
            }

            #[doc = concat!("Reads ", $stored, " into a `Decimal`, exactly.")]
            pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Decimal, D::Error> {
                read_with(d, |_| $form)
            }

            /// The same for `Option<Decimal>` (`None` is null; add `#[serde(default)]` to read
            /// a missing field as `None`).
            pub mod option {
                use super::super::*;

                #[doc = concat!("Writes `Some` as ", $stored, ", `None` as null.")]
                pub fn serialize<S: Serializer>(
                    amount: &Option<Decimal>,
                    s: S,
                ) -> Result<S::Ok, S::Error> {
                    write_option(amount, $form, s)
                }

                #[doc = concat!("Reads ", $stored, " or null.")]
                pub fn deserialize<'de, D: Deserializer<'de>>(
                    d: D,
                ) -> Result<Option<Decimal>, D::Error> {
                    read_option_with(d, |_| $form)
                }
            }
        }
    };
}

form_adapter!(
    /// `#[serde(with = "pattern_core::money::decimal128")]` on a `Decimal` field: stored as a
    /// BSON Decimal128, exactly (its places kept: `80.00` stays `80.00`). Reading refuses
    /// anything but a finite Decimal128 that a `Decimal` holds exactly.
    ///
    /// ```
    /// use pattern_core::money;
    /// use rust_decimal::Decimal;
    ///
    /// #[derive(serde::Serialize, serde::Deserialize)]
    /// struct Price {
    ///     #[serde(with = "money::decimal128")]
    ///     price: Decimal,
    ///     #[serde(default, with = "money::decimal128::option")]
    ///     discount: Option<Decimal>,
    /// }
    /// let doc = bson::to_document(&Price { price: "19.99".parse()?, discount: None })?;
    /// assert_eq!(doc.get("price"), Some(&bson::Bson::Decimal128("19.99".parse()?)));
    /// let back: Price = bson::from_document(doc)?;
    /// assert_eq!(back.price.to_string(), "19.99");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    decimal128,
    Form::Decimal128,
    "a Decimal128"
);

form_adapter!(
    /// `#[serde(with = "pattern_core::money::text")]` on a `Decimal` field: stored as its
    /// display string (`"24.95"`), read strictly ([`parse_text`](super::parse_text)).
    text,
    Form::Text,
    "its display string"
);

/// A `Decimal` field stored as an integer scaled by 10^`N` (the article's scale factor), the
/// scale as a const argument:
/// `#[serde(serialize_with = "money::scaled::serialize::<2, _>", deserialize_with =
/// "money::scaled::deserialize::<2, _>")]`, or the field typed [`Scaled<2>`](Scaled).
/// Writing refuses an amount with more places than `N` (it would round).
///
/// ```
/// use pattern_core::money;
/// use rust_decimal::Decimal;
///
/// #[derive(serde::Serialize, serde::Deserialize)]
/// struct Shirt {
///     #[serde(
///         serialize_with = "money::scaled::serialize::<2, _>",
///         deserialize_with = "money::scaled::deserialize::<2, _>"
///     )]
///     price: Decimal,
/// }
/// let shirt: Shirt = bson::from_document(bson::doc! {"price": 1999_i64})?;
/// assert_eq!(shirt.price.to_string(), "19.99");
/// let too_fine = Shirt { price: "19.999".parse()? };
/// assert!(bson::to_document(&too_fine).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub mod scaled {
    use super::*;

    /// Writes `amount * 10^N` as an Int64 (refused past i64 or with more places than `N`).
    pub fn serialize<const N: u32, S: Serializer>(
        amount: &Decimal,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        const { assert!(N <= MAX_SCALE, "a Decimal holds at most 28 places") };
        write(amount, Form::Scaled(N), s)
    }

    /// Reads an integer (Int32, Int64, or a double holding an integer up to 2^53) as that
    /// integer over 10^`N`.
    pub fn deserialize<'de, const N: u32, D: Deserializer<'de>>(d: D) -> Result<Decimal, D::Error> {
        const { assert!(N <= MAX_SCALE, "a Decimal holds at most 28 places") };
        read_with(d, |_| Form::Scaled(N))
    }
}

/// A `Decimal` field of a collection part-way through a conversion: reads whichever form a
/// document holds (a Decimal128, a display string, or an integer scaled by 10^`N`), writes a
/// Decimal128. `deserialize_with = "money::any_form::deserialize::<2, _>"` beside
/// `serialize_with = "money::decimal128::serialize"`, or the field typed
/// [`AnyForm<2>`](AnyForm).
pub mod any_form {
    use super::*;

    /// Reads any of the three forms (integers at scale `N`), exactly.
    pub fn deserialize<'de, const N: u32, D: Deserializer<'de>>(d: D) -> Result<Decimal, D::Error> {
        const { assert!(N <= MAX_SCALE, "a Decimal holds at most 28 places") };
        read_with(d, any(N))
    }

    /// The same for `Option<Decimal>` (null or missing with `#[serde(default)]`: `None`).
    pub fn deserialize_option<'de, const N: u32, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Decimal>, D::Error> {
        const { assert!(N <= MAX_SCALE, "a Decimal holds at most 28 places") };
        read_option_with(d, any(N))
    }
}

/// A `Decimal` stored as an integer scaled by 10^`N`: `Scaled<2>` holds 19.99 as `1999`
/// (the article's `{price: 9990, currency: "USD"}` is `Scaled<3>`). Serializing refuses an
/// amount with more than `N` places or past i64; reading takes an Int32, an Int64, or a double
/// holding an integer up to 2^53.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Scaled<const N: u32>(pub Decimal);

/// A `Decimal` read from any of the three forms (a Decimal128, a display string, an integer
/// at scale `N`) and written as a Decimal128: the type of a field whose collection is being
/// converted ([`adopt::money::convert_money`](crate::adopt::money::convert_money)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AnyForm<const N: u32>(pub Decimal);

macro_rules! wrapper {
    ($name:ident, $write:expr, $read:expr) => {
        impl<const N: u32> Serialize for $name<N> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                const { assert!(N <= MAX_SCALE, "a Decimal holds at most 28 places") };
                write(&self.0, $write, s)
            }
        }

        impl<'de, const N: u32> Deserialize<'de> for $name<N> {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                const { assert!(N <= MAX_SCALE, "a Decimal holds at most 28 places") };
                read_with(d, $read).map($name)
            }
        }

        impl<const N: u32> From<Decimal> for $name<N> {
            fn from(d: Decimal) -> Self {
                $name(d)
            }
        }

        impl<const N: u32> From<$name<N>> for Decimal {
            fn from(w: $name<N>) -> Decimal {
                w.0
            }
        }

        impl<const N: u32> std::fmt::Display for $name<N> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

wrapper!(Scaled, Form::Scaled(N), |_| Form::Scaled(N));
wrapper!(AnyForm, Form::Decimal128, any(N));
