//! `convert money` and `verify money`: the counters, the refused values, the defects.

use pattern_core::adopt::money::{MoneyDefect, MoneyReport, MoneyVerified};

use super::{n, push_defects, MAX_DEFECTS_SHOWN};

pub(crate) fn render_money(r: &MoneyReport) -> String {
    let mut out = format!(
        "Conversion of `{}`.{} ({}) into {}",
        r.collection, r.from, r.form, r.to
    );
    if r.dry_run {
        out.push_str(" (dry run: nothing written; what it would do)");
    }
    out.push('\n');
    if r.already_finished {
        out.push_str("  finished before this run: converting what was written since\n");
    } else if let Some(from) = &r.resumed_from {
        out.push_str(&format!(
            "  resumed after _id {from} (the last committed batch)\n"
        ));
    }
    let rows = [
        ("documents read", r.scanned),
        ("converted", r.converted),
        ("refused (left as they were)", r.refused.len() as u64),
        ("rewritten by the finish step", r.replaced),
        ("transactions", r.batches),
        ("retried after a conflict", r.retries),
    ];
    for (label, v) in rows {
        out.push_str(&format!("  {label:<30} {}\n", n(v)));
    }
    for d in r.refused.iter().take(MAX_DEFECTS_SHOWN) {
        out.push_str(&format!("  {}\n", describe_money(d)));
    }
    if let Some(why) = &r.finish_skipped {
        out.push_str(&format!("  finish step not run: {why}\n"));
    }
    if let Some(v) = &r.verified {
        out.push_str(&render_money_verified(v, "Verified"));
    }
    out
}

pub(crate) fn render_money_verified(v: &MoneyVerified, what: &str) -> String {
    let mut out = format!(
        "{what}: {} documents read, {} converted, {} without an amount, ",
        n(v.documents),
        n(v.converted),
        n(v.without_amount)
    );
    push_defects(&mut out, &v.defects, describe_money);
    out
}

fn describe_money(d: &MoneyDefect) -> String {
    match d {
        MoneyDefect::Unconvertible { id, value, reason } => {
            format!("_id {id}: {value} does not convert exactly: {reason}")
        }
        MoneyDefect::NotConverted { id, expected } => {
            format!("_id {id}: not converted yet (should hold {expected})")
        }
        MoneyDefect::Mismatch {
            id,
            old,
            new,
            expected,
        } => {
            format!("_id {id}: the new field holds {new}, the old {old} converts to {expected}")
        }
        MoneyDefect::NotDecimal { id, field, value } => {
            format!("_id {id}: `{field}` holds {value}, not a finite Decimal128")
        }
        other => format!("{other:?}"),
    }
}
