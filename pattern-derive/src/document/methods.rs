//! The generated methods: one list of [`Method`]s (the table every derive fills), each with
//! its documentation, parameters and the function of `::pattern_core::document` it calls;
//! which types get it; whether it writes.

use proc_macro2::TokenStream;
use quote::quote;

use crate::codegen::{Bodies, KeyBound, Method, Shape, Wrappers, Q};

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

/// The methods and the names of those that write; `id_ty` the id field's type, `None` for the
/// fallback's stubs (which never run, their parameters unbounded, every method stubbed).
pub(super) fn methods(id_ty: Option<&TokenStream>, has: Has) -> (Vec<TokenStream>, Vec<String>) {
    let module = quote!(::pattern_core::document);
    let list: [(On, Method); 25] = [
        (
            On::Every,
            Method {
                ret: quote!(()),
                ..Method::named("Creates the multikey index of each keyword array (and the history collection's \
                      index) now rather than on first use (once per store and process).", "ensure_indexes")
            },
        ),
        (
            On::Every,
            Method {
                ret: quote!(()),
                ..Method::named("Installs the `$jsonSchema` validators of the collections (the schema version \
                      and the revision fields, the history records): `document::schemas`.", "ensure_validator")
            },
        ),
        (
            On::Every,
            Method {
                receiver: true,
                ret: quote!(()),
                args: quote!(self,),
                writes: true,
                ..Method::named("Inserts this document (one `insert`), keywords normalised, its schema version \
                      stamped. `DuplicateKey` when its `_id` exists. With history: revision 1 (or the \
                      next after a deleted one's).", "insert")
            },
        ),
        (
            On::Every,
            Method {
                receiver: true,
                ret: quote!(()),
                args: quote!(self,),
                writes: true,
                ..Method::named("Writes this whole document over the one with its `_id`, or inserts it (one \
                      `update` with a replacement and `upsert`). For fields that change together \
                      under a condition, `update_one`. Never over a document of a newer schema \
                      version (`NewerVersion`). With history, a revision (one transaction).", "save")
            },
        ),
        (
            On::Every,
            Method {
                params: quote!(id: &__PatternQ,),
                q: Q::Own,
                ret: quote!(::core::option::Option<Self>),
                args: quote!(id,),
                ..Method::named("The document with this `_id`, or `None` (one `find`), upgraded from its stored \
                      schema version; `NewerVersion` for a version this build does not know.", "get")
            },
        ),
        (
            On::Every,
            Method {
                params: quote!(filter: #module::Filter<Self>, update: #module::Update<Self>,),
                ret: quote!(bool),
                args: quote!(filter, update,),
                writes: true,
                ..Method::named("Applies `update` to the first document matching `filter`, atomically, in one \
                      `update` command; whether one matched (and was updated). The article's \
                      checkout: `Book::ID.eq(id).and(Book::AVAILABLE.gt(0))`, \
                      `Update::new().inc(Book::AVAILABLE, -1).push(Book::CHECKOUT, item)`. \
                      With history, a revision (one transaction).", "update_one")
            },
        ),
        (
            On::Every,
            Method {
                params: quote!(id: &__PatternQ,),
                q: Q::Own,
                ret: quote!(bool),
                args: quote!(id,),
                writes: true,
                ..Method::named("Deletes the document with this `_id`; whether there was one. With history, its \
                      last state is recorded in the same transaction.", "delete")
            },
        ),
        (
            On::Every,
            Method {
                shape: Shape::Builder,
                params: quote!(filter: #module::Filter<Self>,),
                ret: quote!(#module::Find<Self>),
                args: quote!(filter,),
                ..Method::named("A find of the documents matching `filter`: add a projection, a sort, a limit, \
                      then read them with `all`, `all_as`, `one`, `one_as` or `stream`.", "find")
            },
        ),
        (
            On::Versioned,
            Method {
                params: quote!(options: &::pattern_core::adopt::Options<'_>,),
                ret: quote!(#module::Sweep),
                args: quote!(options,),
                writes: true,
                ..Method::named("The sweep: upgrades every stored document of an older schema version to this \
                      one, in batches, resumable after a kill, exactly once, beside live readers and \
                      writers; `dry_run` counts only.", "migrate")
            },
        ),
        (
            On::Computed,
            Method {
                params: quote!(id: &__PatternQ,),
                q: Q::Any,
                ret: quote!(()),
                args: quote!(id,),
                writes: true,
                ..Method::named("Rebuilds the aggregates of the parent `id` from its children, in one \
                      transaction (after writes by other tools).", "recompute")
            },
        ),
        (
            On::Computed,
            Method {
                ret: quote!(::std::vec::Vec<#module::Drift>),
                ..Method::named("The parents whose stored aggregates differ from their children's (one scan \
                      of each collection).", "verify")
            },
        ),
        (
            On::Subset,
            Method {
                params: quote!(id: &__PatternQ,),
                q: Q::Any,
                ret: quote!(()),
                args: quote!(id,),
                writes: true,
                ..Method::named("Rewrites the subset of the parent `id` from its children, in one transaction \
                      (after writes by other tools, or a change of `keep` or `order`).", "resubset")
            },
        ),
        (
            On::Subset,
            Method {
                ret: quote!(::std::vec::Vec<::std::string::String>),
                ..Method::named("The parents whose subset differs from their children's first `keep` (their \
                      `_id`s): run `resubset` on them.", "verify_subsets")
            },
        ),
        (
            On::Subset,
            Method {
                params: quote!(id: &__PatternQ,),
                q: Q::Any,
                ret: quote!(::core::option::Option<::std::vec::Vec<Self>>),
                args: quote!(id,),
                ..Method::named("The subset the parent `id` embeds, as this type (one `find` of the parent);                   `None` without the parent. Every child: `find` by the key, with a sort.", "subset")
            },
        ),
        (
            On::References,
            Method {
                ret: quote!(::std::vec::Vec<#module::StaleCopy>),
                ..Method::named("The copies this type's documents hold (`#[document(reference)]` fields) that \
                      differ from their source, or whose source is gone (after writes by other \
                      tools): one scan, one `find` of the sources per 1,000 documents.", "verify_copies")
            },
        ),
        (
            On::References,
            Method {
                params: quote!(opts: &::pattern_core::adopt::Options<'_>,),
                ret: quote!(#module::Repaired),
                args: quote!(opts,),
                writes: true,
                ..Method::named("Brings every copy `verify_copies` lists in line with its source, in batches \
                      of `opts.batch_items` (1,000 at most), each a transaction; run it again after \
                      a kill. Copies of a deleted source behind a required reference are listed, \
                      left as they are.", "repair_copies")
            },
        ),
        (
            On::Referenced,
            Method {
                params: quote!(opts: &::pattern_core::adopt::Options<'_>,),
                ret: quote!(#module::Propagated),
                args: quote!(::core::option::Option::None, opts,),
                writes: true,
                ..Method::named("Finishes the propagations of this type's writes past its `fan_out` that are \
                      recorded and not finished (a `deferred` type's, or a killed one's), in \
                      batches of `fan_out` copies (or `opts.batch_items`), each a transaction.", "propagate")
            },
        ),
        (
            On::Referenced,
            Method {
                ret: quote!(::std::vec::Vec<#module::Pending>),
                ..Method::named("The propagations of this type's writes recorded and not finished, each with \
                      the time since which its copies not yet reached are stale.", "pending_propagations")
            },
        ),
        (
            On::WithHistory,
            Method {
                params: quote!(id: &__PatternQ,),
                q: Q::Own,
                ret: quote!(::core::option::Option<#module::Revision<Self>>),
                args: quote!(id,),
                ..Method::named("The document with this `_id` and its revision (for `save_if`, `update_if`, \
                      `delete_if`), or `None` (one `find`).", "get_revision")
            },
        ),
        (
            On::WithHistory,
            Method {
                receiver: true,
                params: quote!(expected: u64,),
                ret: quote!(()),
                args: quote!(self, expected,),
                writes: true,
                ..Method::named("Writes this whole document if the stored one is still at revision `expected`; \
                      else `Conflict` (expected, found), nothing written.", "save_if")
            },
        ),
        (
            On::WithHistory,
            Method {
                params: quote!(id: &__PatternQ, expected: u64, update: #module::Update<Self>,),
                q: Q::Own,
                ret: quote!(()),
                args: quote!(id, expected, update,),
                writes: true,
                ..Method::named("Applies `update` to the document `id` if it is still at revision `expected`; \
                      else `Conflict`, nothing written.", "update_if")
            },
        ),
        (
            On::WithHistory,
            Method {
                params: quote!(id: &__PatternQ, expected: u64,),
                q: Q::Own,
                ret: quote!(()),
                args: quote!(id, expected,),
                writes: true,
                ..Method::named("Deletes the document `id` if it is still at revision `expected`; else \
                      `Conflict`.", "delete_if")
            },
        ),
        (
            On::WithHistory,
            Method {
                shape: Shape::Stream,
                params: quote!(id: &__PatternQ,),
                q: Q::Own,
                ret: quote!(#module::Revision<Self>),
                args: quote!(id,),
                ..Method::named("The revisions of the document `id`, newest first: the current one, then each \
                      recorded one (a stream, 100 records per `find`).", "history")
            },
        ),
        (
            On::WithHistory,
            Method {
                params: quote!(id: &__PatternQ, n: u64,),
                q: Q::Own,
                ret: quote!(::core::option::Option<Self>),
                args: quote!(id, n,),
                ..Method::named("The document `id` as it was at revision `n`, or `None`.", "at_revision")
            },
        ),
        (
            On::WithHistory,
            Method {
                params: quote!(id: &__PatternQ, time: ::pattern_core::__private::bson::DateTime,),
                q: Q::Own,
                ret: quote!(::core::option::Option<Self>),
                args: quote!(id, time,),
                ..Method::named("The document `id` as it was at `time`, or `None` when it did not exist then.", "as_of")
            },
        ),
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
    let w = Wrappers {
        bodies: match id_ty {
            Some(id_ty) => Bodies::Calls {
                key_ty: id_ty.clone(),
            },
            None => Bodies::Stubs,
        },
        key: "id",
        module: "document",
        key_bound: KeyBound::Serialize,
        docs: None,
    };
    let mut writes = Vec::new();
    let methods = (list.into_iter())
        .filter(|(on, _)| wanted(*on))
        .map(|(_, m)| {
            if m.writes {
                writes.push(m.name.clone());
            }
            w.render(m)
        })
        .collect();
    (methods, writes)
}
