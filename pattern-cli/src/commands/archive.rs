//! `pattern archive bucket|document`: moves the old buckets or documents into the archive
//! collection, then checks both together.

use pattern_core::adopt::{LayoutDefect, Options};
use pattern_core::bucket::{self, ArchiveAt, ArchiveReport};
use pattern_core::document;
use pattern_core::spec::Keeps;
use serde::Serialize;

use super::Context;
use crate::args::{Archive, ArchiveBucket, ArchiveDocument};
use crate::exit::{outcome, Failure, Outcome};
use crate::render::{render_archive, render_archived_documents};
use crate::specs::{bucket_spec, KeptNames};

/// The report: what moved, and the defects of both collections checked together.
#[derive(Serialize)]
pub(crate) struct Archived<R> {
    pub report: R,
    pub dry_run: bool,
    /// `None`: not checked (`--no-verify`, or a dry run).
    pub defects: Option<Vec<LayoutDefect>>,
}

pub(super) async fn run(cmd: Archive, cx: &Context<'_>) -> Result<Outcome, Failure> {
    match cmd {
        Archive::Bucket(a) => bucket(&a, cx).await,
        Archive::Document(a) => document(&a, cx).await,
    }
}

/// After the moves: the check of both collections (unless a dry run or `--no-verify`), then
/// the report (exit 3 on a defect).
async fn checked<R: Serialize>(
    cx: &Context<'_>,
    report: R,
    (dry_run, no_verify): (bool, bool),
    verify: impl std::future::Future<Output = pattern_core::Result<Vec<LayoutDefect>>>,
    render: impl Fn(&Archived<R>) -> String,
) -> Result<Outcome, Failure> {
    let defects = if dry_run || no_verify {
        None
    } else {
        Some(verify.await.map_err(Failure::reading)?)
    };
    cx.bars.finish();
    let failed = defects.as_ref().is_some_and(|d| !d.is_empty());
    let r = Archived {
        report,
        dry_run,
        defects,
    };
    outcome(&r, render(&r), failed)
}

async fn document(a: &ArchiveDocument, cx: &Context<'_>) -> Result<Outcome, Failure> {
    for (what, name) in std::iter::once(("--age", &a.age)).chain(a.pin.iter().map(|k| ("--pin", k)))
    {
        if name.is_empty() || name.contains('.') || name.starts_with('$') {
            return Err(Failure::usage(format!(
                "{what} {name:?} is not a top-level field name"
            )));
        }
    }
    let fields = (a.age.as_str(), a.pin.as_deref());
    let opts = Options {
        dry_run: a.dry_run,
        ..cx.base
    };
    let to = ArchiveAt {
        store: cx.store,
        collection: &a.to,
    };
    let report = document::archive_layout(cx.store, &a.collection, fields, to, a.before, &opts)
        .await
        .map_err(Failure::stopped)?;
    let verify = document::verify_archive_layout(cx.store, &a.collection, to);
    let render =
        |r: &Archived<document::ArchiveReport>| render_archived_documents(r, &a.collection, &a.to);
    checked(cx, report, (a.dry_run, a.no_verify), verify, render).await
}

async fn bucket(a: &ArchiveBucket, cx: &Context<'_>) -> Result<Outcome, Failure> {
    let kept = KeptNames::bounds(Some(a.time.as_str()));
    let summary = kept.summary();
    let keeps: Keeps<'_> = kept.keeps(&summary);
    let spec = bucket_spec(&a.collection, &a.fields, keeps)?;
    let to = ArchiveAt {
        store: cx.store,
        collection: &a.to,
    };
    let opts = Options {
        dry_run: a.dry_run,
        ..cx.base
    };
    let report = bucket::archive_layout(cx.store, &spec, to, a.before, &opts)
        .await
        .map_err(Failure::stopped)?;
    let verify = bucket::verify_archive_layout(cx.store, &spec, to);
    let render = |r: &Archived<ArchiveReport>| render_archive(r, &a.collection, &a.to);
    checked(cx, report, (a.dry_run, a.no_verify), verify, render).await
}
