//! `#[reference(source = Director)]`: the document type a copy copies. Its fields take no key,
//! and none of serde's keys that would store them otherwise than field by field.

use proc_macro2::Ident;
use quote::ToTokens;
use syn::meta::ParseNestedMeta;

use super::serde::{serde_keys, unraw};
use super::Slot;
use crate::ast;
use crate::ctxt::Ctxt;

const ATTR: &str = "reference";

/// serde keys a copy's field cannot have: the copy is written field by field.
const REFUSED: [&str; 6] = [
    "flatten",
    "skip",
    "skip_serializing",
    "skip_deserializing",
    "with",
    "serialize_with",
];

/// The struct's `#[reference(...)]` keys.
#[derive(Default)]
pub(crate) struct Reference {
    /// The source type.
    pub source: Slot<syn::Path>,
}

impl ast::Attrs for Reference {
    const DERIVE: &'static str = "Reference";
    const ATTR: &'static str = ATTR;
    const KEYS_BEFORE_NAME: bool = true;
    /// A field takes no key: its mistakes are reported as it is read.
    type Field = ();

    fn key(&mut self, cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<()> {
        if meta.path.is_ident("source") {
            self.source.parse(cx, meta, super::type_path)
        } else {
            super::unknown(cx, meta, ATTR, &["source"])
        }
    }

    fn missing(&self, cx: &Ctxt, ident: &Ident) {
        if self.source.value().is_none() {
            cx.error_spanned_by(
                ident,
                "a copy names the document type it copies: #[reference(source = Director)]",
            );
        }
    }

    fn field(cx: &Ctxt, field: &syn::Field) {
        let ident = field.ident.as_ref().expect("named field");
        for key in serde_keys(&field.attrs, &REFUSED) {
            cx.error_spanned_by(
                &key,
                format!(
                    "a copied field is stored as its type, field by field: #[serde({})] \
                     cannot be used on `{}`",
                    key.to_token_stream(),
                    unraw(ident)
                ),
            );
        }
        super::each_key(cx, &field.attrs, ATTR, |meta| {
            super::refuse(
                cx,
                meta,
                "#[reference(...)] goes on the struct: #[reference(source = Director)]",
            )
        });
    }
}
