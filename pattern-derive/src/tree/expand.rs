//! The code of `#[derive(Tree)]`, from the model alone.
//!
//! The methods wrap `::pattern_core::tree`'s functions, typed for the struct: ids by
//! reference to the id field's type, the store any `S: Store`.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{quote, ToTokens};
use syn::{parse_quote, WherePredicate};

use super::{Stubs, Tree, FIELDS};
use crate::codegen::{self, Bodies, KeyBound, Method, Wrappers, Q};

pub(crate) fn expand(t: &Tree) -> TokenStream {
    let Tree {
        ident,
        collection,
        id_field,
        id_ty,
        ..
    } = t;
    let model = Ident::new(t.model.variant(), Span::call_site());
    let fields = FIELDS.map(|f| Ident::new(f, Span::call_site()));
    let names = &t.fields;
    let max_depth = match t.max_depth {
        Some(n) => quote!(::core::option::Option::Some(#n)),
        None => quote!(::core::option::Option::None),
    };
    let calls = Bodies::Calls {
        key_ty: id_ty.to_token_stream(),
    };
    let methods = methods(calls, true, &quote!(__PatternQ));
    let id_types = (!t.id_types.is_empty()).then(|| {
        let types = t.id_types.iter().map(|v| Ident::new(v, Span::call_site()));
        quote!(const ID_TYPES: &'static [::pattern_core::spec::BsonType] = &[#(::pattern_core::spec::BsonType::#types),*];)
    });
    let validate = t.validate.then(|| {
        quote!(
            const VALIDATE: bool = true;
        )
    });
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
    };
    let none = || quote!();
    let by_id = || quote!(id: &#id,);
    let vec = || quote!(::std::vec::Vec<Self>);
    let option = || quote!(::core::option::Option<Self>);
    [
        Method {
            doc: "Creates the model's indexes now rather than on first use (once per store and process): one \
                  command per index (two for ancestors and nested sets, else one).".into(),
            name: "ensure_indexes".into(),
            func: "ensure_indexes".into(),
            receiver: false,
            params: none(),
            q: Q::No,
            ret: quote!(()),
            args: none(),
            ..Method::default()
        },
        Method {
            doc: "Installs the model's `$jsonSchema` validator on the tree's collection (`collMod`, level \
                  \"moderate\"): the server then refuses any write of a node whose model fields have the \
                  wrong types, with `Error::SchemaViolation`.".into(),
            name: "ensure_validator".into(),
            func: "ensure_validator".into(),
            receiver: false,
            params: none(),
            q: Q::No,
            ret: quote!(()),
            args: none(),
            ..Method::default()
        },
        Method {
            doc: "Inserts this node as a new root. `DuplicateKey` when its id exists.\n\nOne insert; in nested \
                  sets a transaction (the root is numbered after every node).".into(),
            name: "insert_root".into(),
            func: "insert_root".into(),
            receiver: true,
            params: none(),
            q: Q::No,
            ret: quote!(()),
            args: quote!(self,),
            ..Method::default()
        },
        Method {
            doc: "Inserts this node as the last child of `parent`. `UnknownNode` when `parent` does not \
                  exist, `DuplicateKey` when this node's id does, `TooDeep` past `max_depth`.\n\nOne \
                  transaction of a few commands whatever the tree's size: the parent's read, the insert \
                  (child references also push to the parent's array, nested sets renumber in one update); \
                  `max_depth` adds a query in the parent/child references and nested sets.".into(),
            name: "insert_child".into(),
            func: "insert_child".into(),
            receiver: true,
            params: quote!(parent: &#id,),
            q: Q::Own,
            ret: quote!(()),
            args: quote!(parent, self,),
            ..Method::default()
        },
        Method {
            doc: "Writes this node's own data (`$set` of each field the struct serializes), keeping its \
                  place in the tree; a field it no longer writes keeps its stored value. `UnknownNode` when \
                  it does not exist.\n\nOne update in every model; the model's fields are \
                  not touched.".into(),
            name: "save".into(),
            func: "save".into(),
            receiver: true,
            params: none(),
            q: Q::No,
            ret: quote!(()),
            args: quote!(self,),
            ..Method::default()
        },
        Method {
            doc: "The node `id`, or `None`.\n\nOne query in every model.".into(),
            name: "get".into(),
            func: "get".into(),
            receiver: false,
            params: by_id(),
            q: Q::Own,
            ret: option(),
            args: quote!(id,),
            ..Method::default()
        },
        Method {
            doc: "The parent of node `id`; `None` for a root. `UnknownNode` when `id` does not exist.\n\nOne \
                  query (a `$graphLookup`), two for materialized paths (the node, then its parent).".into(),
            name: "parent".into(),
            func: "parent".into(),
            receiver: false,
            params: by_id(),
            q: Q::Own,
            ret: option(),
            args: quote!(id,),
            ..Method::default()
        },
        Method {
            doc: "The children of node `id`, in the model's order: the array's (child references), `left` \
                  (nested sets), the id (the others).\n\nOne query, two for materialized paths (the \
                  node's path first).".into(),
            name: "children".into(),
            func: "children".into(),
            receiver: false,
            params: by_id(),
            q: Q::Own,
            ret: vec(),
            args: quote!(id,),
            ..Method::default()
        },
        Method {
            doc: "The other children of node `id`'s parent (the other roots, for a root), in the order of \
                  `children`.\n\nThe queries of `parent`, then those of `children` (or of `roots`): two, \
                  up to four for materialized paths.".into(),
            name: "siblings".into(),
            func: "siblings".into(),
            receiver: false,
            params: by_id(),
            q: Q::Own,
            ret: vec(),
            args: quote!(id,),
            ..Method::default()
        },
        Method {
            doc: "The ancestors of node `id`, from the root down to its parent.\n\nOne query, two for \
                  materialized paths.".into(),
            name: "ancestors".into(),
            func: "ancestors".into(),
            receiver: false,
            params: by_id(),
            q: Q::Own,
            ret: vec(),
            args: quote!(id,),
            ..Method::default()
        },
        Method {
            doc: "The descendants of node `id` in pre-order (each node before its children), down to \
                  `max_depth` levels below it (`Some(1)`: the children), or all of them.\n\nOne query in \
                  the parent and child references (a `$graphLookup`) and ancestors, two in materialized \
                  paths and nested sets (the node first).".into(),
            name: "descendants".into(),
            func: "descendants".into(),
            receiver: false,
            params: quote!(id: &#id, max_depth: ::core::option::Option<u32>,),
            q: Q::Own,
            ret: vec(),
            args: quote!(id, max_depth,),
            ..Method::default()
        },
        Method {
            doc: "The depth of node `id`: 0 for a root.\n\nOne query in every model.".into(),
            name: "depth".into(),
            func: "depth".into(),
            receiver: false,
            params: by_id(),
            q: Q::Own,
            ret: quote!(u32),
            args: quote!(id,),
            ..Method::default()
        },
        Method {
            doc: "Whether node `id` is a descendant of node `of` (a node is not its own).\n\nOne query in \
                  every model.".into(),
            name: "is_descendant".into(),
            func: "is_descendant".into(),
            receiver: false,
            params: quote!(id: &#id, of: &#id,),
            q: Q::Own,
            ret: quote!(bool),
            args: quote!(id, of,),
            ..Method::default()
        },
        Method {
            doc: "Moves node `id` and its subtree under `new_parent` (as its last child), or makes it a \
                  root (`None`). `Cycle` when `new_parent` is the node or one of its descendants, \
                  `TooDeep` when the subtree would go past `max_depth`.\n\nOne transaction of a few \
                  commands whatever the subtree's size (ancestors, materialized paths and nested sets \
                  rewrite the subtree with one update); `max_depth` adds a read of the subtree.".into(),
            name: "move_to".into(),
            func: "move_to".into(),
            receiver: false,
            params: quote!(id: &#id, new_parent: ::core::option::Option<&#id>,),
            q: Q::Own,
            ret: quote!(()),
            args: quote!(id, new_parent,),
            ..Method::default()
        },
        Method {
            doc: "Deletes node `id` and all its descendants; returns how many nodes.\n\nOne transaction of \
                  a few commands whatever the subtree's size.".into(),
            name: "delete_subtree".into(),
            func: "delete_subtree".into(),
            receiver: false,
            params: by_id(),
            q: Q::Own,
            ret: quote!(u64),
            args: quote!(id,),
            ..Method::default()
        },
        Method {
            doc: "Deletes node `id` alone; its children move up to its parent (or become roots).\n\nOne \
                  transaction of a few commands; child references rewrite the array that lists the node.".into(),
            name: "delete_node".into(),
            func: "delete_node".into(),
            receiver: false,
            params: by_id(),
            q: Q::Own,
            ret: quote!(()),
            args: quote!(id,),
            ..Method::default()
        },
        Method {
            doc: "Every root, in the order of `children`.\n\nOne query (child references read every node: \
                  a root is a node no array lists).".into(),
            name: "roots".into(),
            func: "roots".into(),
            receiver: false,
            params: none(),
            q: Q::No,
            ret: vec(),
            args: none(),
            ..Method::default()
        },
        Method {
            doc: "The whole tree in pre-order, each node with its depth.\n\nOne read of every node, ordered \
                  in memory.".into(),
            name: "walk".into(),
            func: "walk".into(),
            receiver: false,
            params: none(),
            q: Q::No,
            ret: quote!(::std::vec::Vec<(u32, Self)>),
            args: none(),
            ..Method::default()
        },
        Method {
            doc: "Every defect of the stored tree, as data, with the nodes read (`is_clean()` when the \
                  tree is sound).\n\nOne read of every node.".into(),
            name: "verify".into(),
            func: "verify".into(),
            receiver: false,
            params: none(),
            q: Q::No,
            ret: quote!(::pattern_core::tree::Verified),
            args: none(),
            ..Method::default()
        },
        Method {
            doc: "Rebuilds the model's fields from the parent links the nodes hold; reports what it \
                  changed and what it could not repair.\n\nOne transaction: one read of every node, one \
                  update per node it fixes.".into(),
            name: "repair".into(),
            func: "repair".into(),
            receiver: false,
            params: none(),
            q: Q::No,
            ret: quote!(::pattern_core::tree::Repair),
            args: none(),
            ..Method::default()
        },
        Method {
            doc: "Reports the collection's indexes against those the model needs: present, missing, and the \
                  user's own (which the library never drops).\n\nOne `listIndexes`.".into(),
            name: "index_report".into(),
            func: "index_report".into(),
            receiver: false,
            params: none(),
            q: Q::No,
            ret: quote!(::std::vec::Vec<::pattern_core::adopt::IndexReport>),
            args: none(),
            ..Method::default()
        },
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

/// The code emitted beside errors: an impl of `Tree` with a placeholder id, and stubs of the
/// methods (taking ids of the id field's type when it could be read).
pub(crate) fn fallback(s: &Stubs) -> TokenStream {
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
    let (generic_id, id) = match s.id_ty {
        Some(ty) => (false, ty.to_token_stream()),
        None => (true, quote!(__PatternQ)),
    };
    let stubs = methods(Bodies::Stubs, generic_id, &id);
    // A generic struct (an error already) implements the trait only where the trait's
    // bounds hold, so that the impl adds no "`T` cannot be sent..." errors of its own.
    let mut input = s.input.clone();
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
