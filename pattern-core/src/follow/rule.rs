//! What the follower keeps: a rule per kind of derived data, each naming the collection whose
//! changes feed it, the keys a change affects, and how to bring one key's derived data in line.

use bson::Bson;

use crate::document::Scope;

use crate::store::{transaction_with, BoxFuture, Change, ChangeOp, Store};
use crate::Result;

/// The keys a change affects in one rule.
pub(crate) enum Keys {
    /// These (none: the change does not touch what the rule keeps).
    Some(Vec<Bson>),
    /// Unknown from the change alone (a child deleted without its before-image): the rule's
    /// whole data set is checked.
    Unknown,
}

/// One kind of derived data kept in line from the changes to one collection. Object-safe, so
/// that the follower holds the rules of every registered type in one list.
pub(crate) trait Rule<S: Store>: Send + Sync {
    /// What the rule keeps, for logs and the status (`"copies films.director"`): also its
    /// identity (two registrations of the same rule are one).
    fn name(&self) -> String;

    /// The collections whose changes feed it, each with whether the rule needs its documents'
    /// states before a change ([`Change::before`]).
    fn watches(&self) -> Vec<(&'static str, bool)>;

    /// The keys `change` (to one of [`Rule::watches`]) affects.
    fn keys(&self, change: &Change) -> Keys;

    /// In the follower's transaction: the derived data of each of `keys` (each once, by value)
    /// brought in line with the data it derives from, as the transaction sees it; what that
    /// took, per key. By default [`Rule::apply_key`] of one key after another; a rule whose
    /// reads and writes can cover many keys at once overrides it (a batch's round trips do not
    /// grow with its keys).
    fn apply<'t>(
        &'t self,
        tx: &'t S::Txn,
        keys: &'t [Bson],
    ) -> BoxFuture<'t, Result<Vec<Applied>>> {
        one_by_one(self, tx, keys)
    }

    /// [`Rule::apply`] of one key.
    fn apply_key<'t>(&'t self, tx: &'t S::Txn, key: &'t Bson) -> BoxFuture<'t, Result<Applied>>;

    /// The whole data set checked and brought in line (when history is lost, or keys are
    /// unknown); how many derived values were written.
    fn repair<'a>(&'a self, store: &'a S) -> BoxFuture<'a, Result<u64>>;

    /// The rule as data, for a follower built without the types (`None`: it needs its type).
    fn stored(&self) -> Option<bson::Document> {
        None
    }
}

/// What bringing one key in line took.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Applied {
    /// Something was written.
    pub wrote: bool,
    /// A document of an older schema version was found (upgraded when `wrote`).
    pub older: bool,
}

impl Applied {
    pub(crate) fn wrote(wrote: bool) -> Self {
        Applied {
            wrote,
            older: false,
        }
    }
}

/// [`Rule::apply`] of a rule that brings one key in line at a time: [`Rule::apply_key`] of
/// every key, in order.
fn one_by_one<'t, S, R>(
    rule: &'t R,
    tx: &'t S::Txn,
    keys: &'t [Bson],
) -> BoxFuture<'t, Result<Vec<Applied>>>
where
    S: Store,
    R: Rule<S> + ?Sized,
{
    Box::pin(async move {
        let mut out = Vec::with_capacity(keys.len());
        for key in keys {
            out.push(rule.apply_key(tx, key).await?);
        }
        Ok(out)
    })
}

/// [`Rule::repair`] of a rule that knows the keys out of line: each of `keys` brought in line
/// ([`Rule::apply_key`]) in its own transaction; how many were written.
pub(crate) async fn repair_each<S, R>(rule: &R, store: &S, keys: Vec<Bson>) -> Result<u64>
where
    S: Store,
    R: Rule<S> + ?Sized,
{
    let mut written = 0;
    for key in keys {
        let mut ctx = (rule, key);
        let applied =
            transaction_with(store, &mut ctx, |tx, (rule, key)| rule.apply_key(tx, key)).await?;
        written += u64::from(applied.wrote);
    }
    Ok(written)
}

/// Per key, whether a batched write wrote it: `wrote` as the rule's [`Applied`]s.
pub(crate) fn wrote_each(wrote: Vec<bool>) -> Vec<Applied> {
    wrote.into_iter().map(Applied::wrote).collect()
}

/// The value of `field` (a dotted path) in the document, if present and not null.
pub(crate) fn value_at(doc: Option<&bson::Document>, field: &str) -> Option<Bson> {
    let mut cur = doc?;
    let mut parts = field.split('.').peekable();
    while let Some(p) = parts.next() {
        let v = cur.get(p)?;
        if parts.peek().is_none() {
            return (!matches!(v, Bson::Null)).then(|| v.clone());
        }
        cur = v.as_document()?;
    }
    None
}

/// The parents a change to a child (of `children`, naming its parent in `key`) or to a
/// parent (of `parents`) concerns.
pub(crate) fn parents_of(change: &Change, children: &str, parents: &str, key: &str) -> Keys {
    let mut keys = Vec::new();
    if change.collection == parents {
        keys.extend(change.id.clone());
    }
    if change.collection == children {
        if change.op != ChangeOp::Insert {
            if change.before.is_none() {
                return Keys::Unknown;
            }
            keys.extend(value_at(change.before.as_ref(), key));
        }
        keys.extend(value_at(change.after.as_ref(), key));
    }
    Keys::Some(keys)
}

/// The variant a rule's children are (`None`: every document of their collection), as a
/// rule's name says it: ` [kind=review]`, or nothing.
pub(crate) fn scope_name(scope: Option<Scope>) -> String {
    scope.map_or_else(String::new, |s| format!(" [{}={}]", s.field, s.value))
}

/// The variant a rule's children are, as a stored rule holds it: `{field, value}`, or `null`.
pub(crate) fn scope_stored(scope: Option<Scope>) -> Bson {
    scope.map_or(Bson::Null, |s| {
        Bson::Document(bson::doc! {"field": s.field, "value": s.value})
    })
}

/// The variant a stored rule's documents are under `key` ([`scope_stored`]; absent: none, as a
/// rule stored before variants took part).
pub(crate) fn scope_from(r: &bson::Document, key: &str) -> Result<Option<Scope>> {
    match r.get(key) {
        None | Some(Bson::Null) => Ok(None),
        Some(Bson::Document(v)) => Ok(Some(Scope {
            field: leak(text(v, "field")?),
            value: leak(text(v, "value")?),
        })),
        Some(_) => Err(bad("a `variant` that is not a document")),
    }
}

/// The string `field` of a stored rule.
pub(crate) fn text<'d>(d: &'d bson::Document, field: &str) -> Result<&'d str> {
    d.get_str(field)
        .map_err(|_| bad(&format!("a rule without `{field}`")))
}

/// `s` for as long as the process runs (a follower is built once).
pub(crate) fn leak(s: &str) -> &'static str {
    Box::leak(s.to_owned().into_boxed_str())
}

/// A stored rule that does not read.
pub(crate) fn bad(what: &str) -> crate::Error {
    crate::Error::decode(
        super::FOLLOW,
        None,
        format!("the follower's rules hold {what} (written by another version of the library?)"),
    )
}
