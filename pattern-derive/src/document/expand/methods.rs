//! The generated methods: one list, each with its documentation, signature, bounds and the
//! call into `::pattern_core::document` it makes; which types get it; whether it writes.

use proc_macro2::TokenStream;
use quote::quote;

/// Which optional parts the type declares (the methods of a part it lacks are not generated).
#[derive(Clone, Copy, Default)]
pub(super) struct Has {
    pub versions: bool,
    pub history: bool,
    pub computed: bool,
    pub subset: bool,
    pub references: bool,
    pub referenced: bool,
}

/// Which types a method is generated on.
#[derive(Clone, Copy, PartialEq, Eq)]
enum On {
    Every,
    Versioned,
    WithHistory,
    Computed,
    Subset,
    References,
    Referenced,
}

/// One method: its documentation, signature (without bounds), bounds and body; whether it
/// writes (listed in `Document::WRITES`), and on which types.
struct Method {
    doc: &'static str,
    sig: TokenStream,
    bounds: TokenStream,
    call: TokenStream,
    writes: bool,
    on: On,
}

/// The methods and the names of those that write; `id_ty` the id field's type, `None` for the
/// fallback's stubs (which never run, their parameters unbounded, every method stubbed).
pub(super) fn methods(id_ty: Option<&TokenStream>, has: Has) -> (Vec<TokenStream>, Vec<String>) {
    let result = |t: TokenStream| quote!(::pattern_core::Result<#t>);
    let store = quote!(__PatternS: ::pattern_core::store::Store,);
    let module = quote!(::pattern_core::document);
    let (r_unit, r_bool, r_opt) = (
        result(quote!(())),
        result(quote!(bool)),
        result(quote!(::core::option::Option<Self>)),
    );
    let id_bound = id_ty.map(|id| {
        quote! {
            __PatternQ: ::pattern_core::__private::serde::Serialize + ?::core::marker::Sized,
            #id: ::pattern_core::__private::Borrow<__PatternQ>,
        }
    });
    let by_id = quote!(#store #id_bound);
    let id_generics = quote!(<__PatternS, __PatternQ>);
    let list = [
        Method {
            doc: "Creates the multikey index of each keyword array (and the history collection's \
                  index) now rather than on first use (once per store and process).",
            sig: quote!(async fn ensure_indexes<__PatternS>(store: &__PatternS) -> #r_unit),
            bounds: store.clone(),
            call: quote!(#module::ensure_indexes::<Self, __PatternS>(store).await),
            writes: false,
            on: On::Every,
        },
        Method {
            doc: "Installs the `$jsonSchema` validators of the collections (the schema version \
                  and the revision fields, the history records): `document::schemas`.",
            sig: quote!(async fn ensure_validator<__PatternS>(store: &__PatternS) -> #r_unit),
            bounds: store.clone(),
            call: quote!(#module::ensure_validator::<Self, __PatternS>(store).await),
            writes: false,
            on: On::Every,
        },
        Method {
            doc: "Inserts this document (one `insert`), keywords normalised, its schema version \
                  stamped. `DuplicateKey` when its `_id` exists. With history: revision 1 (or the \
                  next after a deleted one's).",
            sig: quote!(async fn insert<__PatternS>(&self, store: &__PatternS) -> #r_unit),
            bounds: store.clone(),
            call: quote!(#module::insert::<Self, __PatternS>(store, self).await),
            writes: true,
            on: On::Every,
        },
        Method {
            doc: "Writes this whole document over the one with its `_id`, or inserts it (one \
                  `update` with a replacement and `upsert`). For fields that change together \
                  under a condition, `update_one`. Never over a document of a newer schema \
                  version (`NewerVersion`). With history, a revision (one transaction).",
            sig: quote!(async fn save<__PatternS>(&self, store: &__PatternS) -> #r_unit),
            bounds: store.clone(),
            call: quote!(#module::save::<Self, __PatternS>(store, self).await),
            writes: true,
            on: On::Every,
        },
        Method {
            doc: "The document with this `_id`, or `None` (one `find`), upgraded from its stored \
                  schema version; `NewerVersion` for a version this build does not know.",
            sig: quote! {
                async fn get #id_generics(store: &__PatternS, id: &__PatternQ) -> #r_opt
            },
            bounds: by_id.clone(),
            call: quote!(#module::get::<Self, __PatternS, __PatternQ>(store, id).await),
            writes: false,
            on: On::Every,
        },
        Method {
            doc: "Applies `update` to the first document matching `filter`, atomically, in one \
                  `update` command; whether one matched (and was updated). The article's \
                  checkout: `Book::ID.eq(id).and(Book::AVAILABLE.gt(0))`, \
                  `Update::new().inc(Book::AVAILABLE, -1).push(Book::CHECKOUT, item)`. \
                  With history, a revision (one transaction).",
            sig: quote! {
                async fn update_one<__PatternS>(
                    store: &__PatternS,
                    filter: #module::Filter<Self>,
                    update: #module::Update<Self>,
                ) -> #r_bool
            },
            bounds: store.clone(),
            call: quote!(#module::update_one::<Self, __PatternS>(store, filter, update).await),
            writes: true,
            on: On::Every,
        },
        Method {
            doc: "Deletes the document with this `_id`; whether there was one. With history, its \
                  last state is recorded in the same transaction.",
            sig: quote! {
                async fn delete #id_generics(store: &__PatternS, id: &__PatternQ) -> #r_bool
            },
            bounds: by_id.clone(),
            call: quote!(#module::delete::<Self, __PatternS, __PatternQ>(store, id).await),
            writes: true,
            on: On::Every,
        },
        Method {
            doc: "A find of the documents matching `filter`: add a projection, a sort, a limit, \
                  then read them with `all`, `all_as`, `one`, `one_as` or `stream`.",
            sig: quote!(fn find(filter: #module::Filter<Self>) -> #module::Find<Self>),
            bounds: quote!(),
            call: quote!(#module::find::<Self>(filter)),
            writes: false,
            on: On::Every,
        },
        Method {
            doc: "The sweep: upgrades every stored document of an older schema version to this \
                  one, in batches, resumable after a kill, exactly once, beside live readers and \
                  writers; `dry_run` counts only.",
            sig: quote! {
                async fn migrate<__PatternS>(
                    store: &__PatternS,
                    options: &::pattern_core::adopt::Options<'_>,
                ) -> ::pattern_core::Result<#module::Sweep>
            },
            bounds: store.clone(),
            call: quote!(#module::migrate::<Self, __PatternS>(store, options).await),
            writes: true,
            on: On::Versioned,
        },
        Method {
            doc: "Rebuilds the aggregates of the parent `id` from its children, in one \
                  transaction (after writes by other tools).",
            sig: quote! {
                async fn recompute<__PatternS, __PatternQ>(
                    store: &__PatternS,
                    id: &__PatternQ,
                ) -> #r_unit
            },
            bounds: quote! {
                __PatternS: ::pattern_core::store::Store,
                __PatternQ: ::pattern_core::__private::serde::Serialize + ?::core::marker::Sized,
            },
            call: quote!(#module::recompute::<Self, __PatternS, __PatternQ>(store, id).await),
            writes: true,
            on: On::Computed,
        },
        Method {
            doc: "The parents whose stored aggregates differ from their children's (one scan \
                  of each collection).",
            sig: quote! {
                async fn verify<__PatternS>(
                    store: &__PatternS,
                ) -> ::pattern_core::Result<::std::vec::Vec<#module::Drift>>
            },
            bounds: store.clone(),
            call: quote!(#module::verify::<Self, __PatternS>(store).await),
            writes: false,
            on: On::Computed,
        },
        Method {
            doc: "Rewrites the subset of the parent `id` from its children, in one transaction \
                  (after writes by other tools, or a change of `keep` or `order`).",
            sig: quote! {
                async fn resubset<__PatternS, __PatternQ>(
                    store: &__PatternS,
                    id: &__PatternQ,
                ) -> #r_unit
            },
            bounds: quote! {
                __PatternS: ::pattern_core::store::Store,
                __PatternQ: ::pattern_core::__private::serde::Serialize + ?::core::marker::Sized,
            },
            call: quote!(#module::resubset::<Self, __PatternS, __PatternQ>(store, id).await),
            writes: true,
            on: On::Subset,
        },
        Method {
            doc: "The parents whose subset differs from their children's first `keep` (their \
                  `_id`s): run `resubset` on them.",
            sig: quote! {
                async fn verify_subsets<__PatternS>(
                    store: &__PatternS,
                ) -> ::pattern_core::Result<::std::vec::Vec<::std::string::String>>
            },
            bounds: store.clone(),
            call: quote!(#module::verify_subsets::<Self, __PatternS>(store).await),
            writes: false,
            on: On::Subset,
        },
        Method {
            doc: "The subset the parent `id` embeds, as this type (one `find` of the parent);                   `None` without the parent. Every child: `find` by the key, with a sort.",
            sig: quote! {
                async fn subset<__PatternS, __PatternQ>(
                    store: &__PatternS,
                    id: &__PatternQ,
                ) -> ::pattern_core::Result<::core::option::Option<::std::vec::Vec<Self>>>
            },
            bounds: quote! {
                __PatternS: ::pattern_core::store::Store,
                __PatternQ: ::pattern_core::__private::serde::Serialize + ?::core::marker::Sized,
            },
            call: quote!(#module::subset::<Self, __PatternS, __PatternQ>(store, id).await),
            writes: false,
            on: On::Subset,
        },
        Method {
            doc: "The copies this type's documents hold (`#[document(reference)]` fields) that \
                  differ from their source, or whose source is gone (after writes by other \
                  tools): one scan, one `find` of the sources per 1,000 documents.",
            sig: quote! {
                async fn verify_copies<__PatternS>(
                    store: &__PatternS,
                ) -> ::pattern_core::Result<::std::vec::Vec<#module::StaleCopy>>
            },
            bounds: store.clone(),
            call: quote!(#module::verify_copies::<Self, __PatternS>(store).await),
            writes: false,
            on: On::References,
        },
        Method {
            doc: "Brings every copy `verify_copies` lists in line with its source, in batches \
                  of `opts.batch_items` (1,000 at most), each a transaction; run it again after \
                  a kill. Copies of a deleted source behind a required reference are listed, \
                  left as they are.",
            sig: quote! {
                async fn repair_copies<__PatternS>(
                    store: &__PatternS,
                    opts: &::pattern_core::adopt::Options<'_>,
                ) -> ::pattern_core::Result<#module::Repaired>
            },
            bounds: store.clone(),
            call: quote!(#module::repair_copies::<Self, __PatternS>(store, opts).await),
            writes: true,
            on: On::References,
        },
        Method {
            doc: "Finishes the propagations of this type's writes past its `fan_out` that are \
                  recorded and not finished (a `deferred` type's, or a killed one's), in \
                  batches of `fan_out` copies (or `opts.batch_items`), each a transaction.",
            sig: quote! {
                async fn propagate<__PatternS>(
                    store: &__PatternS,
                    opts: &::pattern_core::adopt::Options<'_>,
                ) -> ::pattern_core::Result<#module::Propagated>
            },
            bounds: store.clone(),
            call: quote!(#module::propagate::<Self, __PatternS>(store, ::core::option::Option::None, opts).await),
            writes: true,
            on: On::Referenced,
        },
        Method {
            doc: "The propagations of this type's writes recorded and not finished, each with \
                  the time since which its copies not yet reached are stale.",
            sig: quote! {
                async fn pending_propagations<__PatternS>(
                    store: &__PatternS,
                ) -> ::pattern_core::Result<::std::vec::Vec<#module::Pending>>
            },
            bounds: store.clone(),
            call: quote!(#module::pending_propagations::<Self, __PatternS>(store).await),
            writes: false,
            on: On::Referenced,
        },
        Method {
            doc: "The document with this `_id` and its revision (for `save_if`, `update_if`, \
                  `delete_if`), or `None` (one `find`).",
            sig: quote! {
                async fn get_revision #id_generics(
                    store: &__PatternS,
                    id: &__PatternQ,
                ) -> ::pattern_core::Result<::core::option::Option<#module::Revision<Self>>>
            },
            bounds: by_id.clone(),
            call: quote!(#module::get_revision::<Self, __PatternS, __PatternQ>(store, id).await),
            writes: false,
            on: On::WithHistory,
        },
        Method {
            doc: "Writes this whole document if the stored one is still at revision `expected`; \
                  else `Conflict` (expected, found), nothing written.",
            sig: quote! {
                async fn save_if<__PatternS>(&self, store: &__PatternS, expected: u64) -> #r_unit
            },
            bounds: store.clone(),
            call: quote!(#module::save_if::<Self, __PatternS>(store, self, expected).await),
            writes: true,
            on: On::WithHistory,
        },
        Method {
            doc: "Applies `update` to the document `id` if it is still at revision `expected`; \
                  else `Conflict`, nothing written.",
            sig: quote! {
                async fn update_if #id_generics(
                    store: &__PatternS,
                    id: &__PatternQ,
                    expected: u64,
                    update: #module::Update<Self>,
                ) -> #r_unit
            },
            bounds: by_id.clone(),
            call: quote! {
                #module::update_if::<Self, __PatternS, __PatternQ>(store, id, expected, update).await
            },
            writes: true,
            on: On::WithHistory,
        },
        Method {
            doc: "Deletes the document `id` if it is still at revision `expected`; else \
                  `Conflict`.",
            sig: quote! {
                async fn delete_if #id_generics(
                    store: &__PatternS,
                    id: &__PatternQ,
                    expected: u64,
                ) -> #r_unit
            },
            bounds: by_id.clone(),
            call: quote! {
                #module::delete_if::<Self, __PatternS, __PatternQ>(store, id, expected).await
            },
            writes: true,
            on: On::WithHistory,
        },
        Method {
            doc: "The revisions of the document `id`, newest first: the current one, then each \
                  recorded one (a stream, 100 records per `find`).",
            sig: quote! {
                fn history<'__a, __PatternS, __PatternQ>(
                    store: &'__a __PatternS,
                    id: &__PatternQ,
                ) -> impl ::pattern_core::__private::Stream<
                    Item = ::pattern_core::Result<#module::Revision<Self>>,
                > + ::core::marker::Send + '__a
            },
            bounds: by_id.clone(),
            call: quote!(#module::history::<Self, __PatternS, __PatternQ>(store, id)),
            writes: false,
            on: On::WithHistory,
        },
        Method {
            doc: "The document `id` as it was at revision `n`, or `None`.",
            sig: quote! {
                async fn at_revision #id_generics(
                    store: &__PatternS,
                    id: &__PatternQ,
                    n: u64,
                ) -> #r_opt
            },
            bounds: by_id.clone(),
            call: quote!(#module::at_revision::<Self, __PatternS, __PatternQ>(store, id, n).await),
            writes: false,
            on: On::WithHistory,
        },
        Method {
            doc: "The document `id` as it was at `time`, or `None` when it did not exist then.",
            sig: quote! {
                async fn as_of #id_generics(
                    store: &__PatternS,
                    id: &__PatternQ,
                    time: ::pattern_core::__private::bson::DateTime,
                ) -> #r_opt
            },
            bounds: by_id,
            call: quote!(#module::as_of::<Self, __PatternS, __PatternQ>(store, id, time).await),
            writes: false,
            on: On::WithHistory,
        },
    ];
    let wanted = |on: On| match on {
        On::Every => true,
        On::Versioned => has.versions || id_ty.is_none(),
        On::WithHistory => has.history || id_ty.is_none(),
        On::Computed => has.computed || id_ty.is_none(),
        On::Subset => has.subset || id_ty.is_none(),
        On::References => has.references || id_ty.is_none(),
        On::Referenced => has.referenced || id_ty.is_none(),
    };
    let mut writes = Vec::new();
    let methods = list
        .into_iter()
        .filter(|m| wanted(m.on))
        .map(|m| {
            let Method {
                doc,
                sig,
                bounds,
                call,
                writes: w,
                on: _,
            } = m;
            if w {
                let name = sig
                    .clone()
                    .into_iter()
                    .skip_while(|t| t.to_string() != "fn")
                    .nth(1)
                    .map(|t| t.to_string())
                    .unwrap_or_default();
                writes.push(name);
            }
            let bounds = (!bounds.is_empty()).then(|| quote!(where #bounds));
            match id_ty {
                Some(_) => quote! {
                    #[doc = #doc]
                    pub #sig #bounds { #call }
                },
                // A stub's body: never run; a stream's is an empty stream (`!` is no `Stream`).
                None if sig.to_string().contains("Stream") => quote! {
                    #[doc(hidden)]
                    #[allow(unused_variables)]
                    pub #sig { ::pattern_core::__private::__no_stream() }
                },
                None => quote! {
                    #[doc(hidden)]
                    #[allow(unused_variables)]
                    pub #sig { ::core::unreachable!() }
                },
            }
        })
        .collect();
    (methods, writes)
}
