//! Generated code both derives share: the typed wrappers and the fallback impl emitted beside
//! errors.
//!
//! Every path is absolute (`::pattern_core::...`, `::core::...`), so the code compiles in a
//! module that imports nothing and beside a user's own `Result`.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{quote, ToTokens};
use syn::{DeriveInput, Type};

/// Builds the wrappers of one pattern's free functions (`::pattern_core::bucket::push`...),
/// typed for the deriving struct: `Self` in for the pattern's type parameter, the store `S`
/// and the borrowed key `Q` left generic.
pub(crate) struct Wrappers<'a> {
    /// The key (or id) field's type, which `Q` is borrowed from.
    pub key_ty: &'a Type,
    /// The key parameter's name: `key` or `id`.
    pub key: &'static str,
    /// The module of the free functions: `bucket` or `outlier`.
    pub module: &'static str,
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
        let module = ident(self.module);
        quote!(::pattern_core::#module)
    }

    fn bounds(&self) -> TokenStream {
        let key_ty = self.key_ty;
        quote! {
            where
                __PatternS: ::pattern_core::Store,
                __PatternQ: ::pattern_core::KeyPart + ?::core::marker::Sized,
                #key_ty: ::pattern_core::__private::Borrow<__PatternQ>,
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
        let (module, bounds, key) = (self.module(), self.bounds(), ident(self.key));
        let (name, func) = (ident(&name), ident(func));
        quote! {
            #[doc = #doc]
            pub async fn #name<__PatternS, __PatternQ>(
                store: &__PatternS,
                #key: &__PatternQ,
                #params
            ) -> ::pattern_core::Result<#ret>
            #bounds
            {
                #module::#func::<Self, __PatternS, __PatternQ>(store, #key, #args).await
            }
        }
    }

    /// `pub fn name<'a, S, Q>(store: &'a S, key: &Q) -> impl Stream<Item = Result<item>> + Send + 'a`.
    pub(crate) fn stream(
        &self,
        doc: &str,
        name: String,
        item: TokenStream,
        func: &str,
    ) -> TokenStream {
        let (module, bounds, key) = (self.module(), self.bounds(), ident(self.key));
        let (name, func) = (ident(&name), ident(func));
        quote! {
            #[doc = #doc]
            pub fn #name<'a, __PatternS, __PatternQ>(
                store: &'a __PatternS,
                #key: &__PatternQ,
            ) -> impl ::pattern_core::__private::Stream<Item = ::pattern_core::Result<#item>>
                   + ::core::marker::Send
                   + 'a
                   + use<'a, __PatternS, __PatternQ>
            #bounds
            {
                #module::#func::<Self, __PatternS, __PatternQ>(store, #key)
            }
        }
    }

    /// `pub async fn ensure_indexes<S>(store: &S) -> Result<()>`.
    pub(crate) fn ensure_indexes(&self, doc: &str) -> TokenStream {
        let module = self.module();
        quote! {
            #[doc = #doc]
            pub async fn ensure_indexes<__PatternS>(store: &__PatternS) -> ::pattern_core::Result<()>
            where
                __PatternS: ::pattern_core::Store,
            {
                #module::ensure_indexes::<Self, __PatternS>(store).await
            }
        }
    }
}

fn ident(name: &str) -> Ident {
    Ident::new(name, Span::call_site())
}

/// The impl emitted beside errors, so that the user sees the errors and not also "the trait
/// is not implemented" wherever the type is used.
pub(crate) fn fallback(
    input: &DeriveInput,
    trait_path: TokenStream,
    body: TokenStream,
) -> TokenStream {
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    quote! {
        #[automatically_derived]
        impl #impl_generics #trait_path for #ident #ty_generics #where_clause {
            #body
        }
    }
}

/// What a derive expands to: its code, or its errors and the fallback impl.
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
