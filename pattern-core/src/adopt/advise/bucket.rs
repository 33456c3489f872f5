//! The bucket rule: a flat series, one document per item: a key field whose values repeat
//! (many documents per key) and a date field, in most documents.

use bson::{Bson, DateTime};
use serde::Serialize;

use super::super::analyze::suggest_size;
use super::profile::Field;
use super::rust::{
    key_type, singular, snake_case, string_literal, type_ident, Code, Item, RustField,
};
use super::{percent, Confidence, Evidence, Finding, Read, Sample, ADVISE_READ};
use crate::adopt::histogram::{Distribution, Histogram};
use crate::codec::BsonType;
use crate::store::query::Filter;
use crate::store::Store;
use crate::Result;

/// The typical key holds at least this many documents.
pub const BUCKET_MIN_PER_KEY: u64 = 10;
/// The key and the date are in at least this percentage of the sampled documents.
pub const BUCKET_MIN_SHARE: u64 = 90;
/// Sampled key values whose documents are counted, when the sample is not the whole
/// collection (one count per candidate key field).
pub const COUNTED_KEYS: usize = 20;
/// Key fields counted at most, in their order of likelihood.
const COUNTED_CANDIDATES: usize = 3;
/// Names a series' key often has (beside those whose last word is `id`).
const KEY_NAMES: [&str; 14] = [
    "key", "device", "sensor", "user", "account", "customer", "owner", "station", "symbol",
    "ticker", "host", "meter", "machine", "source",
];
/// Names a series' time often has, preferred in this order.
const TIME_NAMES: [&str; 12] = [
    "date",
    "time",
    "timestamp",
    "ts",
    "at",
    "datetime",
    "createdAt",
    "created_at",
    "created",
    "when",
    "recordedAt",
    "recorded_at",
];
/// The spans [`find`] picks from (the smallest one a typical key takes to fill a bucket).
const SPANS: [(&str, i64); 13] = [
    ("1m", 60),
    ("5m", 300),
    ("15m", 900),
    ("30m", 1_800),
    ("1h", 3_600),
    ("2h", 7_200),
    ("6h", 21_600),
    ("12h", 43_200),
    ("1d", 86_400),
    ("7d", 604_800),
    ("30d", 2_592_000),
    ("90d", 7_776_000),
    ("366d", 31_622_400),
];

/// The figures of a bucket finding.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BucketEvidence {
    /// The key field.
    pub key: String,
    /// Distinct key values in the sample.
    pub keys_in_sample: u64,
    /// Sampled documents per key value (exact per key when the sample is the whole
    /// collection).
    pub per_key_in_sample: Distribution,
    /// The typical key's documents: the median when the sample is the whole collection, else
    /// the mean over the [`COUNTED_KEYS`] keys counted.
    pub typical_per_key: u64,
    /// When the sample is not the whole collection: the documents of the sampled keys counted
    /// (keys, documents).
    pub counted: Option<(u64, u64)>,
    /// The date field.
    pub time: String,
    /// The earliest and latest sampled dates.
    pub first: DateTime,
    /// See `first`.
    pub last: DateTime,
    /// The suggested bucket size (`analyze bucket`'s rule).
    pub size: u32,
    /// Why that size.
    pub size_reason: String,
    /// The suggested span (`#[bucket(span = ...)]`), when a typical key fills a bucket in at
    /// most 366 days.
    pub span: Option<String>,
    /// Why that span, or none.
    pub span_reason: String,
    /// The bucket collection suggested (a name the database does not use).
    pub target: String,
}

/// A key field that could key the series.
struct Candidate<'a> {
    name: &'a str,
    field: &'a Field,
    rust: &'static str,
}

/// The series that fits, if any (reads: one count per candidate key counted, when the sample
/// is not the whole collection).
pub(super) async fn find<S: Store>(
    store: &S,
    s: &Sample<'_>,
    reads: &mut Vec<Read>,
) -> Result<Option<Finding>> {
    let shape = &s.profile.shape;
    let n = s.profile.documents;
    let enough = |f: &Field| f.non_null() * 100 >= n * BUCKET_MIN_SHARE && n > 0;
    let Some((time, time_field)) = (shape.fields.iter())
        .filter(|(name, f)| *name != "_id" && f.only(&[BsonType::Date]) && enough(f))
        .filter(|(name, _)| is_identifier(name))
        .max_by_key(|(name, f)| {
            let rank = TIME_NAMES.iter().position(|t| t == name);
            (
                rank.map(|r| TIME_NAMES.len() - r),
                f.present,
                std::cmp::Reverse(*name),
            )
        })
    else {
        return Ok(None);
    };
    let mut candidates: Vec<Candidate<'_>> = (shape.fields.iter())
        .filter(|(name, f)| *name != "_id" && *name != time && enough(f))
        .filter(|(name, f)| identifies(name, f))
        .filter_map(|(name, f)| {
            let rust = key_type(f)?;
            (f.values.len() >= 2).then_some(Candidate {
                name,
                field: f,
                rust,
            })
        })
        .collect();
    candidates.sort_by_key(|c| {
        let distinct = c.field.values.len() as u64;
        let repeats = c.field.non_null() > distinct;
        (
            std::cmp::Reverse(id_like(c.name)),
            std::cmp::Reverse(repeats),
            std::cmp::Reverse(distinct),
            c.name,
        )
    });
    for c in candidates.into_iter().take(COUNTED_CANDIDATES) {
        let mut per_key = Histogram::new();
        for (_, count) in c.field.values.values() {
            per_key.record(*count);
        }
        let (typical, counted) = if s.whole {
            (per_key.percentile(50.0), None)
        } else {
            let values: Vec<Bson> = (c.field.values.values())
                .take(COUNTED_KEYS)
                .map(|(v, _)| v.clone())
                .collect();
            let k = values.len() as u64;
            let filter = Filter::In(c.name.to_owned().into(), values);
            let total = store
                .count_matching(s.coll.name, &filter, ADVISE_READ)
                .await?;
            reads.push(Read::new(
                "count",
                &format!("the documents of {k} sampled `{}` values", c.name),
                total,
            ));
            (total / k.max(1), Some((k, total)))
        };
        if typical < BUCKET_MIN_PER_KEY {
            continue;
        }
        return Ok(Some(finding(
            s, &c, time, time_field, &per_key, typical, counted,
        )));
    }
    Ok(None)
}

fn finding(
    s: &Sample<'_>,
    c: &Candidate<'_>,
    time: &str,
    time_field: &Field,
    per_key: &Histogram,
    typical: u64,
    counted: Option<(u64, u64)>,
) -> Finding {
    let mut typical_keys = Histogram::new();
    if s.whole {
        typical_keys = per_key.clone();
    } else {
        typical_keys.record(typical);
    }
    let suggestion = suggest_size(&typical_keys, &s.profile.sizes);
    let (lo, hi) = time_field.dates.unwrap_or((0, 0));
    let (span, span_reason) = span(typical, suggestion.value, hi - lo);
    let median_bytes = s.profile.sizes.percentile(50.0);
    let confidence = if !id_like(c.name) {
        Confidence::Medium
    } else if typical >= 10 * BUCKET_MIN_PER_KEY && median_bytes <= 1024 {
        Confidence::High
    } else {
        Confidence::Medium
    };
    let how = match counted {
        None => format!("the median key holds {typical} documents"),
        Some((k, _)) => format!("the {k} sampled keys counted hold {typical} documents on average"),
    };
    let reason =
        format!(
        "a flat series: {} of the sampled documents have a `{}` and a date in `{time}`, and {how} \
         (the median document {median_bytes} bytes): buckets of {} make {} documents of such a key",
        percent(c.field.non_null().min(time_field.non_null()), s.profile.documents),
        c.name,
        suggestion.value,
        typical.div_ceil(u64::from(suggestion.value.max(1))),
    );
    let item = type_ident(&singular(s.coll.name));
    let target = s.coll.new_collection(&format!("{}_buckets", s.coll.name));
    let evidence = BucketEvidence {
        key: c.name.to_owned(),
        keys_in_sample: c.field.values.len() as u64,
        per_key_in_sample: per_key.distribution(),
        typical_per_key: typical,
        counted,
        time: time.to_owned(),
        first: DateTime::from_millis(lo),
        last: DateTime::from_millis(hi),
        size: suggestion.value,
        size_reason: suggestion.reason.clone(),
        span: span.map(str::to_owned),
        span_reason,
        target: target.clone(),
    };
    let mut f = Finding::new(Evidence::Bucket(evidence), confidence, reason);
    f.code = Some(code(s, c, time, &item, &target, suggestion.value, span));
    let size = suggestion.value.to_string();
    let coll = s.coll.name;
    let mut migrate = vec![
        "migrate", "bucket", "--from", coll, "--to", &target, "--key", c.name, "--time", time,
        "--size", &size,
    ];
    if let Some(span) = span {
        migrate.extend(["--span", span]);
    }
    let mut dry = migrate.clone();
    dry.push("--dry-run");
    f.commands = vec![
        s.coll.command(&[
            "analyze",
            "bucket",
            "--collection",
            coll,
            "--key",
            c.name,
            "--size",
            &size,
        ]),
        s.coll.command(&dry),
        s.coll.command(&migrate),
    ];
    f.notes.push(format!(
        "The migration reads `{coll}` and leaves it as it is (`--remove-source` deletes each migrated document \
         with its bucket's write); switch the writers to `{item}Buckets::push` first: documents inserted into \
         `{coll}` after the migration read past them are not moved."
    ));
    f
}

/// The span a typical key of `typical` items over `range_ms` takes to fill a bucket of
/// `size`, rounded up to one of [`SPANS`]; none past the largest.
fn span(typical: u64, size: u32, range_ms: i64) -> (Option<&'static str>, String) {
    if range_ms <= 0 || typical == 0 {
        return (None, "the sampled dates span no time".to_owned());
    }
    let fill_secs = (u128::from(size) * range_ms as u128 / u128::from(typical) / 1000) as i64;
    match SPANS.iter().find(|(_, secs)| *secs >= fill_secs) {
        Some((name, _)) => (
            Some(name),
            format!(
                "a typical key's {typical} items over {} fill a bucket of {size} in about {}: a window of {name} \
                 holds about one bucket",
                duration(range_ms / 1000),
                duration(fill_secs)
            ),
        ),
        None => (
            None,
            format!(
                "a typical key fills a bucket of {size} in about {}, more than the longest span (366d): buckets \
                 by size alone",
                duration(fill_secs)
            ),
        ),
    }
}

/// `90061` → `1d 1h`.
fn duration(secs: i64) -> String {
    let (d, h, m) = (secs / 86_400, secs % 86_400 / 3_600, secs % 3_600 / 60);
    match (d, h, m) {
        (0, 0, m) => format!("{}m {}s", m, secs % 60),
        (0, h, m) => format!("{h}h {m}m"),
        (d, h, _) => format!("{d}d {h}h"),
    }
}

/// Whether a field shows it identifies something, as a series' key must (a repeated value alone,
/// a score or a quantity, does not): its name says so ([`id_like`]), or it holds ObjectIds.
fn identifies(name: &str, f: &Field) -> bool {
    id_like(name) || f.only(&[BsonType::ObjectId])
}

/// Whether a name says it keys something: its last word is `id` (`customerId`, `sensor_id`,
/// `ID`), or it is one of [`KEY_NAMES`] (or its plural, or it followed by `id`: `userid`).
fn id_like(name: &str) -> bool {
    let words = snake_case(name);
    if words.rsplit('_').next() == Some("id") {
        return true;
    }
    let lower = name.to_ascii_lowercase();
    KEY_NAMES.iter().any(|k| {
        lower
            .strip_prefix(k)
            .is_some_and(|rest| ["", "s", "id"].contains(&rest))
    })
}

/// Whether a stored name can be a Rust field's name as it is (the derive's `time` names the
/// item's Rust field, and the migration the stored one: they must be the same).
fn is_identifier(name: &str) -> bool {
    let mut cs = name.chars();
    cs.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && cs.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name != "_"
        && !super::rust::is_keyword(name)
}

/// The item struct (every sampled field but `_id` and the key; the time field under its
/// stored name) and the bucket struct.
fn code(
    s: &Sample<'_>,
    c: &Candidate<'_>,
    time: &str,
    item: &str,
    target: &str,
    size: u32,
    span: Option<&str>,
) -> String {
    let mut code = Code::default();
    let item = code.type_name(item);
    let buckets = code.type_name(&format!("{item}Buckets"));
    code.uses("pattern_core::Bucket");
    code.uses("serde::{Deserialize, Serialize}");
    let mut fields = Vec::new();
    for (stored, mut f) in code.fields(&s.profile.shape, &["_id", c.name]) {
        if stored == time && f.name != time {
            // The derive's `time` is the Rust field's name: keep the stored one.
            f.name = time.to_owned();
            f.attrs.retain(|a| !a.starts_with("#[serde(rename"));
            f.attrs.push("#[allow(non_snake_case)]".into());
        }
        fields.push(f);
    }
    code.push_struct(&Item {
        doc: vec![format!(
            "One item of `{}`: a document without its `_id` and its key.",
            s.coll.name
        )],
        derives: vec!["Debug", "Clone", "Serialize", "Deserialize"],
        attrs: Vec::new(),
        name: item.clone(),
        fields,
    });
    let mut names = std::collections::BTreeSet::new();
    let mut key = code.field(c.name, c.rust.to_owned(), &mut names);
    key.attrs.insert(0, "#[bucket(key)]".into());
    let span = span.map_or(String::new(), |sp| {
        format!(", span = {}", string_literal(sp))
    });
    code.push_struct(&Item {
        doc: vec![format!(
            "`{target}`: each `{}`'s items, {size} a document.",
            c.name
        )],
        derives: vec!["Bucket"],
        attrs: vec![format!(
            "#[bucket(collection = {}, size = {size}, time = {}{span})]",
            string_literal(target),
            string_literal(time)
        )],
        name: buckets,
        fields: vec![
            key,
            RustField {
                doc: Vec::new(),
                attrs: vec!["#[bucket(items)]".into()],
                name: "history".into(),
                ty: format!("Vec<{item}>"),
            },
        ],
    });
    code.render()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans() {
        // 100 items a day per key, buckets of 50: half a day, so 12h.
        assert_eq!(span(100, 50, 86_400_000).0, Some("12h"));
        assert_eq!(span(10, 1000, 86_400_000).0, Some("366d"));
        assert_eq!(span(1, 1000, 86_400_000).0, None);
        assert_eq!(span(10, 10, 0).0, None);
        assert_eq!(duration(90_061), "1d 1h");
        assert_eq!(duration(3_725), "1h 2m");
        assert_eq!(duration(59), "0m 59s");
        assert!(id_like("customerId") && id_like("sensor") && !id_like("type"));
        assert!(id_like("sensor_id") && id_like("ID") && id_like("userid") && id_like("devices"));
        // A word ending in `id` is not an identifier's name.
        assert!(!id_like("paid") && !id_like("valid") && !id_like("score"));
        assert!(is_identifier("date") && is_identifier("createdAt") && !is_identifier("type"));
        assert!(!is_identifier("created-at") && !is_identifier("2date"));
    }
}
