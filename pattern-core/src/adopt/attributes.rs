//! Moving sparse top-level fields into an attribute array (the attribute pattern's layout,
//! `#[document(attributes)]`): each document's fields become `{k: name, v: value}` pairs of one
//! array, sorted by name as [`Attributes`](crate::document::Attributes) stores them, and the
//! fields are unset, in one conditional update per document.

use std::collections::BTreeMap;

use bson::{doc, Bson, Document};
use serde::Serialize;

use crate::layout::LayoutDefect;
use crate::layout::Verified;
use crate::pass::scan::{field, id, scan, sorted, MIGRATE, VERIFY};
use crate::pass::Options;
use crate::store::query::{Filter, FindOptions, Path, Update};
use crate::store::Store;
use crate::{Error, Result};

/// Times a document changed between its read and its update before the migration leaves it
/// (and reports it refused).
const ATTEMPTS: usize = 10;

/// Fields to move into an attribute array: [`migrate_attributes`] turns `fields` (top level)
/// into `{k, v}` pairs of `into` in every document of `collection`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttributeMigration<'a> {
    /// The collection, rewritten in place.
    pub collection: &'a str,
    /// The top-level fields to move (each becomes a pair named after it).
    pub fields: &'a [&'a str],
    /// The array field that holds the pairs.
    pub into: &'a str,
}

/// What [`migrate_attributes`] did (or, with [`Options::dry_run`], would do).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct AttributesReport {
    /// The collection.
    pub collection: String,
    /// The array field.
    pub into: String,
    /// Nothing was written.
    pub dry_run: bool,
    /// Documents read holding one of the fields.
    pub scanned: u64,
    /// Documents rewritten.
    pub changed: u64,
    /// Pairs moved into the arrays.
    pub moved: u64,
    /// Updates that found their document changed since its read, and read it again.
    pub retries: u64,
    /// Documents left as they were, with why (an array that is not one of `{k, v}` pairs, a
    /// name the array holds already...).
    pub refused: Vec<LayoutDefect>,
    /// The verification at the end (not with `dry_run`, nor when [`Options::verify`] is off).
    pub verified: Option<Verified>,
}

impl AttributeMigration<'_> {
    fn check(&self) -> Result<()> {
        if self.fields.is_empty() {
            return Err(Error::invalid("attribute migration: no field to move"));
        }
        for name in self.fields.iter().copied().chain([self.into]) {
            if name.is_empty() || name.contains(['.', '$', '\0']) || name == "_id" {
                return Err(Error::invalid(format!(
                    "attribute migration: `{name}` must be a top-level field other than _id"
                )));
            }
        }
        if self.fields.contains(&self.into) {
            return Err(Error::invalid(format!(
                "attribute migration: `{}` is both a field to move and the array",
                self.into
            )));
        }
        Ok(())
    }

    /// The documents that still hold one of the fields.
    fn pending(&self) -> Filter {
        Filter::Or(
            (self.fields.iter())
                .map(|f| Filter::Exists((*f).to_owned().into(), true))
                .collect(),
        )
    }
}

/// Moves `m.fields` of every document of `m.collection` into the array `m.into`, as
/// `{k: <field>, v: <value>}` pairs sorted by name (after the pairs the array holds already),
/// then verifies.
///
/// - One update per document, conditional on the fields and the array being as read: a
///   document a writer changed meanwhile is read again (up to 10 times). A document the run
///   leaves holds its fields, so a stopped run is resumed by running it again: it reads the
///   documents that still hold one of them. Documents without any are not touched (no empty
///   array is written).
/// - A document whose array is not an array of `{k: string, v}` pairs, or holds a pair named
///   like one of the fields already, is left as it was and listed in
///   [`AttributesReport::refused`] (and the verification reports it).
/// - `dry_run` reads and writes nothing, counting what would move and what would be refused.
/// - No index is created: `#[document(attributes)]`'s `ensure_indexes` (or its first read or
///   write) creates `{<into>.k: 1, <into>.v: 1}`.
///
/// A collection that does not exist, or none of whose documents holds a field or the array,
/// is refused ([`Error::SourceNotFound`]); empty or dotted names, `_id`, or the array among the
/// fields are [`store::Error::InvalidInput`](crate::store::Error::InvalidInput).
pub async fn migrate_attributes<S: Store>(
    store: &S,
    m: &AttributeMigration<'_>,
    opts: &Options<'_>,
) -> Result<AttributesReport> {
    let span = crate::observe::op_span!("adopt.migrate_attributes", "migrate", store, m.collection);
    crate::observe::traced!(span, async {
        m.check()?;
        super::preflight::require_collection(store, m.collection).await?;
        let mut any = m.pending();
        if let Filter::Or(fs) = &mut any {
            fs.push(Filter::Exists(m.into.to_owned().into(), true));
        }
        let wanted = format!("{}` or `{}", m.fields.join("`, `"), m.into);
        super::preflight::require_field(store, m.collection, any, &wanted, "a value", false)
            .await?;
        let mut report = AttributesReport {
            collection: m.collection.to_owned(),
            into: m.into.to_owned(),
            dry_run: opts.dry_run,
            ..AttributesReport::default()
        };
        // The `_id`s first, in order (one read), then each document read and rewritten.
        let mut ids = Vec::new();
        report.scanned = scan(
            store,
            m.collection,
            &m.pending(),
            sorted(MIGRATE, vec![("_id".into(), 1)], projection(m)),
            opts,
            "scan",
            |doc| {
                if opts.dry_run {
                    match pairs(
                        m,
                        doc.to_document()
                            .map_err(|e| Error::decode(m.collection, None, e))?,
                    ) {
                        Ok((_, moved)) => {
                            report.changed += 1;
                            report.moved += moved;
                        }
                        Err(defect) => report.refused.push(*defect),
                    }
                } else {
                    ids.push(id(m.collection, &doc)?);
                }
                Ok(())
            },
        )
        .await?;
        if opts.dry_run {
            return Ok(report);
        }
        let total = ids.len() as u64;
        opts.report("migrate", 0, Some(total));
        for (i, id) in ids.into_iter().enumerate() {
            rewrite(store, m, id, &mut report).await?;
            let done = i as u64 + 1;
            if done.is_multiple_of(100) || done == total {
                opts.report("migrate", done, Some(total));
            }
        }
        if opts.verify {
            report.verified = Some(verify_attributes(store, m, opts).await?);
        }
        Ok(report)
    })
}

/// The fields a migration reads of each document.
fn projection(m: &AttributeMigration<'_>) -> Vec<Path> {
    (m.fields.iter().copied().chain(["_id", m.into]))
        .map(Path::from)
        .collect()
}

/// A document's new array (its pairs, then the fields', sorted by name) and how many pairs
/// it gains; or why it cannot have one.
fn pairs(
    m: &AttributeMigration<'_>,
    mut doc: Document,
) -> std::result::Result<(Vec<Bson>, u64), Box<LayoutDefect>> {
    let id = doc.remove("_id").unwrap_or(Bson::Null);
    let refuse = |reason: String| {
        Box::new(LayoutDefect::Malformed {
            collection: m.collection.to_owned(),
            id: id.clone(),
            reason,
        })
    };
    let mut by_name: BTreeMap<String, Bson> = BTreeMap::new();
    match doc.remove(m.into) {
        None => {}
        Some(Bson::Array(items)) => {
            for item in items {
                let (k, v) = pair_of(&item).ok_or_else(|| {
                    refuse(format!(
                        "`{}` holds an element that is not a {{k, v}} pair",
                        m.into
                    ))
                })?;
                if by_name.insert(k.clone(), v).is_some() {
                    return Err(refuse(format!("`{}` names `{k}` twice", m.into)));
                }
            }
        }
        Some(_) => return Err(refuse(format!("`{}` is not an array", m.into))),
    }
    let mut moved = 0;
    for f in m.fields {
        if let Some(v) = doc.remove(*f) {
            if by_name.insert((*f).to_owned(), v).is_some() {
                return Err(refuse(format!(
                    "`{}` holds a pair named `{f}` already, beside the field `{f}`",
                    m.into
                )));
            }
            moved += 1;
        }
    }
    let array = (by_name.into_iter())
        .map(|(k, v)| Bson::Document(doc! {"k": k, "v": v}))
        .collect();
    Ok((array, moved))
}

/// `{k: <string>, v: <any>}`, as a pair.
fn pair_of(item: &Bson) -> Option<(String, Bson)> {
    let d = item.as_document()?;
    match (d.get("k"), d.get("v")) {
        (Some(Bson::String(k)), Some(v)) if d.len() == 2 => Some((k.clone(), v.clone())),
        _ => None,
    }
}

/// Reads the document again and rewrites it, conditional on what was read.
async fn rewrite<S: Store>(
    store: &S,
    m: &AttributeMigration<'_>,
    id: Bson,
    report: &mut AttributesReport,
) -> Result<()> {
    let by_id = Filter::Eq("_id".into(), id.clone());
    let one = FindOptions {
        projection: projection(m),
        comment: None,
        ..FindOptions::default()
    };
    for attempt in 0..ATTEMPTS {
        let Some(doc) = store.find(m.collection, &by_id, &one).await?.pop() else {
            return Ok(()); // deleted meanwhile
        };
        // As read: each field's value, or its absence.
        let mut read = vec![by_id.clone()];
        for f in m.fields.iter().copied().chain([m.into]) {
            read.push(match doc.get(f) {
                Some(v) => Filter::Eq(f.to_owned().into(), v.clone()),
                None => Filter::Exists(f.to_owned().into(), false),
            });
        }
        let (array, moved) = match pairs(m, doc) {
            Ok(p) => p,
            Err(defect) => {
                report.refused.push(*defect);
                return Ok(());
            }
        };
        if moved == 0 {
            return Ok(()); // moved by another run meanwhile
        }
        let mut update = Update {
            set: vec![(m.into.to_owned().into(), Bson::Array(array))],
            unset: m.fields.iter().map(|f| Path::from(*f)).collect(),
            ..Update::default()
        };
        let done = store
            .update_one(m.collection, &Filter::And(read), &mut update, false)
            .await?;
        if done.matched {
            report.changed += 1;
            report.moved += moved;
            return Ok(());
        }
        if attempt + 1 < ATTEMPTS {
            report.retries += 1;
        }
    }
    report.refused.push(LayoutDefect::Malformed {
        collection: m.collection.to_owned(),
        id,
        reason: format!(
            "changed by another writer between each of {ATTEMPTS} reads and its update"
        ),
    });
    Ok(())
}

/// Checks every document of `m.collection`: none holds one of `m.fields` at the top level,
/// and every `m.into` is an array of `{k: string, v}` pairs naming each attribute once.
pub async fn verify_attributes<S: Store>(
    store: &S,
    m: &AttributeMigration<'_>,
    opts: &Options<'_>,
) -> Result<Verified> {
    m.check()?;
    let mut defects = Vec::new();
    let documents = scan(
        store,
        m.collection,
        &Filter::and([]),
        sorted(VERIFY, vec![("_id".into(), 1)], projection(m)),
        opts,
        "verify",
        |doc| {
            let left: Vec<&str> = (m.fields.iter().copied())
                .filter(|f| matches!(doc.get(f), Ok(Some(_))))
                .collect();
            let id = || id(m.collection, &doc);
            if !left.is_empty() {
                defects.push(LayoutDefect::Malformed {
                    collection: m.collection.to_owned(),
                    id: id()?,
                    reason: format!("still holds `{}` outside `{}`", left.join("`, `"), m.into),
                });
            }
            if let Some(array) = field(m.collection, &doc, m.into)? {
                let mut doc = Document::new();
                doc.insert("_id", id()?);
                doc.insert(m.into, array);
                let only_array = AttributeMigration { fields: &[], ..*m };
                if let Err(d) = pairs(&only_array, doc) {
                    defects.push(*d);
                }
            }
            Ok(())
        },
    )
    .await?;
    Ok(Verified { documents, defects })
}
