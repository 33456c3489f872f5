//! The one model of a derive's input, the same for the five derives (serde_derive's
//! `internals/ast.rs`): the container with its name, generics, serde's container attributes and
//! the derive's own ([`Attrs`]), and its fields, each with serde's name for it, its type and
//! span, and the derive's keys on it. An enum `Document` reads has variants instead.
//!
//! [`Container::from_ast`] reads it once, reporting what it cannot read. The check pass
//! (`crate::check`) then decides what the keys mean together, and the derive's back end
//! expands the checked model: neither reads the input again.

use proc_macro2::Ident;
use syn::meta::ParseNestedMeta;
use syn::{
    DataEnum, DeriveInput, Fields, FieldsNamed, FieldsUnnamed, GenericArgument, Generics,
    PathArguments, Type, TypePath, Visibility,
};

use crate::attr::each_key;
use crate::attr::serde::{self, RenameRule};
use crate::ctxt::Ctxt;
use crate::names::Name;

/// A derive's own attributes: its container's keys (the implementing type, read key by key
/// from every `#[<ATTR>(...)]` on the container) and each field's ([`Attrs::Field`]), read by
/// [`Container::from_ast`].
pub(crate) trait Attrs: Default {
    /// The derive, as its errors name it: `Bucket`.
    const DERIVE: &'static str;
    /// Its attribute: `bucket`.
    const ATTR: &'static str;
    /// It reads an enum's variants (a polymorphic collection); other derives report an enum.
    const ENUMS: bool = false;
    /// A field's keys are read before serde's name for it, so that their mistakes come first.
    const KEYS_BEFORE_NAME: bool = false;
    /// The keys of one field.
    type Field;
    /// Reads one key of the container's attribute.
    fn key(&mut self, cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<()>;
    /// Once the container's keys are read: a key it cannot go without, reported at `ident`
    /// there (`Reference`'s `source`, an enum's `collection`). By default nothing: the check
    /// pass reports the others' absence.
    fn missing(&self, _cx: &Ctxt, _ident: &Ident) {}
    /// Reads one field's keys.
    fn field(cx: &Ctxt, field: &syn::Field) -> Self::Field;
}

/// The input as the derives see it.
pub(crate) struct Container<'a, A: Attrs> {
    pub ident: &'a Ident,
    /// The container's visibility, which the types a derive generates share.
    pub vis: &'a Visibility,
    pub generics: &'a Generics,
    pub serde: serde::Container,
    /// The derive's keys on the container.
    pub attrs: A,
    pub data: Data<'a, A::Field>,
    /// As written: the fallback beside errors implements the trait for it.
    pub input: &'a DeriveInput,
}

/// What the container holds.
pub(crate) enum Data<'a, F> {
    /// A struct's named fields.
    Struct(Vec<Field<'a, F>>),
    /// An enum's variants (for a derive that reads enums).
    Enum(Vec<Variant<'a, F>>),
    /// Nothing the derive reads: a tuple or unit struct, an enum, a union (reported).
    Unreadable,
}

/// A named field.
pub(crate) struct Field<'a, F> {
    pub ident: &'a Ident,
    pub ty: &'a Type,
    /// Its BSON name (serde's renames applied), with the literal or ident that gives it.
    pub bson: Name,
    pub serde: serde::Field,
    /// The derive's keys on it.
    pub attrs: F,
    /// As written (a variant's generated struct copies its attributes).
    pub original: &'a syn::Field,
}

/// A variant of an enum.
pub(crate) struct Variant<'a, F> {
    pub ident: &'a Ident,
    /// Its discriminator: serde's name for it.
    pub value: String,
    pub style: Style<'a, F>,
}

/// What a variant holds.
pub(crate) enum Style<'a, F> {
    /// `Book(Book)`: a struct, by its path.
    Newtype(&'a TypePath),
    /// `Shirt { ... }`: its fields, named by `rule` (the variant's `rename_all`, else the
    /// enum's `rename_all_fields`). Read quietly: the struct generated of them reports their
    /// mistakes.
    Struct {
        fields: Vec<Field<'a, F>>,
        rule: Option<RenameRule>,
    },
    /// `Pair(u32, String)`, or a newtype of what is not a struct's name (`Name(&'a str)`): a
    /// shape a polymorphic collection does not store (the check pass reports it).
    Tuple(&'a FieldsUnnamed),
    /// `Nothing`: no `_id` (the check pass reports it).
    Unit,
}

impl<'a, A: Attrs> Container<'a, A> {
    /// Reads `input` for the derive `A`: the container's keys, its shape, serde's container
    /// attributes, then each field (or variant). Every mistake goes to `cx`; what could be
    /// read is kept, for the fallback beside the errors.
    pub(crate) fn from_ast(cx: &Ctxt, input: &'a DeriveInput) -> Self {
        if let (syn::Data::Enum(data), true) = (&input.data, A::ENUMS) {
            return Self::from_enum(cx, input, data);
        }
        let attrs = keys::<A>(cx, input);
        let named = named_fields(cx, input, A::DERIVE);
        let rename_all = serde::rename_all(cx, &input.attrs);
        let data = match named {
            Some(named) => Data::Struct(fields::<A>(cx, named, rename_all)),
            None => Data::Unreadable,
        };
        Container {
            ident: &input.ident,
            vis: &input.vis,
            generics: &input.generics,
            serde: serde::Container { tag: None },
            attrs,
            data,
            input,
        }
    }

    /// An enum: its generics refused, serde's representation, the container's keys, then the
    /// variants.
    fn from_enum(cx: &Ctxt, input: &'a DeriveInput, data: &'a DataEnum) -> Self {
        if !input.generics.params.is_empty() || input.generics.where_clause.is_some() {
            cx.error_spanned_by(
                &input.generics,
                format!("#[derive({})] does not support generic types", A::DERIVE),
            );
        }
        let tag = serde::tag(cx, input);
        let attrs = keys::<A>(cx, input);
        let rename_all = serde::rename_all(cx, &input.attrs);
        let rename_all_fields = serde::rename_all_fields(cx, &input.attrs);
        let variants = data
            .variants
            .iter()
            .map(|v| variant::<A>(cx, v, rename_all, rename_all_fields))
            .collect();
        Container {
            ident: &input.ident,
            vis: &input.vis,
            generics: &input.generics,
            serde: serde::Container { tag },
            attrs,
            data: Data::Enum(variants),
            input,
        }
    }

    /// The fields of a struct; `None` when the input is not one with named fields.
    pub(crate) fn fields(&self) -> Option<&[Field<'a, A::Field>]> {
        match &self.data {
            Data::Struct(fields) => Some(fields),
            Data::Enum(_) | Data::Unreadable => None,
        }
    }

    /// The variants of an enum (none for a struct).
    pub(crate) fn variants(&self) -> &[Variant<'a, A::Field>] {
        match &self.data {
            Data::Enum(variants) => variants,
            Data::Struct(_) | Data::Unreadable => &[],
        }
    }
}

impl<'a, A: Attrs<Field = [bool; N]>, const N: usize> Container<'a, A> {
    /// The field that has flag `i` and no other (the first such), for a derive whose fields'
    /// keys are flags: the field `#[bucket(key)]` marks.
    pub(crate) fn marked(&self, i: usize) -> Option<&Field<'a, [bool; N]>> {
        (self.fields()?.iter()).find(|f| (0..N).all(|j| f.attrs[j] == (j == i)))
    }
}

/// The container's keys: each key of every `#[<ATTR>(...)]`, then what their absence means.
fn keys<A: Attrs>(cx: &Ctxt, input: &DeriveInput) -> A {
    let mut attrs = A::default();
    each_key(cx, &input.attrs, A::ATTR, |meta| attrs.key(cx, meta));
    attrs.missing(cx, &input.ident);
    attrs
}

/// Each named field, its keys and serde's name for it read in the derive's order.
fn fields<'a, A: Attrs>(
    cx: &Ctxt,
    named: &'a FieldsNamed,
    rule: Option<RenameRule>,
) -> Vec<Field<'a, A::Field>> {
    let read = |f: &'a syn::Field| {
        let ident = f.ident.as_ref().expect("named field");
        let name = || serde::field_name(cx, ident, &f.attrs, rule);
        let (bson, attrs) = match A::KEYS_BEFORE_NAME {
            true => {
                let attrs = A::field(cx, f);
                (name(), attrs)
            }
            false => (name(), A::field(cx, f)),
        };
        Field {
            ident,
            ty: &f.ty,
            bson,
            serde: serde::Field::from_ast(&f.attrs),
            attrs,
            original: f,
        }
    };
    named.named.iter().map(read).collect()
}

/// One variant: its discriminator and its shape.
fn variant<'a, A: Attrs>(
    cx: &Ctxt,
    v: &'a syn::Variant,
    rule: Option<RenameRule>,
    fields_rule: Option<RenameRule>,
) -> Variant<'a, A::Field> {
    let value = serde::variant_name(&v.ident, &v.attrs, rule);
    let style = match &v.fields {
        Fields::Unnamed(f) => match f.unnamed.first().map(|field| &field.ty) {
            Some(Type::Path(p)) if f.unnamed.len() == 1 && p.qself.is_none() => Style::Newtype(p),
            _ => Style::Tuple(f),
        },
        Fields::Unit => Style::Unit,
        Fields::Named(named) => {
            let rule = serde::rename_all(cx, &v.attrs).or(fields_rule);
            let quiet = Ctxt::new();
            let fields = fields::<A>(&quiet, named, rule);
            drop(quiet.check());
            Style::Struct { fields, rule }
        }
    };
    Variant {
        ident: &v.ident,
        value,
        style,
    }
}

/// The named fields of `input`; an error (and `None`) for a generic struct, a where clause,
/// a tuple or unit struct, an enum or a union.
fn named_fields<'a>(cx: &Ctxt, input: &'a DeriveInput, derive: &str) -> Option<&'a FieldsNamed> {
    if !input.generics.params.is_empty() {
        cx.error_spanned_by(
            &input.generics,
            format!("#[derive({derive})] does not support generic types"),
        );
    } else if let Some(w) = &input.generics.where_clause {
        cx.error_spanned_by(
            w,
            format!("#[derive({derive})] does not support where clauses"),
        );
    }
    match &input.data {
        syn::Data::Struct(s) => match &s.fields {
            Fields::Named(named) => Some(named),
            Fields::Unnamed(f) => {
                cx.error_spanned_by(f, needs_named_fields(derive));
                None
            }
            Fields::Unit => {
                cx.error_spanned_by(&input.ident, needs_named_fields(derive));
                None
            }
        },
        syn::Data::Enum(e) => {
            cx.error_spanned_by(
                e.enum_token,
                format!("#[derive({derive})] works on structs, not enums"),
            );
            None
        }
        syn::Data::Union(u) => {
            cx.error_spanned_by(
                u.union_token,
                format!("#[derive({derive})] works on structs, not unions"),
            );
            None
        }
    }
}

fn needs_named_fields(derive: &str) -> String {
    format!("#[derive({derive})] needs a struct with named fields: `struct Name {{ field: Type, ... }}`")
}

/// `T` of a `Vec<T>` type.
pub(crate) fn vec_arg(ty: &Type) -> Option<&Type> {
    match ty {
        Type::Group(g) => vec_arg(&g.elem),
        Type::Paren(p) => vec_arg(&p.elem),
        Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last()?;
            let PathArguments::AngleBracketed(args) = &last.arguments else {
                return None;
            };
            match (last.ident == "Vec", args.args.len(), args.args.first()) {
                (true, 1, Some(GenericArgument::Type(item))) => Some(item),
                _ => None,
            }
        }
        _ => None,
    }
}
