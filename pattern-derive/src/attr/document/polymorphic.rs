//! An enum's `#[document(...)]` keys (a polymorphic collection): `collection = "..."`,
//! `shared(field: Type, ...)`, `variant_derive(Trait, ...)` and `history = "..."`.

use syn::meta::ParseNestedMeta;
use syn::parse::ParseStream;
use syn::{Ident, Token, Type};

use super::ATTR;
use crate::ast;
use crate::attr::{self, Slot};
use crate::ctxt::Ctxt;
use crate::names::Name;

/// The enum's `#[document(...)]` keys.
#[derive(Default)]
pub(crate) struct Polymorphic {
    pub collection: Slot<Name>,
    /// `shared(name: String, ...)`: the Rust field name and its type.
    pub shared: Slot<Vec<(Ident, Type)>>,
    /// `variant_derive(Debug, Clone, ...)`: what the generated structs derive besides serde's
    /// and `Document`.
    pub derives: Slot<Vec<syn::Path>>,
    /// `history = "..."`: the collection's history, which every variant's writes record in.
    pub history: Slot<Name>,
}

impl ast::Attrs for Polymorphic {
    const DERIVE: &'static str = "Document";
    const ATTR: &'static str = ATTR;
    const ENUMS: bool = true;
    /// A struct-like variant's fields take no key here: the struct generated of them reads
    /// them.
    type Field = ();

    fn key(&mut self, cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<()> {
        if meta.path.is_ident("collection") {
            self.collection.parse(cx, meta, attr::collection)
        } else if meta.path.is_ident("history") {
            // #[document(history = "products_history")]: one history for every variant.
            self.history.parse(cx, meta, attr::collection)
        } else if meta.path.is_ident("shared") {
            // #[document(shared(name: String, price: i64))]
            self.shared.parse(cx, meta, |_, m| {
                list(m, |p| {
                    let ident: Ident = p.parse()?;
                    p.parse::<Token![:]>()?;
                    Ok((ident, p.parse::<Type>()?))
                })
            })
        } else if meta.path.is_ident("variant_derive") {
            // #[document(variant_derive(Debug, Clone, PartialEq))]
            self.derives
                .parse(cx, meta, |_, m| list(m, syn::Path::parse_mod_style))
        } else {
            attr::unknown(
                cx,
                meta,
                ATTR,
                &["collection", "shared", "variant_derive", "history"],
            )
        }
    }

    fn missing(&self, cx: &Ctxt, ident: &Ident) {
        self.collection
            .required(cx, ident, "#[document(collection = \"...\")]");
    }

    fn field(_: &Ctxt, _: &syn::Field) {}
}

/// `key(a, b, ...)`: the items, each read by `item`.
fn list<T>(
    meta: &ParseNestedMeta,
    item: fn(ParseStream) -> syn::Result<T>,
) -> syn::Result<Option<Vec<T>>> {
    let content;
    syn::parenthesized!(content in meta.input);
    let list = content.parse_terminated(item, Token![,])?;
    Ok(Some(list.into_iter().collect()))
}
