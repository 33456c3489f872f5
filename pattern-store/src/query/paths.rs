//! Dotted paths through arrays of documents, as MongoDB's indexes read them: `specs.k` over
//! `specs: [{k: "a"}, {k: "b"}]` is `"a"` and `"b"`, where
//! [`get_path`](super::eval::get_path) reads one value (`a.3` an element by position). The
//! in-memory indexes hold a row of values per element, the paths under one array taking
//! their values from the same element, so that an `$elemMatch` on the array bounds them
//! together, as MongoDB's compound multikey bounds do. A filter reads them as MongoDB's
//! query matching does ([`reached`]): a condition on `specs.k` holds when it holds for one
//! element's `k`.

use bson::{Bson, Document};

/// Where a path leads in a document.
enum Walk<'a> {
    /// A value (an array at the end of the path whole).
    Value(&'a Bson),
    /// Nothing: a missing field, or a scalar on the way.
    Missing,
    /// An array of the path's first `prefix` bytes, with the path left after it (`rest`) to
    /// read in each of its elements.
    Array {
        prefix: usize,
        array: &'a [Bson],
        rest: &'a str,
    },
}

/// Follows `path` in `doc` down to its value, or to the first array it must read inside (a
/// numeric segment over an array reads that element, as [`get_path`](super::eval::get_path)).
fn walk<'a>(doc: &'a Document, path: &'a str) -> Walk<'a> {
    let mut at = path.find('.').unwrap_or(path.len());
    let Some(mut cur) = doc.get(&path[..at]) else {
        return Walk::Missing;
    };
    while at < path.len() {
        let rest = &path[at + 1..];
        let end = rest.find('.').unwrap_or(rest.len());
        let part = &rest[..end];
        cur = match cur {
            Bson::Document(d) => match d.get(part) {
                Some(v) => v,
                None => return Walk::Missing,
            },
            Bson::Array(a) => match part.parse::<usize>().ok().and_then(|i| a.get(i)) {
                Some(v) => v,
                None => {
                    return Walk::Array {
                        prefix: at,
                        array: a,
                        rest,
                    }
                }
            },
            _ => return Walk::Missing,
        };
        at += 1 + end;
    }
    Walk::Value(cur)
}

/// Whether `path` must read inside an array of `doc` to reach its values: then
/// [`get_path`](super::eval::get_path) finds none, and `values` and [`rows`] find them.
pub fn through_array(doc: &Document, path: &str) -> bool {
    matches!(walk(doc, path), Walk::Array { .. })
}

/// What `path` reaches in `doc`, as a query condition on it reads the document: the value at
/// its end (an array there whole; `None` for nothing), or, where the path passes through an
/// array of documents, what the rest of it reaches in each element, one after another (an
/// element that is not a document reaches nothing: `None`; an empty array, nothing at all).
/// A condition holds when it holds for one of them; `$ne` and `$exists: false`, when `$eq`
/// and `$exists: true` hold for none.
pub fn reached<'a>(doc: &'a Document, path: &'a str, out: &mut Vec<Option<&'a Bson>>) {
    match walk(doc, path) {
        Walk::Value(v) => out.push(Some(v)),
        Walk::Missing => out.push(None),
        Walk::Array { array, rest, .. } => {
            for e in array {
                match e {
                    Bson::Document(d) => reached(d, rest, out),
                    _ => out.push(None),
                }
            }
        }
    }
}

/// The rows of values an index on `paths` holds for `doc`, each with one value per path
/// (`null` where it has none; an array at the end of a path whole). Paths that pass through
/// one array of documents take their values from one element at a time: a row per element
/// (an empty array: one row of nulls). Paths through different arrays, a row per combination.
pub fn rows(doc: &Document, paths: &[&str]) -> Vec<Vec<Bson>> {
    let keyed: Vec<(usize, &str)> = paths.iter().copied().enumerate().collect();
    let mut out = Vec::new();
    for assigned in assignments(doc, &keyed) {
        let mut row = vec![Bson::Null; paths.len()];
        for (i, v) in assigned {
            row[i] = v.clone();
        }
        out.push(row);
    }
    out
}

/// An array some paths read inside: its prefix, its elements, and the paths' positions and
/// rests under it.
type Inside<'a> = (&'a str, &'a [Bson], Vec<(usize, &'a str)>);

/// The values of `keys` (`(position, path)`) in `doc`: one assignment per row.
fn assignments<'a>(doc: &'a Document, keys: &[(usize, &'a str)]) -> Vec<Vec<(usize, &'a Bson)>> {
    let mut base: Vec<(usize, &Bson)> = Vec::new();
    let mut arrays: Vec<Inside> = Vec::new();
    for &(i, path) in keys {
        match walk(doc, path) {
            Walk::Value(v) => base.push((i, v)),
            Walk::Missing => {}
            Walk::Array {
                prefix,
                array,
                rest,
            } => match arrays.iter_mut().find(|(p, ..)| *p == &path[..prefix]) {
                Some((.., under)) => under.push((i, rest)),
                None => arrays.push((&path[..prefix], array, vec![(i, rest)])),
            },
        }
    }
    let mut out = vec![base];
    for (_, array, under) in arrays {
        let mut each: Vec<Vec<(usize, &Bson)>> = Vec::new();
        for e in array {
            match e {
                Bson::Document(d) => each.extend(assignments(d, &under)),
                _ => each.push(Vec::new()),
            }
        }
        if each.is_empty() {
            each.push(Vec::new()); // an empty array: nulls
        }
        out = out
            .iter()
            .flat_map(|row| {
                each.iter().map(move |more| {
                    let mut row = row.clone();
                    row.extend(more.iter().copied());
                    row
                })
            })
            .collect();
    }
    out
}

#[cfg(test)]
mod tests {
    use bson::{bson, doc, Bson};

    use super::*;

    #[test]
    fn through_arrays_of_documents_only() {
        let d = doc! {"a": {"b": 1}, "s": [{"k": "x"}], "t": [1, 2]};
        assert!(through_array(&d, "s.k") && through_array(&d, "t.k"));
        assert!(!through_array(&d, "a.b") && !through_array(&d, "a.c"));
        assert!(
            !through_array(&d, "s.0.k") && !through_array(&d, "s") && !through_array(&d, "u.v")
        );
    }

    #[test]
    fn rows_take_one_element_at_a_time() {
        let d = doc! {"t": 7, "s": [{"k": "x", "v": 1}, {"k": "y", "v": 2}, 5], "e": []};
        assert_eq!(
            rows(&d, &["s.k", "t", "s.v"]),
            [
                vec![bson!("x"), bson!(7), bson!(1)],
                vec![bson!("y"), bson!(7), bson!(2)],
                vec![Bson::Null, bson!(7), Bson::Null],
            ]
        );
        assert_eq!(rows(&d, &["e.k"]), [vec![Bson::Null]]);
        // Two arrays: a row per combination.
        let two = doc! {"a": [{"x": 1}, {"x": 2}], "b": [{"y": 3}]};
        assert_eq!(
            rows(&two, &["a.x", "b.y"]),
            [vec![bson!(1), bson!(3)], vec![bson!(2), bson!(3)]]
        );
    }
}
