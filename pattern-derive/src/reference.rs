//! `#[derive(Reference)]`'s back end: a copy of chosen fields of a `Document` type, embedded
//! in another (the extended reference pattern). `#[reference(source = Director)]` names the
//! source; the field stored as `_id` holds the source's id (of its `Id` type), every other
//! field copies the source's field of the same Rust name: each is checked against the
//! source's typed path (`Director::NAME`), so a field the source lacks, or of another type, is
//! an error at its name.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use crate::attr::document::const_name;
use crate::attr::reference::Reference;
use crate::codegen::respan;

/// The model of a struct deriving `Reference`.
type Container<'a> = crate::ast::Container<'a, Reference>;

/// The code emitted beside errors: an impl of `Reference` of no source and no field.
pub(crate) fn fallback(m: &Container) -> TokenStream {
    let ident = m.ident;
    quote! {
        #[automatically_derived]
        impl ::pattern_core::document::Reference for #ident {
            type Source = ::pattern_core::document::NoSource;
            const FIELDS: &'static [::pattern_core::document::Copied] = &[];
        }
    }
}

pub(crate) fn expand(m: &Container) -> TokenStream {
    let module = quote!(::pattern_core::document);
    let (ident, source) = (m.ident, m.attrs.source.value().expect("checked"));
    let fields = m.fields().expect("checked");
    // The id: the field stored as `_id` (the last one); every other field is a copy.
    let id = fields
        .iter()
        .rfind(|f| f.bson.value == "_id")
        .expect("checked");
    let copied = fields.iter().filter(|f| f.bson.value != "_id");
    let copied = copied.map(|f| {
        let (ty, name, konst) = (f.ty, &f.bson.value, const_name(f.ident));
        // The source's path at the field's name: an error about the source's field shows there.
        let s = respan(source, f.ident.span());
        quote_spanned!(f.ident.span()=> #module::copied_field::<#s, #ty>(#s::#konst, #name))
    });
    let (id_ident, id_ty) = (id.ident, id.ty);
    let s = respan(source, id_ty.span());
    let id_check = quote_spanned! {id_ty.span()=>
        fn __pattern_source_id(copy: &#ident) -> &<#s as #module::Document>::Id {
            &copy.#id_ident
        }
    };
    quote! {
        #[automatically_derived]
        impl #module::Reference for #ident {
            type Source = #source;
            const FIELDS: &'static [#module::Copied] = &[#(#copied),*];
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
