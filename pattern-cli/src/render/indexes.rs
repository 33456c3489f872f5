//! `indexes outlier` and `indexes bucket`.

use pattern_core::adopt::IndexReport;

/// Each collection's indexes, sorted as [`IndexReport`] sorts them.
pub(crate) fn render_indexes(reports: &[IndexReport]) -> String {
    let mut out = String::new();
    for r in reports {
        out.push_str(&format!("Indexes of `{}`", r.collection));
        out.push_str(if r.exists {
            "\n"
        } else {
            " (no such collection yet)\n"
        });
        for (what, names) in [
            ("needed, present", &r.present),
            (
                "needed, MISSING (created by ensure_indexes or first use)",
                &r.missing,
            ),
            ("the library's, STALE (not used by this layout)", &r.stale),
            ("yours (never dropped)", &r.users),
        ] {
            if !names.is_empty() {
                out.push_str(&format!("  {what}: {}\n", names.join(", ")));
            }
        }
    }
    out
}
