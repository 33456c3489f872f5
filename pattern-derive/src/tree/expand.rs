//! The code of `#[derive(Tree)]`, from the model alone.
//!
//! The methods wrap `::pattern_core::tree`'s functions, typed for the struct: ids by
//! reference to the id field's type, the store any `S: Store`.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{quote, ToTokens};
use syn::{parse_quote, WherePredicate};

use super::{Stubs, Tree, FIELDS};
use crate::codegen;

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
        id_ty: id_ty.to_token_stream(),
    };
    let methods = methods(&calls, &quote!(__PatternQ));
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

/// What the methods do.
enum Bodies {
    /// Each calls its function in `::pattern_core::tree`; ids are any `&Q` the id type
    /// borrows as (`&str` for a `String` id), as the other derives take keys.
    Calls { id_ty: TokenStream },
    /// Each is a hidden stub of the same name that never runs, its parameters unbounded
    /// (the fallback's); `generic_id`: the id type is unknown, ids are any `__PatternQ`.
    Stubs { generic_id: bool },
}

/// One method: `pub async fn <name>(<receiver> store, <params>) -> Result<<ret>>`.
struct Method {
    doc: &'static str,
    name: &'static str,
    /// `&self,` for the writes of a node.
    receiver: TokenStream,
    /// Further parameters, each with its trailing comma: `id: &Id,`.
    params: TokenStream,
    /// Whether `params` name the id type (a stub's `__PatternQ` is declared only then).
    takes_id: bool,
    ret: TokenStream,
    /// The arguments after `store`, each with its trailing comma: `id,`.
    args: TokenStream,
}

impl Bodies {
    fn method(&self, m: Method) -> TokenStream {
        let Method {
            doc,
            name,
            receiver,
            params,
            takes_id,
            ret,
            args,
        } = m;
        let name = Ident::new(name, Span::call_site());
        let (attrs, generics, bounds, body) = match self {
            Bodies::Calls { id_ty } if takes_id => (
                quote!(#[doc = #doc]),
                quote!(<__PatternS, __PatternQ>),
                quote! {
                    where
                        __PatternS: ::pattern_core::store::Store,
                        __PatternQ: ::pattern_core::__private::serde::Serialize + ?::core::marker::Sized,
                        #id_ty: ::pattern_core::__private::Borrow<__PatternQ>,
                },
                quote!(::pattern_core::tree::#name::<Self, __PatternS, __PatternQ>(store, #args).await),
            ),
            Bodies::Calls { .. } => (
                quote!(#[doc = #doc]),
                quote!(<__PatternS>),
                quote!(where __PatternS: ::pattern_core::store::Store,),
                quote!(::pattern_core::tree::#name::<Self, __PatternS>(store, #args).await),
            ),
            Bodies::Stubs { generic_id } => {
                let (generics, q) = match *generic_id && takes_id {
                    true => (
                        quote!(<__PatternS, __PatternQ>),
                        quote!(__PatternQ: ?::core::marker::Sized,),
                    ),
                    false => (quote!(<__PatternS>), quote!()),
                };
                (
                    quote! {
                        #[doc(hidden)]
                        #[allow(unused_variables)]
                    },
                    generics,
                    quote!(where __PatternS: ?::core::marker::Sized, #q),
                    quote!(::core::unreachable!()),
                )
            }
        };
        quote! {
            #attrs
            pub async fn #name #generics(
                #receiver
                store: &__PatternS,
                #params
            ) -> ::pattern_core::Result<#ret>
            #bounds
            {
                #body
            }
        }
    }
}

/// The methods, `id` the id type in their parameters.
fn methods(b: &Bodies, id: &TokenStream) -> Vec<TokenStream> {
    let none = || quote!();
    let node = || quote!(&self,);
    let by_id = || quote!(id: &#id,);
    let vec = || quote!(::std::vec::Vec<Self>);
    let option = || quote!(::core::option::Option<Self>);
    [
        Method {
            doc: "Creates the model's indexes now rather than on first use (once per store and process): one \
                  command per index (two for ancestors and nested sets, else one).",
            name: "ensure_indexes",
            receiver: none(),
            params: none(),
            takes_id: false,
            ret: quote!(()),
            args: none(),
        },
        Method {
            doc: "Installs the model's `$jsonSchema` validator on the tree's collection (`collMod`, level \
                  \"moderate\"): the server then refuses any write of a node whose model fields have the \
                  wrong types, with `Error::SchemaViolation`.",
            name: "ensure_validator",
            receiver: none(),
            params: none(),
            takes_id: false,
            ret: quote!(()),
            args: none(),
        },
        Method {
            doc: "Inserts this node as a new root. `DuplicateKey` when its id exists.\n\nOne insert; in nested \
                  sets a transaction (the root is numbered after every node).",
            name: "insert_root",
            receiver: node(),
            params: none(),
            takes_id: false,
            ret: quote!(()),
            args: quote!(self,),
        },
        Method {
            doc: "Inserts this node as the last child of `parent`. `UnknownNode` when `parent` does not \
                  exist, `DuplicateKey` when this node's id does, `TooDeep` past `max_depth`.\n\nOne \
                  transaction of a few commands whatever the tree's size: the parent's read, the insert \
                  (child references also push to the parent's array, nested sets renumber in one update); \
                  `max_depth` adds a query in the parent/child references and nested sets.",
            name: "insert_child",
            receiver: node(),
            params: quote!(parent: &#id,),
            takes_id: true,
            ret: quote!(()),
            args: quote!(parent, self,),
        },
        Method {
            doc: "Writes this node's own data (`$set` of each field the struct serializes), keeping its \
                  place in the tree; a field it no longer writes keeps its stored value. `UnknownNode` when \
                  it does not exist.\n\nOne update in every model; the model's fields are \
                  not touched.",
            name: "save",
            receiver: node(),
            params: none(),
            takes_id: false,
            ret: quote!(()),
            args: quote!(self,),
        },
        Method {
            doc: "The node `id`, or `None`.\n\nOne query in every model.",
            name: "get",
            receiver: none(),
            params: by_id(),
            takes_id: true,
            ret: option(),
            args: quote!(id,),
        },
        Method {
            doc: "The parent of node `id`; `None` for a root. `UnknownNode` when `id` does not exist.\n\nOne \
                  query (a `$graphLookup`), two for materialized paths (the node, then its parent).",
            name: "parent",
            receiver: none(),
            params: by_id(),
            takes_id: true,
            ret: option(),
            args: quote!(id,),
        },
        Method {
            doc: "The children of node `id`, in the model's order: the array's (child references), `left` \
                  (nested sets), the id (the others).\n\nOne query, two for materialized paths (the \
                  node's path first).",
            name: "children",
            receiver: none(),
            params: by_id(),
            takes_id: true,
            ret: vec(),
            args: quote!(id,),
        },
        Method {
            doc: "The other children of node `id`'s parent (the other roots, for a root), in the order of \
                  `children`.\n\nThe queries of `parent`, then those of `children` (or of `roots`): two, \
                  up to four for materialized paths.",
            name: "siblings",
            receiver: none(),
            params: by_id(),
            takes_id: true,
            ret: vec(),
            args: quote!(id,),
        },
        Method {
            doc: "The ancestors of node `id`, from the root down to its parent.\n\nOne query, two for \
                  materialized paths.",
            name: "ancestors",
            receiver: none(),
            params: by_id(),
            takes_id: true,
            ret: vec(),
            args: quote!(id,),
        },
        Method {
            doc: "The descendants of node `id` in pre-order (each node before its children), down to \
                  `max_depth` levels below it (`Some(1)`: the children), or all of them.\n\nOne query in \
                  the parent and child references (a `$graphLookup`) and ancestors, two in materialized \
                  paths and nested sets (the node first).",
            name: "descendants",
            receiver: none(),
            params: quote!(id: &#id, max_depth: ::core::option::Option<u32>,),
            takes_id: true,
            ret: vec(),
            args: quote!(id, max_depth,),
        },
        Method {
            doc: "The depth of node `id`: 0 for a root.\n\nOne query in every model.",
            name: "depth",
            receiver: none(),
            params: by_id(),
            takes_id: true,
            ret: quote!(u32),
            args: quote!(id,),
        },
        Method {
            doc: "Whether node `id` is a descendant of node `of` (a node is not its own).\n\nOne query in \
                  every model.",
            name: "is_descendant",
            receiver: none(),
            params: quote!(id: &#id, of: &#id,),
            takes_id: true,
            ret: quote!(bool),
            args: quote!(id, of,),
        },
        Method {
            doc: "Moves node `id` and its subtree under `new_parent` (as its last child), or makes it a \
                  root (`None`). `Cycle` when `new_parent` is the node or one of its descendants, \
                  `TooDeep` when the subtree would go past `max_depth`.\n\nOne transaction of a few \
                  commands whatever the subtree's size (ancestors, materialized paths and nested sets \
                  rewrite the subtree with one update); `max_depth` adds a read of the subtree.",
            name: "move_to",
            receiver: none(),
            params: quote!(id: &#id, new_parent: ::core::option::Option<&#id>,),
            takes_id: true,
            ret: quote!(()),
            args: quote!(id, new_parent,),
        },
        Method {
            doc: "Deletes node `id` and all its descendants; returns how many nodes.\n\nOne transaction of \
                  a few commands whatever the subtree's size.",
            name: "delete_subtree",
            receiver: none(),
            params: by_id(),
            takes_id: true,
            ret: quote!(u64),
            args: quote!(id,),
        },
        Method {
            doc: "Deletes node `id` alone; its children move up to its parent (or become roots).\n\nOne \
                  transaction of a few commands; child references rewrite the array that lists the node.",
            name: "delete_node",
            receiver: none(),
            params: by_id(),
            takes_id: true,
            ret: quote!(()),
            args: quote!(id,),
        },
        Method {
            doc: "Every root, in the order of `children`.\n\nOne query (child references read every node: \
                  a root is a node no array lists).",
            name: "roots",
            receiver: none(),
            params: none(),
            takes_id: false,
            ret: vec(),
            args: none(),
        },
        Method {
            doc: "The whole tree in pre-order, each node with its depth.\n\nOne read of every node, ordered \
                  in memory.",
            name: "walk",
            receiver: none(),
            params: none(),
            takes_id: false,
            ret: quote!(::std::vec::Vec<(u32, Self)>),
            args: none(),
        },
        Method {
            doc: "Every defect of the stored tree, as data, with the nodes read (`is_clean()` when the \
                  tree is sound).\n\nOne read of every node.",
            name: "verify",
            receiver: none(),
            params: none(),
            takes_id: false,
            ret: quote!(::pattern_core::tree::Verified),
            args: none(),
        },
        Method {
            doc: "Rebuilds the model's fields from the parent links the nodes hold; reports what it \
                  changed and what it could not repair.\n\nOne transaction: one read of every node, one \
                  update per node it fixes.",
            name: "repair",
            receiver: none(),
            params: none(),
            takes_id: false,
            ret: quote!(::pattern_core::tree::Repair),
            args: none(),
        },
        Method {
            doc: "Reports the collection's indexes against those the model needs: present, missing, and the \
                  user's own (which the library never drops).\n\nOne `listIndexes`.",
            name: "index_report",
            receiver: none(),
            params: none(),
            takes_id: false,
            ret: quote!(::std::vec::Vec<::pattern_core::adopt::IndexReport>),
            args: none(),
        },
    ]
    .into_iter()
    .map(|m| b.method(m))
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
    let (bodies, id) = match s.id_ty {
        Some(ty) => (Bodies::Stubs { generic_id: false }, ty.to_token_stream()),
        None => (Bodies::Stubs { generic_id: true }, quote!(__PatternQ)),
    };
    let stubs = methods(&bodies, &id);
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
