//! `migrate outlier` and `migrate bucket`: the counters, then the final verification.

use pattern_core::adopt::MigrateReport;

use super::{counters, final_verification};

pub(crate) fn render_migration(r: &MigrateReport, changed_unit: &str) -> String {
    let mut out = if r.kind == "bucket" {
        format!("Migration of `{}` into buckets in `{}`", r.source, r.target)
    } else {
        format!("Migration of `{}` into the outlier layout", r.source)
    };
    if r.dry_run {
        out.push_str(" (dry run: nothing written; what it would do)");
    }
    out.push('\n');
    if r.already_finished {
        out.push_str("  already finished before this run: nothing to do\n");
    } else if let Some(from) = &r.resumed_from {
        out.push_str(&format!(
            "  resumed after {from} (the last committed batch)\n"
        ));
    }
    let written = if r.kind == "bucket" {
        "buckets written"
    } else {
        "chunks written"
    };
    let rows = [
        ("documents read", r.scanned),
        (changed_unit, r.changed),
        ("items moved", r.moved_items),
        (written, r.written),
        ("batches", r.batches),
        ("retries", r.retries),
        ("sessions ended", r.ended_sessions),
    ];
    counters(&mut out, &rows);
    final_verification(&mut out, r.verified.as_ref(), r.dry_run);
    out
}
