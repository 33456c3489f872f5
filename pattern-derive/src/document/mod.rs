//! `#[derive(Document)]`'s back end: the `Document` impl, one typed path per field, and thin
//! methods over `::pattern_core::document`'s functions, from the checked model alone; beside
//! errors, a fallback of the same names. On an enum, a polymorphic collection
//! (`polymorphic.rs`).

mod methods;
pub(crate) mod polymorphic;
mod related;
#[cfg(test)]
mod tests;
mod versions;

use proc_macro2::{Ident, Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;

use crate::attr::document::{const_name, is_option, Document, Money};
use crate::attr::serde::unraw;
use crate::codegen;
use methods::{methods, Has};

/// The model of a struct deriving `Document`.
type Container<'a> = crate::ast::Container<'a, Document>;
/// A field of a struct deriving `Document`.
type Field<'a> = crate::ast::Field<'a, crate::attr::document::Field>;

pub(crate) fn expand(d: &Container) -> TokenStream {
    let (ident, a) = (d.ident, &d.attrs);
    let fields = d.fields().expect("checked");
    let stored: Vec<&Field> = fields.iter().filter(|f| f.serde.stored).collect();
    let id = (stored.iter())
        .find(|f| f.bson.value == "_id")
        .expect("checked");
    let (id_field, id_ty) = (id.ident, id.ty);
    let keywords = (fields.iter()).filter_map(|f| Some((&f.bson.value, f.attrs.keywords?)));
    let approximate: Vec<(&Ident, &String, u32)> = (stored.iter())
        .filter_map(|f| Some((f.ident, &f.bson.value, f.attrs.approximate?.0)))
        .collect();
    let references: Vec<related::ReferenceField> = (stored.iter())
        .filter_map(|f| {
            let (span, within) = f.attrs.reference.clone()?;
            Some((const_name(f.ident), f.ty, span, within))
        })
        .collect();
    let (versioning, history) = (a.versioning(), a.history.value().map(|h| &h.value));
    let computed = a.computed.value().map(|(c, _)| c);
    let subset = a.subset.value().map(|(s, _)| s);
    let referenced_by = a
        .referenced_by
        .value()
        .map_or(&[][..], |(r, _)| r.as_slice());
    let keywords = keywords.map(|(field, how)| {
        let how = Ident::new(how.variant(), Span::call_site());
        quote!(::pattern_core::spec::Keywords {
            field: #field,
            normalize: ::pattern_core::spec::Normalize::#how,
        })
    });
    let consts = typed_paths(&stored);
    let has = Has {
        versions: versioning.is_some(),
        history: history.is_some(),
        computed: computed.is_some(),
        subset: subset.is_some(),
        references: !references.is_empty(),
        referenced: !referenced_by.is_empty(),
    };
    let (methods, writes) = methods(Some(&id_ty.to_token_stream()), has);
    let versioning = versioning.as_ref().map(|v| versions::items(ident, v));
    let counters = related::counters(&approximate, &id_ty.to_token_stream());
    let mut writes = writes;
    for (field_ident, _, _) in &approximate {
        writes.push(format!("increment_{}", unraw(field_ident)));
    }
    if !approximate.is_empty() {
        writes.push("flush".to_owned());
    }
    let computed = computed.map(related::computed);
    let subset = subset.map(related::subset);
    let (references, listed) = related::references(
        ident,
        &references,
        referenced_by,
        a.propagation(),
        !approximate.is_empty(),
    );
    let attributes: Vec<_> = (stored.iter())
        .filter(|f| f.bson.value != "_id")
        .filter_map(|f| Some((const_name(f.ident), f.attrs.attributes?)))
        .collect();
    let attributes = (!attributes.is_empty()).then(|| {
        let fields = attributes.iter().map(|(k, span)| {
            quote_spanned!(*span=> ::pattern_core::document::attributes_field(Self::#k))
        });
        quote!(const ATTRIBUTES: &'static [&'static str] = &[#(#fields),*];)
    });
    let indexed: Vec<&String> = (stored.iter())
        .filter(|f| f.bson.value != "_id" && f.attrs.keywords.is_none())
        .filter(|f| f.attrs.attributes.is_none())
        .filter_map(|f| f.attrs.index.map(|_| &f.bson.value))
        .collect();
    let indexed = (!indexed.is_empty())
        .then(|| quote!(const INDEXED: &'static [&'static str] = &[#(#indexed),*];));
    let (collection, variant) = match a.variant_of.value() {
        None => {
            let collection = &a.collection.value().expect("checked").value;
            (quote!(#collection), None)
        }
        Some(of) => variant_items(ident, of, &stored, !approximate.is_empty()),
    };
    let approximate = approximate.iter().map(|(_, field, every)| {
        quote!(::pattern_core::document::Approximate { field: #field, every: #every })
    });
    let (variant, listed_by) = variant.unzip();
    let archive = a.archive.value().map(|((age, keep), _)| {
        let module = quote!(::pattern_core::document);
        let age_k = const_name(age);
        let age = quote_spanned!(age.span()=> #module::age_field(Self::#age_k));
        let keep = match keep {
            Some(k) => {
                let k_k = const_name(k);
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
    let history = history.map(|h| {
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
    stored: &[&Field],
    counters: bool,
) -> (TokenStream, Option<(TokenStream, TokenStream)>) {
    let module = quote!(::pattern_core::document);
    let variant = quote_spanned!(of.span()=> <#ident as #module::Variant>);
    let collection = quote!(<#variant::Of as #module::Document>::COLLECTION);
    let stored = stored.iter().map(|f| {
        // Every document has it: not an `Option`, no `#[serde(default)]`, not skipped when
        // empty.
        let (name, required) = (&f.bson.value, !(f.serde.defaulted || is_option(f.ty)));
        let types = crate::bson_type::bson_types(f.ty, f.serde.as_is);
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
fn typed_paths(fields: &[&Field]) -> Vec<TokenStream> {
    fields
        .iter()
        .map(|f| {
            let (konst, ty, bson, money) =
                (const_name(f.ident), f.ty, &f.bson.value, &f.attrs.money);
            let doc = format!(
                "The field `{}`, stored as `{bson}`: a typed path for filters and updates.",
                unraw(f.ident)
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
fn methods_of(id_ty: &TokenStream, history: bool) -> (Vec<TokenStream>, Vec<String>) {
    let has = Has {
        history,
        ..Has::default()
    };
    methods(Some(id_ty), has)
}

/// A polymorphic enum's method stubs beside its attribute errors.
fn enum_stubs() -> Vec<TokenStream> {
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
/// could be read (of the stored fields serde writes as a typed path can name), and stubs of the
/// methods (and of the approximate counters').
pub(crate) fn fallback(d: &Container) -> TokenStream {
    let (input, fields) = (d.input, d.fields().unwrap_or_default());
    let counters: Vec<&Ident> = (fields.iter())
        .filter(|f| f.attrs.approximate.is_some())
        .map(|f| f.ident)
        .collect();
    let fields: Vec<&Field> = (fields.iter())
        .filter(|f| f.serde.stored && !f.attrs.untyped)
        .collect();
    let body = match fields.iter().find(|f| f.bson.value == "_id") {
        // The id read: a reference or a copy of this type checks against it, not a placeholder.
        Some(id) if d.generics.params.is_empty() => {
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
    let mut stubs = if d.generics.params.is_empty() {
        typed_paths(&fields)
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
    for c in &counters {
        let method = quote::format_ident!("increment_{}", unraw(c));
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
