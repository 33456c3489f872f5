//! `pattern analyze`: reads a collection once, writes nothing.

use pattern_core::adopt::{self, Source};
use pattern_core::spec::{BucketSpec, Keeps};

use super::Context;
use crate::args::{Analyze, AnalyzeBucket, AnalyzeOutlier};
use crate::exit::{outcome, Failure, Outcome};
use crate::render::{
    render_bucket_analysis, render_outlier_analysis, render_shapes_analysis,
    render_versions_analysis,
};
use crate::specs::OutlierNames;

pub(super) async fn run(cmd: Analyze, cx: &Context<'_>) -> Result<Outcome, Failure> {
    match cmd {
        Analyze::Outlier(a) => outlier(&a, cx).await,
        Analyze::Bucket(a) => bucket(&a, cx).await,
        Analyze::Versions(a) => versions(&a.collection, &a.field, cx).await,
        Analyze::Shapes(a) => {
            let r = adopt::shapes::analyze_shapes(
                cx.store,
                &a.collection,
                a.field.as_deref(),
                &cx.base,
            )
            .await
            .map_err(Failure::reading)?;
            outcome(&r, render_shapes_analysis(&r), false)
        }
    }
}

async fn outlier(a: &AnalyzeOutlier, cx: &Context<'_>) -> Result<Outcome, Failure> {
    let overflow = a.overflow.clone().unwrap_or_else(|| {
        // No overflow collection named: one that cannot exist (reads find nothing).
        format!("{}.pattern_cli_no_overflow", a.layout.collection)
    });
    let names = OutlierNames::new(&a.layout)?;
    let spec = names.spec(a.threshold, &overflow);
    let r = adopt::analyze_outlier(cx.store, &spec, &cx.base)
        .await
        .map_err(Failure::reading)?;
    outcome(&r, render_outlier_analysis(&r, a.overflow.is_some()), false)
}

async fn bucket(a: &AnalyzeBucket, cx: &Context<'_>) -> Result<Outcome, Failure> {
    let spec = BucketSpec {
        collection: &a.collection,
        key_field: &a.key,
        items_field: &a.items,
        count_field: "count",
        page_field: "page",
        size: a.size,
        keeps: Keeps::NONE,
    };
    let source = Source {
        collection: spec.collection,
        key_field: spec.key_field,
        time_field: "",
    };
    let from = (!a.buckets).then_some(&source);
    let r = adopt::analyze_bucket(cx.store, &spec, from, &cx.base)
        .await
        .map_err(Failure::reading)?;
    outcome(&r, render_bucket_analysis(&r, a.buckets), false)
}

async fn versions(collection: &str, field: &str, cx: &Context<'_>) -> Result<Outcome, Failure> {
    let r = adopt::versions::analyze_versions(cx.store, collection, field, &cx.base)
        .await
        .map_err(Failure::reading)?;
    outcome(&r, render_versions_analysis(&r), false)
}
