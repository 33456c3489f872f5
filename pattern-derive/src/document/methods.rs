//! The generated methods: one list of [`Method`]s (the table every derive fills), each with
//! its parameters and the function of `::pattern_core::document` it calls (whose
//! documentation, `pattern_core`'s `__document_doc!`, is the method's); which types get it;
//! whether it writes.

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
                ..Method::op("ensure_indexes")
            },
        ),
        (
            On::Every,
            Method {
                ret: quote!(()),
                ..Method::op("ensure_validator")
            },
        ),
        (
            On::Every,
            Method {
                receiver: true,
                ret: quote!(()),
                args: quote!(self,),
                writes: true,
                ..Method::op("insert")
            },
        ),
        (
            On::Every,
            Method {
                receiver: true,
                ret: quote!(()),
                args: quote!(self,),
                writes: true,
                ..Method::op("save")
            },
        ),
        (
            On::Every,
            Method {
                params: quote!(id: &__PatternQ,),
                q: Q::Own,
                ret: quote!(::core::option::Option<Self>),
                args: quote!(id,),
                ..Method::op("get")
            },
        ),
        (
            On::Every,
            Method {
                params: quote!(filter: #module::Filter<Self>, update: #module::Update<Self>,),
                ret: quote!(bool),
                args: quote!(filter, update,),
                writes: true,
                ..Method::op("update_one")
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
                ..Method::op("delete")
            },
        ),
        (
            On::Every,
            Method {
                shape: Shape::Builder,
                params: quote!(filter: #module::Filter<Self>,),
                ret: quote!(#module::Find<Self>),
                args: quote!(filter,),
                ..Method::op("find")
            },
        ),
        (
            On::Versioned,
            Method {
                params: quote!(options: &::pattern_core::adopt::Options<'_>,),
                ret: quote!(#module::Sweep),
                args: quote!(options,),
                writes: true,
                ..Method::op("migrate")
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
                ..Method::op("recompute")
            },
        ),
        (
            On::Computed,
            Method {
                ret: quote!(::std::vec::Vec<#module::Drift>),
                ..Method::op("verify")
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
                ..Method::op("resubset")
            },
        ),
        (
            On::Subset,
            Method {
                ret: quote!(::std::vec::Vec<::std::string::String>),
                ..Method::op("verify_subsets")
            },
        ),
        (
            On::Subset,
            Method {
                params: quote!(id: &__PatternQ,),
                q: Q::Any,
                ret: quote!(::core::option::Option<::std::vec::Vec<Self>>),
                args: quote!(id,),
                ..Method::op("subset")
            },
        ),
        (
            On::References,
            Method {
                ret: quote!(::std::vec::Vec<#module::StaleCopy>),
                ..Method::op("verify_copies")
            },
        ),
        (
            On::References,
            Method {
                params: quote!(opts: &::pattern_core::adopt::Options<'_>,),
                ret: quote!(#module::Repaired),
                args: quote!(opts,),
                writes: true,
                ..Method::op("repair_copies")
            },
        ),
        (
            On::Referenced,
            Method {
                params: quote!(opts: &::pattern_core::adopt::Options<'_>,),
                ret: quote!(#module::Propagated),
                args: quote!(::core::option::Option::None, opts,),
                writes: true,
                ..Method::op("propagate")
            },
        ),
        (
            On::Referenced,
            Method {
                ret: quote!(::std::vec::Vec<#module::Pending>),
                ..Method::op("pending_propagations")
            },
        ),
        (
            On::WithHistory,
            Method {
                params: quote!(id: &__PatternQ,),
                q: Q::Own,
                ret: quote!(::core::option::Option<#module::Revision<Self>>),
                args: quote!(id,),
                ..Method::op("get_revision")
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
                ..Method::op("save_if")
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
                ..Method::op("update_if")
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
                ..Method::op("delete_if")
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
                ..Method::op("history")
            },
        ),
        (
            On::WithHistory,
            Method {
                params: quote!(id: &__PatternQ, n: u64,),
                q: Q::Own,
                ret: quote!(::core::option::Option<Self>),
                args: quote!(id, n,),
                ..Method::op("at_revision")
            },
        ),
        (
            On::WithHistory,
            Method {
                params: quote!(id: &__PatternQ, time: ::pattern_core::__private::bson::DateTime,),
                q: Q::Own,
                ret: quote!(::core::option::Option<Self>),
                args: quote!(id, time,),
                ..Method::op("as_of")
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
        docs: "__document_doc",
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
