//! The finds: the documents of a plan's candidates that match, in the order asked for, with
//! skip and limit.

use bson::Document;

use super::collection::Collection;
use super::key::Key;
use super::plan::Plan;
use pattern_store::query::eval::compare_by;
use pattern_store::query::{Filter, FindOptions};

impl Collection {
    /// The `_id` of the first document matching `filter`.
    pub(super) fn first_match(&self, filter: &Filter) -> Option<Key> {
        self.first_matching(filter).map(|(id, _)| id.clone())
    }

    /// [`Collection::first_match`], with the document.
    pub(super) fn first_matching(&self, filter: &Filter) -> Option<(&Key, &Document)> {
        self.plan(filter).ids().find_map(|id| {
            let doc = &*self.docs[id].doc;
            filter.matches(doc).then_some((id, doc))
        })
    }

    /// The `_id` of the first document matching `filter` in `sort` order.
    pub(super) fn first_in_order(
        &self,
        filter: &Filter,
        sort: &[(pattern_store::query::Path, i32)],
    ) -> Option<Key> {
        if sort.is_empty() {
            return self.first_match(filter);
        }
        // An index that answers the query exactly, in the sort order: its first (or last) entry.
        let plan = self.plan(filter);
        if plan.covered {
            if plan.sorted_by(sort, false) {
                return plan.ids().next().cloned();
            }
            if plan.sorted_by(sort, true) {
                return plan.ids().next_back().cloned();
            }
        }
        self.find_in_plan(plan, filter, sort, 0, Some(1))
            .first()
            .map(|(id, _)| (*id).clone())
    }

    /// The `_id`s of every document matching `filter`.
    pub(super) fn matching(&self, filter: &Filter) -> Vec<Key> {
        self.plan(filter)
            .ids()
            .filter(|id| filter.matches(&self.docs[*id].doc))
            .cloned()
            .collect()
    }

    /// The documents matching `filter`, sorted, skipped and limited.
    pub(super) fn find(&self, filter: &Filter, opts: &FindOptions) -> Vec<Document> {
        self.find_refs(filter, &opts.sort, opts.skip, opts.limit)
            .into_iter()
            .map(|(_, doc)| doc.clone())
            .collect()
    }

    /// The documents matching `filter` in `sort` order, shared with the collection (a pointer
    /// each, not a copy): a snapshot a scan serializes a batch at a time, which later writes
    /// (copy on write) do not change.
    pub(super) fn find_shared(
        &self,
        filter: &Filter,
        sort: &[(pattern_store::query::Path, i32)],
    ) -> Vec<std::sync::Arc<Document>> {
        let ids: Vec<&Key> = self
            .find_refs(filter, sort, 0, None)
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        ids.into_iter()
            .map(|id| self.docs[id].doc.clone())
            .collect()
    }

    /// [`Collection::find`] without copying: the `_id`s and documents. When the plan already
    /// yields the sort order (forwards or backwards), it stops after `skip + limit` matches.
    pub(super) fn find_refs<'a>(
        &'a self,
        filter: &Filter,
        sort: &[(pattern_store::query::Path, i32)],
        skip: u64,
        limit: Option<i64>,
    ) -> Vec<(&'a Key, &'a Document)> {
        self.find_in_plan(self.plan(filter), filter, sort, skip, limit)
    }

    /// [`Collection::find_refs`] through `plan` (a plan for `filter`).
    pub(super) fn find_in_plan<'a>(
        &'a self,
        plan: Plan<'a>,
        filter: &Filter,
        sort: &[(pattern_store::query::Path, i32)],
        skip: u64,
        limit: Option<i64>,
    ) -> Vec<(&'a Key, &'a Document)> {
        let limit = match limit {
            Some(n) if n != 0 => n.unsigned_abs() as usize,
            _ => usize::MAX,
        };
        let skip = skip as usize;
        let with_doc = |id: &'a Key| (id, &*self.docs[id].doc);
        let matches = |(_, doc): &(&Key, &Document)| filter.matches(doc);
        let forward = plan.sorted_by(sort, false);
        let backward = !forward && plan.sorted_by(sort, true);
        if forward {
            return plan
                .ids()
                .map(with_doc)
                .filter(matches)
                .skip(skip)
                .take(limit)
                .collect();
        }
        if backward {
            return plan
                .ids()
                .rev()
                .map(with_doc)
                .filter(matches)
                .skip(skip)
                .take(limit)
                .collect();
        }
        let candidates = plan.ids().map(with_doc).filter(matches);
        if (skip, limit) == (0, 1) {
            // The first in sort order (of equals, the first found, as a stable sort keeps).
            let first = candidates.min_by(|(_, a), (_, b)| compare_by(a, b, sort));
            return first.into_iter().collect();
        }
        let mut docs: Vec<(&Key, &Document)> = candidates.collect();
        docs.sort_by(|(_, a), (_, b)| compare_by(a, b, sort));
        docs.into_iter().skip(skip).take(limit).collect()
    }
}
