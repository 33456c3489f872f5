//! `advise`: which pattern a live database needs, and where. Reads a bounded sample of each
//! collection ([`Store::sample`]: `$sample` on MongoDB) and reports, per collection, each pattern
//! whose rule the sample fits, with the evidence in figures, a confidence and its reason, the
//! Rust code to paste (the struct with its derive and attributes, its field types read off the
//! sample) and the `pattern` commands that check and move the data, a dry run first.
//!
//! The rules' thresholds are the constants of [`thresholds`]; the chapter
//! [`guide::advise`](crate::guide::advise) says what each finding means and shows a run.
//! Writes nothing.

use futures::StreamExt;
use serde::Serialize;

use super::histogram::Distribution;
use super::{Largest, Options};
use crate::error::{Missing, MAX_DOCUMENT_BYTES};
use crate::pass::scan::SCAN_BATCH;
use crate::store::query::Filter;
use crate::store::Store;
use crate::{Error, Result};

mod attribute;
mod bucket;
mod limits;
mod outlier;
mod polymorphic;
mod profile;
mod rust;
mod tree;
mod versioning;

pub use attribute::{AttributeEvidence, SparseField};
pub use bucket::BucketEvidence;
pub use limits::{IndexEvidence, SizeEvidence};
pub use outlier::{LongArrays, OutlierEvidence};
pub use polymorphic::PolymorphicEvidence;
pub use tree::{TreeEvidence, TreeField};
pub use versioning::{SchemaChange, VersionShape, VersioningEvidence};

/// The rules' thresholds: what a sample must show for each finding. The chapter
/// [`guide::advise`](crate::guide::advise) gives them in its table of rules.
pub mod thresholds {
    pub use super::attribute::{ATTRIBUTE_MAX_SHARE, ATTRIBUTE_MIN_COVER, ATTRIBUTE_MIN_FIELDS};
    pub use super::bucket::{BUCKET_MIN_PER_KEY, BUCKET_MIN_SHARE, COUNTED_KEYS};
    pub use super::limits::{LARGE_DOCUMENT, TOO_MANY_INDEXES};
    pub use super::outlier::{NEAR_LIMIT, OUTLIER_MIN_ITEMS, OUTLIER_TAIL, PROBED_ARRAYS};
    pub use super::polymorphic::{POLYMORPHIC_MAX_VALUES, POLYMORPHIC_MIN_APART};
    pub use super::tree::{LOOKED_UP, TREE_MIN_RESOLVED, TREE_MIN_SHARE};
    pub use super::versioning::{
        CHANGE_AGREEMENT, CHANGE_MIN_SIDE, VERSIONS_MAX_DISTINCT, VERSIONS_MIN_DISTINCT,
        VERSION_MAX,
    };
}

use profile::Profile;

/// Documents [`advise`] samples per collection unless told otherwise: on MongoDB a
/// pseudo-random cursor over any collection of more than 20,000 documents, which reads only
/// what it returns.
pub const DEFAULT_SAMPLE: u32 = 1_000;

/// The largest sample [`advise`] takes per collection.
pub const MAX_SAMPLE: u32 = 100_000;

/// The `comment` of [`advise`]'s reads (a [`SCATTER`](crate::store::query::SCATTER) name).
pub const ADVISE_READ: &str = "pattern scatter: advise";

/// Collections whose name starts with this are the library's own (checkpoints, tree
/// versions...): [`advise`] leaves them out unless named.
pub const LIBRARY_PREFIX: &str = "pattern_";

/// What [`advise`] found in a database.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Advice {
    /// The database, when the store has a name for it.
    pub database: Option<String>,
    /// Documents sampled per collection at most.
    pub sample: u32,
    /// Each collection read, in name order.
    pub collections: Vec<CollectionAdvice>,
    /// The library's own collections, not read.
    pub skipped: Vec<String>,
}

/// What [`advise`] found in one collection.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CollectionAdvice {
    /// The collection.
    pub collection: String,
    /// Its documents, counted.
    pub documents: u64,
    /// The documents of the sample.
    pub sampled: u64,
    /// The sample is the whole collection (then every figure is exact).
    pub whole: bool,
    /// Every read made, in order.
    pub reads: Vec<Read>,
    /// The sampled documents' sizes in bytes.
    pub sizes: Distribution,
    /// The largest sampled document.
    pub largest: Option<Largest>,
    /// The collection's indexes, by name.
    pub indexes: Vec<String>,
    /// The patterns that fit, the surest first; empty when none does.
    pub findings: Vec<Finding>,
}

/// One read [`advise`] made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Read {
    /// The read: `count` (the driver's `countDocuments`, sent as an `aggregate`), `aggregate`
    /// (the `$sample`), `listIndexes`, `find`.
    pub command: String,
    /// What it read.
    pub what: String,
    /// What it returned: documents counted, sampled or found; indexes listed.
    pub result: u64,
}

/// A pattern that fits a collection, or an index or size finding the advice depends on.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    /// Which.
    pub pattern: Pattern,
    /// How sure.
    pub confidence: Confidence,
    /// Why, in a sentence with the figures.
    pub reason: String,
    /// The figures, per kind.
    pub evidence: Evidence,
    /// The Rust code to paste: the `use` lines and the types, with the derive and its
    /// attributes (none for an index or size finding).
    pub code: Option<String>,
    /// The `pattern` commands to run, in order: the analysis of the whole collection, then
    /// the migration's dry run, then the migration (only those that exist for the pattern).
    pub commands: Vec<String>,
    /// What else to know: what no command does, what to check first.
    pub notes: Vec<String>,
}

/// The patterns (and findings) [`advise`] knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Pattern {
    /// An array with a long tail: `#[derive(Outlier)]`.
    Outlier,
    /// A flat series, one document per item: `#[derive(Bucket)]`.
    Bucket,
    /// Many sparse fields of one type: `#[document(attributes)]`.
    Attribute,
    /// Documents of several shapes told apart by a field: `#[derive(Document)]` on an enum.
    Polymorphic,
    /// Documents of several schema versions: `#[document(version = N, previous(...))]`.
    SchemaVersioning,
    /// Documents linked as a tree: `#[derive(Tree)]`.
    Tree,
    /// An index the advice depends on.
    Index,
    /// Document sizes the advice depends on.
    Size,
}

impl Pattern {
    /// Its name in the report: `outlier`, `schema versioning`...
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Outlier => "outlier",
            Pattern::Bucket => "bucket",
            Pattern::Attribute => "attribute",
            Pattern::Polymorphic => "polymorphic",
            Pattern::SchemaVersioning => "schema versioning",
            Pattern::Tree => "tree",
            Pattern::Index => "index",
            Pattern::Size => "document size",
        }
    }
}

/// How sure a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    /// The figures fit the rule with room to spare.
    High,
    /// They fit, without much room, or on a small sample.
    Medium,
    /// They fit the rule at its edge: check with the analysis command first.
    Low,
}

/// A finding's figures.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Evidence {
    /// [`Pattern::Outlier`].
    Outlier(OutlierEvidence),
    /// [`Pattern::Bucket`].
    Bucket(BucketEvidence),
    /// [`Pattern::Attribute`].
    Attribute(AttributeEvidence),
    /// [`Pattern::Polymorphic`].
    Polymorphic(PolymorphicEvidence),
    /// [`Pattern::SchemaVersioning`].
    SchemaVersioning(VersioningEvidence),
    /// [`Pattern::Tree`].
    Tree(TreeEvidence),
    /// [`Pattern::Index`].
    Index(IndexEvidence),
    /// [`Pattern::Size`].
    Size(SizeEvidence),
}

impl Evidence {
    fn pattern(&self) -> Pattern {
        match self {
            Evidence::Outlier(_) => Pattern::Outlier,
            Evidence::Bucket(_) => Pattern::Bucket,
            Evidence::Attribute(_) => Pattern::Attribute,
            Evidence::Polymorphic(_) => Pattern::Polymorphic,
            Evidence::SchemaVersioning(_) => Pattern::SchemaVersioning,
            Evidence::Tree(_) => Pattern::Tree,
            Evidence::Index(_) => Pattern::Index,
            Evidence::Size(_) => Pattern::Size,
        }
    }
}

impl Finding {
    fn new(evidence: Evidence, confidence: Confidence, reason: String) -> Self {
        Finding {
            pattern: evidence.pattern(),
            confidence,
            reason,
            evidence,
            code: None,
            commands: Vec::new(),
            notes: Vec::new(),
        }
    }
}

/// Reads a sample of up to `sample` documents of each of `collections` (every collection of
/// the database but the library's own, `pattern_*`, when empty) and reports, per collection,
/// each pattern that fits with its evidence, confidence, code and commands ([`Advice`]).
///
/// Per collection it makes these reads, each listed in [`CollectionAdvice::reads`]: a count of
/// its documents, its indexes, the sample ([`Store::sample`]: one `aggregate` with `$sample`
/// on MongoDB; the in-memory store reads the whole collection to pick it); when the sample is
/// not the whole collection, one count of the documents whose array reaches the tail for up
/// to [`PROBED_ARRAYS`](thresholds::PROBED_ARRAYS) arrays (the rare outlier a sample misses); for a bucket
/// candidate whose sample is not the whole collection, one count of the documents of up to
/// [`COUNTED_KEYS`](thresholds::COUNTED_KEYS) sampled keys (for up to three candidate key fields); for a tree, one `find`
/// of up to [`LOOKED_UP`](thresholds::LOOKED_UP) referenced `_id`s. Every figure comes from the sample, and is exact
/// when the sample is the whole collection (the two stores then give the same advice).
///
/// Writes nothing. A named collection that does not exist is refused
/// ([`Error::SourceNotFound`]); a `sample` of 0 or over [`MAX_SAMPLE`] is
/// [`store::Error::InvalidInput`](crate::store::Error::InvalidInput).
pub async fn advise<S: Store>(
    store: &S,
    collections: &[&str],
    sample: u32,
    options: &Options<'_>,
) -> Result<Advice> {
    crate::observe::traced_op!(adopt.advise, store, "*", async {
        if sample == 0 || sample > MAX_SAMPLE {
            return Err(Error::invalid(format!(
                "the sample must be from 1 to {MAX_SAMPLE} documents, got {sample}"
            )));
        }
        let names = store.collection_names().await?;
        let (mut chosen, mut skipped): (Vec<String>, Vec<String>) = if collections.is_empty() {
            names
                .iter()
                .cloned()
                .partition(|n| !n.starts_with(LIBRARY_PREFIX))
        } else {
            for c in collections {
                if !names.iter().any(|n| n == c) {
                    return Err(Error::SourceNotFound {
                        collection: (*c).to_owned(),
                        missing: Box::new(Missing::Collection),
                        found: names,
                    });
                }
            }
            let mut chosen: Vec<String> = collections.iter().map(|c| (*c).to_owned()).collect();
            chosen.dedup();
            (chosen, Vec::new())
        };
        chosen.sort();
        skipped.sort();
        let database = store.database_name().map(str::to_owned);
        let mut out = Vec::new();
        for coll in &chosen {
            let cx = Collection {
                name: coll,
                database: database.as_deref(),
                names: &names,
            };
            out.push(advise_one(store, &cx, sample, options).await?);
        }
        Ok(Advice {
            database,
            sample,
            collections: out,
            skipped,
        })
    })
}

/// The collection being advised, and what the rules need beside its sample.
struct Collection<'a> {
    /// Its name.
    name: &'a str,
    /// The database's name, for the commands (`--db`).
    database: Option<&'a str>,
    /// Every collection of the database (new collections are named apart from them).
    names: &'a [String],
}

impl Collection<'_> {
    /// `pattern --db <db> <args>`, each argument quoted for a POSIX shell where it needs it.
    fn command(&self, args: &[&str]) -> String {
        let mut out = String::from("pattern");
        if let Some(db) = self.database {
            out.push_str(" --db ");
            out.push_str(&shell_word(db));
        }
        for a in args {
            out.push(' ');
            out.push_str(&shell_word(a));
        }
        out
    }

    /// A collection name from `wanted` that the database does not use (`wanted_2`... if it
    /// does).
    fn new_collection(&self, wanted: &str) -> String {
        let mut name = wanted.to_owned();
        let mut n = 2;
        while self.names.contains(&name) {
            name = format!("{wanted}_{n}");
            n += 1;
        }
        name
    }
}

/// What the rules see: the collection, its sample's profile and its indexes.
struct Sample<'a> {
    coll: &'a Collection<'a>,
    profile: &'a Profile,
    /// The sample is the whole collection.
    whole: bool,
    indexes: &'a [String],
}

async fn advise_one<S: Store>(
    store: &S,
    cx: &Collection<'_>,
    sample: u32,
    options: &Options<'_>,
) -> Result<CollectionAdvice> {
    let coll = cx.name;
    let mut reads = Vec::new();
    let all = Filter::and([]);
    let documents = store.count_matching(coll, &all, ADVISE_READ).await?;
    reads.push(Read::new("count", "the collection's documents", documents));
    let indexes = store.index_names(coll).await?;
    reads.push(Read::new(
        "listIndexes",
        "the collection's indexes",
        indexes.len() as u64,
    ));
    let phase = format!("sample {coll}");
    let total = documents.min(u64::from(sample));
    options.report(&phase, 0, Some(total));
    let mut profile = Profile::new();
    let mut docs = store.sample(coll, sample, SCAN_BATCH, ADVISE_READ);
    while let Some(doc) = docs.next().await {
        profile.see(&doc?);
        if profile.documents.is_multiple_of(u64::from(SCAN_BATCH)) {
            options.report(&phase, profile.documents, Some(total));
        }
    }
    drop(docs);
    options.report(&phase, profile.documents, Some(total));
    reads.push(Read::new(
        "aggregate",
        &format!("$sample of {sample} documents"),
        profile.documents,
    ));
    let whole = profile.documents >= documents;
    let s = Sample {
        coll: cx,
        profile: &profile,
        whole,
        indexes: &indexes,
    };
    let mut findings = Vec::new();
    let poly = polymorphic::find(&s);
    let explained = poly
        .as_ref()
        .map(|(_, fields)| fields.clone())
        .unwrap_or_default();
    let outliers = outlier::find(store, &s, &mut reads).await?;
    findings.extend(limits::array_indexes(&s, &outliers));
    findings.extend(outliers.into_iter().map(|(f, _, _)| f));
    findings.extend(bucket::find(store, &s, &mut reads).await?);
    findings.extend(attribute::find(&s, &explained));
    findings.extend(poly.map(|(f, _)| f));
    findings.extend(versioning::find(&s));
    findings.extend(tree::find(store, &s, &mut reads).await?);
    findings.extend(limits::too_many_indexes(&s));
    findings.extend(limits::sizes(&s));
    findings.sort_by_key(|f| (f.confidence, f.pattern));
    let largest = profile.largest.as_ref().map(|(bytes, id)| Largest {
        id: id.clone(),
        bytes: *bytes,
        share_of_limit: *bytes as f64 / MAX_DOCUMENT_BYTES as f64,
    });
    Ok(CollectionAdvice {
        collection: coll.to_owned(),
        documents,
        sampled: profile.documents,
        whole,
        reads,
        sizes: profile.sizes.distribution(),
        largest,
        indexes,
        findings,
    })
}

impl Read {
    fn new(command: &str, what: &str, result: u64) -> Self {
        Read {
            command: command.to_owned(),
            what: what.to_owned(),
            result,
        }
    }
}

/// A word for a POSIX shell: as it is when it holds only safe characters, else single-quoted.
fn shell_word(s: &str) -> String {
    let safe = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./:,=@%+".contains(c));
    if safe {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// `share` of `of` as a percentage with one decimal.
fn percent(share: u64, of: u64) -> String {
    if of == 0 {
        return "0%".into();
    }
    format!("{:.1}%", 100.0 * share as f64 / of as f64)
}

#[cfg(test)]
mod tests;
