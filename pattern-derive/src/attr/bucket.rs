//! `#[bucket(...)]`: the struct's keys and the fields' flags (`key`, `items`).

use proc_macro2::{Group, Ident, Span};
use quote::quote;
use syn::meta::ParseNestedMeta;
use syn::{token, Member};

use super::Slot;
use crate::ast;
use crate::ctxt::Ctxt;
use crate::names::{check_field_name, field_name_problem, Name};

pub(crate) const ATTR: &str = "bucket";
/// The fields' flags, in the order of [`KEY`] and [`ITEMS`].
pub(crate) const FLAGS: [&str; 2] = ["key", "items"];
pub(crate) const KEY: usize = 0;
pub(crate) const ITEMS: usize = 1;
const KEYS: &[&str] = &[
    "collection",
    "size",
    "time",
    "count",
    "page",
    "summary",
    "validate",
    "span",
    "granularity",
    "rollup",
];

/// The struct's `#[bucket(...)]` keys.
#[derive(Default)]
pub(crate) struct Bucket {
    pub collection: Slot<Name>,
    pub size: Slot<u32>,
    /// The item's field named by `time = "..."`, spanned at that literal (so that rustc's "no
    /// field" error points there).
    pub time: Slot<Member>,
    pub count: Slot<Name>,
    pub page: Slot<Name>,
    /// `summary(...)`'s aggregates in the attribute's order.
    pub summary: Slot<Vec<Aggregate>>,
    pub validate: Slot<()>,
    /// `span = "1d"`, in milliseconds, with the literal's span.
    pub span: Slot<(i64, Span)>,
    /// `granularity = "..."`: a preset span.
    pub granularity: Slot<(i64, Span)>,
    /// `rollup`, at its key.
    pub rollup: Slot<Span>,
}

impl ast::Attrs for Bucket {
    const DERIVE: &'static str = "Bucket";
    const ATTR: &'static str = ATTR;
    /// Which of [`FLAGS`] the field has.
    type Field = [bool; 2];

    fn key(&mut self, cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<()> {
        match super::key_name(meta).as_str() {
            // #[bucket(collection = "trades")]
            "collection" => self.collection.parse(cx, meta, super::collection),
            // #[bucket(size = 10)]
            "size" => self.size.parse(cx, meta, super::positive_int),
            // #[bucket(time = "date")]
            "time" => self.time.parse(cx, meta, time_field),
            // #[bucket(count = "count")]
            "count" => self.count.parse(cx, meta, super::field_name),
            // #[bucket(page = "page")]
            "page" => self.page.parse(cx, meta, super::field_name),
            // #[bucket(summary(sum = "qty", min = "price", max = "price"))]
            "summary" => self.summary.parse(cx, meta, summary),
            // #[bucket(validate)]
            "validate" => self.validate.parse(cx, meta, super::flag),
            // #[bucket(span = "1d")]
            "span" => self.span.parse(cx, meta, span),
            // #[bucket(granularity = "hours")]
            "granularity" => self.granularity.parse(cx, meta, granularity),
            // #[bucket(rollup)]
            "rollup" => self.rollup.parse(cx, meta, super::flag_at),
            _ => super::unknown(cx, meta, ATTR, KEYS),
        }
    }

    fn field(cx: &Ctxt, field: &syn::Field) -> [bool; 2] {
        super::flags(cx, &field.attrs, ATTR, FLAGS)
    }
}

impl Bucket {
    /// The aggregates of `summary(...)`; none without it.
    pub(crate) fn summary(&self) -> &[Aggregate] {
        self.summary.value().map_or(&[], Vec::as_slice)
    }

    /// A bucket's span in milliseconds: `span`'s, else `granularity`'s (the check pass refuses
    /// both).
    pub(crate) fn span_ms(&self) -> Option<i64> {
        self.span
            .value()
            .or(self.granularity.value())
            .map(|(ms, _)| *ms)
    }
}

/// What an aggregate of `summary(...)` computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Sum,
    Min,
    Max,
}

impl Op {
    pub(crate) const ALL: [Op; 3] = [Op::Sum, Op::Min, Op::Max];

    /// The key in `summary(...)`, and the suffix of the bucket field (`qty_sum`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Op::Sum => "sum",
            Op::Min => "min",
            Op::Max => "max",
        }
    }
}

/// One aggregate of `summary(...)`: `sum = "qty"`.
#[derive(Clone, Debug)]
pub(crate) struct Aggregate {
    pub op: Op,
    /// The item field's BSON name, spanned at its literal.
    pub item_field: Name,
    /// The bucket field keeping it: `<item_field>_<op>` (`qty_sum`).
    pub field: String,
    /// Its field in `<Name>Summary`: `field` when that is a Rust identifier, else `field`
    /// with every character but ASCII letters, digits and `_` replaced by `_` (and a `_`
    /// before a leading digit).
    pub rust_field: String,
}

impl Aggregate {
    pub(crate) fn new(op: Op, item_field: Name) -> Self {
        let field = format!("{}_{}", item_field.value, op.name());
        let rust_field = rust_ident(&field);
        Aggregate {
            op,
            item_field,
            field,
            rust_field,
        }
    }
}

/// `name` if it is an identifier Rust accepts as a field name, else made one.
fn rust_ident(name: &str) -> String {
    if !name.starts_with("r#") && syn::parse_str::<Ident>(name).is_ok() {
        return name.to_owned();
    }
    let mut ident: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if ident.starts_with(|c: char| c.is_ascii_digit()) {
        ident.insert(0, '_');
    }
    ident
}

/// `time = "date"`: a field of the item type, spanned at the literal.
fn time_field(cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<Option<Member>> {
    let Some(lit) = super::string(cx, meta)? else {
        return Ok(None);
    };
    let member = lit.parse::<Member>();
    if member.is_err() {
        cx.error_at(
            lit.span(),
            "time must name a field of the item type, like `time = \"date\"`",
        );
    }
    Ok(member.ok())
}

/// The longest span a bucket may have, in milliseconds.
const MAX_SPAN_MS: i64 = 366 * 86_400_000;

/// `span = "1d"`: a number and a unit (`s`, `m`, `h`, `d`), from one second to 366 days, in
/// milliseconds, with the literal's span.
fn span(cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<Option<(i64, Span)>> {
    let Some(lit) = super::string(cx, meta)? else {
        return Ok(None);
    };
    let text = lit.value();
    let digits = text.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = match &text[digits.len()..] {
        "s" => Some(1_000),
        "m" => Some(60_000),
        "h" => Some(3_600_000),
        "d" => Some(86_400_000),
        _ => None,
    };
    let ms = match (digits.parse::<i64>(), unit) {
        (Ok(n), Some(unit)) if n >= 1 => n.checked_mul(unit).filter(|ms| *ms <= MAX_SPAN_MS),
        _ => None,
    };
    match ms {
        Some(ms) => Ok(Some((ms, lit.span()))),
        None => {
            cx.error_at(
                lit.span(),
                "span must be a whole number of seconds, minutes, hours or days from 1s to 366d, \
                 like `span = \"1d\"` (units: s, m, h, d)",
            );
            Ok(None)
        }
    }
}

/// `granularity = "hours"`: the span of a time-series collection of that granularity.
fn granularity(cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<Option<(i64, Span)>> {
    let Some(lit) = super::string(cx, meta)? else {
        return Ok(None);
    };
    const SPANS: [(&str, i64); 3] = [
        ("seconds", 3_600_000),
        ("minutes", 86_400_000),
        ("hours", 30 * 86_400_000),
    ];
    match SPANS.iter().find(|(name, _)| *name == lit.value()) {
        Some((_, ms)) => Ok(Some((*ms, lit.span()))),
        None => {
            cx.error_at(
                lit.span(),
                "granularity must be one of \"seconds\" (buckets span one hour), \"minutes\" (one \
                 day) or \"hours\" (30 days), as a time-series collection's; or give `span = \"...\"`",
            );
            Ok(None)
        }
    }
}

/// `summary(sum = "qty", min = "price", ...)`: the aggregates in order, each a valid field
/// name, no (op, field) twice.
fn summary(cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<Option<Vec<Aggregate>>> {
    const SYNTAX: &str = "summary(sum = \"qty\", min = \"price\", max = \"price\")";
    if !meta.input.peek(token::Paren) {
        cx.error_spanned_by(
            &meta.path,
            format!("summary takes a list of aggregates: `{SYNTAX}`"),
        );
        super::skip_value(meta.input)?;
        return Ok(None);
    }
    let group: Group = meta.input.fork().parse()?;
    if group.stream().is_empty() {
        let path = &meta.path;
        cx.error_spanned_by(
            quote!(#path #group),
            format!("summary(...) is empty; name at least one aggregate: `{SYNTAX}`"),
        );
        super::skip_value(meta.input)?;
        return Ok(Some(Vec::new()));
    }
    let mut aggs = Vec::<Aggregate>::new();
    meta.parse_nested_meta(|m| {
        let Some(op) = Op::ALL.into_iter().find(|op| m.path.is_ident(op.name())) else {
            cx.syn_error(m.error(format!(
                "unknown key `{}` in summary(...); expected one of: `sum`, `min`, `max`",
                super::key_name(&m)
            )));
            return super::skip_value(m.input);
        };
        let Some(lit) = super::string(cx, &m)? else {
            return Ok(());
        };
        let name = Name::given(lit.value(), lit.span());
        if field_name_problem(&name.value).is_some() {
            check_field_name(cx, &name);
        } else if aggs
            .iter()
            .any(|a| a.op == op && a.item_field.value == name.value)
        {
            cx.error_at(
                lit.span(),
                format!(
                    "duplicate aggregate `{} = {:?}` in summary(...)",
                    op.name(),
                    name.value
                ),
            );
        } else {
            aggs.push(Aggregate::new(op, name));
        }
        Ok(())
    })?;
    Ok(Some(aggs))
}
