//! `index_report`: which indexes a pattern needs are there, which are missing, which of the
//! library's own are stale, and which are the user's (never dropped).

use serde::Serialize;

use crate::spec::{BucketSpec, OutlierSpec, TreeSpec};
use crate::store::query::IndexSpec;
use crate::store::Store;
use crate::Result;

/// The indexes of one collection, as a pattern sees them (by name).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct IndexReport {
    /// The collection.
    pub collection: String,
    /// The collection has at least one index (it exists).
    pub exists: bool,
    /// Indexes the pattern needs, present.
    pub present: Vec<String>,
    /// Indexes the pattern needs, absent: `ensure_indexes` (or the first use) creates them.
    pub missing: Vec<String>,
    /// The library's own indexes this layout does not use (another size, key or `time`
    /// setting): a series' `ensure_indexes` drops those of another size or key.
    pub stale: Vec<String>,
    /// Every other index (the user's, and `_id_`): never dropped by the library.
    pub users: Vec<String>,
}

impl IndexReport {
    /// Nothing missing and nothing stale.
    pub fn is_complete(&self) -> bool {
        self.missing.is_empty() && self.stale.is_empty()
    }
}

/// Sorts `coll`'s indexes against `needed`; `ours` tells the library's own names.
async fn report<S: Store>(
    store: &S,
    coll: &str,
    needed: &[IndexSpec],
    ours: &dyn Fn(&str) -> bool,
) -> Result<IndexReport> {
    let names = store.index_names(coll).await?;
    let mut r = IndexReport {
        collection: coll.to_owned(),
        exists: !names.is_empty(),
        ..IndexReport::default()
    };
    for index in needed {
        if names.contains(&index.name) {
            r.present.push(index.name.clone());
        } else {
            r.missing.push(index.name.clone());
        }
    }
    for name in names {
        if needed.iter().any(|i| i.name == name) {
            continue;
        }
        if ours(&name) {
            r.stale.push(name);
        } else {
            r.users.push(name);
        }
    }
    Ok(r)
}

/// A series' index names start with `pattern_` or `0_pattern_`.
fn series_index(name: &str) -> bool {
    name.starts_with("pattern_") || name.starts_with("0_pattern_")
}

/// The bucket collection's indexes.
pub async fn index_report_bucket<S: Store>(
    store: &S,
    spec: &BucketSpec<'_>,
) -> Result<Vec<IndexReport>> {
    crate::observe::traced_op!(bucket.index_report, store, spec.collection, async {
        let series = spec.series();
        Ok(vec![
            report(store, series.collection, &series.indexes(), &series_index).await?,
        ])
    })
}

/// The main collection's indexes (the pattern needs none there: every read is by `_id`) and
/// the overflow collection's.
pub async fn index_report_outlier<S: Store>(
    store: &S,
    spec: &OutlierSpec<'_>,
) -> Result<Vec<IndexReport>> {
    crate::observe::traced_op!(outlier.index_report, store, spec.collection, async {
        let ov = &spec.overflow;
        Ok(vec![
            report(store, spec.collection, &[], &|_| false).await?,
            report(store, ov.collection, &ov.indexes(), &series_index).await?,
        ])
    })
}

/// The tree collection's indexes: the model's (named as the seed's, `parent_1`...). An index
/// of another model's field is reported as the user's (the library cannot tell it made it).
pub async fn index_report_tree<S: Store>(store: &S, spec: &TreeSpec) -> Result<Vec<IndexReport>> {
    crate::observe::traced_op!(tree.index_report, store, spec.collection, async {
        let needed = crate::tree::model_indexes(spec);
        Ok(vec![
            report(store, spec.collection, &needed, &|_| false).await?,
        ])
    })
}
