//! `#[derive(Bucket)]`'s back end: the `Bucket` impl, `<Name>Summary` and the typed methods,
//! from the checked model alone; beside errors, a fallback of the same names.

#[cfg(test)]
mod tests;

use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::Visibility;

use crate::ast::vec_arg;
use crate::attr::bucket::{Aggregate, Bucket, Op, ITEMS, KEY};
use crate::attr::serde::{unraw, unraw_member};
use crate::codegen::{self, Method, StubItem, Wrappers};
use crate::series::{self, Series};

/// The model of a struct deriving `Bucket`.
type Container<'a> = crate::ast::Container<'a, Bucket>;

pub(crate) fn expand(b: &Container) -> TokenStream {
    let (ident, a) = (b.ident, &b.attrs);
    let collection = &a.collection.value().expect("checked").value;
    let size = *a.size.value().expect("checked");
    let (key, items) = (
        b.marked(KEY).expect("checked"),
        b.marked(ITEMS).expect("checked"),
    );
    let (key_field, items_field) = (&key.bson.value, &items.bson.value);
    let count_field = a.count.name_or("count").value;
    let page_field = a.page.name_or("page").value;
    let (key_ty, item_ty) = (key.ty, vec_arg(items.ty).expect("checked"));
    let (time, summary) = (a.time.value(), a.summary());
    let item_time = match time {
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
    let bounds = match time {
        Some(member) => {
            let name = unraw_member(member);
            let (min, max) = (format!("{name}_min"), format!("{name}_max"));
            quote!(::core::option::Option::Some((#min, #max)))
        }
        None => quote!(::core::option::Option::None),
    };
    let span = match a.span_ms() {
        Some(ms) => quote!(::core::option::Option::Some(#ms)),
        None => quote!(::core::option::Option::None),
    };
    let rollup = match a.rollup.value() {
        Some(_) => {
            let rollups = format!("{collection}.rollups");
            quote!(::core::option::Option::Some(#rollups))
        }
        None => quote!(::core::option::Option::None),
    };
    let w = series::wrappers("key", "bucket", "__bucket_doc", Some(key_ty));
    let (summary_ty, summary_struct) = if summary.is_empty() {
        (quote!(::pattern_core::bucket::Totals), None)
    } else {
        let (ty, code) = summary_struct(ident, b.vis, summary);
        (ty, Some(code))
    };
    let aggregates = summary.iter().map(|a| {
        let op = Ident::new(
            match a.op {
                Op::Sum => "Sum",
                Op::Min => "Min",
                Op::Max => "Max",
            },
            Span::call_site(),
        );
        let (item_field, field) = (&a.item_field.value, &a.field);
        quote! {
            ::pattern_core::spec::SummaryField {
                op: ::pattern_core::spec::SummaryOp::#op,
                item_field: #item_field,
                field: #field,
            }
        }
    });
    let validate = codegen::validate(a.validate.value().is_some());
    let (item, key) = (quote!(#item_ty), quote!(#key_ty));
    let methods = methods(
        &w,
        Types {
            item_param: &item,
            item_ret: &item,
            key_param: &key,
            summary: (!summary.is_empty()).then_some(&summary_ty),
        },
        Reads {
            time: time.is_some(),
            by_width: time.is_some() && a.span_ms().is_none(),
        },
    );
    quote! {
        #[automatically_derived]
        impl ::pattern_core::Bucket for #ident {
            type Key = #key_ty;
            type Item = #item_ty;
            type Summary = #summary_ty;
            const SPEC: ::pattern_core::spec::BucketSpec<'static> = ::pattern_core::spec::BucketSpec {
                collection: #collection,
                key_field: #key_field,
                items_field: #items_field,
                count_field: #count_field,
                page_field: #page_field,
                size: #size,
                keeps: ::pattern_core::spec::Keeps {
                    bounds: #bounds,
                    summary: &[#(#aggregates),*],
                    span: #span,
                    rollup: #rollup,
                },
            };
            #validate
            #item_time
        }

        #summary_struct

        #[automatically_derived]
        impl #ident {
            #(#methods)*
        }
    }
}

/// `<Name>Summary`, what the `summary` method returns, and its `From<Totals>`; its path
/// first.
fn summary_struct(
    ident: &Ident,
    vis: &Visibility,
    aggs: &[Aggregate],
) -> (TokenStream, TokenStream) {
    let name = format_ident!("{}Summary", ident, span = ident.span());
    let number = quote!(::pattern_core::bucket::Number);
    let mut doc = vec![
        format!(
            " What `{}::summary` returns: the aggregates of `#[bucket(summary(...))]` over a key's",
            unraw(ident)
        ),
        " items in a time range (`..` for all), each as MongoDB's `$inc`, `$min` and `$max` compute it."
            .to_owned(),
        String::new(),
        " - `items`: how many items it covers;".to_owned(),
    ];
    let (mut fields, mut values) = (Vec::new(), Vec::new());
    let next = quote! {
        ::core::option::Option::flatten(::core::iter::Iterator::next(&mut __pattern_values))
    };
    for (i, a) in aggs.iter().enumerate() {
        let field = Ident::new(&a.rust_field, Span::call_site());
        let item = &a.item_field.value;
        let what = match a.op {
            Op::Sum => format!("the sum of the items' `{item}` (`Number::Int32(0)` when none holds a number there)"),
            Op::Min => format!("the least of the items' `{item}` (`None` when none holds a number there)"),
            Op::Max => format!("the greatest of the items' `{item}` (`None` when none holds a number there)"),
        };
        let end = if i + 1 == aggs.len() { "." } else { ";" };
        doc.push(format!(" - `{}`: {what}{end}", a.rust_field));
        let field_doc = format!(
            " {}{}, kept in each bucket as `{}`.",
            &what[..1].to_uppercase(),
            &what[1..],
            a.field
        );
        let (ty, value) = match a.op {
            Op::Sum => (
                number.clone(),
                quote!(::core::option::Option::unwrap_or(#next, #number::Int32(0))),
            ),
            Op::Min | Op::Max => (quote!(::core::option::Option<#number>), next.clone()),
        };
        fields.push(quote! {
            #[doc = #field_doc]
            pub #field: #ty,
        });
        values.push(quote!(#field: #value,));
    }
    let values_iter = (!aggs.is_empty()).then(|| {
        quote! {
            let mut __pattern_values =
                ::core::iter::IntoIterator::into_iter(__pattern_totals.values);
        }
    });
    let code = quote! {
        #(#[doc = #doc])*
        #[derive(::core::clone::Clone, ::core::fmt::Debug, ::core::cmp::PartialEq)]
        // Fields named after BSON names (`unitPrice_min`), which a private struct's user
        // need not all read.
        #[allow(dead_code, non_snake_case)]
        #vis struct #name {
            /// How many items it covers.
            pub items: u64,
            #(#fields)*
        }

        #[automatically_derived]
        impl ::core::convert::From<::pattern_core::bucket::Totals> for #name {
            /// Reads the values in the attribute's order; a missing one is `None` (a sum: zero).
            fn from(__pattern_totals: ::pattern_core::bucket::Totals) -> Self {
                #values_iter
                #name {
                    items: __pattern_totals.items,
                    #(#values)*
                }
            }
        }
    };
    (quote!(#name), code)
}

/// The types in the wrappers' signatures.
struct Types<'a> {
    /// The item type in parameters (`item: <param>`) and in what they return (`Page<<ret>>`).
    item_param: &'a TokenStream,
    item_ret: &'a TokenStream,
    /// The key type in `ingest`'s pairs.
    key_param: &'a TokenStream,
    /// What `summary` returns; `None`: no `summary` method.
    summary: Option<&'a TokenStream>,
}

/// What a series' time reads are: `range` only with `time`; `lease_width` only for buckets
/// with `time` and no span, which a range read finds by the collection's width.
struct Reads {
    time: bool,
    by_width: bool,
}

/// The wrappers.
fn methods(w: &Wrappers, t: Types, reads: Reads) -> Vec<TokenStream> {
    let Types {
        item_param,
        item_ret,
        key_param,
        summary,
    } = t;
    let series = Series {
        w,
        item_param,
        item_ret,
        adopt: "adopt::bucket",
    };
    let date_range =
        quote!(impl ::core::ops::RangeBounds<::pattern_core::__private::bson::DateTime>);
    let mut methods = vec![
        series.push(),
        series.push_many(),
        w.keyed(
            Method::op("page")
                .takes(quote!(n: u64,), quote!(n,))
                .ret(quote!(::core::option::Option<::pattern_core::bucket::Page<#item_ret>>)),
        ),
        w.stream("pages", quote!(::pattern_core::bucket::Page<#item_ret>)),
        series.items(),
        series.all_items(quote!(::std::vec::Vec<#item_ret>)),
    ];
    if reads.time {
        methods.push(w.time_range_stream(Method::op("range").ret(quote!(#item_ret))));
    }
    if reads.by_width {
        let lease =
            Method::op("lease_width").takes(quote!(lease: ::core::time::Duration,), quote!(lease,));
        methods.push(w.render(lease.ret(quote!(()))));
    }
    methods.extend([
        w.keyed(
            Method::op("latest")
                .takes(quote!(n: usize,), quote!(n,))
                .ret(quote!(::std::vec::Vec<#item_ret>)),
        ),
        series.counts(),
    ]);
    if let Some(summary) = summary {
        methods.push(
            w.keyed(
                Method::op("summary")
                    .takes(quote!(range: #date_range,), quote!(range,))
                    .ret(quote!(#summary)),
            ),
        );
    }
    methods.extend([
        w.render(Method::op("ingest").takes(quote!(items: &[(#key_param, #item_param)],), quote!(items,)).ret(quote!(u64))),
        w.render(Method::op("backfill").ret(quote!(u64))),
        series.analyze(
            quote!(::pattern_core::adopt::BucketAnalysis),
        ),
        w.render(Method::op("analyze_source").in_module("adopt::bucket").takes(quote!(from: &::pattern_core::adopt::Source<'_>,), quote!(from,)).ret(quote!(::pattern_core::adopt::BucketAnalysis))),
        series.verify(
        ),
        series.migrate(
            quote!(from: &::pattern_core::adopt::Source<'_>, opts: &::pattern_core::adopt::Options<'_>,),
            quote!(from, opts,),
        ),
        series.index_report(
        ),
    ]);
    methods.extend(series.ensure());
    methods
}

/// The code emitted beside errors: an impl of `Bucket` with placeholder types, `<Name>Summary`
/// when `summary(...)` could be read (its fields distinct), and stubs of every method, typed
/// as far as the key and items fields could be read.
pub(crate) fn fallback(b: &Container) -> TokenStream {
    let summary = b.attrs.summary.value().map(|aggs| {
        let mut seen = Vec::new();
        let mut aggs = aggs.clone();
        aggs.retain(|a| {
            let new = !seen.contains(&a.rust_field);
            seen.push(a.rust_field.clone());
            new
        });
        aggs
    });
    let (summary_ty, summary_struct) = match &summary {
        Some(aggs) => {
            let (ty, code) = summary_struct(b.ident, b.vis, aggs);
            (ty, Some(code))
        }
        None => (quote!(::pattern_core::bucket::Totals), None),
    };
    let body = quote! {
        type Key = str;
        type Item = ();
        type Summary = #summary_ty;
        const SPEC: ::pattern_core::spec::BucketSpec<'static> = ::pattern_core::spec::BucketSpec {
            collection: "",
            key_field: "",
            items_field: "",
            count_field: "",
            page_field: "",
            size: 1,
            keeps: ::pattern_core::spec::Keeps::NONE,
        };
        fn item_millis(_: &()) -> ::core::option::Option<i64> {
            ::core::option::Option::None
        }
    };
    let w = series::wrappers("key", "bucket", "__bucket_doc", None);
    let item = StubItem::new(b.marked(ITEMS).and_then(|f| vec_arg(f.ty)));
    let key = StubItem::new(b.marked(KEY).map(|f| f.ty));
    let types = Types {
        item_param: &item.param,
        item_ret: &item.ret,
        key_param: &key.param,
        summary: Some(&summary_ty),
    };
    let all = Reads {
        time: true,
        by_width: true,
    };
    let stubs = methods(&w, types, all);
    let mut code = codegen::fallback(b.input, quote!(::pattern_core::Bucket), body, &stubs);
    code.extend(summary_struct);
    code
}
