//! Where a reference field's copies lie in a document: the field itself (`director`), a field
//! of an embedded document (`meta.director`), each element of a `Vec` of copies (`cast`,
//! `extras.guests`), or a field of each element of an array of embedded documents
//! (`crew.person`), itself a copy or a `Vec` of them (`scenes.extras`).
//!
//! A copy that is the field itself is written by filter, one `$set` of the field for every
//! holder ([`ReferenceField::flat`]). Any other place is written per holder: the holder's field
//! read, each copy of the source in it replaced (kept per element: the other elements, and the
//! embedded document's other fields, as they are), and the field set to the result. A source's
//! delete sets its copies to `null` (an `Option`) or removes them from their `Vec`.

use bson::{Bson, Document as BsonDocument};

use super::ReferenceField;
use crate::codec::order::same_value;
use crate::store::query::Filter;

impl ReferenceField {
    /// Whether the field is the copy itself: its copies are set by filter.
    pub(crate) fn flat(&self) -> bool {
        self.within.is_empty() && !self.many
    }

    /// The dotted path to the copies (`director`, `meta.director`, `cast`, `crew.person`): a
    /// filter on `<at>._id` finds the documents holding a copy of a source, through arrays.
    pub(crate) fn at(&self) -> String {
        if self.within.is_empty() {
            self.path.to_owned()
        } else {
            format!("{}.{}", self.path, self.within)
        }
    }

    /// Whether a source's delete leaves its copies' holders valid: an `Option` becomes `null`,
    /// an element of a `Vec` of copies is removed. A required copy refuses the delete.
    pub(crate) fn follows_delete(&self) -> bool {
        self.optional || self.many
    }

    /// The documents holding a copy of the source `id`.
    pub(crate) fn holding(&self, id: &Bson) -> Filter {
        Filter::Eq(format!("{}._id", self.at()).into(), id.clone())
    }

    /// The documents holding a copy of the source `id` that differs from `source` in a copied
    /// field: the copy's `_id` and field in the same element (`$elemMatch`) through each array
    /// on the way.
    pub(crate) fn differing(&self, id: &Bson, source: &BsonDocument) -> Filter {
        // The conditions on one copy at `at` (`""`: the element matched is the copy).
        let copy = |at: &str| {
            let p = |f: &str| match at {
                "" => f.to_owned(),
                _ => format!("{at}.{f}"),
            };
            let differs = (self.fields.iter())
                .map(|f| {
                    Filter::Ne(
                        p(f.to).into(),
                        source.get(f.from).cloned().unwrap_or(Bson::Null),
                    )
                })
                .collect();
            vec![Filter::Eq(p("_id").into(), id.clone()), Filter::Or(differs)]
        };
        match (self.each, self.many) {
            (false, false) => Filter::And(copy(&self.at())),
            (false, true) => Filter::ElemMatch(self.at().into(), copy("")),
            (true, false) => Filter::ElemMatch(self.path.into(), copy(self.within)),
            (true, true) => Filter::ElemMatch(
                self.path.into(),
                vec![Filter::ElemMatch(self.within.into(), copy(""))],
            ),
        }
    }

    /// Calls `f` on every copy slot of the field's value `top` (a copy, `null`, or anything a
    /// writer put there; a slot that is missing is passed as a scratch `null`). For a `Vec` of
    /// copies, an element `f` returns `false` for is removed.
    pub(crate) fn walk(&self, top: &mut Bson, f: &mut dyn FnMut(&mut Bson) -> bool) {
        let many = self.many;
        let slot = |s: &mut Bson, f: &mut dyn FnMut(&mut Bson) -> bool| {
            if !many {
                f(s);
            } else if let Bson::Array(a) = s {
                a.retain_mut(|c| f(c));
            }
        };
        let inner = |d: &mut BsonDocument, f: &mut dyn FnMut(&mut Bson) -> bool| match d
            .get_mut(self.within)
        {
            Some(s) => slot(s, f),
            None => slot(&mut Bson::Null, f),
        };
        if self.each {
            if let Bson::Array(elements) = top {
                for e in elements {
                    match e {
                        Bson::Document(d) => inner(d, f),
                        _ => slot(&mut Bson::Null, f),
                    }
                }
            }
        } else if !self.within.is_empty() {
            match top {
                Bson::Document(d) => inner(d, f),
                _ => slot(&mut Bson::Null, f),
            }
        } else {
            slot(top, f);
        }
    }

    /// The copies `doc` holds in this field (documents only: a `null` slot is none).
    pub(crate) fn copies(&self, doc: &BsonDocument) -> Vec<BsonDocument> {
        let mut top = doc.get(self.path).cloned().unwrap_or(Bson::Null);
        let mut out = Vec::new();
        self.walk(&mut top, &mut |c| {
            if let Bson::Document(c) = c {
                out.push(std::mem::take(c));
            }
            true
        });
        out
    }

    /// The `_id`s of the sources `doc`'s copies name.
    pub(crate) fn source_ids(&self, doc: &BsonDocument) -> Vec<Bson> {
        let mut ids: Vec<Bson> = Vec::new();
        for c in self.copies(doc) {
            if let Some(id) = c.get("_id") {
                if !ids.iter().any(|i| same_value(Some(i), Some(id))) {
                    ids.push(id.clone());
                }
            }
        }
        ids
    }

    /// The field's new value in `holder` once its copies of the source `id` are `copy` (`null`:
    /// the source is gone, so an element of a `Vec` is removed), `None` when that changes
    /// nothing.
    pub(crate) fn replaced(&self, holder: &BsonDocument, id: &Bson, copy: &Bson) -> Option<Bson> {
        let old = holder.get(self.path)?;
        let mut top = old.clone();
        let gone = matches!(copy, Bson::Null);
        let many = self.many;
        self.walk(&mut top, &mut |c| {
            let mine = matches!(c, Bson::Document(d) if same_value(d.get("_id"), Some(id)));
            if !mine {
                return true;
            }
            if gone && many {
                return false;
            }
            *c = copy.clone();
            true
        });
        (top != *old).then_some(top)
    }
}
