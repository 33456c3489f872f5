//! Printing.

use std::time::Duration;

use pattern_bench::full_scale;

use crate::log::{mib, Commands, Run};

fn breakdown(c: &Commands) -> String {
    let mut v: Vec<(&String, &(usize, Duration))> = c.iter().collect();
    v.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(b.0)));
    v.iter()
        .map(|(k, (n, d))| format!("{k} {n} ({:.2} s)", d.as_secs_f64()))
        .collect::<Vec<_>>()
        .join(", ")
}

pub(crate) fn print_runs(title: &str, runs: &[(usize, Run)]) {
    println!("\n### {title}\n");
    println!(
        "| run | items | docs read | docs written | wall (s) | items/s | commands | per source doc | by name (time on the wire) | RSS before (MiB) | peak VmHWM (MiB) | verify (s) | check |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (k, r) in runs {
        let verify = match &r.verify {
            Some((d, v)) if v.is_clean() => {
                format!("{:.2} clean ({} docs)", d.as_secs_f64(), v.documents)
            }
            Some((d, v)) => format!(
                "{:.2} {} defects, e.g. {:?}",
                d.as_secs_f64(),
                v.defects.len(),
                v.defects.first()
            ),
            None => "-".into(),
        };
        println!(
            "| {} #{} | {} | {} | {} | {:.2} | {:.0} | {} | {:.4} | {} | {:.1} | {:.1}{} | {} | {} |",
            r.who,
            k + 1,
            r.items,
            r.read,
            r.written,
            r.took.as_secs_f64(),
            r.rate(),
            r.total_commands(),
            r.total_commands() as f64 / r.source_docs as f64,
            breakdown(&r.commands),
            mib(r.rss_before),
            mib(r.peak),
            if r.peak_reset { "" } else { " (not reset)" },
            verify,
            r.exact.summary(),
        );
    }
    let secs = |who: &str, ddl: bool| -> (u64, f64) {
        runs.iter()
            .filter(|(_, r)| r.who.starts_with(who))
            .fold((0, 0.0), |(i, s), (_, r)| {
                let t = if ddl {
                    r.took
                } else {
                    r.took.saturating_sub(r.ddl())
                };
                (i + r.items, s + t.as_secs_f64())
            })
    };
    let ratio_of = |ddl: bool| {
        let (oi, os) = secs("ours", ddl);
        let (ai, asec) = secs("aggregation", ddl);
        (oi as f64 / os) / (ai as f64 / asec)
    };
    let (ratio, without_ddl) = (ratio_of(true), ratio_of(false));
    for (k, r) in runs {
        println!(
            "  {} #{}: seeded in {:.1} s; {:.2} s of the wall time in DDL commands; checked item by item in {:.1} s{}",
            r.who,
            k + 1,
            r.seed.as_secs_f64(),
            r.ddl().as_secs_f64(),
            r.check.as_secs_f64(),
            if r.slow.is_empty() {
                String::new()
            } else {
                format!("; commands over 1 s: {}", r.slow.join(", "))
            }
        );
    }
    println!(
        "\nthroughput ours / aggregation (items over wall time, all runs): {ratio:.2}, target >= 0.5: {}{}",
        if ratio >= 0.5 { "met" } else { "missed" },
        if full_scale() { "" } else { " (smoke scale: not the target's figure)" }
    );
    println!(
        "the same without the time in DDL commands (create/drop of collections and indexes): {without_ddl:.2}"
    );
}
