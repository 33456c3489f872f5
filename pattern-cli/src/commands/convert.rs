//! `pattern convert`: converts a field's representation in place, in resumable batches, then
//! verifies.

use pattern_core::adopt::{self, Options};

use super::Context;
use crate::args::{Convert, ConvertMoney};
use crate::exit::{outcome, Failure, Outcome};
use crate::render::render_money;
use crate::specs::money_conversion;

pub(super) async fn run(cmd: Convert, cx: &Context<'_>) -> Result<Outcome, Failure> {
    match cmd {
        Convert::Money(a) => money(&a, cx).await,
    }
}

async fn money(a: &ConvertMoney, cx: &Context<'_>) -> Result<Outcome, Failure> {
    let conv = money_conversion(&a.fields, a.finish);
    let opts = Options {
        dry_run: a.dry_run,
        batch_items: a.batch,
        ..cx.base
    };
    let r = adopt::money::convert_money(cx.store, &conv, &opts)
        .await
        .map_err(Failure::stopped)?;
    cx.bars.finish();
    let defects = !r.refused.is_empty() || r.verified.as_ref().is_some_and(|v| !v.is_clean());
    outcome(&r, render_money(&r), defects)
}
