//! `pattern indexes`: the collections' indexes against those the layout needs; writes nothing.

use pattern_core::adopt;

use super::Context;
use crate::args::{Indexes, IndexesBucket, OutlierArgs};
use crate::exit::{outcome, Failure, Outcome};
use crate::render::render_indexes;
use crate::specs::{bucket_spec, KeptNames, OutlierNames};

pub(super) async fn run(cmd: Indexes, cx: &Context<'_>) -> Result<Outcome, Failure> {
    let r = match cmd {
        Indexes::Outlier(a) => outlier(&a, cx).await?,
        Indexes::Bucket(a) => bucket(&a, cx).await?,
    };
    let drift = r.iter().any(|x| !x.is_complete());
    outcome(&r, render_indexes(&r), drift)
}

async fn outlier(a: &OutlierArgs, cx: &Context<'_>) -> Result<Vec<adopt::IndexReport>, Failure> {
    let names = OutlierNames::new(&a.layout)?;
    let spec = names.spec(a.threshold, &a.overflow);
    adopt::index_report_outlier(cx.store, &spec)
        .await
        .map_err(Failure::reading)
}

async fn bucket(a: &IndexesBucket, cx: &Context<'_>) -> Result<Vec<adopt::IndexReport>, Failure> {
    // The time bounds only: the summary needs no index.
    let kept = KeptNames::bounds(a.time.as_deref());
    let spec = bucket_spec(&a.collection, &a.fields, kept.keeps(&[]))?;
    adopt::index_report_bucket(cx.store, &spec)
        .await
        .map_err(Failure::reading)
}
