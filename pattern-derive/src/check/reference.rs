//! `#[derive(Reference)]`'s checks: a copy holds its source's id and at least one other field.

use crate::ast::Container;
use crate::attr::reference::Reference;
use crate::ctxt::Ctxt;

pub(crate) fn reference(cx: &Ctxt, cont: &Container<Reference>) {
    let Some(fields) = cont.fields() else {
        return;
    };
    let id = fields.iter().any(|f| f.bson.value == "_id");
    if !id {
        cx.error_spanned_by(
            cont.ident,
            "a copy holds its source's id stored as `_id`: add a field \
             #[serde(rename = \"_id\")] id: <the source's id type>",
        );
    }
    if id && fields.iter().all(|f| f.bson.value == "_id") {
        cx.error_spanned_by(
            cont.ident,
            "a copy holds at least one field of its source besides the `_id`",
        );
    }
}
