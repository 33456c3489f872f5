//! The conversion's passes: each document judged, then written in checkpointed batches
//! (the new field, then the finish step), and the dry run that only counts.

use super::*;

/// The two passes that write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// Write the new field of each pending document.
    Convert,
    /// Rewrite each document into its final layout ([`Finish`]).
    Finish(Finish),
}

impl Step {
    fn phase(self) -> &'static str {
        match self {
            Step::Convert => "convert",
            Step::Finish(_) => "finish",
        }
    }

    /// The write this step makes to a document judged so, if any.
    fn update(self, conv: &MoneyConversion<'_>, judged: &Judged) -> Option<Update> {
        let (amount, old, new) = match judged {
            Judged::Pending(amount) => (amount, true, false),
            Judged::Converted { amount, old, new } => (amount, *old, *new),
            Judged::Empty | Judged::Defect(_) => return None,
        };
        let path = |f: &str| -> Path { f.to_owned().into() };
        let mut u = Update::default();
        match self {
            Step::Convert if matches!(judged, Judged::Pending(_)) => {
                u.set.push((path(conv.to), amount.clone()))
            }
            Step::Finish(Finish::DropOld) if old => {
                if !new {
                    u.set.push((path(conv.to), amount.clone()));
                }
                u.unset.push(path(conv.from));
            }
            Step::Finish(Finish::IntoOld) if old || new => {
                u.set.push((path(conv.from), amount.clone()));
                if new {
                    u.unset.push(path(conv.to));
                }
            }
            _ => return None,
        }
        Some(u)
    }
}

/// Converts `conv.from` to a Decimal128 in `conv.to` in every document of `conv.collection`,
/// exactly (`NumberLong(1999)` at scale 2 → `NumberDecimal("19.99")`, `"24.95"` →
/// `NumberDecimal("24.95")`, places kept: `8000` → `80.00`), never through `f64`; verifies
/// every document ([`verify_money`]); then, when `conv.finish` asks and the verification found
/// no defect, drops the old field or moves the decimal into it.
///
/// - A value that does not convert exactly (more places than the scale, a string that is not
///   a plain decimal, a double with a fraction, NaN...) is refused, never rounded: the
///   document is left as it was and listed in [`MoneyReport::refused`] (and as a defect by
///   the verification, so the finish step does not run).
/// - Each batch of documents is re-read and written in one transaction that also advances
///   the checkpoint in [`CHECKPOINTS`](crate::adopt::CHECKPOINTS): a run killed at any point resumes
///   after the last committed batch, and a document gets its new field once (a document that
///   has it is not written again).
/// - Writers of the old form during the run: the pass runs again from its last position (up
///   to three rounds) for documents inserted meanwhile; one written behind that position, or
///   after the last round, is reported by the verification as not converted (and the finish
///   step skipped): the next run converts it (a run after a finished one starts from the
///   beginning). A writer that changes the old field of a converted document makes it a
///   mismatch, which the finish step refuses: move the writers to the new field (or to
///   [`AnyForm`](crate::money::AnyForm), which reads either) before finishing.
/// - The finish step re-judges each document in its transaction: one that was converted
///   exactly is rewritten, one still in the old form is converted and rewritten at once, any
///   other is left and reported.
/// - `dry_run` reads everything and writes nothing: `converted` and `replaced` count what
///   would be written, `refused` what would be left.
pub async fn convert_money<S: Store>(
    store: &S,
    conv: &MoneyConversion<'_>,
    opts: &Options<'_>,
) -> Result<MoneyReport> {
    let span = crate::observe::op_span!("money.convert", "convert", store, conv.collection);
    crate::observe::traced!(span, async {
        conv.check()?;
        let mut report = MoneyReport {
            collection: conv.collection.to_owned(),
            from: conv.from.to_owned(),
            to: conv.to.to_owned(),
            form: conv.form,
            finish: conv.finish,
            dry_run: opts.dry_run,
            resumed_from: None,
            already_finished: false,
            scanned: 0,
            converted: 0,
            replaced: 0,
            refused: Vec::new(),
            finish_skipped: None,
            batches: 0,
            retries: 0,
            ended_sessions: 0,
            verified: None,
        };
        let mut ckpt = Checkpoint::load(store, conv.checkpoint()).await?;
        // The finish step is pinned while it is part-way: before it began (converting) or once it
        // ended, another may be asked for.
        let finishing = ckpt.state() == Some("running")
            && ckpt.get("phase").and_then(Bson::as_str) == Some("finish");
        let free: &[&str] = if finishing { &[] } else { &["finish"] };
        ckpt.pin(conv.settings(), free, RESTART)?;
        if !ckpt.exists() {
            preflight(store, conv).await?;
        }
        if opts.dry_run {
            return dry_run(store, conv, opts, report).await;
        }
        report.already_finished = ckpt.state() == Some("finished");
        let running = ckpt.state() == Some("running");
        let in_finish = running && ckpt.get("phase").and_then(Bson::as_str) == Some("finish");
        let after = running.then(|| ckpt.get("after").cloned()).flatten();
        report.resumed_from = after.clone();
        report.ended_sessions = ckpt.end_earlier_sessions(store).await?;
        let mut verified = None;
        if !in_finish {
            let mut after = after.clone();
            for _ in 0..ROUNDS {
                match pass(
                    store,
                    conv,
                    opts,
                    &mut ckpt,
                    Step::Convert,
                    after,
                    &mut report,
                )
                .await?
                {
                    Some(last) => after = Some(last),
                    None => break,
                }
            }
            if opts.verify || conv.finish != Finish::KeepBoth {
                verified = Some(verify_money(store, conv, opts).await?);
            }
        }
        if conv.finish != Finish::KeepBoth {
            match &verified {
                Some(v) if !v.is_clean() => {
                    report.finish_skipped = Some(format!(
                        "the verification found {} defect(s): every document must hold its amount exactly in `{}` first",
                        v.defects.len(),
                        conv.to
                    ));
                }
                _ => {
                    let start = if in_finish { after } else { None };
                    pass(
                        store,
                        conv,
                        opts,
                        &mut ckpt,
                        Step::Finish(conv.finish),
                        start,
                        &mut report,
                    )
                    .await?;
                    if opts.verify {
                        verified = Some(verify_money(store, conv, opts).await?);
                    }
                }
            }
        }
        report.verified = verified;
        if report.batches > 0 || running {
            ckpt.set(store, doc! {"state": "finished", "phase": "done"})
                .await?;
        }
        Ok(report)
    })
}

/// [`convert_money`] with `dry_run`: one read, no write.
async fn dry_run<S: Store>(
    store: &S,
    conv: &MoneyConversion<'_>,
    opts: &Options<'_>,
    mut report: MoneyReport,
) -> Result<MoneyReport> {
    let finish = Step::Finish(conv.finish);
    report.scanned = scan(
        store,
        conv.collection,
        &Filter::and([]),
        find_options(conv, MIGRATE),
        opts,
        "convert",
        |doc| {
            let (_, judged) = judge_raw(conv, &doc)?;
            report.converted += u64::from(Step::Convert.update(conv, &judged).is_some());
            report.replaced += u64::from(
                conv.finish != Finish::KeepBoth && finish.update(conv, &judged).is_some(),
            );
            if let Judged::Defect(d) = judged {
                report.refused.push(*d);
            }
            Ok(())
        },
    )
    .await?;
    if conv.finish != Finish::KeepBoth && !report.refused.is_empty() {
        report.finish_skipped = Some(format!(
            "{} document(s) would be refused",
            report.refused.len()
        ));
    }
    Ok(report)
}

/// The documents a step reads: those holding the old field (and, converting, not the new one
/// yet; moving into the old field, either).
fn step_filter(conv: &MoneyConversion<'_>, step: Step, after: Option<Bson>) -> Filter {
    let exists = |f: &str, yes| Filter::Exists(f.to_owned().into(), yes);
    let mut all = vec![match step {
        Step::Convert => Filter::and([exists(conv.from, true), exists(conv.to, false)]),
        Step::Finish(Finish::IntoOld) => {
            Filter::Or(vec![exists(conv.from, true), exists(conv.to, true)])
        }
        Step::Finish(_) => exists(conv.from, true),
    }];
    all.extend(after.map(|a| Filter::Gt("_id".into(), a)));
    Filter::And(all)
}

/// What one pass's transaction works on, owned (the checkpoint's batch hands it to each
/// attempt).
struct Batch {
    coll: String,
    from: String,
    to: String,
    form: Form,
    step: Step,
    ids: Vec<Bson>,
    written: u64,
    refused: Vec<MoneyDefect>,
}

/// One pass of `step` over the documents after `after`: their ids read ahead in one scan,
/// then rewritten a batch per transaction. Returns the last `_id` it read (`None`: none
/// needed writing).
async fn pass<S: Store>(
    store: &S,
    conv: &MoneyConversion<'_>,
    opts: &Options<'_>,
    ckpt: &mut Checkpoint,
    step: Step,
    after: Option<Bson>,
    report: &mut MoneyReport,
) -> Result<Option<Bson>> {
    let (mut ids, mut last) = (Vec::new(), None);
    report.scanned += scan(
        store,
        conv.collection,
        &step_filter(conv, step, after),
        find_options(conv, MIGRATE),
        opts,
        "scan",
        |doc| {
            let (id, judged) = judge_raw(conv, &doc)?;
            last = Some(id.clone());
            if step.update(conv, &judged).is_some() {
                ids.push(id);
            } else if let (Step::Convert, Judged::Defect(d)) = (step, judged) {
                report.refused.push(*d);
            }
            Ok(())
        },
    )
    .await?;
    if ids.is_empty() {
        return Ok(None);
    }
    let total = ids.len() as u64;
    let per_batch = opts.batch_items.clamp(1, DOCS_PER_BATCH);
    let mut done = 0u64;
    opts.report(step.phase(), 0, Some(total));
    for chunk in ids.chunks(per_batch) {
        let mut work = Batch {
            coll: conv.collection.to_owned(),
            from: conv.from.to_owned(),
            to: conv.to.to_owned(),
            form: conv.form,
            step,
            ids: chunk.to_vec(),
            written: 0,
            refused: Vec::new(),
        };
        let (_, retries) = ckpt
            .batch(store, &mut work, |tx, w| {
                Box::pin(async move {
                    rewrite(tx, w).await?;
                    let at = w.ids.last().cloned().unwrap_or(Bson::Null);
                    let phase = w.step.phase();
                    Ok((
                        (),
                        doc! {"state": "running", "phase": phase, "after": at, "kind": "money"},
                    ))
                })
            })
            .await?;
        report.batches += 1;
        report.retries += retries;
        match step {
            Step::Convert => report.converted += work.written,
            Step::Finish(_) => report.replaced += work.written,
        }
        report.refused.extend(work.refused);
        done += chunk.len() as u64;
        opts.report(step.phase(), done, Some(total));
    }
    Ok(last)
}

/// One transaction's work: the batch's documents re-read and each judged again, then written
/// as the step says.
async fn rewrite<T: Store>(tx: &T, w: &mut Batch) -> Result<()> {
    let conv = MoneyConversion {
        collection: &w.coll,
        from: &w.from,
        to: &w.to,
        form: w.form,
        finish: Finish::KeepBoth,
    };
    let docs = tx
        .find(
            conv.collection,
            &Filter::In("_id".into(), w.ids.clone()),
            &FindOptions::default(),
        )
        .await?;
    (w.written, w.refused) = (0, Vec::new());
    for doc in docs {
        let (id, judged) = judge_doc(&conv, doc);
        match w.step.update(&conv, &judged) {
            Some(mut u) => {
                tx.update_one(
                    conv.collection,
                    &Filter::Eq("_id".into(), id),
                    &mut u,
                    false,
                )
                .await?;
                w.written += 1;
            }
            None => {
                if let Judged::Defect(d) = judged {
                    w.refused.push(*d);
                }
            }
        }
    }
    Ok(())
}

/// [`judge`] over a document.
fn judge_doc(conv: &MoneyConversion<'_>, mut doc: Document) -> (Bson, Judged) {
    let id = doc.remove("_id").unwrap_or(Bson::Null);
    let (old, new) = (doc.remove(conv.from), doc.remove(conv.to));
    (id.clone(), judge(conv, id, old, new))
}
