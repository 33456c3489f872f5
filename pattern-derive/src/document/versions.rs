//! Schema versioning's items of the `Document` impl: `VERSIONING`, and `upgrade`, the chain of
//! conversions from each previous version's type to the struct.

use proc_macro2::{Ident, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;

use crate::attr::document::Versioning;

/// `const VERSIONING` and `fn upgrade` for the struct `ident`.
pub(super) fn items(ident: &Ident, v: &Versioning) -> TokenStream {
    let Versioning {
        current,
        field,
        unversioned,
        write_back,
        previous,
    } = v;
    let oldest = previous.first().map_or(*current, |p| p.0);
    let arms = previous.iter().enumerate().map(|(i, (n, ty))| {
        // Each hop at the type it starts from: a missing conversion is an error there.
        let hops = previous[i + 1..]
            .iter()
            .map(|(_, next)| (next.to_token_stream(), next.span()))
            .chain(std::iter::once((quote!(Self), ident.span())));
        let mut from_span = ty.span();
        let hops: Vec<TokenStream> = hops
            .map(|(next, next_span)| {
                // `Self` at the type it converts from, so the error shows there.
                let next = if next.to_string() == "Self" {
                    quote_spanned!(from_span=> Self)
                } else {
                    next
                };
                let hop = quote_spanned!(from_span=> .then::<#next>()?);
                from_span = next_span;
                hop
            })
            .collect();
        let read = quote_spanned!(ty.span()=> .read::<#ty>()?);
        quote!(#n => __up #read #(#hops)* .done(),)
    });
    quote! {
        const VERSIONING: ::core::option::Option<::pattern_core::document::Versioning> =
            ::core::option::Option::Some(::pattern_core::document::Versioning {
                field: #field,
                current: #current,
                unversioned: #unversioned,
                oldest: #oldest,
                write_back: #write_back,
            });
        fn upgrade(
            from: u32,
            doc: ::pattern_core::__private::bson::Document,
        ) -> ::pattern_core::Result<Self> {
            let __up = ::pattern_core::document::Upgrading::<Self>::new(from, doc);
            match from {
                #(#arms)*
                _ => ::core::result::Result::Err(__up.unknown()),
            }
        }
    }
}
