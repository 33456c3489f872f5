//! `pattern migrate`: moves a collection's data into the layout in resumable batches, then
//! verifies.

use pattern_core::adopt::{self, Source};

use super::{run_options, Context};
use crate::args::{Migrate, MigrateBucket, MigrateOutlier};
use crate::exit::{outcome, Failure, Outcome};
use crate::render::render_migration;
use crate::specs::{bucket_keeps, bucket_spec, OutlierNames};

pub(super) async fn run(cmd: Migrate, cx: &Context<'_>) -> Result<Outcome, Failure> {
    match cmd {
        Migrate::Outlier(a) => outlier(&a, cx).await,
        Migrate::Bucket(a) => bucket(&a, cx).await,
        Migrate::Attributes(a) => super::attributes::run(&a, cx).await,
    }
}

async fn outlier(a: &MigrateOutlier, cx: &Context<'_>) -> Result<Outcome, Failure> {
    let names = OutlierNames::new(&a.outlier.layout)?;
    let spec = names.spec(a.outlier.threshold, &a.outlier.overflow);
    let opts = run_options(&a.run, cx.base, false);
    let r = adopt::migrate_outlier(cx.store, &spec, &opts)
        .await
        .map_err(Failure::stopped)?;
    cx.bars.finish();
    let defects = r.verified.as_ref().is_some_and(|v| !v.is_clean());
    outcome(&r, render_migration(&r, "documents"), defects)
}

async fn bucket(a: &MigrateBucket, cx: &Context<'_>) -> Result<Outcome, Failure> {
    let kept = bucket_keeps(a)?;
    let summary = kept.summary();
    let spec = bucket_spec(&a.to, &a.fields, kept.keeps(&summary))?;
    let source = Source {
        collection: &a.from,
        key_field: spec.key_field,
        time_field: &a.time,
    };
    let opts = run_options(&a.run, cx.base, a.remove_source);
    let r = adopt::migrate_bucket(cx.store, &spec, &source, &opts)
        .await
        .map_err(Failure::stopped)?;
    cx.bars.finish();
    let defects = r.verified.as_ref().is_some_and(|v| !v.is_clean());
    outcome(&r, render_migration(&r, "keys"), defects)
}
