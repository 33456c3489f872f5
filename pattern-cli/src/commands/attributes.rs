//! `pattern migrate attributes`: sparse fields into an attribute array, one conditional
//! update per document, then verifies.

use pattern_core::adopt::{self, attributes::AttributeMigration};

use super::{run_options, Context};
use crate::args::MigrateAttributes;
use crate::exit::{outcome, Failure, Outcome};
use crate::render::render_attributes;

pub(super) async fn run(a: &MigrateAttributes, cx: &Context<'_>) -> Result<Outcome, Failure> {
    let fields: Vec<&str> = a.fields.iter().map(String::as_str).collect();
    let m = AttributeMigration {
        collection: &a.collection,
        fields: &fields,
        into: &a.into,
    };
    let opts = run_options(&a.run, cx.base, false);
    let r = adopt::attributes::migrate_attributes(cx.store, &m, &opts)
        .await
        .map_err(Failure::stopped)?;
    cx.bars.finish();
    let defects = !r.refused.is_empty() || r.verified.as_ref().is_some_and(|v| !v.is_clean());
    outcome(&r, render_attributes(&r), defects)
}
