//! The code of `#[derive(Document)]`, from the model alone: the `Document` impl, one typed
//! path per field, and thin methods over `::pattern_core::document`'s functions.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::DeriveInput;

use super::{Doc, Money, Typed};
use crate::codegen;

mod methods;
mod related;
mod versions;

use methods::{methods, Has};

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
        references: !d.references.is_empty(),
        referenced: !d.referenced_by.is_empty(),
    };
    let (methods, writes) = methods(Some(&id_ty.to_token_stream()), has);
    let versioning = d.versioning.as_ref().map(|v| versions::items(ident, v));
    let approximate = d.approximate.iter().map(|(_, field, every)| {
        quote!(::pattern_core::document::Approximate { field: #field, every: #every })
    });
    let counters = related::counters(&d.approximate, &id_ty.to_token_stream());
    let mut writes = writes;
    for (field_ident, _, _) in &d.approximate {
        writes.push(format!(
            "increment_{}",
            crate::serde_names::unraw(field_ident)
        ));
    }
    if !d.approximate.is_empty() {
        writes.push("flush".to_owned());
    }
    let computed = d.computed.as_ref().map(related::computed);
    let subset = d.subset.as_ref().map(related::subset);
    let (references, listed) = related::references(d);
    let attributes = (!d.attributes.is_empty()).then(|| {
        let fields = d.attributes.iter().map(|(k, span)| {
            quote_spanned!(*span=> ::pattern_core::document::attributes_field(Self::#k))
        });
        quote!(const ATTRIBUTES: &'static [&'static str] = &[#(#fields),*];)
    });
    let indexed = &d.indexed;
    let indexed = (!indexed.is_empty())
        .then(|| quote!(const INDEXED: &'static [&'static str] = &[#(#indexed),*];));
    let (collection, variant) = match &d.variant_of {
        None => (quote!(#collection), None),
        Some(of) => variant_items(ident, of, &d.shape, !d.approximate.is_empty()),
    };
    let (variant, listed_by) = variant.unzip();
    let archive = d.archive.as_ref().map(|(age, keep)| {
        let module = quote!(::pattern_core::document);
        let konst = |i: &Ident| Ident::new(&crate::serde_names::unraw(i).to_uppercase(), i.span());
        let age_k = konst(age);
        let age = quote_spanned!(age.span()=> #module::age_field(Self::#age_k));
        let keep = match keep {
            Some(k) => {
                let k_k = konst(k);
                let f = quote_spanned!(k.span()=> #module::pin_field(Self::#k_k));
                quote!(::core::option::Option::Some(#f))
            }
            None => quote!(::core::option::Option::None),
        };
        quote! {
            const ARCHIVE: ::core::option::Option<#module::Archive> =
                ::core::option::Option::Some(#module::Archive { age: #age, pin: #keep });
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
            const __WRITES: &'static [&'static str] = &[#(#writes),*];
            const APPROXIMATE: &'static [::pattern_core::document::Approximate] = &[#(#approximate),*];
            #versioning
            #history
            #archive
            #computed
            #subset
            #references
            #attributes
            #indexed
            #variant
        }

        #listed
        #listed_by

        #[automatically_derived]
        impl #ident {
            #(#consts)*
            #(#methods)*
            #(#counters)*
        }
    }
}

/// A variant of a polymorphic enum (`variant_of = Product`): its collection (the enum's), its
/// `POLYMORPHIC` and `STORED`, and the check that the enum lists it as a variant.
fn variant_items(
    ident: &Ident,
    of: &syn::Path,
    shape: &[(String, bool, &'static [&'static str])],
    counters: bool,
) -> (TokenStream, Option<(TokenStream, TokenStream)>) {
    let module = quote!(::pattern_core::document);
    let variant = quote_spanned!(of.span()=> <#ident as #module::Variant>);
    let collection = quote!(<#variant::Of as #module::Document>::COLLECTION);
    let stored = shape.iter().map(|(name, required, types)| {
        let types = types.iter().map(|t| Ident::new(t, Span::call_site()));
        quote!(#module::StoredField {
            name: #name,
            required: #required,
            types: &[#(::pattern_core::spec::BsonType::#types),*],
        })
    });
    let items = quote! {
        const POLYMORPHIC: ::core::option::Option<#module::Polymorphic> =
            ::core::option::Option::Some(#module::Polymorphic::Variant {
                field: #variant::FIELD,
                value: #variant::VALUE,
            });
        const STORED: &'static [#module::StoredField] = &[#(#stored),*];
        // The collection's history is its enum's: every variant's writes record in it.
        const HISTORY: ::core::option::Option<&'static str> =
            <#variant::Of as #module::Document>::HISTORY;
        fn variant_indexes() -> ::std::vec::Vec<::pattern_core::store::query::IndexSpec> {
            <#variant::Of as #module::Document>::variant_indexes()
        }
        fn enum_schemas() -> ::std::vec::Vec<(&'static str, ::pattern_core::store::query::Schema)> {
            #module::schemas::<#variant::Of>()
        }
    };
    // `variant_of` names the enum that lists this type.
    let mut check = quote_spanned! {of.span()=>
        const _: fn() = || {
            fn listed_by<__PatternV: #module::Variant<Of = #of>>() {}
            listed_by::<#ident>();
        };
    };
    // An approximate counter writes without a revision: not in a collection with history.
    if counters {
        check.extend(quote_spanned! {of.span()=>
            const _: () = #module::counters_without_history(
                <#ident as #module::Document>::HISTORY,
                <#ident as #module::Document>::APPROXIMATE,
            );
        });
    }
    (collection, Some((items, check)))
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

/// A polymorphic enum's methods (those of every type, and with `history` the revisions'), and
/// the names of those that write.
pub(crate) fn methods_of(id_ty: &TokenStream, history: bool) -> (Vec<TokenStream>, Vec<String>) {
    let has = Has {
        history,
        ..Has::default()
    };
    methods(Some(id_ty), has)
}

/// A polymorphic enum's method stubs beside its attribute errors.
pub(crate) fn enum_stubs() -> Vec<TokenStream> {
    let mut stubs = methods(None, Has::default()).0;
    stubs.push(quote! {
        #[doc(hidden)]
        #[allow(unused_variables)]
        pub async fn change_variant<__PatternS>(&self, store: &__PatternS) -> ::pattern_core::Result<bool> {
            ::core::unreachable!()
        }
    });
    stubs.push(quote! {
        #[doc(hidden)]
        #[allow(unused_variables)]
        pub async fn verify_variants<__PatternS>(store: &__PatternS) -> ::pattern_core::Result<::std::vec::Vec<::pattern_core::document::Undecodable>> {
            ::core::unreachable!()
        }
    });
    stubs
}

/// The code emitted beside errors: an impl of `Document` with the struct's id (a placeholder
/// when none could be read: another type's check of it then fails too), the typed paths that
/// could be read, and stubs of the methods.
pub(crate) fn fallback(input: &DeriveInput, fields: &[Typed], counters: &[&Ident]) -> TokenStream {
    let body = match fields.iter().find(|f| f.bson == "_id") {
        // The id read: a reference or a copy of this type checks against it, not a placeholder.
        Some(id) if input.generics.params.is_empty() => {
            let (ident, ty) = (id.ident, id.ty);
            quote! {
                const COLLECTION: &'static str = "";
                type Id = #ty;
                fn id(&self) -> &#ty {
                    &self.#ident
                }
            }
        }
        _ => quote! {
            const COLLECTION: &'static str = "";
            type Id = ();
            fn id(&self) -> &() {
                &()
            }
        },
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
        references: true,
        referenced: true,
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
