//! The code of `#[derive(Bucket)]`, from the model alone.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::DeriveInput;

use super::Bucket;
use crate::codegen::{self, Method, Wrappers};

pub(crate) fn expand(b: &Bucket) -> TokenStream {
    let Bucket {
        ident,
        collection,
        size,
        key_field,
        items_field,
        count_field,
        page_field,
        key_ty,
        item_ty,
        ..
    } = b;
    let item_time = match &b.time {
        Some(member) => {
            let time = quote_spanned!(member.span()=> ::pattern_core::__private::__epoch_seconds(&(*__pattern_item).#member));
            quote! {
                fn item_time(__pattern_item: &#item_ty) -> ::core::option::Option<i64> {
                    #time
                }
            }
        }
        None => quote! {
            fn item_time(_: &#item_ty) -> ::core::option::Option<i64> {
                ::core::option::Option::None
            }
        },
    };
    let w = Wrappers {
        key_ty,
        key: "key",
        module: "bucket",
    };
    let methods = [
        w.keyed(Method {
            doc: "Appends `item` to `key`'s series: one write in the common case, also when it opens a bucket.",
            name: "push".into(),
            params: quote!(item: #item_ty,),
            ret: quote!(()),
            func: "push",
            args: quote!(&item,),
        }),
        w.keyed(Method {
            doc: "Appends `items` to `key`'s series in order: one write per bucket touched.",
            name: "push_many".into(),
            params: quote!(items: &[#item_ty],),
            ret: quote!(()),
            func: "push_many",
            args: quote!(items,),
        }),
        w.keyed(Method {
            doc: "Page `n` (from 1) of `key`'s series, pages in time order; `None` past the last page.",
            name: "page".into(),
            params: quote!(n: u64,),
            ret: quote!(::core::option::Option<::pattern_core::Page<#item_ty>>),
            func: "page",
            args: quote!(n,),
        }),
        w.stream(
            "Every page of `key`'s series, in order, fetched a batch of buckets per round trip.",
            "pages".into(),
            quote!(::pattern_core::Page<#item_ty>),
            "pages",
        ),
        w.stream("Every item of `key`'s series, in push order.", "items".into(), quote!(#item_ty), "items"),
        w.keyed(Method {
            doc: "How many items and pages `key`'s series holds (one aggregation).",
            name: "counts".into(),
            params: quote!(),
            ret: quote!(::pattern_core::Counts),
            func: "counts",
            args: quote!(),
        }),
        w.ensure_indexes("Creates the collection's indexes now rather than on first use."),
    ];
    quote! {
        #[automatically_derived]
        impl ::pattern_core::Bucket for #ident {
            type Key = #key_ty;
            type Item = #item_ty;
            const SPEC: ::pattern_core::BucketSpec = ::pattern_core::BucketSpec {
                collection: #collection,
                key_field: #key_field,
                items_field: #items_field,
                count_field: #count_field,
                page_field: #page_field,
                size: #size,
            };
            #item_time
        }

        #[automatically_derived]
        impl #ident {
            #(#methods)*
        }
    }
}

/// The impl emitted beside errors.
pub(crate) fn fallback(input: &DeriveInput) -> TokenStream {
    let body = quote! {
        type Key = str;
        type Item = ();
        const SPEC: ::pattern_core::BucketSpec = ::pattern_core::BucketSpec {
            collection: "",
            key_field: "",
            items_field: "",
            count_field: "",
            page_field: "",
            size: 1,
        };
        fn item_time(_: &()) -> ::core::option::Option<i64> {
            ::core::option::Option::None
        }
    };
    codegen::fallback(input, quote!(::pattern_core::Bucket), body)
}
