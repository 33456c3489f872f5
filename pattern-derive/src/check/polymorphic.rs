//! `#[derive(Document)]` on an enum: its history in another collection than its documents',
//! each variant a shape a polymorphic collection stores, one discriminator per variant, at
//! least one variant.

use proc_macro2::Span;

use crate::ast::{Container, Style};
use crate::attr::document::Polymorphic;
use crate::ctxt::Ctxt;

const SUPPORTED: &str = "a polymorphic collection's variant is a newtype of a struct \
                         (`Book(Book)`) or a struct-like variant (`Shirt { ... }`)";

pub(crate) fn polymorphic(cx: &Ctxt, cont: &Container<Polymorphic>) {
    let a = &cont.attrs;
    if let (Some(h), Some(c)) = (a.history.value(), a.collection.value()) {
        if h.value == c.value {
            cx.error_at(
                h.span.unwrap_or_else(Span::call_site),
                "the history collection must be another collection than the documents'",
            );
        }
    }
    let variants = cont.variants();
    let stored = |style: &Style<()>| matches!(style, Style::Newtype(_) | Style::Struct { .. });
    for (i, v) in variants.iter().enumerate() {
        // The first variant of that discriminator that is stored.
        let first = (variants[..i].iter()).find(|o| stored(&o.style) && o.value == v.value);
        if let Some(first) = first {
            cx.error_spanned_by(
                v.ident,
                format!(
                    "variants `{}` and `{}` have the same discriminator {:?}",
                    first.ident, v.ident, v.value
                ),
            );
        }
        match &v.style {
            Style::Tuple(f) if f.unnamed.len() == 1 => cx.error_spanned_by(
                &f.unnamed[0].ty,
                format!("not a struct's name: {SUPPORTED}"),
            ),
            Style::Tuple(f) => {
                cx.error_spanned_by(f, format!("a tuple variant is not supported: {SUPPORTED}"))
            }
            Style::Unit => cx.error_spanned_by(
                v.ident,
                format!("a unit variant stores no `_id`: {SUPPORTED}"),
            ),
            Style::Newtype(_) | Style::Struct { .. } => {}
        }
    }
    if variants.is_empty() {
        cx.error_spanned_by(cont.ident, "a polymorphic collection needs a variant");
    }
}
