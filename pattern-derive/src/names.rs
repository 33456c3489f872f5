//! The names the patterns store (BSON field names, collection names) and MongoDB's rules for
//! them.

use proc_macro2::Span;

use crate::ctxt::Ctxt;

/// A name the pattern stores and the token that gave it: a string literal, a field's ident, or
/// `None` for a default (which can only clash with a name the user gave).
#[derive(Clone, Debug)]
pub(crate) struct Name {
    pub value: String,
    pub span: Option<Span>,
}

impl Name {
    pub(crate) fn given(value: String, span: Span) -> Self {
        Name {
            value,
            span: Some(span),
        }
    }

    pub(crate) fn default(value: impl Into<String>) -> Self {
        Name {
            value: value.into(),
            span: None,
        }
    }
}

/// The field marking a bucket whose time bounds cover every item: `pattern_core::spec::BOUNDED_FIELD`.
pub(crate) const BOUNDED_FIELD: &str = "bounded";
/// The field listing a bucket's complete summary fields: `pattern_core::spec::SUMMARIZED_FIELD`.
pub(crate) const SUMMARIZED_FIELD: &str = "summarized";

/// A rule a name must follow: what breaks it, and what the error says.
type Rule = (fn(&str) -> bool, &'static str);

const NOT_EMPTY: Rule = (str::is_empty, "it must not be empty");
const NO_NUL: Rule = (|n| n.contains('\0'), "it must not contain a NUL character");

const FIELD_RULES: [Rule; 4] = [
    NOT_EMPTY,
    (|n| n.contains('.'), "it must not contain `.`"),
    (|n| n.starts_with('$'), "it must not start with `$`"),
    NO_NUL,
];

const COLLECTION_RULES: [Rule; 4] = [
    NOT_EMPTY,
    (|n| n.contains('$'), "it must not contain `$`"),
    NO_NUL,
    (
        |n| n.starts_with("system."),
        "it must not start with `system.` (reserved by MongoDB)",
    ),
];

fn problem(name: &str, rules: &[Rule]) -> Option<&'static str> {
    rules
        .iter()
        .find(|(breaks, _)| breaks(name))
        .map(|(_, why)| *why)
}

/// Why `name` is not a valid MongoDB field name, if it is not.
pub(crate) fn field_name_problem(name: &str) -> Option<&'static str> {
    problem(name, &FIELD_RULES)
}

/// Why `name` is not a valid MongoDB collection name, if it is not.
pub(crate) fn collection_name_problem(name: &str) -> Option<&'static str> {
    problem(name, &COLLECTION_RULES)
}

/// Reports a name the user gave that is not a valid field name, at the token that gave it.
pub(crate) fn check_field_name(cx: &Ctxt, name: &Name) {
    if let (Some(problem), Some(span)) = (field_name_problem(&name.value), name.span) {
        cx.error_at(
            span,
            format!("invalid MongoDB field name {:?}: {problem}", name.value),
        );
    }
}

/// Reports every pair of equal names among `names` (`(role, name)`), and every name that is
/// `_id`: at the name the user gave (the later one of a pair when both were given), else at
/// `fallback`.
pub(crate) fn check_distinct(cx: &Ctxt, names: &[(&str, &Name)], fallback: Span) {
    for (j, (role_j, b)) in names.iter().enumerate() {
        if b.value == "_id" {
            cx.error_at(
                b.span.unwrap_or(fallback),
                format!("the {role_j} field cannot be stored as `_id` (the pattern owns `_id`)"),
            );
        }
        if let Some((role_i, a)) = names[..j].iter().find(|(_, a)| a.value == b.value) {
            cx.error_at(
                b.span.or(a.span).unwrap_or(fallback),
                format!(
                    "the {role_i} field and the {role_j} field are both stored as {:?}",
                    b.value
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_names() {
        assert_eq!(field_name_problem("customerId"), None);
        assert_eq!(field_name_problem("_id"), None);
        assert!(field_name_problem("").is_some());
        assert!(field_name_problem("a.b").is_some());
        assert!(field_name_problem("$x").is_some());
        assert!(field_name_problem("a\0").is_some());
    }

    #[test]
    fn collection_names() {
        assert_eq!(collection_name_problem("trades"), None);
        assert_eq!(collection_name_problem("a.b"), None);
        assert!(collection_name_problem("").is_some());
        assert!(collection_name_problem("a$b").is_some());
        assert!(collection_name_problem("a\0").is_some());
        assert!(collection_name_problem("system.users").is_some());
    }
}
