//! `migrate attributes`: the counters, the documents refused, then the final verification.

use pattern_core::adopt::AttributesReport;

use super::defects::describe;
use super::{n, push_defects, render_verified};

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
    for (label, v) in rows {
        out.push_str(&format!("  {label:<16} {:>12}\n", n(v)));
    }
    if !r.refused.is_empty() {
        out.push_str("Refused (left as they were): ");
        push_defects(&mut out, &r.refused, describe);
    }
    match &r.verified {
        Some(v) => {
            out.push('\n');
            out.push_str(&render_verified(v, "Verification"));
        }
        None if !r.dry_run => out.push_str("\nVerification: skipped (--no-verify)\n"),
        None => {}
    }
    out
}
