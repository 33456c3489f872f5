//! The bucket layout of `migrate`, `verify` and `indexes bucket`, and what its buckets keep
//! beside their items.

use pattern_core::spec::{BucketSpec, Keeps, SummaryField, SummaryOp};

use super::distinct;
use crate::args::{BucketFields, MigrateBucket};
use crate::exit::Failure;

/// The fields a bucket keeps beside its items, named as the derive names them:
/// `<time>_min`/`<time>_max`, `<field>_<op>`. [`KeptNames::keeps`] borrows them.
#[derive(Debug, Default)]
pub(crate) struct KeptNames<'a> {
    /// The time bounds' fields.
    bounds: Option<(String, String)>,
    /// Each aggregate: its operation, the item field, the bucket field.
    summary: Vec<(SummaryOp, &'a str, String)>,
    /// The span buckets are cut by (milliseconds).
    span: Option<i64>,
}

impl<'a> KeptNames<'a> {
    /// The time bounds of `time` (none without), and no summary.
    pub(crate) fn bounds(time: Option<&str>) -> Self {
        KeptNames {
            bounds: time.map(|t| (format!("{t}_min"), format!("{t}_max"))),
            summary: Vec::new(),
            span: None,
        }
    }

    /// The summary's aggregates, for [`KeptNames::keeps`].
    pub(crate) fn summary(&self) -> Vec<SummaryField<'_>> {
        self.summary
            .iter()
            .map(|(op, item, field)| SummaryField {
                op: *op,
                item_field: item,
                field,
            })
            .collect()
    }

    /// What a bucket keeps: these bounds and `summary`, this [`KeptNames::summary`].
    pub(crate) fn keeps<'s>(&'s self, summary: &'s [SummaryField<'s>]) -> Keeps<'s> {
        Keeps {
            bounds: self
                .bounds
                .as_ref()
                .map(|(min, max)| (min.as_str(), max.as_str())),
            summary,
            span: self.span,
            rollup: None,
        }
    }
}

/// The time bounds and summary a migrated bucket keeps, named as the derive names them:
/// `<time>_min`/`<time>_max`, `<field>_<op>`.
pub(crate) fn bucket_keeps(a: &MigrateBucket) -> Result<KeptNames<'_>, Failure> {
    let mut kept = KeptNames::bounds(Some(a.time.as_str()));
    kept.span = a.span;
    let ops = [
        (SummaryOp::Sum, &a.sum),
        (SummaryOp::Min, &a.min),
        (SummaryOp::Max, &a.max),
    ];
    for (op, fields) in ops {
        for item in fields {
            let field = format!("{item}_{}", op.name());
            if op != SummaryOp::Sum && item == &a.time {
                return Err(Failure::usage(format!(
                    "`--{} {item}` would be stored as {field:?}, where the time bounds (--time {}) already keep \
                     the time's {}; remove it",
                    op.name(),
                    a.time,
                    op.name()
                )));
            }
            if kept.summary.iter().any(|(_, _, f)| *f == field) {
                return Err(Failure::usage(format!(
                    "`--{} {item}` is given twice",
                    op.name()
                )));
            }
            kept.summary.push((op, item, field));
        }
    }
    Ok(kept)
}

pub(crate) fn bucket_spec<'a>(
    collection: &'a str,
    f: &'a BucketFields,
    keeps: Keeps<'a>,
) -> Result<BucketSpec<'a>, Failure> {
    let spec = BucketSpec {
        collection,
        key_field: &f.key,
        items_field: &f.items,
        count_field: &f.count,
        page_field: &f.page,
        size: f.size,
        keeps,
    };
    // Every field a bucket stores, by role: no two may share a name.
    let mut names: Vec<(String, String)> = vec![
        ("_id".into(), "_id".into()),
        ("the key (--key)".into(), f.key.clone()),
        ("the items (--items)".into(), f.items.clone()),
        ("the count (--count)".into(), f.count.clone()),
        ("the page (--page)".into(), f.page.clone()),
    ];
    if let Some((min, max)) = keeps.bounds {
        names.push(("the time bounds' min".into(), min.into()));
        names.push(("the time bounds' max".into(), max.into()));
        names.push((
            "the time bounds' mark".into(),
            pattern_core::spec::BOUNDED_FIELD.into(),
        ));
    }
    if !keeps.summary.is_empty() {
        names.push((
            "the summary's mark".into(),
            pattern_core::spec::SUMMARIZED_FIELD.into(),
        ));
    }
    for a in keeps.summary {
        names.push((
            format!("--{} {}", a.op.name(), a.item_field),
            a.field.into(),
        ));
    }
    let refs: Vec<(&str, &String)> = names.iter().map(|(r, n)| (r.as_str(), n)).collect();
    distinct(&refs, "bucket")?;
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::{Cli, Command, Migrate};
    use clap::Parser;

    #[test]
    fn keeps_are_named_as_the_derive_names_them() {
        let cli = Cli::try_parse_from([
            "pattern",
            "--db",
            "d",
            "migrate",
            "bucket",
            "--from",
            "trades",
            "--to",
            "h",
            "--key",
            "customerId",
            "--time",
            "date",
            "--sum",
            "qty",
            "--max",
            "price",
            "--min",
            "price",
        ])
        .unwrap();
        let Command::Migrate(Migrate::Bucket(a)) = cli.command else {
            panic!("parsed as another command")
        };
        let kept = bucket_keeps(&a).unwrap();
        let summary = kept.summary();
        let keeps = kept.keeps(&summary);
        assert_eq!(keeps.bounds, Some(("date_min", "date_max")));
        let fields: Vec<_> = keeps
            .summary
            .iter()
            .map(|a| (a.op, a.item_field, a.field))
            .collect();
        assert_eq!(
            fields,
            [
                (SummaryOp::Sum, "qty", "qty_sum"),
                (SummaryOp::Min, "price", "price_min"),
                (SummaryOp::Max, "price", "price_max"),
            ]
        );
        assert!(bucket_spec(&a.to, &a.fields, keeps).is_ok());
    }

    #[test]
    fn refuses_a_min_of_the_time_and_colliding_fields() {
        let parse = |extra: &[&str]| {
            let mut args = vec![
                "pattern", "migrate", "bucket", "--from", "t", "--to", "h", "--key", "k", "--time",
                "date",
            ];
            args.extend_from_slice(extra);
            let Command::Migrate(Migrate::Bucket(a)) = Cli::try_parse_from(args).unwrap().command
            else {
                panic!("parsed as another command")
            };
            // The spec borrows `a`: only whether it was refused leaves the closure.
            let kept = bucket_keeps(&a)?;
            let summary = kept.summary();
            bucket_spec(&a.to, &a.fields, kept.keeps(&summary)).map(drop)
        };
        assert_eq!(parse(&["--min", "date"]).unwrap_err().code, 2);
        assert_eq!(
            parse(&["--sum", "qty", "--sum", "qty"]).unwrap_err().code,
            2
        );
        let e = parse(&["--count", "date_min"]).unwrap_err();
        assert!(e.message.contains("date_min"), "{}", e.message);
        assert!(parse(&["--sum", "date"]).is_ok());
    }
}
