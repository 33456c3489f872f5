//! The schema versioning rule: a version field holding several versions, or, without one,
//! field sets that changed over the `_id`s' time (ObjectIds carry their creation second):
//! fields that appear, or disappear, from one moment on.

use std::collections::{BTreeMap, BTreeSet};

use bson::DateTime;
use serde::Serialize;

use super::profile::{DocFields, Profile, VERSION_NAMES};
use super::rust::{singular, string_literal, type_ident, Code, Item, RustField};
use super::{Confidence, Evidence, Finding, Sample};

/// A version field holds at least this many distinct versions (each an integer from 1 to
/// [`VERSION_MAX`]), at most [`VERSIONS_MAX_DISTINCT`].
pub const VERSIONS_MIN_DISTINCT: usize = 2;
/// See [`VERSIONS_MIN_DISTINCT`]: more distinct values are a revision counter.
pub const VERSIONS_MAX_DISTINCT: usize = 20;
/// The highest schema version taken as one.
pub const VERSION_MAX: i64 = 1_000;
/// A field changed over time when, on each side of one moment of the ObjectId `_id`s' time, at
/// least this share (per thousand) of the documents agree: for a field that appears, the
/// documents before the moment lack it and those after hold it; for one that disappears, the
/// reverse. Each side is counted on its own, not the collection as a whole: a field that a few
/// of the newest documents hold is no change of shape.
pub const CHANGE_AGREEMENT: u64 = 950;
/// ... with at least this many documents on each side (and 5% of them).
pub const CHANGE_MIN_SIDE: u64 = 10;
/// Changes further apart than this share (per thousand) of the documents are separate
/// versions.
const SAME_CHANGE: u64 = 50;
/// At most this many changes (versions after the first) are reported.
const MAX_CHANGES: usize = 5;

/// The figures of a schema versioning finding.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VersioningEvidence {
    /// The version field, when the documents keep one.
    pub field: Option<String>,
    /// Each version: with a field, each value stored; without, the field sets between two
    /// changes, numbered from 1.
    pub versions: Vec<VersionShape>,
    /// Sampled documents without the version field (read as the oldest version).
    pub unversioned: u64,
    /// Without a version field: each change of the field sets, in time order.
    pub changes: Vec<SchemaChange>,
}

/// The documents of one version.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VersionShape {
    /// The version.
    pub version: i64,
    /// Sampled documents of it.
    pub documents: u64,
    /// The fields every one of them has.
    pub always: Vec<String>,
    /// The fields some of them have, with how many.
    pub sometimes: Vec<(String, u64)>,
    /// Fields every document of the version before lacked.
    pub added: Vec<String>,
    /// Fields every document of the version before had and this version's lack.
    pub removed: Vec<String>,
}

/// A moment from which fields appear or disappear.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SchemaChange {
    /// The `_id` time of the first document after it.
    pub at: DateTime,
    /// Fields the documents after it have and those before lack.
    pub added: Vec<String>,
    /// Fields the documents before it have and those after lack.
    pub removed: Vec<String>,
    /// Sampled documents before it (ObjectId `_id`s only).
    pub before: u64,
    /// Sampled documents after it.
    pub after: u64,
    /// The least share of a side's documents on that side (lacking the field before, holding
    /// it after, for a field that appears), over the two sides and the change's fields.
    pub agreement: f64,
}

/// The versions that fit, if any.
pub(super) fn find(s: &Sample<'_>) -> Option<Finding> {
    by_field(s).or_else(|| over_time(s))
}

/// The fields of a set of documents: always (in every one) and sometimes, by name.
fn fields_of<'a>(
    p: &Profile,
    docs: impl Iterator<Item = &'a DocFields>,
    skip: Option<u32>,
) -> (u64, Vec<String>, Vec<(String, u64)>) {
    let mut counts: BTreeMap<u32, u64> = BTreeMap::new();
    let mut n = 0u64;
    for d in docs {
        n += 1;
        for f in &d.fields {
            *counts.entry(*f).or_default() += 1;
        }
    }
    let mut always = Vec::new();
    let mut sometimes = Vec::new();
    for (f, c) in counts {
        if Some(f) == skip {
            continue;
        }
        let name = p.names[f as usize].clone();
        if c == n {
            always.push(name);
        } else {
            sometimes.push((name, c));
        }
    }
    always.sort();
    sometimes.sort();
    (n, always, sometimes)
}

/// Fills in each version's added and removed fields (against the version before).
fn diff(versions: &mut [VersionShape]) {
    for i in 1..versions.len() {
        let (before, after) = versions.split_at_mut(i);
        let prev = &before[i - 1];
        let cur = &mut after[0];
        let has = |v: &VersionShape, f: &String| {
            v.always.contains(f) || v.sometimes.iter().any(|(s, _)| s == f)
        };
        cur.added = (cur.always.iter())
            .filter(|f| !has(prev, f))
            .cloned()
            .collect();
        cur.removed = (prev.always.iter())
            .filter(|f| !has(cur, f))
            .cloned()
            .collect();
    }
}

/// A field of [`VERSION_NAMES`] with several small integer versions.
fn by_field(s: &Sample<'_>) -> Option<Finding> {
    let p = s.profile;
    for name in VERSION_NAMES {
        let Some(id) = p.number(name) else { continue };
        let field = &p.shape.fields[name];
        let mut per: BTreeMap<i64, Vec<&DocFields>> = BTreeMap::new();
        let mut unversioned = 0u64;
        for d in &p.docs {
            match d.versions.iter().find(|(f, _)| *f == id) {
                Some((_, v)) => per.entry(*v).or_default().push(d),
                None => unversioned += 1,
            }
        }
        let stored: u64 = per.values().map(|d| d.len() as u64).sum();
        let in_range = per.keys().all(|v| (1..=VERSION_MAX).contains(v));
        if per.len() < VERSIONS_MIN_DISTINCT
            || per.len() > VERSIONS_MAX_DISTINCT
            || !in_range
            || stored < field.present
        {
            continue;
        }
        let mut versions: Vec<VersionShape> = (per.iter())
            .map(|(v, docs)| {
                let (documents, always, sometimes) = fields_of(p, docs.iter().copied(), Some(id));
                VersionShape {
                    version: *v,
                    documents,
                    always,
                    sometimes,
                    added: Vec::new(),
                    removed: Vec::new(),
                }
            })
            .collect();
        diff(&mut versions);
        let changed = versions
            .iter()
            .any(|v| !v.added.is_empty() || !v.removed.is_empty());
        let plain = name != "version" && name != "_v";
        if !changed && !plain {
            continue;
        }
        let confidence = if changed && plain {
            Confidence::High
        } else {
            Confidence::Medium
        };
        let list: Vec<String> = (versions.iter())
            .map(|v| format!("{} ({})", v.version, v.documents))
            .collect();
        let shapes = if changed {
            let diffs: Vec<String> = (versions.iter().skip(1))
                .filter(|v| !v.added.is_empty() || !v.removed.is_empty())
                .map(|v| describe(v.version, &v.added, &v.removed))
                .collect();
            format!("; {}", diffs.join("; "))
        } else {
            "; every version has the same fields".to_owned()
        };
        let none = if unversioned > 0 {
            format!(", and {unversioned} have none (read as the oldest)")
        } else {
            String::new()
        };
        let reason = format!(
            "`{name}` holds {} versions in the sampled documents: {}{none}{shapes}",
            versions.len(),
            list.join(", ")
        );
        let evidence = VersioningEvidence {
            field: Some(name.to_owned()),
            versions: versions.clone(),
            unversioned,
            changes: Vec::new(),
        };
        let mut f = Finding::new(Evidence::SchemaVersioning(evidence), confidence, reason);
        f.code = Some(code(s, &versions, Some(name), false));
        f.commands = vec![s.coll.command(&[
            "analyze",
            "versions",
            "--collection",
            s.coll.name,
            "--field",
            name,
        ])];
        f.notes.push(sweep_note(s));
        return Some(f);
    }
    None
}

/// "version 2 added `a`, removed `b`".
fn describe(version: i64, added: &[String], removed: &[String]) -> String {
    let list = |fs: &[String]| {
        fs.iter()
            .map(|f| format!("`{f}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match (added.is_empty(), removed.is_empty()) {
        (false, false) => format!(
            "version {version} added {} and removed {}",
            list(added),
            list(removed)
        ),
        (false, true) => format!("version {version} added {}", list(added)),
        (true, false) => format!("version {version} removed {}", list(removed)),
        (true, true) => format!("version {version} kept the fields"),
    }
}

fn sweep_note(s: &Sample<'_>) -> String {
    let name = type_ident(&singular(s.coll.name));
    format!(
        "Deploy the build that reads every version first. Then the sweep, `{name}::migrate(&store, &Options {{ \
         dry_run: true, ..Options::default() }})`, counts the documents per version; without `dry_run` it \
         upgrades them, resumably, once no build that knows only an older version is left."
    )
}

/// A field's presence that flips at one moment of the `_id`s' time.
struct Flip {
    field: u32,
    /// The index of the first document after the moment (in time order).
    cut: usize,
    added: bool,
    /// The least of the two sides' agreement, per thousand.
    agreement: u64,
}

/// The moment `field`'s presence (per document, in time order) flips, if any: among the cuts
/// `allowed` (the first document after the moment), those where [`CHANGE_AGREEMENT`] of the
/// documents agree on each side, the one with the most documents agreeing in all.
fn flip(field: u32, present: &[bool], allowed: impl Fn(usize) -> bool) -> Option<Flip> {
    let m = present.len();
    let total = present.iter().filter(|x| **x).count();
    // (cut, added, agreeing in all, the least side's agreement per thousand)
    let mut best: Option<(usize, bool, usize, u64)> = None;
    // Documents before the cut holding the field.
    let mut before = 0usize;
    for cut in 1..m {
        before += usize::from(present[cut - 1]);
        if !allowed(cut) {
            continue;
        }
        let after = total - before;
        let (lack_before, lack_after) = (cut - before, (m - cut) - after);
        // Added: absent before, present after; removed: the reverse.
        for (is_added, agree_before, agree_after) in
            [(true, lack_before, after), (false, before, lack_after)]
        {
            let share = |agree: usize, of: usize| (agree as u64 * 1000) / of as u64;
            let least = share(agree_before, cut).min(share(agree_after, m - cut));
            let agree = agree_before + agree_after;
            if least >= CHANGE_AGREEMENT && best.is_none_or(|(_, _, b, _)| agree > b) {
                best = Some((cut, is_added, agree, least));
            }
        }
    }
    best.map(|(cut, added, _, agreement)| Flip {
        field,
        cut,
        added,
        agreement,
    })
}

/// Field sets that changed over the `_id`s' time (documents with an ObjectId `_id` only).
fn over_time(s: &Sample<'_>) -> Option<Finding> {
    let p = s.profile;
    let mut docs: Vec<&DocFields> = p.docs.iter().filter(|d| d.time.is_some()).collect();
    docs.sort_by(|a, b| a.time.cmp(&b.time).then(a.id.cmp(&b.id)));
    let m = docs.len();
    let side = CHANGE_MIN_SIDE.max(m as u64 / 20) as usize;
    if m < 2 * side {
        return None;
    }
    let id = p.number("_id");
    let mut flips = Vec::new();
    for field in 0..p.names.len() as u32 {
        if Some(field) == id {
            continue;
        }
        let present: Vec<bool> = docs
            .iter()
            .map(|d| d.fields.binary_search(&field).is_ok())
            .collect();
        let total = present.iter().filter(|x| **x).count();
        if total == 0 || total == m {
            continue;
        }
        if let Some(flip) = flip(field, &present, |cut| {
            cut >= side && m - cut >= side && docs[cut - 1].time != docs[cut].time
        }) {
            flips.push(flip);
        }
    }
    if flips.is_empty() {
        return None;
    }
    flips.sort_by_key(|f| (f.cut, f.field));
    // Flips close together are one change.
    let mut groups: Vec<Vec<Flip>> = Vec::new();
    for f in flips {
        match groups.last_mut() {
            Some(g) if ((f.cut - g[0].cut) as u64) * 1000 <= SAME_CHANGE * m as u64 => g.push(f),
            _ => groups.push(vec![f]),
        }
    }
    groups.truncate(MAX_CHANGES);
    let mut changes = Vec::new();
    let mut cuts = Vec::new();
    for g in &groups {
        let cut = g[g.len() / 2].cut;
        let name = |f: &Flip| p.names[f.field as usize].clone();
        let mut added: Vec<String> = g.iter().filter(|f| f.added).map(name).collect();
        let mut removed: Vec<String> = g.iter().filter(|f| !f.added).map(name).collect();
        added.sort();
        removed.sort();
        let agreement = g.iter().map(|f| f.agreement).min().unwrap_or(0) as f64 / 1000.0;
        let secs = docs[cut].time.unwrap_or(0);
        changes.push(SchemaChange {
            at: DateTime::from_millis(i64::from(secs) * 1000),
            added,
            removed,
            before: cut as u64,
            after: (m - cut) as u64,
            agreement,
        });
        cuts.push(cut);
    }
    // The versions: the documents between two changes.
    let mut versions = Vec::new();
    let mut start = 0;
    for (i, end) in cuts.iter().copied().chain([m]).enumerate() {
        let (documents, always, sometimes) = fields_of(p, docs[start..end].iter().copied(), None);
        versions.push(VersionShape {
            version: i as i64 + 1,
            documents,
            always,
            sometimes,
            added: Vec::new(),
            removed: Vec::new(),
        });
        start = end;
    }
    diff(&mut versions);
    let strong = changes
        .iter()
        .all(|c| c.agreement >= 0.99 && c.before.min(c.after) >= 50);
    let confidence = if strong {
        Confidence::High
    } else {
        Confidence::Medium
    };
    let said: Vec<String> = (changes.iter())
        .map(|c| {
            let mut what = Vec::new();
            if !c.added.is_empty() {
                what.push(format!("{} appear", quoted(&c.added)));
            }
            if !c.removed.is_empty() {
                what.push(format!("{} disappear", quoted(&c.removed)));
            }
            format!(
                "from {} on, {} ({} sampled documents before, {} after, {:.1}% on their side)",
                c.at.try_to_rfc3339_string().unwrap_or_default(),
                what.join(" and "),
                c.before,
                c.after,
                c.agreement * 100.0
            )
        })
        .collect();
    let reason = format!(
        "the field sets changed over the `_id`s' time, with no version field: {}",
        said.join("; ")
    );
    let evidence = VersioningEvidence {
        field: None,
        versions: versions.clone(),
        unversioned: p.documents,
        changes,
    };
    let mut f = Finding::new(Evidence::SchemaVersioning(evidence), confidence, reason);
    f.code = Some(code(s, &versions, None, true));
    f.commands = vec![s
        .coll
        .command(&["analyze", "versions", "--collection", s.coll.name])];
    f.notes.push(format!(
        "No document stores a version yet: each is read as version 1 (`unversioned`), whatever its shape, so \
         version 1's type has every field seen (`Option` where some documents lack it) and its conversion \
         tells the shapes apart. {}",
        sweep_note(s)
    ));
    Some(f)
}

fn quoted(fs: &[String]) -> String {
    fs.iter()
        .map(|f| format!("`{f}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The versions' types: one per older version (its fields; with `union`, the one older
/// version holds every field seen, since no document says its version), a type alias for a
/// version no sampled document stores, the current struct with its derive, and each
/// conversion (`todo!()` where a field must be computed from the older ones).
fn code(s: &Sample<'_>, versions: &[VersionShape], field: Option<&str>, union: bool) -> String {
    let shape = &s.profile.shape;
    let mut code = Code::default();
    code.uses("pattern_core::Document");
    code.uses("serde::{Deserialize, Serialize}");
    let base = type_ident(&singular(s.coll.name));
    let name = code.type_name(&base);
    let current = versions.last().expect("two versions at least");
    let first = versions[0].version;
    // Each version's type, `None` for an alias of the one before.
    let mut declared: Vec<Declared> = Vec::new();
    let by_version: BTreeMap<i64, &VersionShape> =
        versions.iter().map(|v| (v.version, v)).collect();
    // The fields of version `v`'s documents; `None`: of every sampled document.
    let fields_for = |code: &mut Code, v: Option<&VersionShape>| -> Vec<(String, RustField)> {
        let mut names = BTreeSet::new();
        let mut out = Vec::new();
        for (stored, f) in shape.ordered() {
            if Some(stored.as_str()) == field {
                continue;
            }
            let (always, some) = match v {
                Some(v) => (
                    v.always.contains(stored),
                    v.sometimes.iter().any(|(x, _)| x == stored),
                ),
                None => (f.present == shape.count, true),
            };
            if !(always || some) {
                continue;
            }
            let base = code.base_type(f, stored);
            let ty = if always && f.non_null() == f.present {
                base
            } else {
                format!("Option<{base}>")
            };
            out.push((stored.clone(), code.field(stored, ty, &mut names)));
        }
        out
    };
    let older: Vec<i64> = if union {
        vec![1]
    } else {
        (first..current.version).collect()
    };
    for v in older {
        let type_name = code.type_name(&format!("{base}V{v}"));
        let fields = if union {
            Some(fields_for(&mut code, None))
        } else {
            by_version
                .get(&v)
                .map(|shape_v| fields_for(&mut code, Some(shape_v)))
        };
        declared.push((v, type_name, fields));
    }
    let current_version = if union { 2 } else { current.version };
    let current_fields = fields_for(&mut code, Some(current));
    for (v, type_name, fields) in &declared {
        match fields {
            Some(fields) => code.push_struct(&Item {
                doc: vec![if union {
                    "Version 1: every document stored before versioning, whatever its shape.".to_owned()
                } else {
                    format!("Version {v}, as stored.")
                }],
                derives: vec!["Debug", "Deserialize"],
                attrs: vec!["#[allow(dead_code)] // read by the conversion".into()],
                name: type_name.clone(),
                fields: fields.iter().map(|(_, f)| clone_field(f)).collect(),
            }),
            None => code.push(format!(
                "/// Version {v}: no sampled document stores it; as version {}.\ntype {type_name} = {};\n",
                v - 1,
                declared
                    .iter()
                    .rev()
                    .find(|(w, _, f)| *w < *v && f.is_some())
                    .map_or(String::new(), |(_, n, _)| n.clone())
            )),
        }
    }
    let previous: Vec<String> = (declared.iter())
        .map(|(v, n, _)| format!("{n} = {v}"))
        .collect();
    let version_field = match field {
        Some(f) if f != "schema_version" => format!(", version_field = {}", string_literal(f)),
        _ => String::new(),
    };
    code.push_struct(&Item {
        doc: vec![format!("Version {current_version}: what this build writes.")],
        derives: vec!["Document", "Serialize", "Deserialize"],
        attrs: vec![format!(
            "#[document(collection = {}, version = {current_version}, previous({}){version_field})]",
            string_literal(s.coll.name),
            previous.join(", ")
        )],
        name: name.clone(),
        fields: current_fields.iter().map(|(_, f)| clone_field(f)).collect(),
    });
    // Each conversion, from the last declared struct before a struct (or the current type).
    let mut targets: Vec<(String, &Vec<(String, RustField)>)> = (declared.iter())
        .filter_map(|(_, n, f)| f.as_ref().map(|f| (n.clone(), f)))
        .collect();
    targets.push((name.clone(), &current_fields));
    for pair in targets.windows(2) {
        let ((from, old), (to, new)) = (&pair[0], &pair[1]);
        code.push(conversion(from, old, to, new));
    }
    code.render()
}

/// An older version: its number, its type's name, and its fields (stored name, field), `None`
/// for an alias of the version before.
type Declared = (i64, String, Option<Vec<(String, RustField)>>);

fn clone_field(f: &RustField) -> RustField {
    RustField {
        doc: f.doc.clone(),
        attrs: f.attrs.clone(),
        name: f.name.clone(),
        ty: f.ty.clone(),
    }
}

/// `impl From<Old> for New`: the fields kept moved over, the added optional ones `None`;
/// when a field must be computed from the older ones, a `todo!()` that says which (never a
/// made-up value a sweep would write).
fn conversion(
    from: &str,
    old: &[(String, RustField)],
    to: &str,
    new: &[(String, RustField)],
) -> String {
    let find = |stored: &str| old.iter().find(|(s, _)| s == stored).map(|(_, f)| f);
    let mut lines = Vec::new();
    let mut to_fill = Vec::new();
    for (stored, f) in new {
        match find(stored) {
            Some(o) if o.ty == f.ty => lines.push(format!("{}: old.{},", f.name, o.name)),
            _ if f.ty.starts_with("Option<") && find(stored).is_none() => {
                lines.push(format!("{}: None,", f.name))
            }
            _ => to_fill.push(format!("`{stored}`")),
        }
    }
    let left: Vec<String> = (old.iter())
        .filter(|(s, _)| !new.iter().any(|(n, _)| n == s))
        .map(|(s, _)| format!("`{s}`"))
        .collect();
    let mut out = format!("impl From<{from}> for {to} {{\n    fn from(old: {from}) -> Self {{\n");
    if to_fill.is_empty() {
        if !left.is_empty() {
            out.push_str(&format!("        // Left behind: {}.\n", left.join(", ")));
        }
        out.push_str(&format!("        {to} {{\n"));
        for l in &lines {
            out.push_str(&format!("            {l}\n"));
        }
        out.push_str("        }\n");
    } else {
        out.push_str(&format!("        // {to} {{\n"));
        for l in &lines {
            out.push_str(&format!("        //     {l}\n"));
        }
        out.push_str(&format!(
            "        //     ...and {} from the old fields\n        // }}\n",
            to_fill.join(", ")
        ));
        let from_left = if left.is_empty() {
            String::new()
        } else {
            format!(" (left behind: {})", left.join(", "))
        };
        out.push_str(&format!(
            "        let _ = old;\n        todo!(\"{to}'s {} from {from}'s fields{from_left}\")\n",
            to_fill.join(", ").replace('"', "\\\"")
        ));
    }
    out.push_str("    }\n}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The flip of one field held by the documents at `holding` of `m` (in time order), any cut
    /// leaving at least 10 documents on each side allowed: (cut, added, agreement).
    fn flip_of(m: usize, holding: impl IntoIterator<Item = usize>) -> Option<(usize, bool, u64)> {
        let mut present = vec![false; m];
        for i in holding {
            present[i] = true;
        }
        flip(0, &present, |cut| cut >= 10 && m - cut >= 10).map(|f| (f.cut, f.added, f.agreement))
    }

    #[test]
    fn a_change_needs_most_documents_on_each_side() {
        // `sample_mflix.users`: one document of 185 holds `preferences`, the 181st. Over the
        // collection 95.1% agree with a cut before the ten newest, but on the side after it only
        // one document of ten holds the field.
        assert_eq!(flip_of(185, [180]), None);
        // A field the newest 100 of 200 hold appears at the 101st; one the oldest 100 hold
        // disappears there.
        assert_eq!(flip_of(200, 100..200), Some((100, true, 1_000)));
        assert_eq!(flip_of(200, 0..100), Some((100, false, 1_000)));
        // Five of the 100 older documents holding it too: 95% on that side, still a change.
        let early = [10, 30, 50, 70, 90];
        assert_eq!(
            flip_of(200, early.into_iter().chain(100..200)),
            Some((100, true, 950))
        );
        // Six: 94%, none.
        let early = [10, 25, 40, 55, 70, 85];
        assert_eq!(flip_of(200, early.into_iter().chain(100..200)), None);
        // Half of the newer documents holding it: most of that side does not.
        assert_eq!(flip_of(200, (100..200).step_by(2)), None);
    }
}
