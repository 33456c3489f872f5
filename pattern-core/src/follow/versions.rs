//! Schema versions: a document written at an older version by another program (an older build,
//! a script) counted, and upgraded to the current version when the type says `write_back`, as
//! the sweep upgrades it.

use std::marker::PhantomData;

use bson::Bson;

use super::rule::{Applied, Keys, Rule};
use crate::document::{migrate, older_in_line, Document};
use crate::pass::Options;
use crate::store::{BoxFuture, Change, ChangeOp, Store};
use crate::Result;

/// The documents of `D`, kept at its current version.
pub(crate) struct Versions<D>(PhantomData<fn() -> D>);

impl<D> Versions<D> {
    pub(crate) fn new() -> Self {
        Versions(PhantomData)
    }
}

impl<D: Document, S: Store> Rule<S> for Versions<D> {
    fn name(&self) -> String {
        let scope = super::rule::scope_name(crate::document::Scope::of(D::POLYMORPHIC));
        format!("versions of {}{scope}", D::COLLECTION)
    }

    fn watches(&self) -> Vec<(&'static str, bool)> {
        vec![(D::COLLECTION, false)]
    }

    /// A document written whole or in part: its `_id` (whether it is older is read in the
    /// transaction, as it is then).
    fn keys(&self, change: &Change) -> Keys {
        match change.op {
            ChangeOp::Delete => Keys::Some(Vec::new()),
            _ => Keys::Some(change.id.iter().cloned().collect()),
        }
    }

    fn apply_key<'t>(&'t self, tx: &'t S::Txn, key: &'t Bson) -> BoxFuture<'t, Result<Applied>> {
        Box::pin(async move {
            let write_back = D::VERSIONING.is_some_and(|v| v.write_back);
            let older = older_in_line::<D, _>(tx, key, write_back).await?.is_some();
            Ok(Applied {
                wrote: older && write_back,
                older,
            })
        })
    }

    /// With `write_back`, the sweep; without, nothing to write.
    fn repair<'a>(&'a self, store: &'a S) -> BoxFuture<'a, Result<u64>> {
        Box::pin(async move {
            if !D::VERSIONING.is_some_and(|v| v.write_back) {
                return Ok(0);
            }
            Ok(migrate::<D, S>(store, &Options::default()).await?.upgraded)
        })
    }
}
