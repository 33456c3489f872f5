//! Generated code the derives share: the typed wrappers (the method table [`Method`]) and the
//! fallback emitted beside errors (an impl and the wrappers' stubs).
//!
//! Every path is absolute (`::pattern_core::...`, `::core::...`), so the code compiles in a
//! module that imports nothing and beside a user's own `Result`.

use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::{quote, ToTokens};
use syn::{DeriveInput, Type};

/// Renders the derives' methods ([`Method`]): each a thin wrapper over a free function of
/// `pattern_core`, typed for the deriving struct (`Self` in for the pattern's type parameter,
/// the store `S` and a borrowed key or id `Q` left generic), or, beside errors, its stub.
#[derive(Clone)]
pub(crate) struct Wrappers {
    pub bodies: Bodies,
    /// The key parameter's name in the keyed methods ([`Wrappers::keyed`]): `key` or `id`.
    pub key: &'static str,
    /// The module of the free functions, under `pattern_core`: `bucket`, `outlier`, `tree`,
    /// `document`, or `adopt::bucket` for the adoption methods.
    pub module: &'static str,
    /// What a key `Q` must be: a series key, or any serializable id.
    pub key_bound: KeyBound,
    /// The macro of `pattern_core` holding every method's documentation, written once for the
    /// function and the method (`__tree_doc`: `#[doc = ::pattern_core::__tree_doc!(get)]`,
    /// keyed by the function called). A function the table lacks fails the build.
    pub docs: &'static str,
}

/// What the wrappers do.
#[derive(Clone)]
pub(crate) enum Bodies {
    /// Each calls its free function. `key_ty` is the key (or id) field's type, which `Q` is
    /// borrowed from.
    Calls { key_ty: TokenStream },
    /// Each is a hidden stub of the same name that never runs, its parameters unbounded: the
    /// fallback's, so that a call site compiles beside the derive's errors instead of adding
    /// "no function or associated item named ..." to them.
    Stubs,
}

/// What a key or id `Q` must be.
#[derive(Clone, Copy)]
pub(crate) enum KeyBound {
    /// `KeyPart`: a bucket's key, an outlier's parent id.
    KeyPart,
    /// `Serialize`: a node's or a document's id.
    Serialize,
}

/// How a method returns.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Shape {
    /// `async fn ... -> Result<ret>`.
    #[default]
    Async,
    /// `fn<'a> ... -> impl Stream<Item = Result<ret>> + Send + 'a`, the store borrowed for `'a`.
    Stream,
    /// A [`Shape::Stream`] over a time range `R` of `bson::DateTime` (`..`, `from..to`...),
    /// after the other parameters.
    RangeStream,
    /// `fn ... -> ret`, no store: a builder (a document's `find`).
    Builder,
}

/// The type `__PatternQ` a method's parameters may name.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Q {
    /// None.
    #[default]
    No,
    /// A key or id the type's own borrows as (`&str` for a `String` id).
    Own,
    /// Any key or id (another type's: a computed child's parent).
    Any,
}

/// One generated method, in every derive: the one table the derives fill and
/// [`Wrappers::render`] turns into code.
#[derive(Default)]
pub(crate) struct Method {
    /// `push`, `push_history`.
    pub name: String,
    pub shape: Shape,
    /// `&self` first: a write of this node or document (the call passes `self` in `args`).
    pub receiver: bool,
    /// The parameters after the store, each with its trailing comma: `item: Trade,`,
    /// `id: &__PatternQ,`.
    pub params: TokenStream,
    /// Whether `params` name `__PatternQ`, and what it is.
    pub q: Q,
    /// What `Result` holds ([`Shape::Async`]), a stream's item, or a builder's type.
    pub ret: TokenStream,
    /// The free function called (`push`), in [`Wrappers::module`] unless `module` says.
    pub func: String,
    /// Another module of `pattern_core` than the wrappers' (`adopt::bucket`).
    pub module: Option<&'static str>,
    /// The arguments after `store`, each with its trailing comma: `key, &item,`.
    pub args: TokenStream,
    /// It writes (a document type lists it in `Document::__WRITES`).
    pub writes: bool,
}

impl Method {
    /// A method called `name` that calls the function of the same name, documented by the
    /// pattern's table ([`Wrappers::docs`]).
    pub(crate) fn op(name: &str) -> Self {
        Method {
            name: name.to_owned(),
            func: name.to_owned(),
            ..Method::default()
        }
    }

    /// Returns `ret`: what `Result` holds, a stream's item or a builder's type.
    pub(crate) fn ret(self, ret: TokenStream) -> Self {
        Method { ret, ..self }
    }

    /// Takes `params` after those it has, passed on as `args`.
    pub(crate) fn takes(mut self, params: TokenStream, args: TokenStream) -> Self {
        self.params.extend(params);
        self.args.extend(args);
        self
    }

    /// Takes an id first, `id: &__PatternQ`, which `q` says what it is.
    pub(crate) fn by_id(self, q: Q) -> Self {
        Method { q, ..self }.takes(quote!(id: &__PatternQ,), quote!(id,))
    }

    /// Takes `&self` first (a write of this node or document), passed on as `self`.
    pub(crate) fn of_self(self) -> Self {
        let m = Method {
            receiver: true,
            ..self
        };
        m.takes(TokenStream::new(), quote!(self,))
    }

    /// Calls the function of `module` of `pattern_core` (`adopt::bucket`) rather than the
    /// wrappers' ([`Wrappers::module`]).
    pub(crate) fn in_module(self, module: &'static str) -> Self {
        Method {
            module: Some(module),
            ..self
        }
    }

    /// Returns as `shape` says.
    pub(crate) fn shaped(self, shape: Shape) -> Self {
        Method { shape, ..self }
    }

    /// It writes.
    pub(crate) fn writes(self) -> Self {
        Method {
            writes: true,
            ..self
        }
    }
}

impl Wrappers {
    fn module(&self, other: Option<&str>) -> TokenStream {
        let module = other.unwrap_or(self.module).split("::").map(ident);
        quote!(::pattern_core #(:: #module)*)
    }

    /// Renders `m`: its documentation (or a stub's attributes), signature, bounds and body.
    pub(crate) fn render(&self, m: Method) -> TokenStream {
        let stub = matches!(self.bodies, Bodies::Stubs);
        let attrs = match stub {
            false => {
                let (mac, func) = (ident(self.docs), ident(&m.func));
                quote!(#[doc = ::pattern_core::#mac!(#func)])
            }
            true => quote! {
                #[doc(hidden)]
                #[allow(unused_variables)]
            },
        };
        let (name, func, module) = (ident(&m.name), ident(&m.func), self.module(m.module));
        let (params, args) = (&m.params, &m.args);
        if m.shape == Shape::Builder {
            let ret = &m.ret;
            let body = match stub {
                false => quote!(#module::#func::<Self>(#args)),
                true => quote!(::core::unreachable!()),
            };
            return quote! {
                #attrs
                pub fn #name(#params) -> #ret {
                    #body
                }
            };
        }
        let streams = matches!(m.shape, Shape::Stream | Shape::RangeStream);
        let ranged = m.shape == Shape::RangeStream;
        let takes_q = m.q != Q::No;
        let q = takes_q.then(|| quote!(, __PatternQ));
        let r = ranged.then(|| quote!(, __PatternR));
        let lifetime = streams.then(|| quote!('a,));
        let store_ref = match streams {
            true => quote!(&'a __PatternS),
            false => quote!(&__PatternS),
        };
        let receiver = m.receiver.then(|| quote!(&self,));
        let range_param = ranged.then(|| quote!(range: __PatternR,));
        let range_arg = ranged.then(|| quote!(range,));
        let bounds = match &self.bodies {
            Bodies::Calls { key_ty } => {
                // The type's own key or id: what it borrows as; another's: any.
                let key_bound = match (self.key_bound, m.q == Q::Own) {
                    (KeyBound::KeyPart, true) => quote!(::pattern_core::spec::KeyRef<#key_ty>),
                    (KeyBound::Serialize, true) => quote!(::pattern_core::spec::IdRef<#key_ty>),
                    (KeyBound::KeyPart, false) => quote!(::pattern_core::spec::KeyPart),
                    (KeyBound::Serialize, false) => {
                        quote!(::pattern_core::__private::serde::Serialize)
                    }
                };
                let q = takes_q.then(|| quote!(__PatternQ: #key_bound + ?::core::marker::Sized,));
                let r = ranged.then(|| {
                    quote!(__PatternR: ::core::ops::RangeBounds<::pattern_core::__private::bson::DateTime>,)
                });
                quote!(where __PatternS: ::pattern_core::store::Store, #q #r)
            }
            Bodies::Stubs => {
                let q = takes_q.then(|| quote!(__PatternQ: ?::core::marker::Sized,));
                quote!(where __PatternS: ?::core::marker::Sized, #q)
            }
        };
        // `store` alone, or followed by the rest, each with its trailing comma.
        let (rest_params, rest_args) = (quote!(#params #range_param), quote!(#args #range_arg));
        let sig_params = match rest_params.is_empty() {
            true => quote!(#receiver store: #store_ref),
            false => quote!(#receiver store: #store_ref, #rest_params),
        };
        let call_args = match rest_args.is_empty() {
            true => quote!(store),
            false => quote!(store, #rest_args),
        };
        let ret = &m.ret;
        let (ret, call) = match (streams, stub) {
            (false, _) => (
                quote!(::pattern_core::Result<#ret>),
                quote!(#module::#func::<Self, __PatternS #q>(#call_args).await),
            ),
            (true, false) => (
                quote! {
                    impl ::pattern_core::__private::Stream<Item = ::pattern_core::Result<#ret>>
                        + ::core::marker::Send
                        + 'a
                        + use<'a, __PatternS #q #r>
                },
                quote!(#module::#func::<Self, __PatternS #q>(#call_args)),
            ),
            // A stub's returns a boxed stream, which callers can use as they use the real one.
            (true, true) => (
                quote! {
                    ::core::pin::Pin<::std::boxed::Box<dyn ::pattern_core::__private::Stream<
                        Item = ::pattern_core::Result<#ret>,
                    > + ::core::marker::Send + 'a>>
                },
                quote!(),
            ),
        };
        let body = match stub {
            false => call,
            true => quote!(::core::unreachable!()),
        };
        let asyncness = (!streams).then(|| quote!(async));
        quote! {
            #attrs
            pub #asyncness fn #name<#lifetime __PatternS #q #r>(#sig_params) -> #ret
            #bounds
            {
                #body
            }
        }
    }

    /// `m` with the key first: `pub async fn name<S, Q>(store: &S, key: &Q, params) ->
    /// Result<ret>`, calling `func(store, key, args)`.
    pub(crate) fn keyed(&self, m: Method) -> TokenStream {
        self.render(self.with_key(m))
    }

    fn with_key(&self, mut m: Method) -> Method {
        let (key, params, args) = (ident(self.key), &m.params, &m.args);
        m.params = quote!(#key: &__PatternQ, #params);
        m.args = quote!(#key, #args);
        m.q = Q::Own;
        m
    }

    /// `pub fn name<'a, S, Q>(store: &'a S, key: &Q) -> impl Stream<Item = Result<item>> +
    /// Send + 'a`.
    pub(crate) fn stream(&self, name: &str, item: TokenStream) -> TokenStream {
        let m = Method::op(name).shaped(Shape::Stream).ret(item);
        self.render(self.with_key(m))
    }

    /// `pub fn name<'a, S, Q, R>(store: &'a S, key: &Q, params, range: R) -> impl Stream<Item
    /// = Result<ret>> + Send + 'a`: a stream over a time range, `m.ret` its item.
    pub(crate) fn time_range_stream(&self, m: Method) -> TokenStream {
        self.render(self.with_key(m.shaped(Shape::RangeStream)))
    }

    /// `pub async fn <name><S>(store: &S) -> Result<()>` calling the function of that name with
    /// the store alone (`ensure_indexes`, `ensure_validator`).
    pub(crate) fn store_only(&self, name: &str) -> TokenStream {
        self.render(Method::op(name).ret(quote!(())))
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

/// `tokens` with every token at `span`: a path respanned at a field's name, so that an error
/// about that field of the path's type shows there alone.
pub(crate) fn respan(tokens: &impl ToTokens, span: Span) -> TokenStream {
    (tokens.to_token_stream().into_iter())
        .map(|mut t| {
            t.set_span(span);
            t
        })
        .collect()
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

/// `const VALIDATE: bool = true;` when the layout's writes install its validator (`validate`).
pub(crate) fn validate(on: bool) -> Option<TokenStream> {
    on.then(|| {
        quote!(
            const VALIDATE: bool = true;
        )
    })
}

/// The shard keys of a layout, as data (`pattern_core`'s `*Spec::shard_keys`): `pub const fn
/// shard_keys() -> [ShardKey<'static>; keys]`, read from the `SPEC` of the trait `derive`
/// implements, the same with or without errors in the attributes (the fallback's impl has a
/// `SPEC` too); nothing for a generic type.
pub(crate) fn shard_keys(
    input: &syn::DeriveInput,
    derive: &str,
    keys: usize,
    doc: &str,
) -> TokenStream {
    // The derives refuse generic types (their error is the one the user should see).
    if !input.generics.params.is_empty() {
        return TokenStream::new();
    }
    let name = ident("shard_keys");
    let ty = &input.ident;
    let trait_name = ident(derive);
    let keys = Literal::usize_unsuffixed(keys);
    quote! {
        impl #ty {
            #[doc = #doc]
            pub const fn #name() -> [::pattern_core::spec::ShardKey<'static>; #keys] {
                <Self as ::pattern_core::#trait_name>::SPEC.#name()
            }
        }
    }
}
