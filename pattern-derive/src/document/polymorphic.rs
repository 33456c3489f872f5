//! `#[derive(Document)]` on an enum: a polymorphic collection, serde's internally tagged
//! representation (`#[serde(tag = "kind")]`). Each variant is a newtype of a struct that
//! derives `Document` with `variant_of = Enum`, or a struct-like variant, for which a struct
//! `<Enum><Variant>` of its fields is generated (deriving the same). The enum's impl reads
//! its id from each variant; every variant's type gets `Variant` (its discriminator value,
//! the conversions); `shared(field: Type, ...)` gives the enum typed paths of the fields
//! every variant stores alike, checked against each variant's at compile time.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::Ident;

use crate::ast::Style;
use crate::attr::document::{const_name, Polymorphic};
use crate::attr::serde::unraw;

/// The model of an enum deriving `Document`.
type Container<'a> = crate::ast::Container<'a, Polymorphic>;
/// One of its variants.
type Variant<'a> = crate::ast::Variant<'a, ()>;

/// The code emitted beside errors: an impl of `Document` with a placeholder id, and stubs of
/// the methods.
pub(crate) fn fallback(m: &Container) -> TokenStream {
    let body = quote! {
        const COLLECTION: &'static str = "";
        type Id = ();
        fn id(&self) -> &() {
            &()
        }
    };
    let stubs = super::enum_stubs();
    crate::codegen::fallback(
        m.input,
        quote!(::pattern_core::document::Document),
        body,
        &stubs,
    )
}

/// The struct generated of a struct-like variant: `<Enum><Variant>`.
fn generated(m: &Container, v: &Variant) -> Ident {
    Ident::new(&format!("{}{}", m.ident, v.ident), v.ident.span())
}

/// A variant's type: the newtype's struct, or the generated one.
fn variant_ty(m: &Container, v: &Variant) -> TokenStream {
    match &v.style {
        Style::Newtype(p) => p.to_token_stream(),
        Style::Struct { .. } => generated(m, v).to_token_stream(),
        Style::Tuple(_) | Style::Unit => unreachable!("reported"),
    }
}

pub(crate) fn expand(m: &Container) -> TokenStream {
    let (ident, a) = (m.ident, &m.attrs);
    let variants = m.variants();
    let module = quote!(::pattern_core::document);
    let collection = a.collection.value().map_or("", |c| c.value.as_str());
    let tag = m.serde.tag.as_deref().unwrap_or_default();
    let tys: Vec<TokenStream> = variants.iter().map(|v| variant_ty(m, v)).collect();
    let first = &tys[0];
    let id_ty = quote!(<#first as #module::Document>::Id);
    let id_arms = variants.iter().zip(&tys).map(|(v, ty)| {
        let vi = v.ident;
        match &v.style {
            Style::Newtype(_) => quote!(#ident::#vi(v) => <#ty as #module::Document>::id(v)),
            Style::Struct { fields, .. } => match fields.iter().find(|f| f.bson.value == "_id") {
                Some(id) => {
                    let id = id.ident;
                    quote!(#ident::#vi { #id, .. } => #id)
                }
                // The generated struct's derive reports the missing `_id`.
                None => quote!(#ident::#vi { .. } => ::core::unreachable!()),
            },
            Style::Tuple(_) | Style::Unit => unreachable!("reported"),
        }
    });
    let shapes = variants.iter().zip(&tys).map(|(v, ty)| {
        let value = &v.value;
        quote!(#module::VariantShape::of::<#ty>(#value))
    });
    let generated = variants.iter().map(|v| generated_struct(m, v));
    let variant_impls = variants
        .iter()
        .zip(&tys)
        .map(|(v, ty)| variant_impl(m, v, ty));
    let shared = a.shared.value().into_iter().flatten().map(|(field, ty)| {
        let konst = const_name(field);
        let doc = format!(
            "The field `{}` every variant stores: a typed path for filters and updates over \
             the whole collection.",
            unraw(field)
        );
        let checks = tys[1..].iter().map(|other| {
            quote_spanned!(field.span()=> #module::same_field(#first::#konst, #other::#konst))
        });
        quote! {
            #[doc = #doc]
            pub const #konst: #module::Field<Self, #ty> = {
                #(#checks;)*
                #first::#konst.shared::<Self>()
            };
        }
    });
    let newtypes =
        (variants.iter().zip(&tys)).filter(|(v, _)| matches!(v.style, Style::Newtype(_)));
    let newtype_checks = newtypes.map(|(_, ty)| {
        quote_spanned! {ty.span()=>
            const _: () = #module::variant_check(<#ty as #module::Document>::POLYMORPHIC);
        }
    });
    let history = a.history.value().map(|h| &h.value);
    let (methods, mut writes) = super::methods_of(&id_ty, history.is_some());
    let history = history.map(|h| {
        quote!(const HISTORY: ::core::option::Option<&'static str> = ::core::option::Option::Some(#h);)
    });
    writes.push("change_variant".to_owned());
    quote! {
        #(#generated)*
        #(#variant_impls)*
        #(#newtype_checks)*

        #[automatically_derived]
        impl #module::Document for #ident {
            const COLLECTION: &'static str = #collection;
            type Id = #id_ty;
            fn id(&self) -> &Self::Id {
                match self {
                    #(#id_arms,)*
                }
            }
            const __WRITES: &'static [&'static str] = &[#(#writes),*];
            #history
            const POLYMORPHIC: ::core::option::Option<#module::Polymorphic> =
                ::core::option::Option::Some(#module::Polymorphic::Enum {
                    field: #tag,
                    variants: &[#(#shapes),*],
                });
            fn variant_indexes() -> ::std::vec::Vec<::pattern_core::store::query::IndexSpec> {
                let mut all = ::std::vec::Vec::new();
                for index in [#(#module::gathered_indexes::<#tys>()),*].into_iter().flatten() {
                    if !all.iter().any(|i: &::pattern_core::store::query::IndexSpec| i.name == index.name) {
                        all.push(index);
                    }
                }
                all
            }
        }

        #[automatically_derived]
        impl #ident {
            #(#shared)*
            #(#methods)*
            /// Writes this document over the stored one with its `_id`, whatever variant that
            /// one is: the explicit change of a document's variant (`save` refuses it,
            /// `OtherVariant`). Whether there was a document (none: nothing written).
            pub async fn change_variant<__PatternS: ::pattern_core::store::Store>(
                &self,
                store: &__PatternS,
            ) -> ::pattern_core::Result<bool> {
                #module::change_variant::<Self, __PatternS>(store, self).await
            }
            /// Every stored document that decodes as no variant (an unknown or missing
            /// discriminator, a variant's field missing or of another type): one scan.
            pub async fn verify_variants<__PatternS: ::pattern_core::store::Store>(
                store: &__PatternS,
            ) -> ::pattern_core::Result<::std::vec::Vec<#module::Undecodable>> {
                #module::verify_variants::<Self, __PatternS>(store).await
            }
        }
    }
}

/// A struct-like variant's struct: its fields as written (attributes kept), deriving serde's
/// traits, `Document` (`variant_of` the enum) and `variant_derive(...)`.
fn generated_struct(m: &Container, v: &Variant) -> Option<TokenStream> {
    let Style::Struct { fields, rule } = &v.style else {
        return None;
    };
    let (enum_ident, vis, generated) = (m.ident, m.vis, generated(m, v));
    let derives = m.attrs.derives.value().into_iter().flatten();
    let rename = rule.map(|r| {
        let name = r.serde_name();
        quote!(#[serde(rename_all = #name)])
    });
    let fields = fields.iter().map(|f| {
        let (attrs, ident, ty) = (&f.original.attrs, &f.original.ident, &f.original.ty);
        quote!(#(#attrs)* pub #ident: #ty)
    });
    let doc = format!(
        "The `{}` variant of [`{enum_ident}`] as a type of its own, generated by \
         `#[derive(Document)]` on the enum: its finds, updates and deletes see only documents \
         of this variant.",
        v.ident
    );
    Some(quote! {
        #[doc = #doc]
        #[derive(
            ::pattern_core::__private::serde::Serialize,
            ::pattern_core::__private::serde::Deserialize,
            ::pattern_core::Document,
            #(#derives),*
        )]
        #[serde(crate = "::pattern_core::__private::serde")]
        #rename
        #[document(variant_of = #enum_ident)]
        #vis struct #generated {
            #(#fields,)*
        }
    })
}

/// `Variant` for one variant's type: its discriminator and the conversions.
fn variant_impl(m: &Container, v: &Variant, ty: &TokenStream) -> TokenStream {
    let tag = m.serde.tag.as_deref().unwrap_or_default();
    let (ident, value, vi) = (m.ident, &v.value, v.ident);
    let (into, from) = match &v.style {
        Style::Newtype(_) => (
            quote!(#ident::#vi(self)),
            quote!(#ident::#vi(v) => ::core::result::Result::Ok(v)),
        ),
        Style::Struct { fields, .. } => {
            let names: Vec<&Ident> = fields.iter().map(|f| f.ident).collect();
            (
                quote!(#ident::#vi { #(#names: self.#names),* }),
                quote!(#ident::#vi { #(#names),* } => ::core::result::Result::Ok(#ty { #(#names),* })),
            )
        }
        Style::Tuple(_) | Style::Unit => unreachable!("reported"),
    };
    let other =
        (m.variants().len() > 1).then(|| quote!(other => ::core::result::Result::Err(other),));
    quote! {
        #[automatically_derived]
        impl ::pattern_core::document::Variant for #ty {
            type Of = #ident;
            const FIELD: &'static str = #tag;
            const VALUE: &'static str = #value;
            fn into_enum(self) -> #ident {
                #into
            }
            fn from_enum(e: #ident) -> ::core::result::Result<Self, #ident> {
                match e {
                    #from,
                    #other
                }
            }
        }
    }
}
