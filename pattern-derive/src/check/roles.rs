//! The fields a derive's flags mark (`#[bucket(key)]`, `#[outlier(items)]`): one field per
//! flag, one flag per field.

use syn::Type;

use crate::ast::{vec_arg, Attrs, Container, Field};
use crate::ctxt::Ctxt;

/// The field that has each flag (`None`: no valid one), and the fields with none.
pub(super) struct Roles<'s, 'a, const N: usize> {
    pub marked: [Option<&'s Field<'a, [bool; N]>>; N],
    pub others: Vec<&'s Field<'a, [bool; N]>>,
}

/// The field of each of the flags `keys` of `#[<attr>(...)]`: a missing one is an error at the
/// struct's name, a second one at the second field, two flags on one field at that field.
/// `None` when the fields could not be read.
pub(super) fn roles<'s, 'a, A, const N: usize>(
    cx: &Ctxt,
    cont: &'s Container<'a, A>,
    attr: &str,
    keys: [&str; N],
) -> Option<Roles<'s, 'a, N>>
where
    A: Attrs<Field = [bool; N]>,
{
    let fields = cont.fields()?;
    let mut marked: [Option<&Field<'a, [bool; N]>>; N] = [None; N];
    let mut others = Vec::new();
    for field in fields {
        let flags: Vec<usize> = (0..N).filter(|&i| field.attrs[i]).collect();
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
        if !fields.iter().any(|f| f.attrs[i]) {
            cx.error_spanned_by(cont.ident, format!("no field is marked #[{attr}({key})]"));
        }
    }
    Some(Roles { marked, others })
}

/// `T` of the field's `Vec<T>` type; an error at the type when it is not a `Vec<T>`.
pub(super) fn vec_item<'a, F>(cx: &Ctxt, field: &Field<'a, F>, flag: &str) -> Option<&'a Type> {
    let item = vec_arg(field.ty);
    if item.is_none() {
        cx.error_spanned_by(field.ty, format!("the {flag} field must be a `Vec<T>`"));
    }
    item
}
