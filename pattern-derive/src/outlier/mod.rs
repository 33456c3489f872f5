//! `#[derive(Outlier)]`'s back end: the `Outlier` impl and the typed methods, from the checked
//! model alone; beside errors, a fallback of the same names.

#[cfg(test)]
mod tests;

use proc_macro2::TokenStream;
use quote::quote;

use crate::ast::vec_arg;
use crate::attr::outlier::{Outlier, ID, ITEMS};
use crate::codegen::{self, Method, StubItem, Wrappers};
use crate::series::{self, Series};

/// The model of a struct deriving `Outlier`.
type Container<'a> = crate::ast::Container<'a, Outlier>;

pub(crate) fn expand(o: &Container) -> TokenStream {
    let (ident, a) = (o.ident, &o.attrs);
    let collection = &a.collection.value().expect("checked").value;
    let overflow = &a.overflow.value().expect("checked").value;
    let threshold = *a.threshold.value().expect("checked");
    let (id, items) = (
        o.marked(ID).expect("checked"),
        o.marked(ITEMS).expect("checked"),
    );
    let flag = a.flag.name_or("has_extras").value;
    let owner = a.owner(ident).value;
    let extra = a
        .extra(Some(items))
        .expect("the items field gives one")
        .value;
    let count = a.count.name_or("count").value;
    let seq = a.seq.name_or("seq").value;
    let (id_ty, item_ty) = (id.ty, vec_arg(items.ty).expect("checked"));
    let items_field = &items.bson.value;
    let chunk = match a.chunk.value() {
        Some(n) => quote!(#n),
        None => quote!(::pattern_core::outlier::DEFAULT_CHUNK),
    };
    let w = series::wrappers("id", "outlier", "__outlier_doc", Some(id_ty));
    let item = quote!(#item_ty);
    let methods = methods(&w, &item, &item);
    let validate = codegen::validate(a.validate.value().is_some());
    quote! {
        #[automatically_derived]
        impl ::pattern_core::Outlier for #ident {
            type Id = #id_ty;
            type Item = #item_ty;
            const SPEC: ::pattern_core::spec::OutlierSpec<'static> = ::pattern_core::spec::OutlierSpec {
                collection: #collection,
                items_field: #items_field,
                threshold: #threshold,
                flag_field: #flag,
                overflow: ::pattern_core::spec::SeriesSpec {
                    collection: #overflow,
                    key_field: #owner,
                    items_field: #extra,
                    count_field: #count,
                    size: #chunk,
                    order: ::pattern_core::spec::SeriesOrder::Seq(#seq),
                    keeps: ::pattern_core::spec::Keeps::NONE,
                },
            };
            #validate
        }

        #[automatically_derived]
        impl #ident {
            #(#methods)*
        }
    }
}

/// The wrappers, `item_param` the item type in their parameters and `item_ret` in what they
/// return.
fn methods(w: &Wrappers, item_param: &TokenStream, item_ret: &TokenStream) -> Vec<TokenStream> {
    let series = Series {
        w,
        item_param,
        item_ret,
        adopt: "adopt::outlier",
    };
    let mut methods = vec![
        w.render(Method::op("save").of_self().ret(quote!(()))),
        series.push(),
        series.push_many(),
        series.keyed(
            "typical",
            quote!(::core::option::Option<::pattern_core::outlier::Typical<Self>>),
        ),
        series.keyed("full", quote!(::core::option::Option<Self>)),
        series.items(),
        series.all_items(quote!(::core::option::Option<::std::vec::Vec<#item_ret>>)),
        series.counts(),
        series.keyed("is_outlier", quote!(bool)),
        series.keyed("delete", quote!(bool)),
        series.analyze(quote!(::pattern_core::adopt::OutlierAnalysis)),
        series.verify(),
        series.migrate(
            quote!(opts: &::pattern_core::adopt::Options<'_>,),
            quote!(opts,),
        ),
        series.index_report(),
    ];
    methods.extend(series.ensure());
    methods
}

/// The code emitted beside errors: an impl of `Outlier` with placeholder types, and stubs of
/// the methods, typed as far as the items field could be read.
pub(crate) fn fallback(o: &Container) -> TokenStream {
    let body = quote! {
        type Id = str;
        type Item = ();
        const SPEC: ::pattern_core::spec::OutlierSpec<'static> = ::pattern_core::spec::OutlierSpec {
            collection: "",
            items_field: "",
            threshold: 1,
            flag_field: "",
            overflow: ::pattern_core::spec::SeriesSpec {
                collection: "",
                key_field: "",
                items_field: "",
                count_field: "",
                size: 1,
                order: ::pattern_core::spec::SeriesOrder::Seq(""),
                keeps: ::pattern_core::spec::Keeps::NONE,
            },
        };
    };
    let w = series::wrappers("id", "outlier", "__outlier_doc", None);
    let item = StubItem::new(o.marked(ITEMS).and_then(|f| vec_arg(f.ty)));
    let stubs = methods(&w, &item.param, &item.ret);
    codegen::fallback(o.input, quote!(::pattern_core::Outlier), body, &stubs)
}
