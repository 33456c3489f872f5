//! Generated code both derives share: the typed wrappers and the fallback emitted beside
//! errors (an impl and the wrappers' stubs).
//!
//! Every path is absolute (`::pattern_core::...`, `::core::...`), so the code compiles in a
//! module that imports nothing and beside a user's own `Result`.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{quote, ToTokens};
use syn::{DeriveInput, Type};

/// Builds the wrappers of one pattern's free functions (`::pattern_core::bucket::push`...),
/// typed for the deriving struct: `Self` in for the pattern's type parameter, the store `S`
/// and the borrowed key `Q` left generic.
#[derive(Clone, Copy)]
pub(crate) struct Wrappers<'a> {
    pub bodies: Bodies<'a>,
    /// The key parameter's name: `key` or `id`.
    pub key: &'static str,
    /// The module of the free functions, under `pattern_core`: `bucket`, `outlier`, or
    /// `adopt::bucket` for the adoption methods.
    pub module: &'static str,
}

/// What the wrappers do.
#[derive(Clone, Copy)]
pub(crate) enum Bodies<'a> {
    /// Each calls its free function. `key_ty` is the key (or id) field's type, which `Q` is
    /// borrowed from.
    Calls { key_ty: &'a Type },
    /// Each is a hidden stub of the same name that never runs, its parameters unbounded: the
    /// fallback's, so that a call site compiles beside the derive's errors instead of adding
    /// "no function or associated item named ..." to them.
    Stubs,
}

/// One wrapper: `pub async fn <name>(store, <key>, <params>) -> Result<<ret>>`.
pub(crate) struct Method<'a> {
    pub doc: &'a str,
    /// `push`, `push_history`.
    pub name: String,
    /// Further parameters, each with its trailing comma: `item: Trade,`.
    pub params: TokenStream,
    pub ret: TokenStream,
    /// The free function called: `push`.
    pub func: &'a str,
    /// Further arguments, each with its trailing comma: `&item,`.
    pub args: TokenStream,
}

impl Wrappers<'_> {
    fn module(&self) -> TokenStream {
        let module = self.module.split("::").map(ident);
        quote!(::pattern_core #(:: #module)*)
    }

    /// The attributes of a wrapper: its documentation, or those of a stub.
    fn attrs(&self, doc: &str) -> TokenStream {
        match self.bodies {
            Bodies::Calls { .. } => quote!(#[doc = #doc]),
            Bodies::Stubs => quote! {
                #[doc(hidden)]
                #[allow(unused_variables)]
            },
        }
    }

    /// The bounds of `S` and `Q`; a stub's accept any store and key.
    fn bounds(&self) -> TokenStream {
        match self.bodies {
            Bodies::Calls { key_ty } => quote! {
                where
                    __PatternS: ::pattern_core::store::Store,
                    __PatternQ: ::pattern_core::spec::KeyPart + ?::core::marker::Sized,
                    #key_ty: ::pattern_core::__private::Borrow<__PatternQ>,
            },
            Bodies::Stubs => quote! {
                where
                    __PatternQ: ?::core::marker::Sized,
            },
        }
    }

    /// A wrapper's body: `call`, or a stub's.
    fn body(&self, call: TokenStream) -> TokenStream {
        match self.bodies {
            Bodies::Calls { .. } => call,
            Bodies::Stubs => quote!(::core::unreachable!()),
        }
    }

    /// `pub async fn name<S, Q>(store: &S, key: &Q, params) -> Result<ret>`.
    pub(crate) fn keyed(&self, m: Method) -> TokenStream {
        let Method {
            doc,
            name,
            params,
            ret,
            func,
            args,
        } = m;
        let (module, attrs, bounds, key) = (
            self.module(),
            self.attrs(doc),
            self.bounds(),
            ident(self.key),
        );
        let (name, func) = (ident(&name), ident(func));
        let body = self.body(quote! {
            #module::#func::<Self, __PatternS, __PatternQ>(store, #key, #args).await
        });
        quote! {
            #attrs
            pub async fn #name<__PatternS, __PatternQ>(
                store: &__PatternS,
                #key: &__PatternQ,
                #params
            ) -> ::pattern_core::Result<#ret>
            #bounds
            {
                #body
            }
        }
    }

    /// `pub fn name<'a, S, Q>(store: &'a S, key: &Q) -> impl Stream<Item = Result<item>> + Send + 'a`
    /// (a stub's returns a boxed stream, which callers can use as they use the real one).
    pub(crate) fn stream(
        &self,
        doc: &str,
        name: String,
        item: TokenStream,
        func: &str,
    ) -> TokenStream {
        self.stream_fn(
            Method {
                doc,
                name,
                params: quote!(),
                ret: item,
                func,
                args: quote!(),
            },
            false,
        )
    }

    /// `pub fn name<'a, S, Q, R>(store: &'a S, key: &Q, range: R, params) -> impl Stream<Item =
    /// Result<ret>> + Send + 'a`, `R` a range of `bson::DateTime` (`..`, `from..to`...): a
    /// stream over a time range, `m.ret` its item; the call passes `range` before `m.args`.
    pub(crate) fn time_range_stream(&self, m: Method) -> TokenStream {
        self.stream_fn(m, true)
    }

    /// A stream wrapper, with a time range `R` when `ranged`.
    fn stream_fn(&self, m: Method, ranged: bool) -> TokenStream {
        let Method {
            doc,
            name,
            params,
            ret: item,
            func,
            args,
        } = m;
        let (module, attrs, mut bounds, key) = (
            self.module(),
            self.attrs(doc),
            self.bounds(),
            ident(self.key),
        );
        let (name, func) = (ident(&name), ident(func));
        let (range_ty, range_param, range_arg) = if ranged {
            if let Bodies::Calls { .. } = self.bodies {
                bounds.extend(quote! {
                    __PatternR: ::core::ops::RangeBounds<::pattern_core::__private::bson::DateTime>,
                });
            }
            (
                quote!(, __PatternR),
                quote!(range: __PatternR,),
                quote!(range,),
            )
        } else {
            (quote!(), quote!(), quote!())
        };
        let stream = quote! {
            ::pattern_core::__private::Stream<Item = ::pattern_core::Result<#item>>
                + ::core::marker::Send
                + 'a
        };
        let ret = match self.bodies {
            Bodies::Calls { .. } => quote! {
                impl #stream + use<'a, __PatternS, __PatternQ #range_ty>
            },
            Bodies::Stubs => quote! {
                ::core::pin::Pin<::std::boxed::Box<dyn #stream>>
            },
        };
        let body = self.body(quote! {
            #module::#func::<Self, __PatternS, __PatternQ>(store, #key, #range_arg #args)
        });
        quote! {
            #attrs
            pub fn #name<'a, __PatternS, __PatternQ #range_ty>(
                store: &'a __PatternS,
                #key: &__PatternQ,
                #range_param
                #params
            ) -> #ret
            #bounds
            {
                #body
            }
        }
    }

    /// `pub async fn name<S>(store: &S, params) -> Result<ret>`: a wrapper over the whole
    /// collection, with no key (`ingest`, `backfill`).
    pub(crate) fn collection_wide(&self, m: Method) -> TokenStream {
        let Method {
            doc,
            name,
            params,
            ret,
            func,
            args,
        } = m;
        let (module, attrs) = (self.module(), self.attrs(doc));
        let (name, func) = (ident(&name), ident(func));
        let body = self.body(quote!(#module::#func::<Self, __PatternS>(store, #args).await));
        let bounds = match self.bodies {
            Bodies::Calls { .. } => quote!(where __PatternS: ::pattern_core::store::Store,),
            Bodies::Stubs => quote!(),
        };
        quote! {
            #attrs
            pub async fn #name<__PatternS>(
                store: &__PatternS,
                #params
            ) -> ::pattern_core::Result<#ret>
            #bounds
            {
                #body
            }
        }
    }

    /// `pub async fn <name><S>(store: &S) -> Result<()>` calling the function of that name with
    /// the store alone (`ensure_indexes`, `ensure_validator`).
    pub(crate) fn store_only(&self, name: &str, doc: &str) -> TokenStream {
        let (module, name) = (self.module(), ident(name));
        self.unkeyed(
            doc,
            quote!(#name<__PatternS>(store: &__PatternS)),
            quote!(#module::#name::<Self, __PatternS>(store).await),
        )
    }

    /// `pub async fn <sig> -> Result<()>`, `sig` generic over a store `S`: a wrapper that
    /// takes no key (`ensure_indexes`, outlier's `save`).
    pub(crate) fn unkeyed(&self, doc: &str, sig: TokenStream, call: TokenStream) -> TokenStream {
        let (attrs, body) = (self.attrs(doc), self.body(call));
        let bounds = match self.bodies {
            Bodies::Calls { .. } => quote!(where __PatternS: ::pattern_core::store::Store,),
            Bodies::Stubs => quote!(),
        };
        quote! {
            #attrs
            pub async fn #sig -> ::pattern_core::Result<()>
            #bounds
            {
                #body
            }
        }
    }
}

/// The item type of the stubs' signatures: `ty` when the items field's `Vec<T>` could be
/// read; else any type as a parameter (`impl Sized`), and the fallback impl's `()` in what
/// they return.
pub(crate) struct StubItem {
    /// In parameters: `item: <param>`, `items: &[<param>]`.
    pub param: TokenStream,
    /// In return types: `Page<<ret>>`.
    pub ret: TokenStream,
}

impl StubItem {
    pub(crate) fn new(ty: Option<&Type>) -> Self {
        match ty {
            Some(ty) => StubItem {
                param: ty.to_token_stream(),
                ret: ty.to_token_stream(),
            },
            None => StubItem {
                param: quote!(impl ::core::marker::Sized),
                ret: quote!(()),
            },
        }
    }
}

fn ident(name: &str) -> Ident {
    Ident::new(name, Span::call_site())
}

/// The code emitted beside errors, so that the user sees the errors alone: the trait's impl
/// with `body` (else "the trait is not implemented" wherever the type is used), and `stubs`,
/// the wrappers as [`Bodies::Stubs`] (else "no function or associated item named ..." at
/// every call site).
pub(crate) fn fallback(
    input: &DeriveInput,
    trait_path: TokenStream,
    body: TokenStream,
    stubs: &[TokenStream],
) -> TokenStream {
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    quote! {
        #[automatically_derived]
        impl #impl_generics #trait_path for #ident #ty_generics #where_clause {
            #body
        }

        // Not `#[automatically_derived]`: rustc is phasing that out on inherent impls.
        impl #impl_generics #ident #ty_generics #where_clause {
            #(#stubs)*
        }
    }
}

/// What a derive expands to: its code, or its errors and the fallback.
pub(crate) fn or_fallback(
    result: syn::Result<TokenStream>,
    fallback: impl FnOnce() -> TokenStream,
) -> TokenStream {
    match result {
        Ok(tokens) => tokens,
        Err(err) => {
            let mut tokens = err.to_compile_error();
            fallback().to_tokens(&mut tokens);
            tokens
        }
    }
}

/// The shard keys of a layout, as data (`pattern_core`'s `*Spec::shard_keys`):
/// `pub const fn shard_keys() -> <ret>`, the same with or without errors in the attributes (the
/// fallback's impl has a `SPEC` too); nothing for a generic type.
pub(crate) fn shard_keys(
    input: &syn::DeriveInput,
    trait_path: TokenStream,
    ret: TokenStream,
    doc: &str,
) -> TokenStream {
    // The derives refuse generic types (their error is the one the user should see).
    if !input.generics.params.is_empty() {
        return TokenStream::new();
    }
    let name = ident("shard_keys");
    let ty = &input.ident;
    quote! {
        impl #ty {
            #[doc = #doc]
            pub const fn #name() -> #ret {
                <Self as #trait_path>::SPEC.#name()
            }
        }
    }
}
