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
        (On::Every, Method::op("ensure_indexes").ret(quote!(()))),
        (On::Every, Method::op("ensure_validator").ret(quote!(()))),
        (
            On::Every,
            Method::op("insert").of_self().ret(quote!(())).writes(),
        ),
        (
            On::Every,
            Method::op("save").of_self().ret(quote!(())).writes(),
        ),
        (
            On::Every,
            Method::op("get")
                .by_id(Q::Own)
                .ret(quote!(::core::option::Option<Self>)),
        ),
        (
            On::Every,
            Method::op("update_one")
                .takes(
                    quote!(filter: #module::Filter<Self>, update: #module::Update<Self>,),
                    quote!(filter, update,),
                )
                .ret(quote!(bool))
                .writes(),
        ),
        (
            On::Every,
            Method::op("delete")
                .by_id(Q::Own)
                .ret(quote!(bool))
                .writes(),
        ),
        (
            On::Every,
            Method::op("find")
                .takes(quote!(filter: #module::Filter<Self>,), quote!(filter,))
                .shaped(Shape::Builder)
                .ret(quote!(#module::Find<Self>)),
        ),
        (
            On::Versioned,
            Method::op("migrate")
                .takes(
                    quote!(options: &::pattern_core::adopt::Options<'_>,),
                    quote!(options,),
                )
                .ret(quote!(#module::Sweep))
                .writes(),
        ),
        (
            On::Computed,
            Method::op("recompute")
                .by_id(Q::Any)
                .ret(quote!(()))
                .writes(),
        ),
        (
            On::Computed,
            Method::op("verify").ret(quote!(::std::vec::Vec<#module::Drift>)),
        ),
        (
            On::Subset,
            Method::op("resubset")
                .by_id(Q::Any)
                .ret(quote!(()))
                .writes(),
        ),
        (
            On::Subset,
            Method::op("verify_subsets").ret(quote!(::std::vec::Vec<::std::string::String>)),
        ),
        (
            On::Subset,
            Method::op("subset")
                .by_id(Q::Any)
                .ret(quote!(::core::option::Option<::std::vec::Vec<Self>>)),
        ),
        (
            On::References,
            Method::op("verify_copies").ret(quote!(::std::vec::Vec<#module::StaleCopy>)),
        ),
        (
            On::References,
            Method::op("repair_copies")
                .takes(
                    quote!(opts: &::pattern_core::adopt::Options<'_>,),
                    quote!(opts,),
                )
                .ret(quote!(#module::Repaired))
                .writes(),
        ),
        (
            On::Referenced,
            Method::op("propagate")
                .takes(
                    quote!(opts: &::pattern_core::adopt::Options<'_>,),
                    quote!(::core::option::Option::None, opts,),
                )
                .ret(quote!(#module::Propagated))
                .writes(),
        ),
        (
            On::Referenced,
            Method::op("pending_propagations").ret(quote!(::std::vec::Vec<#module::Pending>)),
        ),
        (
            On::WithHistory,
            Method::op("get_revision")
                .by_id(Q::Own)
                .ret(quote!(::core::option::Option<#module::Revision<Self>>)),
        ),
        (
            On::WithHistory,
            Method::op("save_if")
                .of_self()
                .takes(quote!(expected: u64,), quote!(expected,))
                .ret(quote!(()))
                .writes(),
        ),
        (
            On::WithHistory,
            Method::op("update_if")
                .by_id(Q::Own)
                .takes(
                    quote!(expected: u64, update: #module::Update<Self>,),
                    quote!(expected, update,),
                )
                .ret(quote!(()))
                .writes(),
        ),
        (
            On::WithHistory,
            Method::op("delete_if")
                .by_id(Q::Own)
                .takes(quote!(expected: u64,), quote!(expected,))
                .ret(quote!(()))
                .writes(),
        ),
        (
            On::WithHistory,
            Method::op("history")
                .by_id(Q::Own)
                .shaped(Shape::Stream)
                .ret(quote!(#module::Revision<Self>)),
        ),
        (
            On::WithHistory,
            Method::op("at_revision")
                .by_id(Q::Own)
                .takes(quote!(n: u64,), quote!(n,))
                .ret(quote!(::core::option::Option<Self>)),
        ),
        (
            On::WithHistory,
            Method::op("as_of")
                .by_id(Q::Own)
                .takes(
                    quote!(time: ::pattern_core::__private::bson::DateTime,),
                    quote!(time,),
                )
                .ret(quote!(::core::option::Option<Self>)),
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
