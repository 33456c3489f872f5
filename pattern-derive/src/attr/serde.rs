//! serde's attributes, as the derives read them (a pattern stores what serde writes): the
//! container's ([`Container`]) and a field's ([`Field`]). A field's BSON name is
//! `#[serde(rename = "...")]` on the field, else the container's `#[serde(rename_all = "...")]`
//! applied to its ident, else the ident.
//!
//! Other serde keys are skipped without a look: serde validates its own attributes.

use syn::meta::ParseNestedMeta;
use syn::{Attribute, DeriveInput, Ident, LitStr, Token};

use super::{each_key, skip_value};
use crate::ctxt::Ctxt;
use crate::names::Name;

/// What serde's attributes on the container say beside the names they give (the fields' and
/// the variants' names carry those).
pub(crate) struct Container {
    /// An enum's `tag = "..."`: the field each document stores its variant in.
    pub tag: Option<String>,
}

/// What serde's attributes on a field say, beside its name.
pub(crate) struct Field {
    /// serde writes it as its type does (see [`serialized_as_is`]).
    pub as_is: bool,
    /// serde stores it: no `skip` nor `skip_serializing`.
    pub stored: bool,
    /// serde may leave it out of a document or fill it in: `default`, `skip_serializing_if`.
    pub defaulted: bool,
}

impl Field {
    pub(crate) fn from_ast(attrs: &[Attribute]) -> Self {
        Field {
            as_is: serialized_as_is(attrs),
            stored: serde_keys(attrs, &["skip", "skip_serializing"]).is_empty(),
            defaulted: !serde_keys(attrs, &["default", "skip_serializing_if"]).is_empty(),
        }
    }
}

/// A case convention of `#[serde(rename_all = "...")]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RenameRule {
    Lower,
    Upper,
    Pascal,
    Camel,
    Snake,
    ScreamingSnake,
    Kebab,
    ScreamingKebab,
}

const RULES: [(&str, RenameRule); 8] = [
    ("lowercase", RenameRule::Lower),
    ("UPPERCASE", RenameRule::Upper),
    ("PascalCase", RenameRule::Pascal),
    ("camelCase", RenameRule::Camel),
    ("snake_case", RenameRule::Snake),
    ("SCREAMING_SNAKE_CASE", RenameRule::ScreamingSnake),
    ("kebab-case", RenameRule::Kebab),
    ("SCREAMING-KEBAB-CASE", RenameRule::ScreamingKebab),
];

impl RenameRule {
    /// The rule's name in `#[serde(rename_all = "...")]`.
    pub(crate) fn serde_name(self) -> &'static str {
        RULES
            .iter()
            .find(|(_, r)| *r == self)
            .map_or("", |(n, _)| n)
    }

    /// The name of a field written in snake_case, as serde renames it.
    pub(crate) fn apply_to_field(self, field: &str) -> String {
        match self {
            RenameRule::Lower | RenameRule::Snake => field.to_owned(),
            RenameRule::Upper | RenameRule::ScreamingSnake => field.to_ascii_uppercase(),
            RenameRule::Pascal => {
                let mut out = String::new();
                let mut capitalize = true;
                for ch in field.chars() {
                    if ch == '_' {
                        capitalize = true;
                    } else if capitalize {
                        out.push(ch.to_ascii_uppercase());
                        capitalize = false;
                    } else {
                        out.push(ch);
                    }
                }
                out
            }
            RenameRule::Camel => {
                let pascal = RenameRule::Pascal.apply_to_field(field);
                let mut chars = pascal.chars();
                chars
                    .next()
                    .map(|c| c.to_ascii_lowercase().to_string() + chars.as_str())
                    .unwrap_or_default()
            }
            RenameRule::Kebab => field.replace('_', "-"),
            RenameRule::ScreamingKebab => field.to_ascii_uppercase().replace('_', "-"),
        }
    }
}

/// A type name in PascalCase, in snake_case (`TradeHistory` → `trade_history`).
pub(crate) fn snake_case(type_name: &str) -> String {
    let mut out = String::new();
    for (i, ch) in type_name.chars().enumerate() {
        if ch.is_uppercase() && i > 0 {
            out.push('_');
        }
        out.extend(ch.to_lowercase());
    }
    out
}

/// An ident as written in source, without `r#`.
pub(crate) fn unraw(ident: &Ident) -> String {
    let s = ident.to_string();
    s.strip_prefix("r#").map(str::to_owned).unwrap_or(s)
}

/// The container's `#[serde(rename_all = "...")]`.
pub(crate) fn rename_all(cx: &Ctxt, attrs: &[Attribute]) -> Option<RenameRule> {
    let lit = serde_string(cx, attrs, "rename_all", None)?;
    let rule = RULES
        .iter()
        .find(|(name, _)| *name == lit.value())
        .map(|(_, rule)| *rule);
    if rule.is_none() {
        let names = RULES
            .iter()
            .map(|(n, _)| format!("{n:?}"))
            .collect::<Vec<_>>()
            .join(", ");
        cx.error_at(
            lit.span(),
            format!(
                "unknown rename rule {:?}; expected one of: {names}",
                lit.value()
            ),
        );
    }
    rule
}

/// The BSON name of a field (named fields only).
pub(crate) fn field_name(
    cx: &Ctxt,
    ident: &Ident,
    attrs: &[Attribute],
    rule: Option<RenameRule>,
) -> Name {
    let default = match rule {
        Some(rule) => rule.apply_to_field(&unraw(ident)),
        None => unraw(ident),
    };
    match serde_string(cx, attrs, "rename", Some(&default)) {
        Some(lit) => Name::given(lit.value(), lit.span()),
        None => Name::given(default, ident.span()),
    }
}

/// The string of `#[serde(<key> = "...")]` or `#[serde(<key>(serialize = "...", deserialize =
/// "..."))]`, whichever comes last. The two directions must agree (the pattern reads and
/// writes one name); a direction left out stands for `default` (`None`: nothing).
fn serde_string(
    cx: &Ctxt,
    attrs: &[Attribute],
    key: &str,
    default: Option<&str>,
) -> Option<LitStr> {
    let mut found = None;
    // A malformed serde attribute is serde's to report: the errors of the walk are dropped.
    let quiet = Ctxt::new();
    each_key(&quiet, attrs, "serde", |meta| {
        if !meta.path.is_ident(key) {
            return skip_value(meta.input);
        }
        // #[serde(rename = "name")]
        if meta.input.peek(Token![=]) {
            found = Some(meta.value()?.parse::<LitStr>()?);
            return Ok(());
        }
        // #[serde(rename(serialize = "name", deserialize = "name"))]
        let (ser, de) = directions(meta)?;
        let text = |lit: &Option<LitStr>| {
            lit.as_ref()
                .map(LitStr::value)
                .or(default.map(str::to_owned))
        };
        if text(&ser) != text(&de) {
            cx.syn_error(meta.error(format!(
                "serialize and deserialize names differ ({} vs {}): the pattern reads and writes one name",
                text(&ser).map_or("none".into(), |s| format!("{s:?}")),
                text(&de).map_or("none".into(), |s| format!("{s:?}")),
            )));
        }
        found = ser.or(de);
        Ok(())
    });
    drop(quiet.check());
    found
}

fn directions(meta: &ParseNestedMeta) -> syn::Result<(Option<LitStr>, Option<LitStr>)> {
    let (mut ser, mut de) = (None, None);
    meta.parse_nested_meta(|inner| {
        if inner.path.is_ident("serialize") {
            ser = Some(inner.value()?.parse()?);
        } else if inner.path.is_ident("deserialize") {
            de = Some(inner.value()?.parse()?);
        } else {
            skip_value(inner.input)?;
        }
        Ok(())
    })?;
    Ok((ser, de))
}

/// Whether serde writes the field as its type does: no `#[serde(with = "...")]` nor
/// `#[serde(serialize_with = "...")]`, which write what they like.
pub(crate) fn serialized_as_is(attrs: &[Attribute]) -> bool {
    serde_keys(attrs, &["with", "serialize_with"]).is_empty()
}

/// The keys among `keys` that the field's `#[serde(...)]` attributes give, as written (for
/// errors at them).
pub(crate) fn serde_keys(attrs: &[Attribute], keys: &[&str]) -> Vec<syn::Path> {
    let mut found = Vec::new();
    let quiet = Ctxt::new();
    each_key(&quiet, attrs, "serde", |meta| {
        if keys.iter().any(|k| meta.path.is_ident(k)) {
            found.push(meta.path.clone());
        }
        skip_value(meta.input)
    });
    drop(quiet.check());
    found
}

/// The string values of the keys among `keys` that the field's `#[serde(...)]` attributes
/// give (`with = "money::decimal128"`), with the key as written; a key given another way
/// than `= "..."` comes with `None`.
pub(crate) fn serde_key_values(
    attrs: &[Attribute],
    keys: &[&str],
) -> Vec<(syn::Path, Option<LitStr>)> {
    let mut found = Vec::new();
    let quiet = Ctxt::new();
    each_key(&quiet, attrs, "serde", |meta| {
        if !keys.iter().any(|k| meta.path.is_ident(k)) {
            return skip_value(meta.input);
        }
        let value = if meta.input.peek(Token![=]) {
            meta.value()?.parse::<LitStr>().ok()
        } else {
            skip_value(meta.input)?;
            None
        };
        found.push((meta.path.clone(), value));
        Ok(())
    });
    drop(quiet.check());
    found
}

/// serde's name for a variant, the discriminator its documents store: `#[serde(rename =
/// "...")]`, else the enum's `rename_all` applied to its ident, else its ident.
pub(crate) fn variant_name(ident: &Ident, attrs: &[Attribute], rule: Option<RenameRule>) -> String {
    let default = match rule {
        Some(RenameRule::Lower) => unraw(ident).to_lowercase(),
        Some(RenameRule::Upper) => unraw(ident).to_uppercase(),
        Some(r) => r.apply_to_field(&snake_case(&unraw(ident))),
        None => unraw(ident),
    };
    match serde_key_values(attrs, &["rename"]).pop() {
        Some((_, Some(lit))) => lit.value(),
        _ => default,
    }
}

/// An enum's `#[serde(tag = "...")]`; an error for any other representation (the enum derive
/// of `Document` stores internally tagged enums alone).
pub(crate) fn tag(cx: &Ctxt, input: &DeriveInput) -> Option<String> {
    let supported = "#[derive(Document)] on an enum stores it internally tagged: \
                     #[serde(tag = \"kind\")], each variant a newtype of a struct or \
                     struct-like";
    let other = serde_key_values(&input.attrs, &["content", "untagged"]);
    let untagged = other.iter().any(|(k, _)| k.is_ident("untagged"));
    for (key, _) in other {
        let what = if key.is_ident("content") {
            "adjacently tagged (`content`)"
        } else {
            "untagged"
        };
        cx.error_spanned_by(&key, format!("{what} enums are not supported: {supported}"));
    }
    match serde_key_values(&input.attrs, &["tag"]).pop() {
        Some((_, Some(lit))) => {
            let tag = lit.value();
            if tag == "_id" || tag.is_empty() || tag.starts_with('$') || tag.contains('.') {
                cx.error_at(
                    lit.span(),
                    "the discriminator must be a plain field name other than `_id`",
                );
            }
            Some(tag)
        }
        Some((key, None)) => {
            cx.error_spanned_by(&key, supported);
            None
        }
        None if untagged => None,
        None => {
            cx.error_spanned_by(
                input.ident.clone(),
                format!("externally tagged enums are not supported: {supported}"),
            );
            None
        }
    }
}

/// An enum's `#[serde(rename_all_fields = "...")]`: its struct-like variants' field names.
pub(crate) fn rename_all_fields(cx: &Ctxt, attrs: &[Attribute]) -> Option<RenameRule> {
    let (_, lit) = serde_key_values(attrs, &["rename_all_fields"]).pop()?;
    let lit = lit?;
    let synthetic: syn::Attribute = syn::parse_quote!(#[serde(rename_all = #lit)]);
    rename_all(cx, &[synthetic])
}

/// A member's name as written, `r#` dropped (`date`, or `0` for a tuple field).
pub(crate) fn unraw_member(member: &syn::Member) -> String {
    match member {
        syn::Member::Named(ident) => unraw(ident),
        syn::Member::Unnamed(index) => index.index.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    #[test]
    fn rules_match_serde() {
        let cases = [
            (RenameRule::Lower, "customer_id"),
            (RenameRule::Upper, "CUSTOMER_ID"),
            (RenameRule::Pascal, "CustomerId"),
            (RenameRule::Camel, "customerId"),
            (RenameRule::Snake, "customer_id"),
            (RenameRule::ScreamingSnake, "CUSTOMER_ID"),
            (RenameRule::Kebab, "customer-id"),
            (RenameRule::ScreamingKebab, "CUSTOMER-ID"),
        ];
        for (rule, want) in cases {
            assert_eq!(rule.apply_to_field("customer_id"), want, "{rule:?}");
        }
        assert_eq!(RenameRule::Camel.apply_to_field("_"), "");
    }

    #[test]
    fn snake_case_of_type_names() {
        assert_eq!(snake_case("Book"), "book");
        assert_eq!(snake_case("TradeHistory"), "trade_history");
    }

    fn name(attrs: &[Attribute], rule: Option<RenameRule>) -> (String, syn::Result<()>) {
        let cx = Ctxt::new();
        let ident: Ident = parse_quote!(r#customer_id);
        let n = field_name(&cx, &ident, attrs, rule);
        (n.value, cx.check())
    }

    #[test]
    fn field_names() {
        assert_eq!(name(&[], None).0, "customer_id");
        assert_eq!(name(&[], Some(RenameRule::Camel)).0, "customerId");
        let renamed: Attribute =
            parse_quote!(#[serde(default, rename = "cid", skip_serializing_if = "x")]);
        assert_eq!(name(&[renamed], Some(RenameRule::Camel)).0, "cid");
        let both: Attribute = parse_quote!(#[serde(rename(serialize = "c", deserialize = "c"))]);
        assert_eq!(name(&[both], None).0, "c");
    }

    #[test]
    fn directions_must_agree() {
        let differ: Attribute = parse_quote!(#[serde(rename(serialize = "a", deserialize = "b"))]);
        let err = name(&[differ], None).1.unwrap_err();
        assert!(
            err.to_string()
                .contains("serialize and deserialize names differ"),
            "{err}"
        );
        let one: Attribute = parse_quote!(#[serde(rename(serialize = "a"))]);
        assert!(name(&[one], None).1.is_err());
    }

    #[test]
    fn rename_all_rules() {
        let cx = Ctxt::new();
        let a: Attribute = parse_quote!(#[serde(deny_unknown_fields, rename_all = "kebab-case")]);
        assert_eq!(rename_all(&cx, &[a]), Some(RenameRule::Kebab));
        let bad: Attribute = parse_quote!(#[serde(rename_all = "Title Case")]);
        assert_eq!(rename_all(&cx, &[bad]), None);
        assert!(cx
            .check()
            .unwrap_err()
            .to_string()
            .contains("unknown rename rule"));
    }
}
