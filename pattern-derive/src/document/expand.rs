//! The code of `#[derive(Document)]`, from the model alone: the `Document` impl, one typed
//! path per field, and thin methods over `::pattern_core::document`'s functions.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::DeriveInput;

use super::{Doc, Money, Typed, Versioning};
use crate::codegen;

pub(crate) fn expand(d: &Doc) -> TokenStream {
    let Doc {
        ident,
        collection,
        id_field,
        id_ty,
        ..
    } = d;
    let keywords = d.keywords.iter().map(|(field, how)| {
        let how = Ident::new(how.variant(), Span::call_site());
        quote!(::pattern_core::spec::Keywords {
            field: #field,
            normalize: ::pattern_core::spec::Normalize::#how,
        })
    });
    let consts = typed_paths(&d.fields);
    let has = Has {
        versions: d.versioning.is_some(),
        history: d.history.is_some(),
        computed: d.computed.is_some(),
        subset: d.subset.is_some(),
    };
    let (methods, writes) = methods(Some(&id_ty.to_token_stream()), has);
    let versioning = d.versioning.as_ref().map(|v| {
        let Versioning {
            current,
            field,
            unversioned,
            write_back,
            previous,
        } = v;
        let oldest = previous.first().map_or(*current, |p| p.0);
        let arms = previous.iter().enumerate().map(|(i, (n, ty))| {
            // Each hop at the type it starts from: a missing conversion is an error there.
            let hops = previous[i + 1..]
                .iter()
                .map(|(_, next)| (next.to_token_stream(), next.span()))
                .chain(std::iter::once((quote!(Self), ident.span())));
            let mut from_span = ty.span();
            let hops: Vec<TokenStream> = hops
                .map(|(next, next_span)| {
                    // `Self` at the type it converts from, so the error shows there.
                    let next = if next.to_string() == "Self" {
                        quote_spanned!(from_span=> Self)
                    } else {
                        next
                    };
                    let hop = quote_spanned!(from_span=> .then::<#next>()?);
                    from_span = next_span;
                    hop
                })
                .collect();
            let read = quote_spanned!(ty.span()=> .read::<#ty>()?);
            quote!(#n => __up #read #(#hops)* .done(),)
        });
        quote! {
            const VERSIONING: ::core::option::Option<::pattern_core::document::Versioning> =
                ::core::option::Option::Some(::pattern_core::document::Versioning {
                    field: #field,
                    current: #current,
                    unversioned: #unversioned,
                    oldest: #oldest,
                    write_back: #write_back,
                });
            fn upgrade(
                from: u32,
                doc: ::pattern_core::__private::bson::Document,
            ) -> ::pattern_core::Result<Self> {
                let __up = ::pattern_core::document::Upgrading::<Self>::new(from, doc);
                match from {
                    #(#arms)*
                    _ => ::core::result::Result::Err(__up.unknown()),
                }
            }
        }
    });
    let approximate = d.approximate.iter().map(|(_, field, every)| {
        quote!(::pattern_core::document::Approximate { field: #field, every: #every })
    });
    let counters: Vec<TokenStream> = d
        .approximate
        .iter()
        .map(|(field_ident, field, every)| {
            let name = crate::serde_names::unraw(field_ident);
            let method = quote::format_ident!("increment_{}", name);
            let doc = format!(
                "Adds 1 to the approximate counter `{name}` of the document `id`: counted in this \
                 process, written (`$inc` of {every}, one `update`) by every {every}th increment; \
                 whether this call wrote. A crash loses fewer than {every} increments per \
                 document; `flush` writes the rest."
            );
            quote! {
                #[doc = #doc]
                pub async fn #method<__PatternS, __PatternQ>(
                    store: &__PatternS,
                    id: &__PatternQ,
                ) -> ::pattern_core::Result<bool>
                where
                    __PatternS: ::pattern_core::store::Store,
                    __PatternQ: ::pattern_core::__private::serde::Serialize + ?::core::marker::Sized,
                    #id_ty: ::pattern_core::__private::Borrow<__PatternQ>,
                {
                    ::pattern_core::document::increment::<Self, __PatternS, __PatternQ>(store, #field, id).await
                }
            }
        })
        .collect();
    let flush = (!d.approximate.is_empty()).then(|| {
        quote! {
            /// Writes every increment of this type's approximate counters counted in this
            /// process and not yet written (one `update` per document and counter with some);
            /// how many. Call it before the process ends.
            pub async fn flush<__PatternS: ::pattern_core::store::Store>(
                store: &__PatternS,
            ) -> ::pattern_core::Result<u64> {
                ::pattern_core::document::flush::<Self, __PatternS>(store).await
            }
        }
    });
    let mut writes = writes;
    for (field_ident, _, _) in &d.approximate {
        writes.push(format!(
            "increment_{}",
            crate::serde_names::unraw(field_ident)
        ));
    }
    if flush.is_some() {
        writes.push("flush".to_owned());
    }
    let computed = d.computed.as_ref().map(|c| {
        let parent = &c.parent;
        let module = quote!(::pattern_core::document);
        let konst = |i: &Ident| Ident::new(&crate::serde_names::unraw(i).to_uppercase(), i.span());
        // The parent's path at a field's name, so that an error shows there alone.
        let at = |span: Span| -> TokenStream {
            (parent.to_token_stream().into_iter())
                .map(|mut t| {
                    t.set_span(span);
                    t
                })
                .collect()
        };
        let key = konst(&c.key);
        let key_parent = at(c.key.span());
        let key = quote_spanned!(c.key.span()=> #module::key_field::<Self, #key_parent>(Self::#key));
        let count = match &c.count {
            Some(f) => {
                let k = konst(f);
                let parent = at(f.span());
                quote_spanned!(f.span()=> ::core::option::Option::Some(#module::count_field::<#parent>(#parent::#k)))
            }
            None => quote!(::core::option::Option::None),
        };
        let aggregates = c.aggregates.iter().map(|(op, child, into)| {
            let (ck, pk) = (konst(child), konst(into));
            let parent = at(into.span());
            let check = match *op {
                "Sum" => quote_spanned!(into.span()=> #module::sum_field(Self::#ck, #parent::#pk)),
                "Avg" => quote_spanned!(into.span()=> #module::avg_field(Self::#ck, #parent::#pk)),
                _ => quote_spanned!(into.span()=> #module::extreme_field(Self::#ck, #parent::#pk)),
            };
            let op = Ident::new(op, Span::call_site());
            quote! {
                #module::Aggregate {
                    of: Self::#ck.name(),
                    op: #module::Op::#op,
                    into: #check,
                }
            }
        });
        quote! {
            const COMPUTED: ::core::option::Option<#module::Computed> =
                ::core::option::Option::Some(#module::Computed {
                    parent: <#parent as #module::Document>::COLLECTION,
                    key: #key,
                    count: #count,
                    aggregates: &[#(#aggregates),*],
                });
        }
    });
    let subset = d.subset.as_ref().map(|sb| {
        let module = quote!(::pattern_core::document);
        let konst = |i: &Ident| Ident::new(&crate::serde_names::unraw(i).to_uppercase(), i.span());
        let at = |span: Span| -> TokenStream {
            (sb.parent.to_token_stream().into_iter())
                .map(|mut t| {
                    t.set_span(span);
                    t
                })
                .collect()
        };
        let parent = &sb.parent;
        let (key, into, order) = (konst(&sb.key), konst(&sb.into), konst(&sb.order));
        let key_parent = at(sb.key.span());
        let into_parent = at(sb.into.span());
        let key = quote_spanned!(sb.key.span()=> #module::key_field::<Self, #key_parent>(Self::#key));
        let into = quote_spanned!(sb.into.span()=> #module::subset_field::<Self, #into_parent>(#into_parent::#into));
        let order = quote_spanned!(sb.order.span()=> #module::order_field(Self::#order));
        let keep = sb.keep;
        quote! {
            const SUBSET: ::core::option::Option<#module::Subset> =
                ::core::option::Option::Some(#module::Subset {
                    parent: <#parent as #module::Document>::COLLECTION,
                    key: #key,
                    into: #into,
                    keep: #keep,
                    order: #order,
                });
        }
    });
    let history = d.history.as_ref().map(|h| {
        quote!(const HISTORY: ::core::option::Option<&'static str> = ::core::option::Option::Some(#h);)
    });
    quote! {
        #[automatically_derived]
        impl ::pattern_core::document::Document for #ident {
            const COLLECTION: &'static str = #collection;
            type Id = #id_ty;
            fn id(&self) -> &Self::Id {
                &self.#id_field
            }
            const KEYWORDS: &'static [::pattern_core::spec::Keywords] = &[#(#keywords),*];
            const WRITES: &'static [&'static str] = &[#(#writes),*];
            const APPROXIMATE: &'static [::pattern_core::document::Approximate] = &[#(#approximate),*];
            #versioning
            #history
            #computed
            #subset
        }

        #[automatically_derived]
        impl #ident {
            #(#consts)*
            #(#methods)*
            #(#counters)*
            #flush
        }
    }
}

/// `pub const AVAILABLE: Field<Self, i32> = Field::new("available");` per field.
fn typed_paths(fields: &[Typed]) -> Vec<TokenStream> {
    fields
        .iter()
        .map(|f| {
            let Typed {
                konst,
                ident,
                ty,
                bson,
                money,
            } = f;
            let doc = format!(
                "The field `{}`, stored as `{bson}`: a typed path for filters and updates.",
                crate::serde_names::unraw(ident)
            );
            // At the field's type: a money form on a field of another type is an error there.
            let span = ty.span();
            let name = syn::LitStr::new(bson, span);
            let ctor = match money {
                None => quote_spanned!(span=> new),
                Some(Money::Decimal128 { option: false }) => quote_spanned!(span=> decimal128),
                Some(Money::Decimal128 { option: true }) => {
                    quote_spanned!(span=> decimal128_option)
                }
                Some(Money::Text { option: false }) => quote_spanned!(span=> text),
                Some(Money::Text { option: true }) => quote_spanned!(span=> text_option),
                Some(Money::Scaled(n)) => {
                    let n = proc_macro2::Literal::u32_unsuffixed(*n);
                    quote_spanned!(span=> scaled::<#n>)
                }
            };
            let new = quote_spanned!(span=> ::pattern_core::document::Field::#ctor(#name));
            quote! {
                #[doc = #doc]
                pub const #konst: ::pattern_core::document::Field<Self, #ty> = #new;
            }
        })
        .collect()
}

/// Which optional parts the type declares (the methods of a part it lacks are not generated).
#[derive(Clone, Copy)]
pub(crate) struct Has {
    pub versions: bool,
    pub history: bool,
    pub computed: bool,
    pub subset: bool,
}

/// Which types a method is generated on.
#[derive(Clone, Copy, PartialEq, Eq)]
enum On {
    Every,
    Versioned,
    WithHistory,
    Computed,
    Subset,
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
fn methods(id_ty: Option<&TokenStream>, has: Has) -> (Vec<TokenStream>, Vec<String>) {
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

/// The code emitted beside errors: an impl of `Document` with a placeholder id, the typed
/// paths that could be read, and stubs of the methods.
pub(crate) fn fallback(input: &DeriveInput, fields: &[Typed], counters: &[&Ident]) -> TokenStream {
    let body = quote! {
        const COLLECTION: &'static str = "";
        type Id = ();
        fn id(&self) -> &() {
            &()
        }
    };
    let mut stubs = if input.generics.params.is_empty() {
        typed_paths(fields)
    } else {
        Vec::new()
    };
    let every = Has {
        versions: true,
        history: true,
        computed: true,
        subset: true,
    };
    stubs.extend(methods(None, every).0);
    for c in counters {
        let method = quote::format_ident!("increment_{}", crate::serde_names::unraw(c));
        stubs.push(quote! {
            #[doc(hidden)]
            #[allow(unused_variables)]
            pub async fn #method<__PatternS, __PatternQ>(
                store: &__PatternS,
                id: &__PatternQ,
            ) -> ::pattern_core::Result<bool> {
                ::core::unreachable!()
            }
        });
    }
    if !counters.is_empty() {
        stubs.push(quote! {
            #[doc(hidden)]
            #[allow(unused_variables)]
            pub async fn flush<__PatternS>(store: &__PatternS) -> ::pattern_core::Result<u64> {
                ::core::unreachable!()
            }
        });
    }
    codegen::fallback(
        input,
        quote!(::pattern_core::document::Document),
        body,
        &stubs,
    )
}
