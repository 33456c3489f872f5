//! What the bucket's and the outlier's back ends share: the methods both series patterns'
//! types get, each calling the function of its name in the pattern's module, and their
//! wrappers' shape (a key `Q` the series key borrows as, every method keyed or stubbed).

use proc_macro2::TokenStream;
use quote::{quote, ToTokens};
use syn::Type;

use crate::codegen::{Bodies, KeyBound, Method, Wrappers};

/// The wrappers of a series pattern's methods: calling `pattern_core::<module>`'s functions
/// with the key first (`key`, `id`), borrowed from `key_ty`; stubs without it (beside errors).
/// Each method's documentation is the pattern's table in `pattern_core` (`docs`:
/// `__bucket_doc`, `__outlier_doc`), written once for the function and the method.
pub(crate) fn wrappers(
    key: &'static str,
    module: &'static str,
    docs: &'static str,
    key_ty: Option<&Type>,
) -> Wrappers {
    Wrappers {
        bodies: match key_ty {
            Some(ty) => Bodies::Calls {
                key_ty: ty.to_token_stream(),
            },
            None => Bodies::Stubs,
        },
        key,
        module,
        key_bound: KeyBound::KeyPart,
        docs,
    }
}

/// The methods a series pattern's type gets.
pub(crate) struct Series<'a> {
    pub w: &'a Wrappers,
    /// The item type in parameters (`item: <param>`) and in what the methods return.
    pub item_param: &'a TokenStream,
    pub item_ret: &'a TokenStream,
    /// The module of the adoption functions: `adopt::bucket`, `adopt::outlier`.
    pub adopt: &'static str,
}

impl Series<'_> {
    /// `push(key, item)`.
    pub(crate) fn push(&self) -> TokenStream {
        let item = self.item_param;
        self.w.keyed(
            Method::op("push")
                .takes(quote!(item: #item,), quote!(&item,))
                .ret(quote!(())),
        )
    }

    /// `push_many(key, items)`.
    pub(crate) fn push_many(&self) -> TokenStream {
        let item = self.item_param;
        self.w.keyed(
            Method::op("push_many")
                .takes(quote!(items: &[#item],), quote!(items,))
                .ret(quote!(())),
        )
    }

    /// `items(key)`, a stream of the key's items.
    pub(crate) fn items(&self) -> TokenStream {
        let item = self.item_ret;
        self.w.stream("items", quote!(#item))
    }

    /// `all_items(key)`, returning `ret`.
    pub(crate) fn all_items(&self, ret: TokenStream) -> TokenStream {
        self.keyed("all_items", ret)
    }

    /// `counts(key)`.
    pub(crate) fn counts(&self) -> TokenStream {
        self.keyed("counts", quote!(::pattern_core::bucket::Counts))
    }

    /// A method of the key alone, returning `ret`.
    pub(crate) fn keyed(&self, name: &str, ret: TokenStream) -> TokenStream {
        self.w.keyed(Method::op(name).ret(ret))
    }

    /// `analyze(store)`, of the adoption module, returning `ret`.
    pub(crate) fn analyze(&self, ret: TokenStream) -> TokenStream {
        self.w
            .render(Method::op("analyze").in_module(self.adopt).ret(ret))
    }

    /// `migrate(store, params)`, of the adoption module.
    pub(crate) fn migrate(&self, params: TokenStream, args: TokenStream) -> TokenStream {
        self.w.render(
            Method::op("migrate")
                .in_module(self.adopt)
                .takes(params, args)
                .ret(quote!(::pattern_core::adopt::MigrateReport)),
        )
    }

    /// `verify(store)`.
    pub(crate) fn verify(&self) -> TokenStream {
        self.w
            .render(Method::op("verify").ret(quote!(::pattern_core::adopt::Verified)))
    }

    /// `index_report(store)`.
    pub(crate) fn index_report(&self) -> TokenStream {
        self.w.render(
            Method::op("index_report")
                .ret(quote!(::std::vec::Vec<::pattern_core::adopt::IndexReport>)),
        )
    }

    /// `ensure_indexes(store)` and `ensure_validator(store)`.
    pub(crate) fn ensure(&self) -> [TokenStream; 2] {
        [
            self.w.store_only("ensure_indexes"),
            self.w.store_only("ensure_validator"),
        ]
    }
}
