//! Typed field paths and the filters and updates built from them: a field's values are of the
//! field's type, `$inc` takes numeric fields only, `$push` array fields and their item type.
//! What cannot be typed does not compile; what cannot be serialized is reported when the
//! filter or update is sent.

use std::fmt;
use std::marker::PhantomData;

use bson::Bson;
use serde::Serialize;

use super::Document;
use crate::key::IdRef;
use crate::money::{Decimal, Form};
use crate::spec::Normalize;
use crate::store::query::{self, Path};
use crate::{Error, Result};

/// A top-level field of the document type `D` holding a `T`, by its BSON name (serde's renames
/// applied). `#[derive(Document)]` generates one per field as an associated constant
/// (`Book::AVAILABLE: Field<Book, i32>`); filters ([`Field::eq`], [`Field::gt`]...) and
/// updates ([`Update::inc`], [`Update::push`]...) take values of type `T` only, stored as the
/// field stores them: as serde writes a `T` ([`Field::new`]), or, for a `Decimal` amount, in
/// its money form ([`Field::decimal128`], [`Field::scaled`], [`Field::text`]).
pub struct Field<D, T> {
    name: &'static str,
    /// How a value of the field is stored.
    encode: Encode<T>,
    /// `$inc` can add to what it stores (not to an amount stored as text).
    numeric: bool,
    of: PhantomData<fn() -> (D, T)>,
}

/// A field value as stored, or why it cannot be.
type Encode<T> = fn(&T) -> Result<Bson, String>;

/// serde's way: what `bson::to_bson` gives.
fn serde_value<T: Serialize>(value: &T) -> Result<Bson, String> {
    bson::to_bson(value).map_err(|e| e.to_string())
}

impl<D, T> Clone for Field<D, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<D, T> Copy for Field<D, T> {}

impl<D, T> fmt::Debug for Field<D, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Field({:?})", self.name)
    }
}

impl<D, T: Serialize> Field<D, T> {
    /// The field stored as `name`, its values as serde writes a `T`. The derive builds these;
    /// by hand, the name is the caller's promise that `D` stores a `T` there.
    pub const fn new(name: &'static str) -> Self {
        Field::stored(name, serde_value::<T>, true)
    }
}

impl<D, T> Field<D, T> {
    const fn stored(name: &'static str, encode: Encode<T>, numeric: bool) -> Self {
        Field {
            name,
            encode,
            numeric,
            of: PhantomData,
        }
    }

    /// Its BSON name.
    pub const fn name(self) -> &'static str {
        self.name
    }
}

impl<D, T> Field<D, T> {
    /// The same stored field as a path of the document type `E`: a polymorphic enum's path for
    /// a field its variants share (the derive builds it from the first variant's and checks
    /// the others' with the same check).
    pub const fn shared<E>(self) -> Field<E, T> {
        Field {
            name: self.name,
            encode: self.encode,
            numeric: self.numeric,
            of: PhantomData,
        }
    }
}

/// A compile-time check the polymorphic derive makes: two variants' paths of a shared field
/// (the same `T` by their types) store it under the same name.
pub const fn same_field<A, B, T>(a: Field<A, T>, b: Field<B, T>) {
    let (x, y) = (a.name.as_bytes(), b.name.as_bytes());
    let mut same = x.len() == y.len();
    let mut i = 0;
    while same && i < x.len() {
        same = x[i] == y[i];
        i += 1;
    }
    if !same {
        panic!("a shared field is stored under different names in two variants");
    }
}

impl<D> Field<D, Decimal> {
    /// A `Decimal` amount stored as a Decimal128 (`#[serde(with = "money::decimal128")]`, or
    /// `serialize_with = "money::decimal128::serialize"` beside `money::any_form`): values
    /// compare, sort and add (`$inc`) exactly, on both stores.
    pub const fn decimal128(name: &'static str) -> Self {
        Field::stored(name, money_value::<MONEY_DECIMAL128>, true)
    }

    /// A `Decimal` amount stored scaled by 10^`N` as an Int64 (`money::scaled::serialize::<N,
    /// _>`): a value with more places than `N` is refused when the filter or update is sent.
    pub const fn scaled<const N: u32>(name: &'static str) -> Self {
        Field::stored(name, money_value::<N>, true)
    }

    /// A `Decimal` amount stored as its display string (`#[serde(with = "money::text")]`):
    /// equality only means the same string, order is the strings' order, and `$inc` is
    /// refused (it cannot add to a string).
    pub const fn text(name: &'static str) -> Self {
        Field::stored(name, money_value::<MONEY_TEXT>, false)
    }
}

impl<D> Field<D, Option<Decimal>> {
    /// An `Option<Decimal>` stored as a Decimal128 or null (`money::decimal128::option`).
    pub const fn decimal128_option(name: &'static str) -> Self {
        Field::stored(name, money_option::<MONEY_DECIMAL128>, false)
    }

    /// An `Option<Decimal>` stored as a display string or null (`money::text::option`).
    pub const fn text_option(name: &'static str) -> Self {
        Field::stored(name, money_option::<MONEY_TEXT>, false)
    }
}

/// The money forms' codes for [`money_value`]: a scale (0..=28), or one of these.
const MONEY_DECIMAL128: u32 = u32::MAX;
const MONEY_TEXT: u32 = u32::MAX - 1;

/// An amount as its form stores it.
fn money_value<const FORM: u32>(amount: &Decimal) -> Result<Bson, String> {
    let form = match FORM {
        MONEY_DECIMAL128 => Form::Decimal128,
        MONEY_TEXT => Form::Text,
        scale => Form::Scaled(scale),
    };
    form.write(amount).map_err(|e| e.to_string())
}

/// An optional amount as its form stores it: `None` as null.
fn money_option<const FORM: u32>(amount: &Option<Decimal>) -> Result<Bson, String> {
    amount.as_ref().map_or(Ok(Bson::Null), money_value::<FORM>)
}

impl<D: Document, T> Field<D, T> {
    /// A value of the field as stored, normalised when the field is a keyword array.
    fn value(self, value: &T) -> Result<Bson, String> {
        let mut v = (self.encode)(value).map_err(|e| {
            format!(
                "a value of field `{}` of `{}` does not serialize: {e}",
                self.name,
                D::COLLECTION
            )
        })?;
        normalize_keywords(keywords_of::<D>(self.name), &mut v);
        Ok(v)
    }

    fn cond(self, value: &T, leaf: fn(Path, Bson) -> query::Filter) -> Filter<D> {
        Filter::leaf(
            self.name,
            self.value(value).map(|v| leaf(self.name.into(), v)),
        )
    }

    /// `{field: value}`: equal (an array field: equal as a whole).
    pub fn eq(self, value: impl Into<T>) -> Filter<D> {
        self.cond(&value.into(), query::Filter::Eq)
    }
    /// `{field: {$ne: value}}` (also matches a missing field).
    pub fn ne(self, value: impl Into<T>) -> Filter<D> {
        self.cond(&value.into(), query::Filter::Ne)
    }
    /// `{field: {$gt: value}}` (values of the same BSON type bracket only, as on MongoDB).
    pub fn gt(self, value: impl Into<T>) -> Filter<D> {
        self.cond(&value.into(), query::Filter::Gt)
    }
    /// `{field: {$gte: value}}`.
    pub fn gte(self, value: impl Into<T>) -> Filter<D> {
        self.cond(&value.into(), query::Filter::Gte)
    }
    /// `{field: {$lt: value}}`.
    pub fn lt(self, value: impl Into<T>) -> Filter<D> {
        self.cond(&value.into(), query::Filter::Lt)
    }
    /// `{field: {$lte: value}}`.
    pub fn lte(self, value: impl Into<T>) -> Filter<D> {
        self.cond(&value.into(), query::Filter::Lte)
    }
    /// `{field: {$in: [values]}}`: equal to one of them (none: matches nothing).
    pub fn is_in<V: Into<T>>(self, values: impl IntoIterator<Item = V>) -> Filter<D> {
        let values = values.into_iter().map(|v| self.value(&v.into()));
        let values = values.collect::<Result<Vec<_>, _>>();
        Filter::leaf(
            self.name,
            values.map(|vs| query::Filter::In(self.name.into(), vs)),
        )
    }
}

impl<D: Document, T: Serialize> Field<D, Vec<T>> {
    fn items(self, items: impl IntoIterator<Item = T>) -> Result<Vec<Bson>, String> {
        (items.into_iter())
            .map(|item| bson_of::<D>(self.name, &item))
            .collect()
    }

    /// `{field: item}`: the array holds the item (the seed's `{topics: "voyage"}`). On a
    /// keyword array, the keyword normalised as the field's keywords are.
    pub fn contains(self, item: impl Into<T>) -> Filter<D> {
        let item = bson_of::<D>(self.name, &item.into());
        Filter::leaf(
            self.name,
            item.map(|v| query::Filter::Eq(self.name.into(), v)),
        )
    }
    /// `{field: {$all: [items]}}`: the array holds every one of them (none: matches nothing).
    pub fn contains_all<V: Into<T>>(self, items: impl IntoIterator<Item = V>) -> Filter<D> {
        let items = self.items(items.into_iter().map(Into::into));
        Filter::leaf(
            self.name,
            items.map(|vs| query::Filter::All(self.name.into(), vs)),
        )
    }
    /// `{field: {$in: [items]}}`: the array holds at least one of them (none: matches
    /// nothing).
    pub fn contains_any<V: Into<T>>(self, items: impl IntoIterator<Item = V>) -> Filter<D> {
        let items = self.items(items.into_iter().map(Into::into));
        Filter::leaf(
            self.name,
            items.map(|vs| query::Filter::In(self.name.into(), vs)),
        )
    }
}

/// `value` as BSON, normalised when `field` is one of `D`'s keyword arrays (a keyword, or an
/// array of them).
pub(super) fn bson_of<D: Document>(field: &str, value: &impl Serialize) -> Result<Bson, String> {
    let mut v = bson::to_bson(value).map_err(|e| {
        format!(
            "a value of field `{field}` of `{}` does not serialize: {e}",
            D::COLLECTION
        )
    })?;
    normalize_keywords(keywords_of::<D>(field), &mut v);
    Ok(v)
}

/// How `field` of `D` is normalised (as is unless it is a keyword array).
pub(super) fn keywords_of<D: Document>(field: &str) -> Normalize {
    (D::KEYWORDS.iter())
        .find(|k| k.field == field)
        .map_or(Normalize::AsIs, |k| k.normalize)
}

/// Normalises a keyword, or each string of an array of keywords, in place.
pub(super) fn normalize_keywords(how: Normalize, v: &mut Bson) {
    if how == Normalize::AsIs {
        return;
    }
    match v {
        Bson::String(s) => *s = how.apply(s),
        Bson::Array(a) => a.iter_mut().for_each(|e| normalize_keywords(how, e)),
        _ => {}
    }
}

/// A query on documents of type `D`, built from its typed fields and combined with
/// [`Filter::and`] and [`Filter::or`]. A value that did not serialize is reported when the
/// filter is used.
pub struct Filter<D> {
    /// The filter, or why a value did not serialize.
    filter: Result<query::Filter, String>,
    /// It tests a keyword array (a keyword search: named so in the server's logs).
    keyword: bool,
    of: PhantomData<fn() -> D>,
}

impl<D> Clone for Filter<D> {
    fn clone(&self) -> Self {
        Filter {
            filter: self.filter.clone(),
            keyword: self.keyword,
            of: PhantomData,
        }
    }
}

impl<D> fmt::Debug for Filter<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.filter {
            Ok(q) => write!(f, "Filter({})", q.to_document()),
            Err(e) => write!(f, "Filter(error: {e})"),
        }
    }
}

impl<D: Document> Filter<D> {
    pub(super) fn leaf(field: &str, filter: Result<query::Filter, String>) -> Self {
        Filter {
            filter,
            keyword: D::KEYWORDS.iter().any(|k| k.field == field),
            of: PhantomData,
        }
    }

    /// The document whose `_id` is `id`.
    pub fn id<Q: IdRef<D::Id> + ?Sized>(id: &Q) -> Self {
        let id = super::id_bson(id).map_err(|e| e.to_string());
        Filter::leaf("_id", id.map(|v| query::Filter::Eq("_id".into(), v)))
    }

    /// Every document of the collection.
    pub fn everything() -> Self {
        Filter::leaf("", Ok(query::Filter::And(Vec::new())))
    }

    fn join(self, other: Self, or: bool) -> Self {
        let keyword = self.keyword || other.keyword;
        let filter = self.filter.and_then(|a| {
            let b = other.filter?;
            Ok(match (or, a) {
                (false, query::Filter::And(mut fs)) => {
                    fs.push(b);
                    query::Filter::And(fs)
                }
                (false, a) => query::Filter::And(vec![a, b]),
                (true, query::Filter::Or(mut fs)) => {
                    fs.push(b);
                    query::Filter::Or(fs)
                }
                (true, a) => query::Filter::Or(vec![a, b]),
            })
        });
        Filter {
            filter,
            keyword,
            of: PhantomData,
        }
    }

    /// Both hold.
    pub fn and(self, other: Self) -> Self {
        self.join(other, false)
    }

    /// Either holds.
    pub fn or(self, other: Self) -> Self {
        self.join(other, true)
    }

    /// The filter of the store contract, or the error of a value that did not serialize.
    pub fn to_query(&self) -> Result<query::Filter> {
        self.filter.clone().map_err(Error::invalid)
    }

    /// Whether it tests one of `D`'s keyword arrays.
    pub fn is_keyword_search(&self) -> bool {
        self.keyword
    }
}

/// A field type `$inc` can add to: a number.
#[diagnostic::on_unimplemented(
    message = "`$inc` needs a numeric field, and `{Self}` is not a number",
    label = "`$inc` on a `{Self}` field",
    note = "`$inc` applies to fields of type i32, i64, f64, bson::Decimal128, rust_decimal::Decimal or money::Scaled<N>; to change other fields, use `Update::set`"
)]
pub trait Numeric {}
impl Numeric for i32 {}
impl Numeric for i64 {}
impl Numeric for f64 {}
impl Numeric for bson::Decimal128 {}
/// A money amount stored as a Decimal128 or scaled Int64 (not as text: [`Field::text`]).
impl Numeric for Decimal {}
/// Stored as a scaled Int64: `$inc` adds exactly at the same scale.
impl<const N: u32> Numeric for crate::money::Scaled<N> {}

/// A field type `$push` can append to: an array of `Item`s.
#[diagnostic::on_unimplemented(
    message = "`$push` needs an array field, and `{Self}` is not a `Vec<T>`",
    label = "`$push` on a `{Self}` field",
    note = "`$push` appends to fields of type `Vec<T>`; to change other fields, use `Update::set`"
)]
pub trait Array {
    /// The type of its elements: what `$push` appends.
    type Item: Serialize;
}
impl<T: Serialize> Array for Vec<T> {
    type Item = T;
}

/// A modification of one document of type `D`, built from its typed fields: sent as one
/// update command ([`update_one`](super::update_one)). A value that did not serialize is
/// reported when the update is sent.
pub struct Update<D> {
    update: query::Update,
    /// Why a value did not serialize (the first).
    error: Option<String>,
    of: PhantomData<fn() -> D>,
}

impl<D> fmt::Debug for Update<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.error {
            None => write!(f, "Update({})", self.update.to_document()),
            Some(e) => write!(f, "Update(error: {e})"),
        }
    }
}

impl<D: Document> Default for Update<D> {
    fn default() -> Self {
        Self::new()
    }
}

impl<D: Document> Update<D> {
    /// An update that does nothing yet (sending it as it is is refused).
    pub fn new() -> Self {
        Update {
            update: query::Update::default(),
            error: None,
            of: PhantomData,
        }
    }

    fn with(
        mut self,
        name: &'static str,
        value: Result<Bson, String>,
        add: impl FnOnce(&mut query::Update, Path, Bson),
    ) -> Self {
        match value {
            Ok(v) => add(&mut self.update, name.into(), v),
            Err(e) => {
                self.error.get_or_insert(e);
            }
        }
        self
    }

    /// `$set: {field: value}`.
    pub fn set<T>(self, field: Field<D, T>, value: impl Into<T>) -> Self {
        let v = field.value(&value.into());
        self.with(field.name, v, |u, p, v| u.set.push((p, v)))
    }

    /// `$inc: {field: by}`: adds `by` to the number (a missing field becomes `by`), with
    /// MongoDB's rules for the result's type (an Int32 that overflows becomes an Int64; an
    /// Int64 that overflows refuses the update; Decimal128 sums are exact).
    pub fn inc<T: Numeric>(self, field: Field<D, T>, by: T) -> Self {
        let v = if field.numeric {
            field.value(&by)
        } else {
            Err(format!(
                "`$inc` cannot add to field `{}` of `{}`: it stores its amounts as text",
                field.name,
                D::COLLECTION
            ))
        };
        self.with(field.name, v, |u, p, v| u.sum.push((p, v)))
    }

    /// `$push: {field: item}`: appends the item to the array (a missing field becomes
    /// `[item]`). On a keyword array, the keyword normalised.
    pub fn push<T: Array>(self, field: Field<D, T>, item: T::Item) -> Self {
        let v = bson_of::<D>(field.name, &item);
        self.with(field.name, v, |u, p, v| u.push.push((p, vec![v])))
    }

    /// `$pull: {field: {$in: [item]}}`: removes every element equal to the item.
    pub fn pull<T: Array>(self, field: Field<D, T>, item: T::Item) -> Self {
        let v = bson_of::<D>(field.name, &item);
        self.with(field.name, v, |u, p, v| u.pull.push((p, v)))
    }

    /// The update of the store contract, or the error of a value that did not serialize or
    /// of an update that does nothing.
    pub fn into_query(self) -> Result<query::Update> {
        if let Some(e) = self.error {
            return Err(Error::invalid(e));
        }
        if self.update == query::Update::default() {
            return Err(Error::invalid(format!(
                "an update of `{}` with nothing to do",
                D::COLLECTION
            )));
        }
        Ok(self.update)
    }
}
