//! `pattern advise`: reads a sample of each collection, writes nothing.

use pattern_core::adopt;

use super::Context;
use crate::args::Advise;
use crate::exit::{outcome, Failure, Outcome};
use crate::render::render_advice;

pub(super) async fn run(a: &Advise, cx: &Context<'_>) -> Result<Outcome, Failure> {
    let names: Vec<&str> = a.collections.iter().map(String::as_str).collect();
    let r = adopt::advise(cx.store, &names, a.sample, &cx.base)
        .await
        .map_err(Failure::reading)?;
    cx.bars.finish();
    outcome(&r, render_advice(&r), false)
}
