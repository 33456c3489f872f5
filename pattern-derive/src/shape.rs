//! The input both derives accept, a non-generic struct with named fields, and the roles its
//! fields take (`#[bucket(key)]`, `#[outlier(items)]`...).

use syn::meta::ParseNestedMeta;
use syn::{Data, DeriveInput, Fields, FieldsNamed, GenericArgument, Ident, PathArguments, Type};

use crate::attr;
use crate::ctxt::Ctxt;
use crate::names::Name;
use crate::serde_names;

/// What sets a derive apart for the parsing both share.
pub(crate) struct Kind<const N: usize> {
    /// `Bucket`.
    pub derive: &'static str,
    /// `bucket`: the attribute on the struct and on its fields.
    pub attr: &'static str,
    /// The field flags: `key`, `items`.
    pub flags: [&'static str; N],
    /// The struct's keys: `collection`, `size`...
    pub keys: &'static [&'static str],
}

impl<const N: usize> Kind<N> {
    /// Parses `input`: the struct's attribute with `container` (first, as it comes first in
    /// the source), then the struct and its fields, then `check` builds the model. All the
    /// errors they record come back together.
    pub(crate) fn parse<'a, A, M>(
        &self,
        input: &'a DeriveInput,
        container: impl FnOnce(&Ctxt, &'a DeriveInput) -> A,
        check: impl FnOnce(&Ctxt, &Struct<'a, N>, A) -> Option<M>,
    ) -> syn::Result<M> {
        let cx = Ctxt::new();
        let attrs = container(&cx, input);
        let st = Struct::parse(&cx, input, self);
        let model = check(&cx, &st, attrs);
        cx.check()?;
        Ok(model.expect("a model when there is no error"))
    }

    /// The name and type of the field of each flag, as far as `input` tells them, for the
    /// stubs emitted beside errors: the struct is read again and the errors of that reading
    /// dropped ([`Kind::parse`] reported them).
    pub(crate) fn marked_quietly<'a>(
        &self,
        input: &'a DeriveInput,
    ) -> [Option<(&'a Ident, &'a Type)>; N] {
        let quiet = Ctxt::new();
        let st = Struct::parse(&quiet, input, self);
        let marked = st
            .roles(&quiet, self)
            .map_or([None; N], |r| r.marked.map(|f| f.map(|f| (f.ident, f.ty))));
        drop(quiet.check());
        marked
    }

    /// A key of the struct's attribute that is none of [`Kind::keys`].
    pub(crate) fn unknown_key(&self, cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<()> {
        attr::unknown(cx, meta, self.attr, self.keys)
    }
}

/// The struct, as far as the derives need it.
pub(crate) struct Struct<'a, const N: usize> {
    pub ident: &'a Ident,
    /// `None` when the input is not a struct with named fields (already reported).
    pub fields: Option<Vec<Field<'a, N>>>,
}

pub(crate) struct Field<'a, const N: usize> {
    pub ident: &'a Ident,
    pub ty: &'a Type,
    /// Its BSON name (serde renames applied), from the literal or ident that gives it.
    pub bson: Name,
    /// Which of the derive's field flags it has, in the order of their keys.
    pub flags: [bool; N],
    /// Whether serde writes it as its type does (see [`serde_names::serialized_as_is`]).
    pub as_is: bool,
}

/// The field that has each flag (`None`: no valid one), and the fields with none.
pub(crate) struct Roles<'s, 'a, const N: usize> {
    pub marked: [Option<&'s Field<'a, N>>; N],
    pub others: Vec<&'s Field<'a, N>>,
}

impl<'a, const N: usize> Struct<'a, N> {
    /// Reads `input` for the derive `kind`.
    fn parse(cx: &Ctxt, input: &'a DeriveInput, kind: &Kind<N>) -> Self {
        let named = named_fields(cx, input, kind.derive);
        let rule = serde_names::rename_all(cx, &input.attrs);
        let fields = named.map(|named| {
            named
                .named
                .iter()
                .map(|f| {
                    let ident = f.ident.as_ref().expect("named field");
                    Field {
                        ident,
                        ty: &f.ty,
                        bson: serde_names::field_name(cx, ident, &f.attrs, rule),
                        flags: attr::flags(cx, &f.attrs, kind.attr, kind.flags),
                        as_is: serde_names::serialized_as_is(&f.attrs),
                    }
                })
                .collect()
        });
        Struct {
            ident: &input.ident,
            fields,
        }
    }

    /// The field of each flag: a missing one is an error at the struct's name, a second one
    /// at the second field, two flags on one field at that field. `None` when the fields
    /// could not be read.
    pub(crate) fn roles(&self, cx: &Ctxt, kind: &Kind<N>) -> Option<Roles<'_, 'a, N>> {
        let (attr, keys) = (kind.attr, kind.flags);
        let fields = self.fields.as_ref()?;
        let mut marked: [Option<&Field<'a, N>>; N] = [None; N];
        let mut others = Vec::new();
        for field in fields {
            let flags: Vec<usize> = (0..N).filter(|&i| field.flags[i]).collect();
            if let [a, b, ..] = flags[..] {
                let msg = format!(
                    "a field cannot be both #[{attr}({})] and #[{attr}({})]",
                    keys[a], keys[b]
                );
                cx.error_spanned_by(field.ident, msg);
                continue;
            }
            let Some(&i) = flags.first() else {
                others.push(field);
                continue;
            };
            if let Some(first) = marked[i] {
                let msg = format!(
                    "only one field may be #[{attr}({})]; `{}` already is",
                    keys[i], first.ident
                );
                cx.error_spanned_by(field.ident, msg);
            } else {
                marked[i] = Some(field);
            }
        }
        for (i, key) in keys.iter().enumerate() {
            if !fields.iter().any(|f| f.flags[i]) {
                cx.error_spanned_by(self.ident, format!("no field is marked #[{attr}({key})]"));
            }
        }
        Some(Roles { marked, others })
    }
}

/// The named fields of `input`; an error (and `None`) for a generic struct, a where clause,
/// a tuple or unit struct, an enum or a union.
pub(crate) fn named_fields<'a>(
    cx: &Ctxt,
    input: &'a DeriveInput,
    derive: &str,
) -> Option<&'a FieldsNamed> {
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
        Data::Struct(s) => match &s.fields {
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
        Data::Enum(e) => {
            cx.error_spanned_by(
                e.enum_token,
                format!("#[derive({derive})] works on structs, not enums"),
            );
            None
        }
        Data::Union(u) => {
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

/// `T` of the field's `Vec<T>` type; an error at the type when it is not a `Vec<T>`.
pub(crate) fn vec_item<'a, const N: usize>(
    cx: &Ctxt,
    field: &Field<'a, N>,
    flag: &str,
) -> Option<&'a Type> {
    let item = vec_arg(field.ty);
    if item.is_none() {
        cx.error_spanned_by(field.ty, format!("the {flag} field must be a `Vec<T>`"));
    }
    item
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
