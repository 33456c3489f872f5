//! The shape of a series in its collection, which the store contract and the engine share:
//! its indexes, the filters that find a key's documents (and its open one), the update that
//! pushes to it, the document that opens it, and the time-named `_id`s of buckets.
//! [`Store::push_open`](super::Store::push_open)'s default implementation sends exactly these.

use bson::{Bson, Document};

use crate::query::{Filter, IndexSpec, Path, Update};
use crate::spec::SeriesSpec;

impl SeriesSpec {
    /// The indexes the series needs: `{key, seq, _id}`, which orders a key's documents and
    /// serves every read by key (the newest document is its last entry); one on
    /// `{key, seq: -1, _id: -1}` partial on `count < size`, which holds only open documents,
    /// newest first: how a push finds its document, or finds there is none, in one index probe
    /// however long the series (it both filters and sorts, so the server's planner picks it
    /// without a hint: SecantusDB's hinted queries cost in proportion to the collection); and a
    /// unique one on `{key, seq}` (documents without `seq` aside) that admits one document
    /// `n + 1`. `seq` never changes once written, so that partial index never sees a document
    /// leave its filter (the test server mishandles unique partial indexes that do).
    ///
    /// The open-document index is named to sort before any other index on the key
    /// (`0_pattern_open_...`): SecantusDB tries a query's candidate indexes in name order, and
    /// with `{key, seq, _id}` first it walks every document of the key before the open one, so
    /// a push would cost in proportion to the key's history. A real mongod plans both orders
    /// alike.
    pub fn indexes(&self) -> Vec<IndexSpec> {
        let (k, seq) = (self.key_field, self.order.field());
        vec![
            IndexSpec {
                name: self.read_index_name(),
                keys: vec![(k.into(), 1), (seq.into(), 1), ("_id".into(), 1)],
                unique: false,
                partial: None,
            },
            IndexSpec {
                name: self.open_index_name(),
                keys: self.open_keys().map(|(k, d)| (k.to_owned(), d)).to_vec(),
                unique: false,
                partial: Some(self.open_partial()),
            },
            IndexSpec {
                name: format!("pattern_{k}_1_{seq}_-1_unique"),
                keys: vec![(k.into(), 1), (seq.into(), -1)],
                unique: true,
                partial: Some(Filter::Exists(seq.into(), true)),
            },
        ]
    }

    /// The open-document index's keys: the key, then the newest document first.
    pub(crate) fn open_keys(&self) -> [(&'static str, i32); 3] {
        [(self.key_field, 1), (self.order.field(), -1), ("_id", -1)]
    }

    /// The open-document index's partial filter, which the push's query also carries: the
    /// documents with room (`count < size`).
    pub(crate) fn open_partial(&self) -> Filter {
        Filter::Lt(self.count_field.into(), Bson::Int32(self.size as i32))
    }

    /// Whether `index` is this series' open-document index (by its keys and filter, whatever
    /// its name): the index a store may read the open document from.
    /// Every push asks, so it compares in place rather than building
    /// [`SeriesSpec::open_partial`] (the unit test below checks the two agree).
    #[inline]
    pub(crate) fn is_open_index(&self, index: &IndexSpec) -> bool {
        let keys = self.open_keys();
        matches!(&index.partial, Some(Filter::Lt(p, Bson::Int32(n)))
                if i64::from(*n) == i64::from(self.size) && p == self.count_field)
            && index.keys.len() == keys.len()
            && (index.keys.iter().zip(keys)).all(|((k, d), (l, e))| k == l && *d == e)
    }

    pub(crate) fn read_index_name(&self) -> String {
        format!(
            "pattern_{}_1_{}_1__id_1",
            self.key_field,
            self.order.field()
        )
    }

    pub(crate) fn open_index_name(&self) -> String {
        format!("{}{}", self.open_index_prefix(), self.size)
    }

    pub(crate) fn open_index_prefix(&self) -> String {
        let (k, seq, count) = (self.key_field, self.order.field(), self.count_field);
        format!("0_pattern_open_{k}_{seq}_{count}_lt_")
    }

    /// Indexes of earlier versions or settings, dropped when found: the open-document index
    /// for another `size`, the `{key, _id}` index of unnumbered buckets, and `{key, seq}`.
    pub(crate) fn stale_prefixes(&self) -> Vec<String> {
        let k = self.key_field;
        vec![
            self.open_index_prefix(),
            format!(
                "pattern_open_{k}_{}_{}_lt_",
                self.order.field(),
                self.count_field
            ),
            format!("pattern_open_{}_{}_lt_", k, self.count_field),
            format!("pattern_{k}_1__id_1"),
            format!("pattern_{k}_1_{}_1", self.order.field()),
        ]
    }

    pub(crate) fn by_key(&self, key: &Bson) -> Filter {
        Filter::Eq(self.key_field.into(), key.clone())
    }

    /// A document of the series: its number is absent (the unnumbered documents that come
    /// first) or a number. A document whose number field holds anything else (a string, null,
    /// an array: written by another tool) is not part of the series: no read returns or
    /// counts it and no push writes to it.
    pub(crate) fn in_series(&self) -> Filter {
        Filter::NumberOrMissing(self.order.field().into())
    }

    /// The key's documents ([`SeriesSpec::in_series`]), with `more` conditions.
    pub(crate) fn docs_of(&self, key: &Bson, more: impl IntoIterator<Item = Filter>) -> Filter {
        let mut all = vec![self.by_key(key), self.in_series()];
        all.extend(more);
        Filter::And(all)
    }

    /// The key's documents in order: unnumbered ones first (by `_id`), then by number.
    pub(crate) fn sort(&self) -> Vec<(Path, i32)> {
        vec![(self.order.field().into(), 1), ("_id".into(), 1)]
    }

    /// Newest document first.
    pub(crate) fn newest_first(&self) -> [(Path, i32); 2] {
        [(self.order.field().into(), -1), ("_id".into(), -1)]
    }

    /// The key's open documents (`count < size`).
    pub(crate) fn open(&self, key: &Bson) -> Filter {
        Filter::And(vec![
            self.by_key(key),
            self.open_partial(),
            self.in_series(),
        ])
    }

    pub(crate) fn push_update(&self, items: Vec<Bson>) -> Update {
        Update {
            inc: vec![(self.count_field.into(), items.len() as i32)],
            push: vec![(self.items_field.into(), items)],
            ..Update::default()
        }
    }

    /// A new document holding `items`: `_id`, the key, then the other fields in the
    /// lexicographic order MongoDB gives the fields an upsert creates.
    pub(crate) fn new_doc(&self, key: &Bson, id: Bson, seq: i64, items: &[Bson]) -> Document {
        self.new_doc_taking(key, id, seq, &mut items.to_vec())
    }

    /// [`SeriesSpec::new_doc`], moving `items` into it. Its array has room for a full
    /// document of up to 16 items (a few reallocations saved for the pushes that fill it, at
    /// most 16 slots of 112 bytes held by a document that stays small).
    pub(crate) fn new_doc_taking(
        &self,
        key: &Bson,
        id: Bson,
        seq: i64,
        items: &mut Vec<Bson>,
    ) -> Document {
        let room = (self.size as usize).clamp(items.len(), items.len().max(16));
        let mut array = Vec::with_capacity(room);
        array.append(items);
        let mut fields = [
            (self.count_field, Bson::Int32(array.len() as i32)),
            (self.items_field, Bson::Array(array)),
            (self.order.field(), Bson::Int64(seq)),
        ];
        fields.sort_by(|a, b| a.0.cmp(b.0));
        let mut doc = Document::new();
        doc.insert("_id", id);
        doc.insert(self.key_field, key.clone());
        for (k, v) in fields {
            doc.insert(k, v);
        }
        doc
    }
}

/// The `_id` of a [`SeriesOrder::TimeId`](crate::SeriesOrder::TimeId) document: `<prefix>_<seconds>`, then `_<suffix>`
/// in at least 6 digits unless `suffix` is 0. Written digit by digit: every push computes the
/// `_id` of the document it may open, and `format!` costs several times more.
pub fn bucket_id(prefix: &str, seconds: i64, suffix: u32) -> String {
    let mut id = String::with_capacity(prefix.len() + 28);
    id.push_str(prefix);
    id.push('_');
    if seconds < 0 {
        id.push('-');
    }
    push_digits(&mut id, seconds.unsigned_abs(), 1);
    if suffix != 0 {
        id.push('_');
        push_digits(&mut id, u64::from(suffix), 6);
    }
    id
}

/// Appends `n` in decimal, zero-padded to at least `width` digits (at most 20).
fn push_digits(out: &mut String, mut n: u64, width: usize) {
    let mut buf = [b'0'; 20];
    let mut start = buf.len();
    while n > 0 || start > buf.len() - width.clamp(1, 20) {
        start -= 1;
        buf[start] = b'0' + (n % 10) as u8;
        n /= 10;
    }
    out.push_str(std::str::from_utf8(&buf[start..]).expect("ASCII digits"));
}

#[cfg(test)]
mod tests {
    use super::bucket_id;
    use crate::spec::{SeriesOrder, SeriesSpec};

    /// Exactly one of the series' indexes is its open-document index, the one the in-memory
    /// store's native push reads: a change to the indexes that loses it fails here, not
    /// silently on the slow path.
    #[test]
    fn one_index_is_the_open_index() {
        for order in [SeriesOrder::TimeId("page"), SeriesOrder::Seq("seq")] {
            let spec = SeriesSpec {
                collection: "c",
                key_field: "k",
                items_field: "items",
                count_field: "count",
                size: 10,
                order,
            };
            let open: Vec<_> = spec
                .indexes()
                .into_iter()
                .filter(|i| spec.is_open_index(i))
                .collect();
            assert_eq!(open.len(), 1);
            assert_eq!(open[0].name, spec.open_index_name());
            let other = SeriesSpec { size: 11, ..spec };
            assert!(!other.is_open_index(&open[0]));
        }
    }

    #[test]
    pub(crate) fn bucket_id_is_the_formatted_id() {
        let seconds = [
            0,
            1,
            9,
            10,
            1_698_335_223,
            -1,
            -1_698_335_223,
            i64::MAX,
            i64::MIN,
        ];
        let suffixes = [0, 1, 42, 999_999, 1_000_000, u32::MAX];
        for prefix in ["", "123", "a_b"] {
            for s in seconds {
                for x in suffixes {
                    let want = if x == 0 {
                        format!("{prefix}_{s}")
                    } else {
                        format!("{prefix}_{s}_{x:06}")
                    };
                    assert_eq!(bucket_id(prefix, s, x), want);
                }
            }
        }
    }
}
