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
    let w = series::wrappers("id", "outlier", Some(id_ty));
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
        w.render(Method {
            receiver: true,
            ret: quote!(()),
            args: quote!(self,),
            ..Method::named(
                "Inserts this document, or replaces the stored one with the same `_id`: the first \
                 `threshold` items go to the main document, the rest to new overflow chunks.",
                "save",
            )
        }),
        series.push(
            "Appends `item` to the array of parent `id`: to the main document while it is below the \
             threshold (one write), else to the overflow. `NotFound` when the parent does not exist.",
        ),
        series.push_many(
            "Appends `items` to the array of parent `id`, in order: as many as fit to the main document, \
             the rest to the overflow.",
        ),
        series.keyed(
            "The typical document: the main document alone (the overflow is not read), its array cut at \
             the threshold. `None` when there is no such document.",
            "typical",
            quote!(::core::option::Option<::pattern_core::outlier::Typical<Self>>),
        ),
        series.keyed(
            "The document with every item of its array, main document and overflow, in push order.",
            "full",
            quote!(::core::option::Option<Self>),
        ),
        series.items(
            "Every item of parent `id`'s array in push order, the overflow read a batch of chunks at a time.",
        ),
        series.all_items(
            "Every item of parent `id`'s array, main document and overflow, in push order.",
            quote!(::core::option::Option<::std::vec::Vec<#item_ret>>),
        ),
        series.counts(
            "How many items parent `id`'s array holds, main document and overflow, and in how many \
             documents.",
        ),
        series.keyed(
            "Whether parent `id` overflowed its threshold.",
            "is_outlier",
            quote!(bool),
        ),
        series.keyed(
            "Deletes parent `id` and its overflow; whether the parent existed.",
            "delete",
            quote!(bool),
        ),
        series.analyze(
            "Reads the collection (and its overflow) once and reports the items per document, the \
             document sizes, how many exceed the threshold, and a suggested threshold, with why.",
            quote!(::pattern_core::adopt::OutlierAnalysis),
        ),
        series.verify(
            "Checks every promise of the layout over the collection and its overflow (arrays within \
             the threshold, the flag exactly where overflow exists, chunks full and numbered densely, no \
             orphans); returns the defects as data.",
        ),
        series.migrate(
            "Brings the documents whose arrays exceed the threshold into the layout in place, each in a \
             transaction: resumable (a checkpoint per batch), exact beside live pushes and reads, \
             `dry_run` writes nothing. Ends with `verify`.",
            quote!(opts: &::pattern_core::adopt::Options<'_>,),
            quote!(opts,),
        ),
        series.index_report(
            "Reports the main and overflow collections' indexes against those the layout needs: present, missing, the \
             library's stale ones, and the user's own (which the library never drops).",
        ),
    ];
    methods.extend(series.ensure(
        "Creates the overflow collection's indexes now rather than on first use.",
        "Installs the layout's `$jsonSchema` validators on the main and overflow collections \
         (`collMod`, level \"moderate\"): the server then refuses any write that breaks the layout, \
         with `Error::SchemaViolation`.",
    ));
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
    let w = series::wrappers("id", "outlier", None);
    let item = StubItem::new(o.marked(ITEMS).and_then(|f| vec_arg(f.ty)));
    let stubs = methods(&w, &item.param, &item.ret);
    codegen::fallback(o.input, quote!(::pattern_core::Outlier), body, &stubs)
}
