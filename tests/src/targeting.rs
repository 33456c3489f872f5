//! The targeting check (issue 18): where each command the library sends would go on a sharded
//! cluster, by MongoDB's targeting rule, and whether each transaction stays on one shard.
//!
//! `tests/suite/sharding.rs` runs it over one workload with the shard keys the specs give. The
//! conformance suites run it over every command of every test on MongoDB (`on_both_stores!`
//! records them with command monitoring): collections are taken as sharded the way the README
//! documents (bucket and overflow collections on their series key, learned from the series the
//! store used; tree collections and the library's bookkeeping collections `pattern_*`
//! unsharded; every other collection on `_id`), and a test fails when a command would reach
//! every shard without being one of the documented collection-wide reads (their `comment`
//! starts with [`SCATTER`]), when a transaction would touch two shards (except a migration
//! batch, which records its checkpoint with the documents it moved: documented), or when a
//! unique index on a sharded collection does not start with its shard key.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use bson::{Bson, Document};
use pattern_core::store::query::SCATTER;

/// The `comment` of the tests' own collection-wide reads (reading back what the library
/// wrote): they are not the library's commands, and the check passes over them.
pub const TEST_READ: &str = "pattern-tests: read back";

/// Commands as recorded: `(name, body)`.
pub type Recorder = Arc<Mutex<Vec<(String, Document)>>>;

/// Where a command would go on a cluster whose collections are sharded by `keys`, by
/// MongoDB's targeting rule: a filter (or an inserted document) holding an equality on the
/// shard key goes to one shard, a `$in` on it to the shards of those values, anything else to
/// every shard.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Targets {
    /// One shard: an equality on the shard key (or an unsharded collection).
    One,
    /// The shards owning the listed values (`$in` on the shard key).
    Listed,
    /// Every shard (scatter-gather): no condition on the shard key.
    All,
}

/// What a filter or document says of the shard key's value.
#[derive(Clone, Debug, PartialEq)]
pub enum Reach {
    /// The collection is not sharded: it lives on the database's primary shard.
    Unsharded,
    /// One value: the shard owning it.
    Key(Bson),
    /// Several values (`$in`, `$or`): the shards owning them.
    Keys(Vec<Bson>),
    /// No condition on the shard key: every shard.
    All,
}

impl Reach {
    /// How many shards, in [`Targets`] terms.
    pub fn targets(&self) -> Targets {
        match self {
            Reach::Unsharded | Reach::Key(_) => Targets::One,
            Reach::Keys(_) => Targets::Listed,
            Reach::All => Targets::All,
        }
    }
    fn rank(&self) -> u8 {
        match self {
            Reach::Unsharded | Reach::Key(_) => 0,
            Reach::Keys(_) => 1,
            Reach::All => 2,
        }
    }
    /// The narrower of two conditions that must both hold.
    fn narrowest(self, other: Reach) -> Reach {
        if other.rank() < self.rank() {
            other
        } else {
            self
        }
    }
    fn values(self) -> Option<Vec<Bson>> {
        match self {
            Reach::Key(v) => Some(vec![v]),
            Reach::Keys(vs) => Some(vs),
            _ => None,
        }
    }
}

/// What `filter` says of shard key `field`: an equality (a value, `$eq`), a `$in`, an `$or`
/// whose every branch names values, or `$and`s of them.
fn filter_reach(filter: &Document, field: &str) -> Reach {
    let mut best = match filter.get(field) {
        Some(Bson::Document(ops)) if ops.keys().any(|k| k.starts_with('$')) => {
            if let Some(v) = ops.get("$eq") {
                Reach::Key(v.clone())
            } else if let Ok(list) = ops.get_array("$in") {
                match list.as_slice() {
                    [one] => Reach::Key(one.clone()),
                    many => Reach::Keys(many.to_vec()),
                }
            } else {
                Reach::All
            }
        }
        Some(v) => Reach::Key(v.clone()),
        None => Reach::All,
    };
    for f in filter
        .get_array("$and")
        .into_iter()
        .flatten()
        .filter_map(Bson::as_document)
    {
        best = best.narrowest(filter_reach(f, field));
    }
    if let Ok(branches) = filter.get_array("$or") {
        let mut values = Vec::new();
        let mut all_named = !branches.is_empty();
        for b in branches {
            match b.as_document().map(|b| filter_reach(b, field).values()) {
                Some(Some(vs)) => values.extend(vs),
                _ => all_named = false,
            }
        }
        if all_named {
            best = best.narrowest(Reach::Keys(values));
        }
    }
    best
}

/// How a filter targets on shard key `field`.
pub fn filter_targets(filter: &Document, field: &str) -> Targets {
    filter_reach(filter, field).targets()
}

fn document_reach(doc: &Document, field: &str) -> Reach {
    doc.get(field).map_or(Reach::All, |v| Reach::Key(v.clone()))
}

/// The collections a data command touches and what each of its filters or documents says of
/// their shard key, for collections sharded by `keys` (`(collection, field)`; any other
/// collection is unsharded). Commands that carry no data (`getMore`, `commitTransaction`,
/// index commands...) give nothing.
pub fn command_reach(
    name: &str,
    cmd: &Document,
    keys: &[(String, String)],
) -> Vec<(String, Reach)> {
    let key_of = |coll: &str| keys.iter().find(|(c, _)| c == coll).map(|(_, f)| f.clone());
    let reach = |coll: &str, f: &dyn Fn(&str) -> Reach| match key_of(coll) {
        Some(field) => f(&field),
        None => Reach::Unsharded,
    };
    let docs = |field: &str| {
        cmd.get_array(field)
            .into_iter()
            .flatten()
            .filter_map(Bson::as_document)
    };
    let coll = cmd.get_str(name).unwrap_or("").to_owned();
    let mut out = Vec::new();
    match name {
        "find" | "count" | "findAndModify" => {
            let filter = cmd
                .get_document("filter")
                .or_else(|_| cmd.get_document("query"));
            let r = reach(&coll, &|f| {
                filter.as_ref().map_or(Reach::All, |q| filter_reach(q, f))
            });
            out.push((coll, r));
        }
        "update" | "delete" => {
            let list = if name == "update" {
                "updates"
            } else {
                "deletes"
            };
            for u in docs(list) {
                let r = reach(&coll, &|f| {
                    u.get_document("q")
                        .map_or(Reach::All, |q| filter_reach(q, f))
                });
                out.push((coll.clone(), r));
            }
        }
        "insert" => {
            for d in docs("documents") {
                out.push((coll.clone(), reach(&coll, &|f| document_reach(d, f))));
            }
        }
        "aggregate" => {
            let first = cmd
                .get_array("pipeline")
                .ok()
                .and_then(|p| p.first())
                .and_then(Bson::as_document)
                .and_then(|s| s.get_document("$match").ok());
            let r = reach(&coll, &|f| first.map_or(Reach::All, |m| filter_reach(m, f)));
            out.push((coll, r));
            // A `$graphLookup` queries its `from` collection once per level: on the shard
            // key, the shards of the values found (one per value); on another field, every
            // shard.
            for g in docs("pipeline").filter_map(|s| s.get_document("$graphLookup").ok()) {
                let from = g.get_str("from").unwrap_or("").to_owned();
                let to = g.get_str("connectToField").unwrap_or("");
                let r = reach(&from, &|f| {
                    if f == to {
                        Reach::Keys(Vec::new())
                    } else {
                        Reach::All
                    }
                });
                out.push((from, r));
            }
        }
        "bulkWrite" => {
            let ns = bulk_collections(cmd);
            for op in docs("ops") {
                let i = ["insert", "update", "delete"]
                    .iter()
                    .find_map(|k| op.get_i32(k).ok())
                    .unwrap_or(0);
                let c = ns.get(i as usize).cloned().unwrap_or_default();
                let r = reach(&c, &|f| {
                    if let Ok(d) = op.get_document("document") {
                        document_reach(d, f)
                    } else {
                        op.get_document("filter")
                            .map_or(Reach::All, |q| filter_reach(q, f))
                    }
                });
                out.push((c, r));
            }
        }
        _ => {}
    }
    out
}

/// The collections a `bulkWrite` names (`nsInfo`, `<db>.<collection>`), in its order.
fn bulk_collections(cmd: &Document) -> Vec<String> {
    let infos = cmd.get_array("nsInfo").into_iter().flatten();
    infos
        .filter_map(Bson::as_document)
        .map(|n| {
            let full = n.get_str("ns").unwrap_or("");
            full.split_once('.').map_or(full, |(_, c)| c).to_owned()
        })
        .collect()
}

/// [`command_reach`] in [`Targets`] terms.
pub fn command_targets(
    name: &str,
    cmd: &Document,
    keys: &[(String, String)],
) -> Vec<(String, Targets)> {
    command_reach(name, cmd, keys)
        .into_iter()
        .map(|(c, r)| (c, r.targets()))
        .collect()
}

/// A command with what the check needs (filters, key fields, session, transaction, comment),
/// without the payloads (item arrays, update documents) that would make
/// recording a whole suite costly.
pub fn compact_command(name: &str, cmd: &Document) -> Document {
    fn scalars(d: &Document) -> Document {
        d.iter()
            .filter(|(_, v)| !matches!(v, Bson::Array(_)))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
    fn each(a: &[Bson], f: impl Fn(&Document) -> Document) -> Bson {
        let docs = a.iter().filter_map(Bson::as_document);
        Bson::Array(docs.map(|d| Bson::Document(f(d))).collect())
    }
    let mut out = Document::new();
    for (k, v) in cmd {
        let kept = match (k.as_str(), v) {
            ("$clusterTime" | "$db" | "update" | "fields" | "sort" | "projection", _)
                if k != name =>
            {
                None
            }
            ("documents", Bson::Array(a)) => Some(each(a, scalars)),
            ("updates", Bson::Array(a)) => Some(each(a, |u| {
                let mut c = Document::new();
                if let Some(q) = u.get("q") {
                    c.insert("q", q.clone());
                }
                c
            })),
            ("ops", Bson::Array(a)) => Some(each(a, |op| {
                let mut c = Document::new();
                for (k, v) in op {
                    match (k.as_str(), v) {
                        ("document", Bson::Document(d)) => {
                            c.insert(k, scalars(d));
                        }
                        ("updateMods", _) => {}
                        _ => {
                            c.insert(k, v.clone());
                        }
                    }
                }
                c
            })),
            _ => Some(v.clone()),
        };
        if let Some(v) = kept {
            out.insert(k, v);
        }
    }
    out
}

/// Collections a test declared unsharded, by database: a user's own collection that a test
/// writes in one transaction with a tree's (see [`declare_unsharded`]).
static UNSHARDED: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

/// Declares that collection `coll` of database `db` is left unsharded on a cluster (it lives on
/// the database's primary shard, with the trees and the library's bookkeeping collections),
/// e.g. a user's audit log written in the same transaction as a tree move.
pub fn declare_unsharded(db: &str, coll: &str) {
    UNSHARDED
        .lock()
        .unwrap()
        .push((db.to_owned(), coll.to_owned()));
}

/// The layouts a test's commands show the store served: series (bucket and overflow
/// collections, each with its key field, from the library's read index `pattern_<key>_1_<seq>_1__id_1`
/// that every series creates on first use; a document history by its `pattern_history_id_1_revision_-1`) and trees (the collections whose version document
/// in `pattern_tree_versions` a write bumped).
fn served(log: &[(String, Document)]) -> (Vec<(String, String)>, BTreeSet<String>) {
    let (mut series, mut trees) = (Vec::new(), BTreeSet::new());
    for (name, cmd) in log {
        let coll = cmd.get_str(name).unwrap_or("");
        if name == "createIndexes" {
            let indexes = cmd.get_array("indexes").into_iter().flatten();
            for i in indexes.filter_map(Bson::as_document) {
                let library = i
                    .get_str("name")
                    .is_ok_and(|n| n.starts_with("pattern_") && n.ends_with("_1__id_1"));
                // A document history's index: the history is sharded by `id` (the
                // document's `_id`), `pattern_core::document::shard_keys`.
                let history = i
                    .get_str("name")
                    .is_ok_and(|n| n.starts_with("pattern_history_"));
                let key = i.get_document("key").ok().and_then(|k| k.keys().next());
                if let (true, Some(key)) = (library || history, key) {
                    if !series.iter().any(|(c, _)| c == coll) {
                        series.push((coll.to_owned(), key.clone()));
                    }
                }
            }
        }
        if coll == "pattern_tree_versions" {
            for u in cmd.get_array("updates").into_iter().flatten() {
                let q = u.as_document().and_then(|u| u.get_document("q").ok());
                if let Some(Ok(tree)) = q.map(|q| q.get_str("_id")) {
                    trees.insert(tree.to_owned());
                }
            }
        }
    }
    (series, trees)
}

/// What the targeting check found in a test's commands.
#[derive(Debug, Default)]
pub struct Targeting {
    /// The collections taken as sharded, with their keys.
    pub keys: Vec<(String, String)>,
    /// The commands and transactions that break the rule.
    pub offenders: Vec<String>,
    /// The committed transactions that touch several shards in a documented way (the
    /// docs' "Sharding" chapter says which): each with its class (`"history"`,
    /// `"computed"`, `"reference"`, `"migration"`), the shards and the commands.
    pub cross_shard: Vec<(&'static str, String)>,
}

/// Checks every command a conformance test sent on MongoDB (see the module's documentation);
/// panics with the offending commands.
pub fn check_suite_targeting(test: &str, db: &str, trees: &[&str], log: &[(String, Document)]) {
    let Targeting {
        keys, offenders, ..
    } = targeting(db, trees, log);
    if !offenders.is_empty() {
        let shown: Vec<String> = offenders
            .iter()
            .take(20)
            .map(|o| o.chars().take(600).collect())
            .collect();
        panic!(
            "{test}: {} command(s) break the targeting rule for the documented shard keys \
             (README, \"Sharding\"; taken as sharded: {keys:?}); first ones:\n{}",
            offenders.len(),
            shown.join("\n")
        );
    }
}

/// The targeting check's findings over a test's commands (see the module's documentation).
pub fn targeting(db: &str, trees: &[&str], log: &[(String, Document)]) -> Targeting {
    let (series, mut served_trees) = served(log);
    served_trees.extend(trees.iter().map(|t| t.to_string()));
    let trees = served_trees;
    let declared: Vec<String> = (UNSHARDED.lock().unwrap().iter())
        .filter(|(d, _)| d == db)
        .map(|(_, c)| c.clone())
        .collect();
    let mut colls: BTreeSet<String> = BTreeSet::new();
    for (name, cmd) in log {
        if let Ok(c) = cmd.get_str(name) {
            colls.insert(c.to_owned());
        }
        colls.extend(bulk_collections(cmd));
    }
    let keys: Vec<(String, String)> = colls
        .into_iter()
        .filter_map(|c| {
            if let Some((_, key)) = series.iter().find(|(s, _)| *s == c) {
                Some((c, key.clone()))
            } else if trees.contains(&c) || c.starts_with("pattern_") || declared.contains(&c) {
                None
            } else {
                Some((c, "_id".to_owned()))
            }
        })
        .collect();
    let mut offenders: Vec<String> = Vec::new();
    // Transactions by session and number: the shards each touches.
    let mut txns: BTreeMap<String, Txn> = BTreeMap::new();
    let mut committed: BTreeSet<String> = BTreeSet::new();
    for (name, cmd) in log {
        // A unique index on a sharded collection must start with the shard key.
        if name == "createIndexes" {
            let coll = cmd.get_str(name).unwrap_or("");
            if let Some((_, field)) = keys.iter().find(|(c, _)| c == coll) {
                for i in cmd
                    .get_array("indexes")
                    .into_iter()
                    .flatten()
                    .filter_map(Bson::as_document)
                    .filter(|i| i.get_bool("unique") == Ok(true))
                {
                    let first = i.get_document("key").ok().and_then(|k| k.keys().next());
                    if first != Some(field) {
                        offenders.push(format!(
                            "unique index on `{coll}` does not start with the shard key `{field}`: {i}"
                        ));
                    }
                }
            }
        }
        let comment = cmd.get_str("comment").unwrap_or("");
        let documented = comment.starts_with(SCATTER) || comment == TEST_READ;
        let reach = command_reach(name, cmd, &keys);
        for (coll, r) in &reach {
            if *r == Reach::All && !documented {
                offenders.push(format!("reaches every shard of `{coll}`: {name} {cmd}"));
            }
        }
        if cmd.get_bool("autocommit") == Ok(false) {
            let id = format!(
                "{:?}/{:?}",
                cmd.get_document("lsid").ok().and_then(|l| l.get("id")),
                cmd.get("txnNumber")
            );
            if name == "commitTransaction" {
                committed.insert(id.clone());
            }
            let entry = txns.entry(id).or_default();
            entry.archive |= comment == pattern_core::document::ARCHIVE_MOVE;
            entry.reference |= comment == pattern_core::document::REFERENCE_COPIES
                || comment == pattern_core::document::REFERENCE_SOURCE
                || cmd.get_str(name) == Ok(pattern_core::document::REFERENCES);
            for (coll, r) in reach {
                entry.migration |= coll == pattern_core::adopt::CHECKPOINTS;
                match r {
                    Reach::Unsharded => {
                        entry.shards.insert("the primary shard".to_owned());
                    }
                    Reach::Key(v) => {
                        entry.shards.insert(format!("{coll} {v}"));
                    }
                    Reach::Keys(vs) => {
                        for v in vs {
                            entry.shards.insert(format!("{coll} {v}"));
                        }
                    }
                    Reach::All => {
                        entry.shards.insert(format!("{coll} (every shard)"));
                        entry.shards.insert(format!("{coll} (every shard, again)"));
                    }
                }
            }
            entry
                .cmds
                .push(format!("{name} {}", cmd.get_str(name).unwrap_or("")));
        }
    }
    // A transaction that aborts commits nothing: only committed ones count.
    // A write of a document with history: its document and its history record, both keyed by
    // the document's id, two shards at most (documented in docs/sharding.md).
    let histories: Vec<&String> = (series.iter())
        .filter(|(_, k)| k == "id")
        .map(|(c, _)| c)
        .collect();
    // A write of a child with a computed parent or a subset: the child and its parents
    // (documented in docs/sharding.md: a cross-shard transaction), the child collection known
    // by the library's index `pattern_computed_...` or `pattern_subset_...`.
    let computed_children: BTreeSet<String> = (log.iter())
        .filter(|(name, _)| name == "createIndexes")
        .filter(|(_, cmd)| {
            (cmd.get_array("indexes").into_iter().flatten())
                .filter_map(Bson::as_document)
                .any(|i| {
                    i.get_str("name").is_ok_and(|n| {
                        n.starts_with("pattern_computed_") || n.starts_with("pattern_subset_")
                    })
                })
        })
        .filter_map(|(name, cmd)| cmd.get_str(name).ok().map(str::to_owned))
        .collect();
    // The child (one document, and the documented reads of its siblings by the key) and the
    // collection of its parents (two documents at most: before and after a move).
    let child_and_parents = |shards: &BTreeSet<String>| {
        let parts: Vec<(&str, &str)> = shards.iter().filter_map(|s| s.split_once(' ')).collect();
        let Some(child) = (computed_children.iter()).find(|k| parts.iter().any(|(c, _)| c == k))
        else {
            return false;
        };
        let others: BTreeSet<&str> = (parts.iter())
            .filter(|(c, _)| c != child)
            .map(|(c, _)| *c)
            .collect();
        let parents = parts.iter().filter(|(c, _)| c != child).count();
        let own = (parts.iter())
            .filter(|(c, v)| c == child && !v.starts_with('('))
            .count();
        others.len() <= 1 && parents <= 2 && own <= 1 && parts.len() == shards.len()
    };
    // One `_id` in two collections: a document and its history record, or its move into its
    // archive (the live collection and the archive).
    let one_id_in_two = |s: &BTreeSet<String>| {
        let p: Vec<(&str, &str)> = s.iter().filter_map(|s| s.split_once(' ')).collect();
        p.len() == 2 && s.len() == 2 && p[0].1 == p[1].1
    };
    let history = |x: &String| histories.iter().any(|h| x.starts_with(&format!("{h} ")));
    let one_id_with_its_history = |s: &BTreeSet<String>| one_id_in_two(s) && s.iter().any(history);
    let without_history = |s: &BTreeSet<String>| -> BTreeSet<String> {
        s.iter().filter(|x| !history(x)).cloned().collect()
    };
    // A move into an archive is a delete through the type's write pipeline beside a copy: one
    // `_id` in the archive beside what that delete touches (its history record, its parents).
    let moved_out = |s: &BTreeSet<String>| {
        s.iter().any(|copy| {
            let rest: BTreeSet<String> = s.iter().filter(|x| *x != copy).cloned().collect();
            let id = copy.split_once(' ').map(|p| p.1);
            let twin = rest.iter().any(|x| x.split_once(' ').map(|p| p.1) == id);
            twin && (rest.len() <= 1
                || one_id_with_its_history(&rest)
                || child_and_parents(&rest)
                || (child_and_parents(&without_history(&rest))
                    && rest.iter().filter(|x| history(x)).count() == 1))
        })
    };
    let mut cross_shard = Vec::new();
    for (id, t) in &txns {
        if t.shards.len() <= 1 || !committed.contains(id) {
            continue;
        }
        let class = if t.migration {
            "migration"
        } else if one_id_with_its_history(&t.shards) {
            "history"
        } else if t.archive && moved_out(&t.shards) {
            "archive"
        } else if t.reference {
            // An extended reference: the source's entry in `pattern_references` (on the primary
            // shard), the source, and its copies wherever they are (docs/sharding.md).
            "reference"
        } else if child_and_parents(&t.shards) {
            "computed"
        } else if child_and_parents(&without_history(&t.shards))
            && t.shards.iter().filter(|x| history(x)).count() == 1
        {
            // A child with history: its history record too, keyed by the child's `_id`.
            "computed with history"
        } else {
            offenders.push(format!(
                "a transaction touches {} shards ({:?}): {:?}",
                t.shards.len(),
                t.shards,
                t.cmds
            ));
            continue;
        };
        cross_shard.push((class, format!("{:?}: {:?}", t.shards, t.cmds)));
    }
    Targeting {
        keys,
        offenders,
        cross_shard,
    }
}

/// One transaction as the commands show it: the shards it touches, whether it is a migration
/// batch (it writes a checkpoint) or an extended reference's write (it writes a source's entry
/// or reads a source's copies), its commands.
#[derive(Default)]
struct Txn {
    shards: BTreeSet<String>,
    migration: bool,
    reference: bool,
    archive: bool, // a document's move into its archive (its read carries `ARCHIVE_MOVE`)
    cmds: Vec<String>,
}
