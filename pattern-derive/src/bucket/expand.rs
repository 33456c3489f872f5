//! The code of `#[derive(Bucket)]`, from the model alone.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use super::{Bucket, Stubs};
use crate::codegen::{self, Bodies, Method, StubItem, Wrappers};

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
            let time = quote_spanned!(member.span()=> ::pattern_core::__private::__epoch_millis(&(*__pattern_item).#member));
            quote! {
                fn item_millis(__pattern_item: &#item_ty) -> ::core::option::Option<i64> {
                    #time
                }
            }
        }
        None => quote! {
            fn item_millis(_: &#item_ty) -> ::core::option::Option<i64> {
                ::core::option::Option::None
            }
        },
    };
    let bounds = match &b.time {
        Some(member) => {
            let name = crate::serde_names::unraw_member(member);
            let (min, max) = (format!("{name}_min"), format!("{name}_max"));
            quote!(::core::option::Option::Some((#min, #max)))
        }
        None => quote!(::core::option::Option::None),
    };
    let w = Wrappers {
        bodies: Bodies::Calls { key_ty },
        key: "key",
        module: "bucket",
    };
    let item = quote!(#item_ty);
    let methods = methods(&w, &item, &item);
    quote! {
        #[automatically_derived]
        impl ::pattern_core::Bucket for #ident {
            type Key = #key_ty;
            type Item = #item_ty;
            type Summary = ::pattern_core::bucket::Totals;
            const SPEC: ::pattern_core::BucketSpec = ::pattern_core::BucketSpec {
                collection: #collection,
                key_field: #key_field,
                items_field: #items_field,
                count_field: #count_field,
                page_field: #page_field,
                size: #size,
                keeps: ::pattern_core::Keeps {
                    bounds: #bounds,
                    summary: &[],
                },
            };
            #item_time
        }

        #[automatically_derived]
        impl #ident {
            #(#methods)*
        }
    }
}

/// The wrappers, `item_param` the item type in their parameters and `item_ret` in what they
/// return.
fn methods(w: &Wrappers, item_param: &TokenStream, item_ret: &TokenStream) -> [TokenStream; 7] {
    [
        w.keyed(Method {
            doc: "Appends `item` to `key`'s series: one write in the common case, also when it opens a bucket.",
            name: "push".into(),
            params: quote!(item: #item_param,),
            ret: quote!(()),
            func: "push",
            args: quote!(&item,),
        }),
        w.keyed(Method {
            doc: "Appends `items` to `key`'s series in order: one write per bucket touched.",
            name: "push_many".into(),
            params: quote!(items: &[#item_param],),
            ret: quote!(()),
            func: "push_many",
            args: quote!(items,),
        }),
        w.keyed(Method {
            doc: "Page `n` (from 1) of `key`'s series, pages in time order; `None` past the last page.",
            name: "page".into(),
            params: quote!(n: u64,),
            ret: quote!(::core::option::Option<::pattern_core::Page<#item_ret>>),
            func: "page",
            args: quote!(n,),
        }),
        w.stream(
            "Every page of `key`'s series, in order, fetched a batch of buckets per round trip.",
            "pages".into(),
            quote!(::pattern_core::Page<#item_ret>),
            "pages",
        ),
        w.stream("Every item of `key`'s series, in push order.", "items".into(), quote!(#item_ret), "items"),
        w.keyed(Method {
            doc: "How many items and pages `key`'s series holds (one aggregation).",
            name: "counts".into(),
            params: quote!(),
            ret: quote!(::pattern_core::Counts),
            func: "counts",
            args: quote!(),
        }),
        w.ensure_indexes("Creates the collection's indexes now rather than on first use."),
    ]
}

/// The code emitted beside errors: an impl of `Bucket` with placeholder types, and stubs of
/// the methods.
pub(crate) fn fallback(s: &Stubs) -> TokenStream {
    let body = quote! {
        type Key = str;
        type Item = ();
        type Summary = ::pattern_core::bucket::Totals;
        const SPEC: ::pattern_core::BucketSpec = ::pattern_core::BucketSpec {
            collection: "",
            key_field: "",
            items_field: "",
            count_field: "",
            page_field: "",
            size: 1,
            keeps: ::pattern_core::Keeps::NONE,
        };
        fn item_millis(_: &()) -> ::core::option::Option<i64> {
            ::core::option::Option::None
        }
    };
    let w = Wrappers {
        bodies: Bodies::Stubs,
        key: "key",
        module: "bucket",
    };
    let item = StubItem::new(s.item_ty);
    let stubs = methods(&w, &item.param, &item.ret);
    codegen::fallback(s.input, quote!(::pattern_core::Bucket), body, &stubs)
}
