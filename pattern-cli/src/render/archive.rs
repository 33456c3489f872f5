//! `pattern archive bucket|document`'s reports: this run's counts, and the pass's totals when
//! the run resumed one a killed run left part-way.

use super::{n, push_defects};
use pattern_core::bucket::ArchiveReport;
use pattern_core::document;

use crate::commands::Archived;

pub(crate) fn render_archive(r: &Archived<ArchiveReport>, live: &str, archive: &str) -> String {
    let verb = if r.dry_run { "would move" } else { "moved" };
    let mut out = format!(
        "Archive of `{live}` into `{archive}`: {} buckets read, {verb} {} buckets ({} items), {} kept live as their key's newest\n",
        n(r.report.read),
        n(r.report.moved),
        n(r.report.items),
        n(r.report.newest_kept),
    );
    if let Some(from) = resumed(
        &r.report.resumed_from,
        r.report.total_moved != r.report.moved,
    ) {
        out.push_str(&format!(
            "  resumed {from}: {verb} {} buckets ({} items) in all\n",
            n(r.report.total_moved),
            n(r.report.total_items),
        ));
    }
    if let Some(defects) = &r.defects {
        out.push_str(&format!("Checked `{live}` and `{archive}` together: "));
        push_defects(&mut out, defects, super::defects::describe);
    }
    out
}

pub(crate) fn render_archived_documents(
    r: &Archived<document::ArchiveReport>,
    live: &str,
    archive: &str,
) -> String {
    let verb = if r.dry_run { "would move" } else { "moved" };
    let mut out = format!(
        "Archive of `{live}` into `{archive}`: {} documents old enough and not kept, {verb} {}\n",
        n(r.report.read),
        n(r.report.moved),
    );
    if let Some(from) = resumed(
        &r.report.resumed_from,
        r.report.total_moved != r.report.moved,
    ) {
        out.push_str(&format!(
            "  resumed {from}: {verb} {} in all\n",
            n(r.report.total_moved),
        ));
    }
    if r.report.ended_sessions > 0 {
        out.push_str(&format!(
            "  ended {} server session(s) of an earlier run's moves first (a transaction of a killed run would have held its document until it expired)\n",
            n(r.report.ended_sessions),
        ));
    }
    if let Some(defects) = &r.defects {
        out.push_str(&format!("Checked `{live}` and `{archive}` together: "));
        push_defects(&mut out, defects, super::defects::describe);
    }
    out
}

/// Where a resumed run went on from: after the position a killed run recorded, or from the
/// start when it died in its first batch (`earlier`: the pass's totals count moves of
/// earlier runs). `None`: not a resumed run.
fn resumed(from: &Option<bson::Bson>, earlier: bool) -> Option<String> {
    match from {
        Some(id) => Some(format!(
            "after _id {} (the last batch a killed run recorded)",
            id.clone().into_relaxed_extjson()
        )),
        None if earlier => Some("from the start (a killed run died in its first batch)".into()),
        None => None,
    }
}
