//! `#[derive(Tree)]`'s back end: the `Tree` impl and the typed methods, from the checked model
//! alone; beside errors, a fallback of the same names.
//!
//! The methods wrap `::pattern_core::tree`'s functions, typed for the struct: ids by
//! reference to the id field's type, the store any `S: Store`.

#[cfg(test)]
mod tests;

use proc_macro2::{Ident, Span, TokenStream};
use quote::{quote, ToTokens};
use syn::{parse_quote, Type, WherePredicate};

use crate::ast::Field;
use crate::attr::tree::{Tree, FIELDS};
use crate::codegen::{self, Bodies, KeyBound, Method, Wrappers, Q};

/// The model of a struct deriving `Tree`.
type Container<'a> = crate::ast::Container<'a, Tree>;

pub(crate) fn expand(t: &Container) -> TokenStream {
    let (ident, a) = (t.ident, &t.attrs);
    let collection = &a.collection.value().expect("checked").value;
    let model = a.model.value().expect("checked");
    // The node's id: the field stored as `_id` (exactly one).
    let id = id_field(t).expect("checked");
    let (id_field, id_ty) = (id.ident, id.ty);
    let id_types = crate::bson_type::bson_types(id.ty, id.serde.as_is);
    let model = Ident::new(model.variant(), Span::call_site());
    let fields = FIELDS.map(|f| Ident::new(f, Span::call_site()));
    let names = a.names().map(|n| n.value);
    let max_depth = match a.max_depth.value() {
        Some(n) => quote!(::core::option::Option::Some(#n)),
        None => quote!(::core::option::Option::None),
    };
    let calls = Bodies::Calls {
        key_ty: id_ty.to_token_stream(),
    };
    let methods = methods(calls, true, &quote!(__PatternQ));
    let id_types = (!id_types.is_empty()).then(|| {
        let types = id_types.iter().map(|v| Ident::new(v, Span::call_site()));
        quote!(const ID_TYPES: &'static [::pattern_core::spec::BsonType] = &[#(::pattern_core::spec::BsonType::#types),*];)
    });
    let validate = codegen::validate(a.validate.value().is_some());
    quote! {
        #[automatically_derived]
        impl ::pattern_core::tree::Tree for #ident {
            const SPEC: ::pattern_core::spec::TreeSpec = ::pattern_core::spec::TreeSpec {
                collection: #collection,
                model: ::pattern_core::spec::TreeModel::#model,
                fields: ::pattern_core::spec::TreeFields {
                    #(#fields: #names,)*
                },
                max_depth: #max_depth,
            };
            type Id = #id_ty;
            fn id(&self) -> &Self::Id {
                &self.#id_field
            }
            #id_types
            #validate
        }

        #[automatically_derived]
        impl #ident {
            #(#methods)*
        }
    }
}

/// The methods, `id` the id type in their parameters (`generic_id`: `__PatternQ`).
fn methods(bodies: Bodies, generic_id: bool, id: &TokenStream) -> Vec<TokenStream> {
    let w = Wrappers {
        bodies,
        key: "id",
        module: "tree",
        key_bound: KeyBound::Serialize,
        docs: "__tree_doc",
    };
    let none = || quote!();
    let unit = || quote!(());
    let by_id = || quote!(id: &#id,);
    let vec = || quote!(::std::vec::Vec<Self>);
    let option = || quote!(::core::option::Option<Self>);
    // One row a method: name (and function), `&self`, parameters, `Q`, what it returns, the
    // call's arguments.
    let m = |name: &str, receiver, params, q, ret, args| Method {
        receiver,
        params,
        q,
        ret,
        args,
        ..Method::op(name)
    };
    [
        m("ensure_indexes", false, none(), Q::No, unit(), none()),
        m("ensure_validator", false, none(), Q::No, unit(), none()),
        m("insert_root", true, none(), Q::No, unit(), quote!(self,)),
        m(
            "insert_child",
            true,
            quote!(parent: &#id,),
            Q::Own,
            unit(),
            quote!(parent, self,),
        ),
        m("save", true, none(), Q::No, unit(), quote!(self,)),
        m("get", false, by_id(), Q::Own, option(), quote!(id,)),
        m("parent", false, by_id(), Q::Own, option(), quote!(id,)),
        m("children", false, by_id(), Q::Own, vec(), quote!(id,)),
        m("siblings", false, by_id(), Q::Own, vec(), quote!(id,)),
        m("ancestors", false, by_id(), Q::Own, vec(), quote!(id,)),
        m(
            "descendants",
            false,
            quote!(id: &#id, max_depth: ::core::option::Option<u32>,),
            Q::Own,
            vec(),
            quote!(id, max_depth,),
        ),
        m("depth", false, by_id(), Q::Own, quote!(u32), quote!(id,)),
        m(
            "is_descendant",
            false,
            quote!(id: &#id, of: &#id,),
            Q::Own,
            quote!(bool),
            quote!(id, of,),
        ),
        m(
            "move_to",
            false,
            quote!(id: &#id, new_parent: ::core::option::Option<&#id>,),
            Q::Own,
            unit(),
            quote!(id, new_parent,),
        ),
        m(
            "delete_subtree",
            false,
            by_id(),
            Q::Own,
            quote!(u64),
            quote!(id,),
        ),
        m("delete_node", false, by_id(), Q::Own, unit(), quote!(id,)),
        m("roots", false, none(), Q::No, vec(), none()),
        m(
            "walk",
            false,
            none(),
            Q::No,
            quote!(::std::vec::Vec<(u32, Self)>),
            none(),
        ),
        m(
            "verify",
            false,
            none(),
            Q::No,
            quote!(::pattern_core::tree::Verified),
            none(),
        ),
        m(
            "repair",
            false,
            none(),
            Q::No,
            quote!(::pattern_core::tree::Repair),
            none(),
        ),
        m(
            "index_report",
            false,
            none(),
            Q::No,
            quote!(::std::vec::Vec<::pattern_core::adopt::IndexReport>),
            none(),
        ),
    ]
    .into_iter()
    .map(|m| {
        w.render(Method {
            q: if generic_id { m.q } else { Q::No },
            ..m
        })
    })
    .collect()
}

/// The node's id: the first field stored as `_id` (the check pass makes it the only one).
pub(super) fn id_field<'s, 'a>(t: &'s Container<'a>) -> Option<&'s Field<'a, [bool; 1]>> {
    t.fields()?.iter().find(|f| f.bson.value == "_id")
}

/// The id type of the stubs beside errors, when one could be read: the field marked
/// `#[tree(id)]`, else the one stored as `_id`.
pub(super) fn stub_id_ty<'a>(t: &Container<'a>) -> Option<&'a Type> {
    let marked = t
        .fields()
        .and_then(|fields| fields.iter().find(|f| f.attrs[0]));
    marked.or(id_field(t)).map(|f| f.ty)
}

/// The code emitted beside errors: an impl of `Tree` with a placeholder id, and stubs of the
/// methods, taking ids of the id field's type when one could be read (the field marked
/// `#[tree(id)]`, else the one stored as `_id`).
pub(crate) fn fallback(t: &Container) -> TokenStream {
    let body = quote! {
        const SPEC: ::pattern_core::spec::TreeSpec = ::pattern_core::spec::TreeSpec::new(
            "",
            ::pattern_core::spec::TreeModel::ParentRefs,
        );
        type Id = ();
        fn id(&self) -> &() {
            &()
        }
    };
    // Ids of the id field's type when it could be read, else of any type `Q`.
    let (generic_id, id) = match stub_id_ty(t) {
        Some(ty) => (false, ty.to_token_stream()),
        None => (true, quote!(__PatternQ)),
    };
    let stubs = methods(Bodies::Stubs, generic_id, &id);
    // A generic struct (an error already) implements the trait only where the trait's
    // bounds hold, so that the impl adds no "`T` cannot be sent..." errors of its own.
    let mut input = t.input.clone();
    if !input.generics.params.is_empty() {
        let ident = &input.ident;
        let (_, ty_generics, _) = input.generics.split_for_impl();
        let bound: WherePredicate = parse_quote! {
            #ident #ty_generics: ::pattern_core::__private::serde::Serialize
                + ::pattern_core::__private::serde::de::DeserializeOwned
                + ::core::marker::Send
                + ::core::marker::Sync
        };
        input.generics.make_where_clause().predicates.push(bound);
    }
    codegen::fallback(&input, quote!(::pattern_core::tree::Tree), body, &stubs)
}
