//! Converting a money field to Decimal128, the article's way: add a decimal field computed
//! exactly from the old one (a scaled long or a display string), verify every document, then
//! optionally drop the old field or move the decimal into its place.

use bson::{doc, Bson, Document, RawDocumentBuf};
use serde::Serialize;

use crate::codec::number::compare;
use crate::money::{from_decimal128, to_decimal128, Form};
use crate::pass::checkpoint::Checkpoint;
use crate::pass::scan::{field, id, scan, sorted, MIGRATE, VERIFY};
use crate::pass::Options;
use crate::store::query::{Filter, FindOptions, Path, Update};
use crate::store::Store;
use crate::{Error, Result};

/// Documents re-read and rewritten per transaction at most.
const DOCS_PER_BATCH: usize = 100;

/// Rounds of the conversion pass per run: each picks up what writers of the old form inserted
/// past the previous round's last `_id`.
const ROUNDS: usize = 3;

/// A money field to convert: [`convert_money`] adds `to`, a Decimal128, to every document of
/// `collection` whose `from` holds an amount in `form`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MoneyConversion<'a> {
    /// The collection converted in place.
    pub collection: &'a str,
    /// The old field (top level): `price`.
    pub from: &'a str,
    /// What the old field holds: [`Form::Scaled`] (`NumberLong(1999)` at scale 2) or
    /// [`Form::Text`] (`"24.95"`).
    pub form: Form,
    /// The new field (top level): `priceDec`.
    pub to: &'a str,
    /// What happens to the old field once every document verified.
    pub finish: Finish,
}

/// The last step of a [`MoneyConversion`], run only once [`verify_money`] found no defect.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Finish {
    /// Keep both fields (the article's first result: `price` and `priceDec`).
    #[default]
    KeepBoth,
    /// Remove the old field (`$unset: {price: ""}`): the amount stays in `to`.
    DropOld,
    /// Move the decimal into the old field's name and remove `to` (the article's second
    /// result: `price: NumberDecimal("19.99")`).
    IntoOld,
}

impl MoneyConversion<'_> {
    fn check(&self) -> Result<()> {
        for name in [self.from, self.to] {
            if name.is_empty() || name.contains(['.', '$']) || name == "_id" {
                return Err(Error::invalid(format!(
                    "money conversion: `{name}` must be a top-level field other than _id"
                )));
            }
        }
        if self.from == self.to {
            return Err(Error::invalid(
                "money conversion: the new field must differ from the old one (use Finish::IntoOld)",
            ));
        }
        match self.form {
            Form::Decimal128 => Err(Error::invalid(
                "money conversion: the old form is Decimal128 already",
            )),
            Form::Scaled(s) if s > crate::money::MAX_SCALE => {
                Err(Error::invalid(crate::money::MoneyError::Scale(s)))
            }
            _ => Ok(()),
        }
    }

    /// The checkpoint's name in [`CHECKPOINTS`](crate::adopt::CHECKPOINTS).
    fn checkpoint(&self) -> String {
        format!("money:{}:{}:{}", self.collection, self.from, self.to)
    }

    /// The settings that shape the result beside the names (which name the checkpoint):
    /// pinned by it, the finish step only while it is part-way.
    fn settings(&self) -> Document {
        let form = match self.form {
            Form::Scaled(s) => format!("scaled({s})"),
            Form::Text => "text".to_owned(),
            Form::Decimal128 => "decimal128".to_owned(),
        };
        let finish = match self.finish {
            Finish::KeepBoth => "keep_both",
            Finish::DropOld => "drop_old",
            Finish::IntoOld => "into_old",
        };
        doc! {"form": form, "finish": finish}
    }
}

/// How to start a money conversion over with another form.
const RESTART: &str = "run the conversion with the new settings: documents converted already keep \
                       their new field, which the new form's verification reports where it disagrees";

/// Refuses a first run pointed at data that is not there: the collection, and a document
/// with the old field or the new one.
async fn preflight<S: Store>(store: &S, conv: &MoneyConversion<'_>) -> Result<()> {
    let coll = conv.collection;
    super::preflight::require_collection(store, coll).await?;
    let exists = |f: &str| Filter::Exists(f.to_owned().into(), true);
    let either = Filter::Or(vec![exists(conv.from), exists(conv.to)]);
    let field = format!("{}` or `{}", conv.from, conv.to);
    super::preflight::require_field(store, coll, either, &field, "an amount", false).await
}

/// A document whose amount is not exactly where the conversion puts it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "defect", rename_all = "snake_case")]
#[non_exhaustive]
pub enum MoneyDefect {
    /// The old field holds a value the form does not convert exactly (`"19.999"`... at scale
    /// 2, `" 24.95"`, a double with a fraction, a string for a scaled form): left as it is.
    Unconvertible {
        /// The document's `_id`.
        id: Bson,
        /// The old field's value.
        value: Bson,
        /// Why it does not convert ([`MoneyError`](crate::money::MoneyError)'s message).
        reason: String,
    },
    /// The old field converts, and the new field is missing: not converted (yet).
    NotConverted {
        /// The document's `_id`.
        id: Bson,
        /// The Decimal128 the new field should hold.
        expected: Bson,
    },
    /// The new field is not the exact conversion of the old one (a writer changed one of them).
    Mismatch {
        /// The document's `_id`.
        id: Bson,
        /// The old field's value.
        old: Bson,
        /// The new field's value.
        new: Bson,
        /// The old value converted: what the new field should hold.
        expected: Bson,
    },
    /// The field that should hold the amount (`field`) is not a finite Decimal128.
    NotDecimal {
        /// The document's `_id`.
        id: Bson,
        /// The field (`from` or `to`).
        field: String,
        /// What it holds.
        value: Bson,
    },
}

/// What [`verify_money`] found.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MoneyVerified {
    /// Documents read.
    pub documents: u64,
    /// Documents whose amount is a Decimal128, exactly the old value where it is still there.
    pub converted: u64,
    /// Documents with neither field (no amount: not a defect).
    pub without_amount: u64,
    /// Every defect found.
    pub defects: Vec<MoneyDefect>,
}

impl MoneyVerified {
    /// No defect: every amount is converted exactly.
    pub fn is_clean(&self) -> bool {
        self.defects.is_empty()
    }
}

/// What [`convert_money`] did (or, with [`Options::dry_run`], would do).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MoneyReport {
    /// The conversion's collection, fields, old form and finish step, as given.
    pub collection: String,
    /// The old field.
    pub from: String,
    /// The new field.
    pub to: String,
    /// The old field's form.
    pub form: Form,
    /// The finish step asked for.
    pub finish: Finish,
    /// Nothing was written.
    pub dry_run: bool,
    /// The checkpoint's position this run resumed from (`None`: from the start).
    pub resumed_from: Option<Bson>,
    /// An earlier run had finished (this one converts whatever was written since).
    pub already_finished: bool,
    /// Documents read by the conversion and finish passes.
    pub scanned: u64,
    /// Documents whose new field this run wrote.
    pub converted: u64,
    /// Documents the finish step rewrote (old field dropped, or the decimal moved into it).
    pub replaced: u64,
    /// Documents this run left as they were: their old value does not convert exactly, or
    /// their new field disagrees with it.
    pub refused: Vec<MoneyDefect>,
    /// Why the finish step did not run (the verification's defects), when it was asked for.
    pub finish_skipped: Option<String>,
    /// Transactions committed.
    pub batches: u64,
    /// Transactions retried after a conflict with another writer.
    pub retries: u64,
    /// Sessions of an interrupted run ended before starting.
    pub ended_sessions: u64,
    /// The verification after the conversion (after the finish step, when it ran).
    pub verified: Option<MoneyVerified>,
}

/// Where one document stands.
#[derive(Debug)]
enum Judged {
    /// Neither field.
    Empty,
    /// The old field converts to this; the new field is missing.
    Pending(Bson),
    /// The amount is a Decimal128 (this one), exactly the old value where it is still there.
    /// `old`: the old field still holds the old form; `new`: the new field is there.
    Converted {
        amount: Bson,
        old: bool,
        new: bool,
    },
    Defect(Box<MoneyDefect>),
}

/// Where a document with `old` in field `from` and `new` in field `to` stands.
fn judge(conv: &MoneyConversion<'_>, id: Bson, old: Option<Bson>, new: Option<Bson>) -> Judged {
    // A Decimal128 a `Decimal` reads (finite, at most 28 places): what `money::decimal128` reads.
    let finite = |v: &Bson| matches!(v, Bson::Decimal128(d) if from_decimal128(d).is_ok());
    let not_decimal = |field: &str, value: Bson, id: Bson| {
        Judged::Defect(Box::new(MoneyDefect::NotDecimal {
            id,
            field: field.to_owned(),
            value,
        }))
    };
    let expected = match &old {
        None => {
            return match new {
                None => Judged::Empty,
                Some(v) if finite(&v) => Judged::Converted {
                    amount: v,
                    old: false,
                    new: true,
                },
                Some(v) => not_decimal(conv.to, v, id),
            };
        }
        // Moved into place already (Finish::IntoOld), or written as a decimal.
        Some(v @ Bson::Decimal128(_)) if finite(v) => v.clone(),
        Some(v @ Bson::Decimal128(_)) => return not_decimal(conv.from, v.clone(), id),
        Some(v) => match conv.form.read(v) {
            Ok(amount) => Bson::Decimal128(to_decimal128(&amount)),
            Err(e) => {
                return Judged::Defect(Box::new(MoneyDefect::Unconvertible {
                    id,
                    value: v.clone(),
                    reason: e.to_string(),
                }))
            }
        },
    };
    let old_form = !matches!(old, Some(Bson::Decimal128(_)));
    match new {
        None if old_form => Judged::Pending(expected),
        None => Judged::Converted {
            amount: expected,
            old: false,
            new: false,
        },
        Some(n) if !finite(&n) => not_decimal(conv.to, n, id),
        Some(n) if compare(&n, &expected) == Some(std::cmp::Ordering::Equal) => Judged::Converted {
            amount: expected,
            old: old_form,
            new: true,
        },
        Some(n) => Judged::Defect(Box::new(MoneyDefect::Mismatch {
            id,
            old: old.unwrap_or(Bson::Null),
            new: n,
            expected,
        })),
    }
}

/// Reads `from` and `to` of a raw document and judges it.
fn judge_raw(conv: &MoneyConversion<'_>, doc: &RawDocumentBuf) -> Result<(Bson, Judged)> {
    let coll = conv.collection;
    let id = id(coll, doc)?;
    let (old, new) = (field(coll, doc, conv.from)?, field(coll, doc, conv.to)?);
    Ok((id.clone(), judge(conv, id, old, new)))
}

/// A scan's options: by `_id`, the two fields, named `what`.
fn find_options(conv: &MoneyConversion<'_>, what: &'static str) -> FindOptions {
    let fields = [conv.from, conv.to].map(|f| -> Path { f.to_owned().into() });
    sorted(
        what,
        vec![("_id".into(), 1)],
        [vec!["_id".into()], fields.to_vec()].concat(),
    )
}

/// Checks every document of `conv.collection`: its amount is a finite Decimal128 (in `to`, or
/// in `from` once moved there) that equals, exactly, the conversion of the old value where the
/// old field still holds one. Documents with neither field have no amount (counted, not a
/// defect). Defects are returned as data ([`MoneyDefect`]); one streaming pass.
pub async fn verify_money<S: Store>(
    store: &S,
    conv: &MoneyConversion<'_>,
    opts: &Options<'_>,
) -> Result<MoneyVerified> {
    crate::observe::traced_op!(money.verify, store, conv.collection, async {
        conv.check()?;
        let mut v = MoneyVerified::default();
        v.documents = scan(
            store,
            conv.collection,
            &Filter::and([]),
            find_options(conv, VERIFY),
            opts,
            "verify",
            |doc| {
                match judge_raw(conv, &doc)?.1 {
                    Judged::Empty => v.without_amount += 1,
                    Judged::Converted { .. } => v.converted += 1,
                    Judged::Pending(expected) => v.defects.push(MoneyDefect::NotConverted {
                        id: id(conv.collection, &doc)?,
                        expected,
                    }),
                    Judged::Defect(d) => v.defects.push(*d),
                }
                Ok(())
            },
        )
        .await?;
        Ok(v)
    })
}

// The conversion's passes: each document judged, then written in checkpointed batches
// (the new field, then the finish step), and the dry run that only counts.

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
    crate::observe::traced_op!(money.convert, store, conv.collection, async {
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
