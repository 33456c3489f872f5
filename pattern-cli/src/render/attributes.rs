//! `migrate attributes`: the counters, the documents refused, then the final verification.

use pattern_core::adopt::attributes::AttributesReport;

use super::defects::describe;
use super::{counters, final_verification, push_defects};

pub(crate) fn render_attributes(r: &AttributesReport) -> String {
    let mut out = format!(
        "Migration of `{}`'s fields into the attribute array `{}`",
        r.collection, r.into
    );
    if r.dry_run {
        out.push_str(" (dry run: nothing written; what it would do)");
    }
    out.push('\n');
    let rows = [
        ("documents read", r.scanned),
        ("documents", r.changed),
        ("pairs moved", r.moved),
        ("retries", r.retries),
        ("refused", r.refused.len() as u64),
    ];
    counters(&mut out, &rows);
    if !r.refused.is_empty() {
        out.push_str("Refused (left as they were): ");
        push_defects(&mut out, &r.refused, describe);
    }
    final_verification(&mut out, r.verified.as_ref(), r.dry_run);
    out
}
