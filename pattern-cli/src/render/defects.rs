//! The layout defects a verification found (`verify outlier`, `verify bucket`, a migration's
//! final verification), one per line.

use pattern_core::adopt::{LayoutDefect, Verified};

use super::{n, push_defects};

pub(crate) fn render_verified(v: &Verified, what: &str) -> String {
    let mut out = format!("{what}: {} documents read, ", n(v.documents));
    push_defects(&mut out, &v.defects, describe);
    out
}

pub(super) fn describe(d: &LayoutDefect) -> String {
    match d {
        LayoutDefect::Malformed {
            collection,
            id,
            reason,
        } => {
            format!("{collection} _id {id}: malformed: {reason}")
        }
        LayoutDefect::CountMismatch {
            collection,
            id,
            count,
            items,
        } => {
            format!("{collection} _id {id}: count is {count} but the array holds {items} items")
        }
        LayoutDefect::OverSize {
            collection,
            id,
            items,
            size,
        } => {
            format!("{collection} _id {id}: {items} items, over the size of {size}")
        }
        LayoutDefect::SeveralOpen {
            collection,
            key,
            numbers,
        } => {
            format!(
                "{collection} key {key}: several open (not full) documents, numbers {numbers:?}"
            )
        }
        LayoutDefect::NotDense {
            collection,
            key,
            expected,
            found,
        } => {
            format!("{collection} key {key}: not numbered 1, 2, 3...: expected {expected}, found {found}")
        }
        LayoutDefect::InBoth {
            collection,
            archive,
            id,
        } => {
            format!("{collection} _id {id}: also in the archive {archive} (a move in flight: archive again)")
        }
        LayoutDefect::RollupDrift {
            collection,
            key,
            rollup,
            buckets,
        } => {
            format!("{collection} key {key}: the roll-up counts {rollup} items, the buckets hold {buckets} (backfill recomputes it)")
        }
        LayoutDefect::RollupPending {
            collection,
            since,
            keys,
        } => {
            format!("{collection}: an ingest batch begun at {since} left its roll-ups of {keys} keys unwritten (reads count their buckets; backfill recomputes them)")
        }
        LayoutDefect::WrongBounds {
            collection,
            id,
            reason,
        } => {
            format!("{collection} _id {id}: wrong time bounds: {reason}")
        }
        LayoutDefect::OverThreshold {
            collection,
            id,
            items,
            threshold,
        } => {
            format!("{collection} _id {id}: {items} items in the main array, over the threshold of {threshold}")
        }
        LayoutDefect::FlagWithoutOverflow { collection, id } => {
            format!("{collection} _id {id}: flagged, but has no overflow document")
        }
        LayoutDefect::OverflowWithoutFlag { collection, id } => {
            format!("{collection} _id {id}: has overflow documents but is not flagged (reads miss them)")
        }
        LayoutDefect::OrphanOverflow { collection, parent } => {
            format!("{collection}: overflow documents of parent {parent}, which does not exist")
        }
        other => serde_json::to_string(other).unwrap_or_else(|_| format!("{other:?}")),
    }
}
