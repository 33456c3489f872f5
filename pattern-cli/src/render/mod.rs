//! The human reports (stdout without `--json`): the analyses' distributions and suggestions,
//! a migration's counters, the defects a verification found, one per line, and the indexes.

mod advice;
mod analysis;
mod archive;
mod attributes;
mod defects;
mod indexes;
mod migration;
mod money;

use pattern_core::adopt::{self, Distribution};

pub(crate) use advice::render_advice;
pub(crate) use analysis::{
    render_bucket_analysis, render_outlier_analysis, render_shapes_analysis,
    render_versions_analysis,
};
pub(crate) use archive::{render_archive, render_archived_documents};
pub(crate) use attributes::render_attributes;
pub(crate) use defects::render_verified;
pub(crate) use indexes::render_indexes;
pub(crate) use migration::render_migration;
pub(crate) use money::{render_money, render_money_verified};

/// Defects listed in the human report at most.
const MAX_DEFECTS_SHOWN: usize = 50;

/// `1234567` as `1,234,567`.
pub(crate) fn n(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn distribution(out: &mut String, title: &str, d: &Distribution) {
    out.push_str(&format!("{title}:\n  {}\n", percentiles(d)));
    out.push_str(&d.render(40));
}

/// `count 500  min 3  p50 8  p90 12  p99 12  max 4,000  mean 27.5`.
fn percentiles(d: &Distribution) -> String {
    format!(
        "count {}  min {}  p50 {}  p90 {}  p99 {}  max {}  mean {:.1}",
        n(d.count),
        n(d.min),
        n(d.p50),
        n(d.p90),
        n(d.p99),
        n(d.max),
        d.mean
    )
}

/// A migration's counters, one a line.
fn counters(out: &mut String, rows: &[(&str, u64)]) {
    for (label, v) in rows {
        out.push_str(&format!("  {label:<16} {:>12}\n", n(*v)));
    }
}

/// A migration's final verification, or that it was skipped (nothing after a dry run).
fn final_verification(out: &mut String, verified: Option<&adopt::Verified>, dry_run: bool) {
    match verified {
        Some(v) => {
            out.push('\n');
            out.push_str(&render_verified(v, "Verification"));
        }
        None if !dry_run => out.push_str("\nVerification: skipped (--no-verify)\n"),
        None => {}
    }
}

fn largest(out: &mut String, l: &Option<adopt::Largest>) {
    if let Some(l) = l {
        out.push_str(&format!(
            "Largest document: _id {}, {} bytes ({:.2}% of the 16 MiB limit)\n",
            l.id,
            n(l.bytes),
            l.share_of_limit * 100.0
        ));
    }
}

/// "no defects", or how many and the first [`MAX_DEFECTS_SHOWN`], one per line.
fn push_defects<T>(out: &mut String, defects: &[T], describe: fn(&T) -> String) {
    if defects.is_empty() {
        out.push_str("no defects\n");
        return;
    }
    out.push_str(&format!("{} defects\n", n(defects.len() as u64)));
    for d in defects.iter().take(MAX_DEFECTS_SHOWN) {
        out.push_str(&format!("  {}\n", describe(d)));
    }
    if defects.len() > MAX_DEFECTS_SHOWN {
        out.push_str(&format!(
            "  ... and {} more\n",
            n((defects.len() - MAX_DEFECTS_SHOWN) as u64)
        ));
    }
}

#[cfg(test)]
mod tests;
