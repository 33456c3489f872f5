//! The Rust code of a finding: field types inferred from a sample's profile (BSON types to Rust,
//! `Option` where a field is missing or null in part of the sample, a struct per embedded
//! document), identifiers from stored names (serde renames where a stored name is not one), and
//! the structs and enums rendered ready to paste.

use std::collections::BTreeSet;

use super::profile::{Field, Shape};
use crate::codec::BsonType;

/// Fields an embedded document may have to get a struct of its own (more: a map-like
/// document, typed `bson::Document`).
const MAX_STRUCT_FIELDS: usize = 32;

/// The code of one finding: its `use` lines and its items, in order.
#[derive(Default)]
pub(super) struct Code {
    uses: BTreeSet<String>,
    items: Vec<String>,
    /// Type names taken (by the items, and by the finding's own types).
    taken: BTreeSet<String>,
}

/// A struct (or an enum's variant) being written.
pub(super) struct Item {
    /// Doc comment lines.
    pub doc: Vec<String>,
    /// What it derives.
    pub derives: Vec<&'static str>,
    /// Its attributes (`#[outlier(...)]`, `#[serde(...)]`), whole.
    pub attrs: Vec<String>,
    /// Its name.
    pub name: String,
    /// Its fields.
    pub fields: Vec<RustField>,
}

/// One field of an [`Item`].
pub(super) struct RustField {
    /// Doc comment lines.
    pub doc: Vec<String>,
    /// Its attributes, whole.
    pub attrs: Vec<String>,
    /// Its Rust name.
    pub name: String,
    /// Its type.
    pub ty: String,
}

impl Code {
    /// Adds a `use` line (without `use ` and `;`).
    pub(super) fn uses(&mut self, path: &str) {
        self.uses.insert(path.to_owned());
    }

    /// A type name not taken yet, from `wanted` (`Wanted2`, `Wanted3`... if it is), taken now.
    pub(super) fn type_name(&mut self, wanted: &str) -> String {
        let mut name = wanted.to_owned();
        let mut n = 2;
        while self.taken.contains(&name) {
            name = format!("{wanted}{n}");
            n += 1;
        }
        self.taken.insert(name.clone());
        name
    }

    /// Adds an item already rendered.
    pub(super) fn push(&mut self, item: String) {
        self.items.push(item);
    }

    /// Adds a struct.
    pub(super) fn push_struct(&mut self, item: &Item) {
        self.items.push(item.render_struct());
    }

    /// The code: the `use` lines in rustfmt's order (so that `cargo fmt` leaves pasted code
    /// as printed), then each item, a blank line apart.
    pub(super) fn render(&self) -> String {
        let mut out = String::new();
        let mut uses: Vec<&String> = self.uses.iter().collect();
        uses.sort_by_key(|u| use_order(u));
        for u in uses {
            out.push_str(&format!("use {u};\n"));
        }
        for item in &self.items {
            out.push('\n');
            out.push_str(item);
        }
        out
    }

    /// The fields of `shape` as struct fields, in the order documents hold them, leaving out
    /// `skip` (stored names); embedded documents get a struct of their own (named after the
    /// field), pushed before the caller's.
    pub(super) fn fields(&mut self, shape: &Shape, skip: &[&str]) -> Vec<(String, RustField)> {
        let mut names = BTreeSet::new();
        let mut out = Vec::new();
        for (stored, field) in shape.ordered() {
            if skip.contains(&stored.as_str()) {
                continue;
            }
            let ty = self.field_type(field, shape.count, stored);
            out.push((stored.clone(), self.field(stored, ty, &mut names)));
        }
        out
    }

    /// A field stored as `stored`, of type `ty`: its Rust name (unique among `names`) and its
    /// rename when the stored name is not that identifier.
    pub(super) fn field(
        &mut self,
        stored: &str,
        ty: String,
        names: &mut BTreeSet<String>,
    ) -> RustField {
        let (name, rename) = field_ident(stored, names);
        let attrs = if rename {
            vec![format!("#[serde(rename = {})]", string_literal(stored))]
        } else {
            Vec::new()
        };
        RustField {
            doc: Vec::new(),
            attrs,
            name,
            ty,
        }
    }

    /// The type of a field seen in `field.present` of `of` documents: `Option` when it is
    /// missing from some or null in some.
    pub(super) fn field_type(&mut self, field: &Field, of: u64, stored: &str) -> String {
        let base = self.base_type(field, stored);
        if field.present < of || field.count(BsonType::Null) > 0 {
            format!("Option<{base}>")
        } else {
            base
        }
    }

    /// The type of a field's values, nulls aside.
    pub(super) fn base_type(&mut self, field: &Field, stored: &str) -> String {
        let types: BTreeSet<BsonType> = (field.types.keys())
            .map(|t| t.unwrap_or(BsonType::Null))
            .filter(|t| *t != BsonType::Null)
            .collect();
        if field.types.contains_key(&None) {
            return "bson::Bson".into();
        }
        if let Some(integer) = integer_type(field) {
            return integer.into();
        }
        let numbers = [BsonType::Int, BsonType::Long, BsonType::Double];
        let all = |ts: &[BsonType]| !types.is_empty() && types.iter().all(|t| ts.contains(t));
        if all(&numbers) {
            return "f64".into();
        }
        let one = if types.len() == 1 {
            types.first().copied()
        } else {
            None
        };
        match one {
            Some(BsonType::String) => "String".into(),
            Some(BsonType::Bool) => "bool".into(),
            Some(BsonType::Date) => "bson::DateTime".into(),
            Some(BsonType::ObjectId) => "bson::oid::ObjectId".into(),
            Some(BsonType::Decimal) => "bson::Decimal128".into(),
            Some(BsonType::BinData) => "bson::Binary".into(),
            Some(BsonType::Timestamp) => "bson::Timestamp".into(),
            Some(BsonType::Regex) => "bson::Regex".into(),
            Some(BsonType::Object) => match &field.sub {
                Some(sub) if !sub.truncated && sub.fields.len() <= MAX_STRUCT_FIELDS => {
                    self.embedded(sub, stored)
                }
                _ => "bson::Document".into(),
            },
            Some(BsonType::Array) => match &field.elements {
                Some(e) if e.present > 0 => {
                    let item = self.base_type(e, &singular(stored));
                    if e.count(BsonType::Null) > 0 {
                        format!("Vec<Option<{item}>>")
                    } else {
                        format!("Vec<{item}>")
                    }
                }
                _ => "Vec<bson::Bson>".into(),
            },
            _ => "bson::Bson".into(),
        }
    }

    /// A struct for the embedded documents of field `stored`; its name.
    fn embedded(&mut self, shape: &Shape, stored: &str) -> String {
        let name = self.type_name(&type_ident(stored));
        let fields = self
            .fields(shape, &[])
            .into_iter()
            .map(|(_, f)| f)
            .collect();
        self.uses("serde::{Deserialize, Serialize}");
        self.push_struct(&Item {
            doc: vec![format!("The documents embedded in `{stored}`.")],
            derives: vec!["Debug", "Clone", "Serialize", "Deserialize"],
            attrs: Vec::new(),
            name: name.clone(),
            fields,
        });
        name
    }
}

impl Item {
    /// `struct Name { ... }` with its docs, derives and attributes.
    pub(super) fn render_struct(&self) -> String {
        self.render("", "struct ", "}\n")
    }

    /// The item as an enum's struct-like variant, indented.
    pub(super) fn render_variant(&self) -> String {
        self.render("    ", "", "},\n")
    }

    /// The item at `indent`: its head, `{keyword}Name {`, its fields one level in, and `close`.
    fn render(&self, indent: &str, keyword: &str, close: &str) -> String {
        let mut out = String::new();
        self.head(&mut out, indent);
        out.push_str(&format!("{indent}{keyword}{} {{\n", self.name));
        let inner = format!("{indent}    ");
        for f in &self.fields {
            f.render(&mut out, &inner);
        }
        out.push_str(&format!("{indent}{close}"));
        out
    }

    fn head(&self, out: &mut String, indent: &str) {
        for line in &self.doc {
            out.push_str(&format!("{indent}/// {line}\n"));
        }
        if !self.derives.is_empty() {
            out.push_str(&format!("{indent}#[derive({})]\n", self.derives.join(", ")));
        }
        for a in &self.attrs {
            out.push_str(&format!("{indent}{a}\n"));
        }
    }
}

impl RustField {
    fn render(&self, out: &mut String, indent: &str) {
        for line in &self.doc {
            out.push_str(&format!("{indent}/// {line}\n"));
        }
        for a in &self.attrs {
            out.push_str(&format!("{indent}{a}\n"));
        }
        out.push_str(&format!("{indent}{}: {},\n", self.name, self.ty));
    }
}

/// The Rust integer of a field whose values, nulls aside, are integers: `i32` when every one is
/// an `int`, `i64` when any is a `long`; `None` for any other field. The one mapping of every
/// finding's code, keys, `_id`s and attribute values included.
pub(super) fn integer_type(field: &Field) -> Option<&'static str> {
    if field.only(&[BsonType::Int]) {
        Some("i32")
    } else if field.only(&[BsonType::Int, BsonType::Long]) {
        Some("i64")
    } else {
        None
    }
}

/// The Rust type of a key the derives take (a `KeyPart`) for a field whose values, nulls
/// aside, are of one kind: an integer ([`integer_type`]), `String`, `bson::oid::ObjectId`;
/// `None` for any other field.
pub(super) fn key_type(field: &Field) -> Option<&'static str> {
    if let Some(integer) = integer_type(field) {
        Some(integer)
    } else if field.only(&[BsonType::String]) {
        Some("String")
    } else if field.only(&[BsonType::ObjectId]) {
        Some("bson::oid::ObjectId")
    } else {
        None
    }
}

/// Rust's keywords that can be written raw (`r#type`).
const RAW_KEYWORDS: [&str; 47] = [
    "as", "async", "await", "break", "const", "continue", "dyn", "else", "enum", "extern", "false",
    "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref",
    "return", "static", "struct", "trait", "true", "type", "unsafe", "use", "where", "while",
    "abstract", "become", "box", "do", "final", "macro", "override", "priv", "typeof", "unsized",
    "virtual", "yield", "try",
];
/// Keywords that cannot be raw identifiers.
const NOT_RAW: [&str; 5] = ["self", "Self", "super", "crate", "_"];

/// Whether `s` is a Rust keyword.
pub(super) fn is_keyword(s: &str) -> bool {
    RAW_KEYWORDS.contains(&s) || NOT_RAW.contains(&s)
}

/// The sort key rustfmt (style edition 2021) gives a `use` path: segment by segment, a
/// `snake_case` name before a `CamelCase` one before an `UPPER_SNAKE_CASE` one, then by text; a
/// `{...}` list after names. `pattern_core::document::Attributes` sorts before
/// `pattern_core::Document`.
fn use_order(path: &str) -> Vec<(u8, &str)> {
    path.split("::")
        .map(|segment| {
            let class = if segment.starts_with('{') {
                3
            } else if !segment.starts_with(char::is_uppercase) {
                0
            } else if segment.chars().all(|c| !c.is_lowercase()) && segment.len() > 1 {
                2
            } else {
                1
            };
            (class, segment)
        })
        .collect()
}

/// The Rust field name of a stored field name (unique among `taken`, which takes it), and
/// whether it needs `#[serde(rename = "...")]`: `customerId` → `customer_id`, `_id` → `id`,
/// `type` → `r#type`, `2fa` → `f_2fa`.
pub(super) fn field_ident(stored: &str, taken: &mut BTreeSet<String>) -> (String, bool) {
    let mut base = if stored == "_id" {
        "id".to_owned()
    } else {
        snake_case(stored)
    };
    if base.is_empty() {
        base = "field".into();
    }
    if base.starts_with(|c: char| c.is_ascii_digit()) {
        base = format!("f_{base}");
    }
    if NOT_RAW.contains(&base.as_str()) {
        base.push('_');
    }
    let mut name = base.clone();
    let mut n = 2;
    while taken.contains(&name) {
        name = format!("{base}_{n}");
        n += 1;
    }
    taken.insert(name.clone());
    let rename = name != stored;
    if RAW_KEYWORDS.contains(&name.as_str()) {
        name = format!("r#{name}");
    }
    (name, rename)
}

/// `customerId` → `customer_id`, `HTTPCode` → `http_code`, `a-b c` → `a_b_c`.
pub(super) fn snake_case(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() {
            let prev = i.checked_sub(1).map(|j| chars[j]);
            let next = chars.get(i + 1);
            let boundary = match prev {
                Some(p) if p.is_ascii_lowercase() || p.is_ascii_digit() => true,
                Some(p) if p.is_ascii_uppercase() => next.is_some_and(|n| n.is_ascii_lowercase()),
                _ => false,
            };
            if boundary && !out.ends_with('_') {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    out.trim_matches('_').to_owned()
}

/// `customers_purchased` → `CustomersPurchased`, `order-line` → `OrderLine`.
pub(super) fn type_ident(s: &str) -> String {
    let mut out = String::new();
    for word in snake_case(s).split('_').filter(|w| !w.is_empty()) {
        let mut cs = word.chars();
        if let Some(first) = cs.next() {
            out.push(first.to_ascii_uppercase());
            out.push_str(cs.as_str());
        }
    }
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out = format!("T{out}");
    }
    if out == "Self" {
        out.push('_');
    }
    out
}

/// A plural's singular, for names made from a collection's or an array's: `books` → `book`,
/// `categories` → `category`, `addresses` → `address`; other words as they are.
pub(super) fn singular(s: &str) -> String {
    if let Some(stem) = s.strip_suffix("ies").filter(|st| !st.is_empty()) {
        return format!("{stem}y");
    }
    for end in ["sses", "xes", "ches", "shes"] {
        if let Some(stem) = s.strip_suffix(end) {
            return format!("{stem}{}", &end[..end.len() - 2]);
        }
    }
    match s.strip_suffix('s') {
        Some(stem) if !stem.is_empty() && !stem.ends_with(['s', 'u', 'i']) => stem.to_owned(),
        _ => s.to_owned(),
    }
}

/// A Rust string literal of `s`.
pub(super) fn string_literal(s: &str) -> String {
    format!("{s:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `use` lines come out as rustfmt orders them (the pass cases in `tests/ui/examples/`
    /// are formatted by `cargo fmt` and must stay byte-equal to what `advise` prints).
    #[test]
    fn uses_in_rustfmt_order() {
        let mut code = Code::default();
        for path in [
            "serde::{Deserialize, Serialize}",
            "pattern_core::Document",
            "pattern_core::document::Attributes",
            "pattern_core::MAX_DEPTH",
            "pattern_core::Bucket",
        ] {
            code.uses(path);
        }
        assert_eq!(
            code.render(),
            "use pattern_core::document::Attributes;\nuse pattern_core::Bucket;\n\
             use pattern_core::Document;\nuse pattern_core::MAX_DEPTH;\n\
             use serde::{Deserialize, Serialize};\n"
        );
    }

    #[test]
    fn identifiers() {
        let mut taken = BTreeSet::new();
        let mut ident = |s: &str| field_ident(s, &mut taken);
        assert_eq!(ident("_id"), ("id".into(), true));
        assert_eq!(ident("customerId"), ("customer_id".into(), true));
        assert_eq!(ident("qty"), ("qty".into(), false));
        assert_eq!(ident("type"), ("r#type".into(), false));
        assert_eq!(ident("self"), ("self_".into(), true));
        assert_eq!(ident("2fa"), ("f_2fa".into(), true));
        assert_eq!(ident("HTTPCode"), ("http_code".into(), true));
        assert_eq!(ident("a-b c"), ("a_b_c".into(), true));
        assert_eq!(ident("id"), ("id_2".into(), true));
        assert_eq!(ident("é"), ("field".into(), true));
        assert_eq!(type_ident("customers_purchased"), "CustomersPurchased");
        assert_eq!(type_ident("trade-history"), "TradeHistory");
        assert_eq!(type_ident("9lives"), "T9lives");
        assert_eq!(singular("categories"), "category");
        assert_eq!(singular("addresses"), "address");
        assert_eq!(singular("sales"), "sale");
        assert_eq!(singular("status"), "status");
        assert_eq!(singular("data"), "data");
    }
}
