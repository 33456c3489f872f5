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
use syn::{Data, DeriveInput, Fields, Ident, Token, Type};

use crate::attr::{self, Slot};
use crate::ctxt::Ctxt;
use crate::names::Name;
use crate::serde_names::{self, unraw, RenameRule};

const ATTR: &str = "document";

/// One variant: its ident, its discriminator value, its type (the newtype's struct, or the
/// generated one), and for a struct-like variant its fields and the ident of its `_id` field.
struct Variant<'a> {
    ident: &'a Ident,
    value: String,
    ty: TokenStream,
    shape: Shape<'a>,
}

enum Shape<'a> {
    Newtype,
    Struct {
        generated: Ident,
        fields: &'a syn::FieldsNamed,
        id: Option<&'a Ident>,
        rule: Option<RenameRule>,
    },
}

/// What the enum's derive generates from.
struct Model<'a> {
    input: &'a DeriveInput,
    collection: String,
    tag: String,
    variants: Vec<Variant<'a>>,
    /// `shared(name: String, ...)`: the Rust field name and its type.
    shared: Vec<(Ident, Type)>,
    /// `variant_derive(Debug, Clone, ...)`: what the generated structs derive besides serde's
    /// and `Document`.
    derives: Vec<syn::Path>,
    /// `history = "..."`: the collection's history, which every variant's writes record in.
    history: Option<String>,
}

pub(crate) fn derive(input: &DeriveInput) -> TokenStream {
    crate::codegen::or_fallback(parse(input).map(|m| expand(&m)), || {
        let body = quote! {
            const COLLECTION: &'static str = "";
            type Id = ();
            fn id(&self) -> &() {
                &()
            }
        };
        let stubs = super::expand::enum_stubs();
        crate::codegen::fallback(
            input,
            quote!(::pattern_core::document::Document),
            body,
            &stubs,
        )
    })
}

fn parse(input: &DeriveInput) -> syn::Result<Model<'_>> {
    let cx = Ctxt::new();
    let Data::Enum(data) = &input.data else {
        unreachable!("called on enums");
    };
    if !input.generics.params.is_empty() || input.generics.where_clause.is_some() {
        cx.error_spanned_by(
            &input.generics,
            "#[derive(Document)] does not support generic types",
        );
    }
    let tag = serde_tag(&cx, input);
    let Container {
        collection,
        shared,
        derives,
        history,
    } = container(&cx, input);
    let rule = serde_names::rename_all(&cx, &input.attrs);
    let fields_rule = rename_all_fields(&cx, &input.attrs);
    let mut variants: Vec<Variant> = Vec::new();
    for v in &data.variants {
        let default = match rule {
            Some(RenameRule::Lower) => unraw(&v.ident).to_lowercase(),
            Some(RenameRule::Upper) => unraw(&v.ident).to_uppercase(),
            Some(r) => r.apply_to_field(&serde_names::snake_case(&unraw(&v.ident))),
            None => unraw(&v.ident),
        };
        let value = match serde_names::serde_key_values(&v.attrs, &["rename"]).pop() {
            Some((_, Some(lit))) => lit.value(),
            _ => default,
        };
        if let Some(first) = variants.iter().find(|o| o.value == value) {
            cx.error_spanned_by(
                &v.ident,
                format!(
                    "variants `{}` and `{}` have the same discriminator {value:?}",
                    first.ident, v.ident
                ),
            );
        }
        let supported = "a polymorphic collection's variant is a newtype of a struct \
                         (`Book(Book)`) or a struct-like variant (`Shirt { ... }`)";
        let (ty, shape) = match &v.fields {
            Fields::Unnamed(f) if f.unnamed.len() == 1 => match &f.unnamed[0].ty {
                Type::Path(p) if p.qself.is_none() => (p.to_token_stream(), Shape::Newtype),
                other => {
                    cx.error_spanned_by(other, format!("not a struct's name: {supported}"));
                    continue;
                }
            },
            Fields::Unnamed(f) => {
                cx.error_spanned_by(f, format!("a tuple variant is not supported: {supported}"));
                continue;
            }
            Fields::Unit => {
                cx.error_spanned_by(
                    &v.ident,
                    format!("a unit variant stores no `_id`: {supported}"),
                );
                continue;
            }
            Fields::Named(named) => {
                let rule = serde_names::rename_all(&cx, &v.attrs).or(fields_rule);
                let quiet = Ctxt::new();
                let id = named.named.iter().find_map(|f| {
                    let ident = f.ident.as_ref()?;
                    let name = serde_names::field_name(&quiet, ident, &f.attrs, rule);
                    (name.value == "_id").then_some(ident)
                });
                drop(quiet.check());
                let generated = Ident::new(&format!("{}{}", input.ident, v.ident), v.ident.span());
                let ty = generated.to_token_stream();
                let shape = Shape::Struct {
                    generated,
                    fields: named,
                    id,
                    rule,
                };
                (ty, shape)
            }
        };
        variants.push(Variant {
            ident: &v.ident,
            value,
            ty,
            shape,
        });
    }
    if data.variants.is_empty() {
        cx.error_spanned_by(&input.ident, "a polymorphic collection needs a variant");
    }
    cx.check()?;
    Ok(Model {
        input,
        collection: collection.map(|c| c.value).unwrap_or_default(),
        tag: tag.unwrap_or_default(),
        variants,
        shared,
        derives,
        history: history.map(|h| h.value),
    })
}

/// serde's `tag = "..."`; an error for any other representation.
fn serde_tag(cx: &Ctxt, input: &DeriveInput) -> Option<String> {
    let supported = "#[derive(Document)] on an enum stores it internally tagged: \
                     #[serde(tag = \"kind\")], each variant a newtype of a struct or \
                     struct-like";
    let other = serde_names::serde_key_values(&input.attrs, &["content", "untagged"]);
    let untagged = other.iter().any(|(k, _)| k.is_ident("untagged"));
    for (key, _) in other {
        let what = if key.is_ident("content") {
            "adjacently tagged (`content`)"
        } else {
            "untagged"
        };
        cx.error_spanned_by(&key, format!("{what} enums are not supported: {supported}"));
    }
    match serde_names::serde_key_values(&input.attrs, &["tag"]).pop() {
        Some((_, Some(lit))) => {
            let tag = lit.value();
            if tag == "_id" || tag.is_empty() || tag.starts_with('$') || tag.contains('.') {
                cx.error_at(
                    lit.span(),
                    "the discriminator must be a plain field name other than `_id`",
                );
            }
            Some(tag)
        }
        Some((key, None)) => {
            cx.error_spanned_by(&key, supported);
            None
        }
        None if untagged => None,
        None => {
            cx.error_spanned_by(
                input.ident.clone(),
                format!("externally tagged enums are not supported: {supported}"),
            );
            None
        }
    }
}

/// `#[serde(rename_all_fields = "...")]`: the struct-like variants' field names.
fn rename_all_fields(cx: &Ctxt, attrs: &[syn::Attribute]) -> Option<RenameRule> {
    let (_, lit) = serde_names::serde_key_values(attrs, &["rename_all_fields"]).pop()?;
    let lit = lit?;
    let synthetic: syn::Attribute = syn::parse_quote!(#[serde(rename_all = #lit)]);
    serde_names::rename_all(cx, &[synthetic])
}

/// What the enum's `#[document(...)]` gives.
struct Container {
    collection: Option<Name>,
    shared: Vec<(Ident, Type)>,
    derives: Vec<syn::Path>,
    history: Option<Name>,
}

/// `collection = "..."`, `shared(field: Type, ...)`, `variant_derive(Trait, ...)` and
/// `history = "..."`.
fn container(cx: &Ctxt, input: &DeriveInput) -> Container {
    let mut collection = Slot::default();
    let mut shared = Slot::default();
    let mut derives = Slot::default();
    let mut history = Slot::<Name>::default();
    attr::each_key(cx, &input.attrs, ATTR, |meta| {
        if meta.path.is_ident("collection") {
            collection.parse(cx, meta, attr::collection)
        } else if meta.path.is_ident("history") {
            // #[document(history = "products_history")]: one history for every variant.
            history.parse(cx, meta, attr::collection)
        } else if meta.path.is_ident("shared") {
            // #[document(shared(name: String, price: i64))]
            shared.parse(cx, meta, |_, m| {
                let content;
                syn::parenthesized!(content in m.input);
                let list = content.parse_terminated(
                    |p: syn::parse::ParseStream| {
                        let ident: Ident = p.parse()?;
                        p.parse::<Token![:]>()?;
                        Ok((ident, p.parse::<Type>()?))
                    },
                    Token![,],
                )?;
                Ok(Some(list.into_iter().collect::<Vec<_>>()))
            })
        } else if meta.path.is_ident("variant_derive") {
            // #[document(variant_derive(Debug, Clone, PartialEq))]
            derives.parse(cx, meta, |_, m| {
                let content;
                syn::parenthesized!(content in m.input);
                let list = content.parse_terminated(syn::Path::parse_mod_style, Token![,])?;
                Ok(Some(list.into_iter().collect::<Vec<_>>()))
            })
        } else {
            attr::unknown(
                cx,
                meta,
                ATTR,
                &["collection", "shared", "variant_derive", "history"],
            )
        }
    });
    let collection = collection.required(cx, &input.ident, "#[document(collection = \"...\")]");
    let history = history.get();
    if let (Some(h), Some(c)) = (&history, &collection) {
        if h.value == c.value {
            cx.error_at(
                h.span.unwrap_or_else(proc_macro2::Span::call_site),
                "the history collection must be another collection than the documents'",
            );
        }
    }
    Container {
        collection,
        shared: shared.get().unwrap_or_default(),
        derives: derives.get().unwrap_or_default(),
        history,
    }
}

fn expand(m: &Model) -> TokenStream {
    let ident = &m.input.ident;
    let module = quote!(::pattern_core::document);
    let (collection, tag) = (&m.collection, &m.tag);
    let first = &m.variants[0].ty;
    let id_ty = quote!(<#first as #module::Document>::Id);
    let id_arms = m.variants.iter().map(|v| {
        let (vi, ty) = (v.ident, &v.ty);
        match &v.shape {
            Shape::Newtype => quote!(#ident::#vi(v) => <#ty as #module::Document>::id(v)),
            Shape::Struct { id: Some(id), .. } => quote!(#ident::#vi { #id, .. } => #id),
            // The generated struct's derive reports the missing `_id`.
            Shape::Struct { id: None, .. } => quote!(#ident::#vi { .. } => ::core::unreachable!()),
        }
    });
    let shapes = m.variants.iter().map(|v| {
        let (value, ty) = (&v.value, &v.ty);
        quote!(#module::VariantShape::of::<#ty>(#value))
    });
    let tys: Vec<&TokenStream> = m.variants.iter().map(|v| &v.ty).collect();
    let generated = m.variants.iter().map(|v| generated_struct(m, v));
    let variant_impls = m.variants.iter().map(|v| variant_impl(m, v));
    let shared = m.shared.iter().map(|(field, ty)| {
        let konst = Ident::new(&unraw(field).to_uppercase(), field.span());
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
    let newtypes = m
        .variants
        .iter()
        .filter(|v| matches!(v.shape, Shape::Newtype));
    let newtype_checks = newtypes.map(|v| {
        let ty = &v.ty;
        quote_spanned! {ty.span()=>
            const _: () = #module::variant_check(<#ty as #module::Document>::POLYMORPHIC);
        }
    });
    let (methods, mut writes) = super::expand::methods_of(&id_ty, m.history.is_some());
    let history = m.history.as_ref().map(|h| {
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
fn generated_struct(m: &Model, v: &Variant) -> Option<TokenStream> {
    let Shape::Struct {
        generated,
        fields,
        rule,
        ..
    } = &v.shape
    else {
        return None;
    };
    let (enum_ident, vis) = (&m.input.ident, &m.input.vis);
    let derives = &m.derives;
    let rename = rule.map(|r| {
        let name = r.serde_name();
        quote!(#[serde(rename_all = #name)])
    });
    let fields = fields.named.iter().map(|f| {
        let (attrs, ident, ty) = (&f.attrs, &f.ident, &f.ty);
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
fn variant_impl(m: &Model, v: &Variant) -> TokenStream {
    let (ident, tag, value, vi, ty) = (&m.input.ident, &m.tag, &v.value, v.ident, &v.ty);
    let (into, from) = match &v.shape {
        Shape::Newtype => (
            quote!(#ident::#vi(self)),
            quote!(#ident::#vi(v) => ::core::result::Result::Ok(v)),
        ),
        Shape::Struct { fields, .. } => {
            let names: Vec<&Ident> = fields
                .named
                .iter()
                .filter_map(|f| f.ident.as_ref())
                .collect();
            (
                quote!(#ident::#vi { #(#names: self.#names),* }),
                quote!(#ident::#vi { #(#names),* } => ::core::result::Result::Ok(#ty { #(#names),* })),
            )
        }
    };
    let other =
        (m.variants.len() > 1).then(|| quote!(other => ::core::result::Result::Err(other),));
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
