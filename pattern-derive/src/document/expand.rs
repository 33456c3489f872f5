//! The code of `#[derive(Document)]`, from the model alone: the `Document` impl, one typed
//! path per field, and thin methods over `::pattern_core::document`'s functions.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::DeriveInput;

use super::{Doc, Money, Typed};
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
    let methods = methods(Some(&id_ty.to_token_stream()));
    quote! {
        #[automatically_derived]
        impl ::pattern_core::document::Document for #ident {
            const COLLECTION: &'static str = #collection;
            type Id = #id_ty;
            fn id(&self) -> &Self::Id {
                &self.#id_field
            }
            const KEYWORDS: &'static [::pattern_core::spec::Keywords] = &[#(#keywords),*];
        }

        #[automatically_derived]
        impl #ident {
            #(#consts)*
            #(#methods)*
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

/// One method: its documentation, signature (without bounds), bounds and body.
struct Method {
    doc: &'static str,
    sig: TokenStream,
    bounds: TokenStream,
    call: TokenStream,
}

/// The methods; `id_ty` the id field's type, `None` for the fallback's stubs (which never
/// run, their parameters unbounded).
fn methods(id_ty: Option<&TokenStream>) -> Vec<TokenStream> {
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
    let list = [
        Method {
            doc: "Creates the multikey index of each keyword array now rather than on first use \
                  (once per store and process).",
            sig: quote!(async fn ensure_indexes<__PatternS>(store: &__PatternS) -> #r_unit),
            bounds: store.clone(),
            call: quote!(#module::ensure_indexes::<Self, __PatternS>(store).await),
        },
        Method {
            doc: "Inserts this document (one `insert`), keywords normalised. `DuplicateKey` when \
                  its `_id` exists.",
            sig: quote!(async fn insert<__PatternS>(&self, store: &__PatternS) -> #r_unit),
            bounds: store.clone(),
            call: quote!(#module::insert::<Self, __PatternS>(store, self).await),
        },
        Method {
            doc: "Writes this whole document over the one with its `_id`, or inserts it (one \
                  `update` with a replacement and `upsert`). For fields that change together \
                  under a condition, `update_one`.",
            sig: quote!(async fn save<__PatternS>(&self, store: &__PatternS) -> #r_unit),
            bounds: store.clone(),
            call: quote!(#module::save::<Self, __PatternS>(store, self).await),
        },
        Method {
            doc: "The document with this `_id`, or `None` (one `find`).",
            sig: quote! {
                async fn get<__PatternS, __PatternQ>(store: &__PatternS, id: &__PatternQ) -> #r_opt
            },
            bounds: quote!(#store #id_bound),
            call: quote!(#module::get::<Self, __PatternS, __PatternQ>(store, id).await),
        },
        Method {
            doc: "Applies `update` to the first document matching `filter`, atomically, in one \
                  `update` command; whether one matched (and was updated). The article's \
                  checkout: `Book::ID.eq(id).and(Book::AVAILABLE.gt(0))`, \
                  `Update::new().inc(Book::AVAILABLE, -1).push(Book::CHECKOUT, item)`.",
            sig: quote! {
                async fn update_one<__PatternS>(
                    store: &__PatternS,
                    filter: #module::Filter<Self>,
                    update: #module::Update<Self>,
                ) -> #r_bool
            },
            bounds: store,
            call: quote!(#module::update_one::<Self, __PatternS>(store, filter, update).await),
        },
        Method {
            doc: "A find of the documents matching `filter`: add a projection, a sort, a limit, \
                  then read them with `all`, `all_as`, `one` or `one_as`.",
            sig: quote!(fn find(filter: #module::Filter<Self>) -> #module::Find<Self>),
            bounds: quote!(),
            call: quote!(#module::find::<Self>(filter)),
        },
    ];
    list.into_iter()
        .map(|m| {
            let Method {
                doc,
                sig,
                bounds,
                call,
            } = m;
            let bounds = (!bounds.is_empty()).then(|| quote!(where #bounds));
            match id_ty {
                Some(_) => quote! {
                    #[doc = #doc]
                    pub #sig #bounds { #call }
                },
                None => quote! {
                    #[doc(hidden)]
                    #[allow(unused_variables)]
                    pub #sig { ::core::unreachable!() }
                },
            }
        })
        .collect()
}

/// The code emitted beside errors: an impl of `Document` with a placeholder id, the typed
/// paths that could be read, and stubs of the methods.
pub(crate) fn fallback(input: &DeriveInput, fields: &[Typed]) -> TokenStream {
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
    stubs.extend(methods(None));
    codegen::fallback(
        input,
        quote!(::pattern_core::document::Document),
        body,
        &stubs,
    )
}
