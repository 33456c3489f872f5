//! `pattern verify`: checks every promise of the layout over the stored documents.

use pattern_core::adopt;
use pattern_core::spec::Keeps;

use super::Context;
use crate::args::{FinishArg, MoneyFields, OutlierArgs, Verify, VerifyBucket};
use crate::exit::{outcome, Failure, Outcome};
use crate::render::{render_money_verified, render_verified};
use crate::specs::{bucket_spec, money_conversion, OutlierNames};

pub(super) async fn run(cmd: Verify, cx: &Context<'_>) -> Result<Outcome, Failure> {
    match cmd {
        Verify::Outlier(a) => outlier(&a, cx).await,
        Verify::Bucket(a) => bucket(&a, cx).await,
        Verify::Money(a) => money(&a, cx).await,
    }
}

async fn outlier(a: &OutlierArgs, cx: &Context<'_>) -> Result<Outcome, Failure> {
    let names = OutlierNames::new(&a.layout)?;
    let spec = names.spec(a.threshold, &a.overflow);
    let r = adopt::verify_outlier(cx.store, &spec, &cx.base)
        .await
        .map_err(Failure::reading)?;
    cx.bars.finish();
    let what = format!(
        "Verified `{}` and its overflow `{}`",
        spec.collection, spec.overflow.collection
    );
    outcome(&r, render_verified(&r, &what), !r.is_clean())
}

async fn bucket(a: &VerifyBucket, cx: &Context<'_>) -> Result<Outcome, Failure> {
    let spec = bucket_spec(&a.collection, &a.fields, Keeps::NONE)?;
    let r = adopt::verify_bucket(cx.store, &spec, &cx.base)
        .await
        .map_err(Failure::reading)?;
    cx.bars.finish();
    let what = format!("Verified the buckets of `{}`", spec.collection);
    outcome(&r, render_verified(&r, &what), !r.is_clean())
}

async fn money(a: &MoneyFields, cx: &Context<'_>) -> Result<Outcome, Failure> {
    let conv = money_conversion(a, FinishArg::KeepBoth);
    let r = adopt::money::verify_money(cx.store, &conv, &cx.base)
        .await
        .map_err(Failure::reading)?;
    cx.bars.finish();
    let what = format!("Verified `{}`.{} -> {}", a.collection, a.from, a.to);
    outcome(&r, render_money_verified(&r, &what), !r.is_clean())
}
