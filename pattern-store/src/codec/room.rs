//! Documents with room for their fields from the start.
//!
//! bson's [`Document`] (an `IndexMap`) has no `with_capacity`: built field by field, it grows
//! its hash table and its entries as it goes (five fields: both allocated at the first,
//! both regrown at the fourth, the table rehashed). A clone of an empty document keeps the
//! capacity of its table, and its first insert reserves the entries to match: a document
//! cloned from an empty one with room for `n` fields takes two allocations and never grows
//! on the way to `n`.

use bson::{Bson, Document};

/// The largest number of fields [`with_room`] makes room for; past it, a plain
/// [`Document::new`].
const MOST: usize = 28;

/// The field counts whose hash tables differ: a table of `b` buckets holds `b * 7 / 8`
/// entries (up to 3 take the first table [`Document::new`] allocates: no room needed).
const CLASSES: [usize; 3] = [7, 14, MOST];

thread_local! {
    /// One empty document per class, cleared after `n` fields went in.
    static EMPTY: [Document; 3] = CLASSES.map(|n| {
        let mut doc = Document::new();
        for i in 0..n {
            doc.insert(i.to_string(), Bson::Null);
        }
        doc.clear();
        doc
    });
}

/// An empty document with room for `n` fields.
pub fn with_room(n: usize) -> Document {
    match CLASSES.iter().position(|&c| n <= c) {
        Some(class) if n > 3 => EMPTY.with(|e| e[class].clone()),
        _ => Document::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_with_room_is_empty_and_fills_as_any() {
        for n in [0, 1, 3, 4, 7, 8, 14, 15, 28, 29, 40] {
            let mut doc = with_room(n);
            assert!(doc.is_empty(), "{n}");
            for i in (0..n).rev() {
                doc.insert(format!("f{i}"), i as i64);
            }
            let mut plain = Document::new();
            for i in (0..n).rev() {
                plain.insert(format!("f{i}"), i as i64);
            }
            assert_eq!(doc, plain, "{n}");
            // The insertion order is the document's order.
            assert_eq!(
                doc.keys().next().cloned(),
                (n > 0).then(|| format!("f{}", n - 1))
            );
        }
    }
}
