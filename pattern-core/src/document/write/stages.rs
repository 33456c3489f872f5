//! The write pipeline's stages in code: a [`Stage`] per feature that takes part in a type's
//! writes, each the feature's own functions at the pipeline's steps (guard, fill, record,
//! children, after commit), and a type's [`Plan`]: the stages of its features, in the
//! pipeline's order, built once from its attributes. A write kind (`write/mod.rs`) runs its
//! plan at each step; a feature a type does not have is not in its plan. Adding a feature is a
//! stage here and its functions in its own module.

use bson::{Bson, Document as BsonDocument};

use super::super::history::{self, Stamp};
use super::super::polymorphic::{self, Part, Polymorphic};
use super::super::related::reference;
use super::super::related::{computed, subset};
use super::super::versions;
use super::super::{approximate, Document};
use crate::pass::Options;
use crate::store::Store;
use crate::Result;

/// A feature's part in the write pipeline (ARCHITECTURE.md, "The write pipeline").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    /// Schema versioning: a document stored at a newer version is never overwritten (guard).
    Versions,
    /// A polymorphic collection: a `save` over another variant is refused (guard).
    Variant,
    /// History: the revision an `_if` write expects checked (guard), the state a write replaces
    /// recorded and the write stamped with the next revision (record).
    History,
    /// Extended references held: each copy filled from its source (fill).
    Copies,
    /// A child of computed values: its parents' aggregates adjusted (children).
    Computed,
    /// A child kept in a subset: its parents' subsets rewritten (children).
    Subset,
    /// A source of copies: the copies brought in line in the write's transaction, or past the
    /// fan-out a propagation recorded (children) and run after the commit (after commit).
    Source,
    /// Approximate counters: the counts not yet written of a deleted document, or of one whose
    /// variant changed, dropped (after commit).
    Counters,
}

/// Every stage, in the pipeline's order.
const ORDER: [Stage; 8] = [
    Stage::Versions,
    Stage::Variant,
    Stage::History,
    Stage::Copies,
    Stage::Computed,
    Stage::Subset,
    Stage::Source,
    Stage::Counters,
];

impl Stage {
    const fn bit(self) -> u16 {
        1 << self as u16
    }
}

/// What the guards of a write see: the document it replaces or deletes, as stored, and the one
/// it writes.
pub(crate) struct Guard<'a> {
    pub id: &'a Bson,
    /// The stored document (`None`: there is none).
    pub stored: Option<&'a BsonDocument>,
    /// The whole document a `save` writes (`None`: an update or a delete).
    pub written: Option<&'a BsonDocument>,
    /// The revision an `_if` write expects.
    pub expected: Option<u64>,
    /// The write goes over the stored document (a `save`, an `update`): a newer version is
    /// refused; a delete does not decode it and may remove it.
    pub overwrites: bool,
    /// A `change_variant`: over whatever variant is stored.
    pub any_variant: bool,
}

/// A type's stages: the features its attributes declare, in the pipeline's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Plan(u16);

impl Plan {
    /// `D`'s plan, from its attributes (a constant for each type): on an enum, with the
    /// stages of every variant's part.
    pub(crate) const fn of<D: Document>() -> Plan {
        let mut bits = Plan::of_part(&Part::of::<D>()).0;
        if D::POLYMORPHIC.is_some() {
            bits |= Stage::Variant.bit();
        }
        if D::HISTORY.is_some() {
            bits |= Stage::History.bit();
        }
        if let Some(Polymorphic::Enum { variants, .. }) = D::POLYMORPHIC {
            let mut v = 0;
            while v < variants.len() {
                bits |= Plan::of_part(&variants[v].part).0;
                v += 1;
            }
        }
        Plan(bits)
    }

    /// The stages a part's documents take.
    const fn of_part(part: &Part) -> Plan {
        let mut bits = 0;
        if part.computed.is_some() {
            bits |= Stage::Computed.bit();
        }
        if part.subset.is_some() {
            bits |= Stage::Subset.bit();
        }
        if !part.approximate.is_empty() {
            bits |= Stage::Counters.bit();
        }
        if part.versioning.is_some() {
            bits |= Stage::Versions.bit();
        }
        if !part.references.is_empty() {
            bits |= Stage::Copies.bit();
        }
        if !part.referenced_by.is_empty() {
            bits |= Stage::Source.bit();
        }
        Plan(bits)
    }

    pub(crate) const fn has(self, stage: Stage) -> bool {
        self.0 & stage.bit() != 0
    }

    fn stages(self) -> impl Iterator<Item = Stage> {
        ORDER.into_iter().filter(move |s| self.has(*s))
    }

    /// Whether a write of the type changes other documents (a stage fills its copies, or
    /// adjusts what others keep of it).
    pub(crate) const fn linked(self) -> bool {
        self.has(Stage::Copies)
            || self.has(Stage::Computed)
            || self.has(Stage::Subset)
            || self.has(Stage::Source)
    }

    /// Whether a stage after the write's command needs the document as it was: the write reads
    /// it in a transaction of its own (stage 2).
    pub(crate) const fn reads_before(self) -> bool {
        self.linked() || self.has(Stage::History)
    }

    /// Stage 3: every guard of the plan.
    pub(crate) fn guard<D: Document>(self, g: &Guard<'_>) -> Result<()> {
        for stage in self.stages() {
            match (stage, g.stored) {
                (Stage::Versions, Some(stored)) if g.overwrites => {
                    versions::classify::<D>(stored)?;
                }
                (Stage::Variant, Some(stored)) if !g.any_variant => {
                    if let Some(written) = g.written {
                        polymorphic::same_variant::<D>(g.id, stored, written)?;
                    }
                }
                (Stage::History, stored) => history::expect::<D>(g.id, stored, g.expected)?,
                _ => {}
            }
        }
        Ok(())
    }

    /// Stage 4: the copies `doc` holds filled from their sources (`before`: the stored
    /// document it replaces); whether any changed.
    pub(crate) async fn fill<D: Document, T: Store>(
        self,
        t: &T,
        before: Option<&BsonDocument>,
        doc: &mut BsonDocument,
    ) -> Result<bool> {
        if !self.has(Stage::Copies) {
            return Ok(false);
        }
        // The copies of the variant written (on an enum); what it replaced counts only when it
        // was the same variant (a copy new to the document touches its source).
        let Some(part) = polymorphic::part_of::<D>(doc) else {
            return Ok(false);
        };
        let before = before.filter(|b| polymorphic::one_part::<D>(b, doc));
        reference::fill::<D, T>(t, part.references, before, doc).await
    }

    /// Stage 5: the state `before` recorded and the revision the write stamps (none without
    /// history).
    pub(crate) async fn record<D: Document, T: Store>(
        self,
        t: &T,
        id: &Bson,
        before: Option<&BsonDocument>,
    ) -> Result<Stamp> {
        if !self.has(Stage::History) {
            return Ok(Stamp::NONE);
        }
        history::record::<D, T>(t, id, before).await
    }

    /// Stage 7, in the write's transaction: what others keep of the document brought in line
    /// with the write from `before` to `after`; the `_id` when a propagation was recorded for
    /// after the commit.
    pub(crate) async fn children<D: Document, T: Store>(
        self,
        t: &T,
        id: &Bson,
        before: Option<&BsonDocument>,
        after: Option<&BsonDocument>,
    ) -> Result<Option<Bson>> {
        let mut recorded = false;
        // Each part the write's sides are of (a change of variant: the one left, the other
        // joined).
        let sides = polymorphic::sides::<D>(before, after);
        for stage in self.stages() {
            match stage {
                Stage::Computed => {
                    for (part, before, after) in &sides {
                        if let Some(c) = part.computed {
                            computed::adjust::<D, T>(t, &c, *before, *after).await?;
                        }
                    }
                }
                Stage::Subset => {
                    for (part, before, after) in &sides {
                        if let Some(s) = part.subset {
                            subset::adjust::<D, T>(t, &s, *before, *after).await?;
                        }
                    }
                }
                Stage::Source => {
                    for (part, before, after) in &sides {
                        let copies = (part.referenced_by, part.propagation);
                        recorded |=
                            reference::propagate_in::<D, T>(t, copies, id, *before, *after).await?;
                    }
                }
                _ => {}
            }
        }
        Ok(recorded.then(|| id.clone()))
    }

    /// Stage 8, after the commit: a propagation recorded in stage 7 run (unless deferred), a
    /// deleted document's pending counts dropped.
    pub(crate) async fn after_commit<D: Document, S: Store>(
        self,
        store: &S,
        propagate: Option<&Bson>,
        deleted: Option<&Bson>,
    ) -> Result<()> {
        for stage in self.stages() {
            match (stage, propagate, deleted) {
                // Deferred when every part that is a source is.
                (Stage::Source, Some(id), _)
                    if !(polymorphic::parts::<D>().iter())
                        .filter(|p| !p.referenced_by.is_empty())
                        .all(|p| p.propagation.deferred) =>
                {
                    reference::propagate::<D, S>(store, Some(id), &Options::default()).await?;
                }
                (Stage::Counters, _, Some(id)) => approximate::forget::<D, S>(store, id),
                _ => {}
            }
        }
        Ok(())
    }
}
