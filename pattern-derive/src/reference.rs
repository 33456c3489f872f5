//! `#[derive(Reference)]`: a copy of chosen fields of a `Document` type, embedded in another
//! (the extended reference pattern). `#[reference(source = Director)]` names the source; the
//! field stored as `_id` holds the source's id (of its `Id` type), every other field copies the
//! source's field of the same Rust name: each is checked against the source's typed path
//! (`Director::NAME`), so a field the source lacks, or of another type, is an error at its
//! name.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{DeriveInput, Ident};

use crate::attr::{self, Slot};
use crate::ctxt::Ctxt;
use crate::serde_names::{self, unraw};
use crate::shape::named_fields;

const DERIVE: &str = "Reference";
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

struct Model<'a> {
    ident: &'a Ident,
    source: syn::Path,
    /// The id field and its type.
    id: (&'a Ident, &'a syn::Type),
    /// The copied fields: ident, type, stored name.
    fields: Vec<(&'a Ident, &'a syn::Type, String)>,
}

pub(crate) fn derive(input: &DeriveInput) -> TokenStream {
    crate::codegen::or_fallback(parse(input).map(|m| expand(&m)), || {
        let ident = &input.ident;
        quote! {
            #[automatically_derived]
            impl ::pattern_core::document::Reference for #ident {
                type Source = ::pattern_core::document::NoSource;
                const FIELDS: &'static [::pattern_core::document::Copied] = &[];
            }
        }
    })
}

fn parse(input: &DeriveInput) -> syn::Result<Model<'_>> {
    let cx = Ctxt::new();
    let mut source: Slot<syn::Path> = Slot::default();
    attr::each_key(&cx, &input.attrs, ATTR, |meta| {
        if meta.path.is_ident("source") {
            source.parse(&cx, meta, |_, m| Ok(Some(m.value()?.parse::<syn::Path>()?)))
        } else {
            attr::unknown(&cx, meta, ATTR, &["source"])
        }
    });
    let source = source.get();
    if source.is_none() {
        cx.error_spanned_by(
            &input.ident,
            "a copy names the document type it copies: #[reference(source = Director)]",
        );
    }
    let mut id = None;
    let mut fields = Vec::new();
    if let Some(named) = named_fields(&cx, input, DERIVE) {
        let rule = serde_names::rename_all(&cx, &input.attrs);
        for f in &named.named {
            let ident = f.ident.as_ref().expect("named field");
            for key in serde_names::serde_keys(&f.attrs, &REFUSED) {
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
            attr::each_key(&cx, &f.attrs, ATTR, |meta| {
                cx.syn_error(meta.error(
                    "#[reference(...)] goes on the struct: #[reference(source = Director)]",
                ));
                attr::skip_value(meta.input)
            });
            let name = serde_names::field_name(&cx, ident, &f.attrs, rule).value;
            if name == "_id" {
                id = Some((ident, &f.ty));
            } else {
                fields.push((ident, &f.ty, name));
            }
        }
        if id.is_none() {
            cx.error_spanned_by(
                &input.ident,
                "a copy holds its source's id stored as `_id`: add a field \
                 #[serde(rename = \"_id\")] id: <the source's id type>",
            );
        }
        if fields.is_empty() && id.is_some() {
            cx.error_spanned_by(
                &input.ident,
                "a copy holds at least one field of its source besides the `_id`",
            );
        }
    }
    cx.check()?;
    Ok(Model {
        ident: &input.ident,
        source: source.expect("checked"),
        id: id.expect("checked"),
        fields,
    })
}

/// The source's path with every token at `span`: an error about the source's field shows
/// there.
fn source_at(source: &syn::Path, span: Span) -> TokenStream {
    (source.to_token_stream().into_iter())
        .map(|mut t| {
            t.set_span(span);
            t
        })
        .collect()
}

fn expand(m: &Model) -> TokenStream {
    let module = quote!(::pattern_core::document);
    let (ident, source) = (m.ident, &m.source);
    let fields = m.fields.iter().map(|(f, ty, name)| {
        let konst = Ident::new(&unraw(f).to_uppercase(), f.span());
        let s = source_at(source, f.span());
        quote_spanned!(f.span()=> #module::copied_field::<#s, #ty>(#s::#konst, #name))
    });
    let (id_ident, id_ty) = m.id;
    let s = source_at(source, id_ty.span());
    let id_check = quote_spanned! {id_ty.span()=>
        fn __pattern_source_id(copy: &#ident) -> &<#s as #module::Document>::Id {
            &copy.#id_ident
        }
    };
    quote! {
        #[automatically_derived]
        impl #module::Reference for #ident {
            type Source = #source;
            const FIELDS: &'static [#module::Copied] = &[#(#fields),*];
        }

        #[automatically_derived]
        impl #module::Slot for #ident {
            type Ref = Self;
            const OPTIONAL: bool = false;
        }

        const _: () = {
            #[allow(dead_code)]
            #id_check
        };
    }
}
