//! The storage layouts the derives fill in: plain data, read by every layer above. A custom
//! layout (the `pattern` command line's, a test's) is built as these values.

pub use crate::codec::BsonType;
pub use crate::error::MAX_DOCUMENT_BYTES;
pub use crate::key::{EpochSeconds, IdRef, KeyPart, KeyRef};

/// How the documents of one key are numbered and named. Both number them in a field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SeriesOrder<'a> {
    /// Numbered in the given field; `_id = "<key>_<epoch seconds of the first item>"`: the
    /// seed's bucket layout. Two documents that would get the same `_id` (first items in the
    /// same second) are told apart by a suffix: `123_1698335223_000001`.
    TimeId(&'a str),
    /// Numbered in the given field; `_id` is an ObjectId (overflow chunks).
    Seq(&'a str),
}

impl<'a> SeriesOrder<'a> {
    /// The field numbering the documents.
    pub const fn field(&self) -> &'a str {
        match self {
            SeriesOrder::TimeId(f) | SeriesOrder::Seq(f) => f,
        }
    }
}

/// Where and how a series is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SeriesSpec<'a> {
    /// The collection of the series' documents.
    pub collection: &'a str,
    /// The field holding the key in every document (`customerId`, `book_id`).
    pub key_field: &'a str,
    /// The array field (`history`, `customers_purchased_extra`).
    pub items_field: &'a str,
    /// The field counting the items of the array (`count`).
    pub count_field: &'a str,
    /// Items per document, at least 1.
    pub size: u32,
    /// How a key's documents are numbered and named.
    pub order: SeriesOrder<'a>,
    /// What each document keeps of its items beside them (time bounds, a summary).
    pub keeps: Keeps<'a>,
}

/// An aggregate of one item field that a bucket keeps, updated by the push that adds the items
/// (`$inc`, `$min`, `$max` in the same update).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SummaryOp {
    /// The sum of the field's numbers (`$inc`).
    Sum,
    /// The smallest of the field's numbers (`$min`).
    Min,
    /// The largest of the field's numbers (`$max`).
    Max,
}

impl SummaryOp {
    /// The attribute's spelling (`sum`, `min`, `max`).
    pub const fn name(&self) -> &'static str {
        match self {
            SummaryOp::Sum => "sum",
            SummaryOp::Min => "min",
            SummaryOp::Max => "max",
        }
    }
}

/// One aggregate of a bucket's summary: `op` over the items' `item_field`, kept in the
/// bucket's top-level `field` (`qty_sum`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SummaryField<'a> {
    /// What it computes.
    pub op: SummaryOp,
    /// The item field's name in BSON (a top-level field of the item).
    pub item_field: &'a str,
    /// The bucket field holding the aggregate.
    pub field: &'a str,
}

/// What each document of a series keeps of its items beside them, maintained by the same
/// update that pushes the items.
///
/// A document opened by a writer that keeps them is marked complete for them: `bounded: true`
/// for the bounds, `summarized: [<field>, ...]` for the summary's aggregates. A document
/// without the mark (written before, or by other tools) may hold partial values, pushed
/// since: reads treat it as unbounded and compute its summary from its items.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Keeps<'a> {
    /// The fields of the earliest and latest item time (`<time>_min`, `<time>_max`, as BSON
    /// dates), or `None`.
    pub bounds: Option<(&'a str, &'a str)>,
    /// The summary's aggregates, in the order of the generated summary's fields.
    pub summary: &'a [SummaryField<'a>],
    /// The longest time one document covers, in milliseconds (`#[bucket(span = "1d")]`; needs
    /// `bounds`): time is cut into windows `[k * span, (k + 1) * span)` from the epoch, and a
    /// document holds items of one window only. A push goes to the key's open document of its
    /// item's window, or opens one; so a key has at most one open document per window, and a
    /// range read bounds its index scan on both sides (a document ending before `to + span`).
    /// `None`: a document takes items of any time until it is full.
    pub span: Option<i64>,
    /// `#[bucket(rollup)]`: the collection of the roll-ups (`<collection>.rollups`), where one
    /// document per key, `_id` the key, keeps the summary of the key's whole history, updated
    /// in the same command as every push (needs `summary`). A whole-history
    /// [`summary`](crate::bucket::summary) then reads one document. `None`: no roll-ups.
    pub rollup: Option<&'a str>,
}

impl Keeps<'_> {
    /// Nothing kept beside the items.
    pub const NONE: Keeps<'static> = Keeps {
        bounds: None,
        summary: &[],
        span: None,
        rollup: None,
    };

    /// Whether anything is kept beside the items.
    pub const fn is_none(&self) -> bool {
        self.bounds.is_none() && self.summary.is_empty()
    }

    /// The start of the window holding time `millis` (epoch milliseconds), when documents are
    /// cut by [`Keeps::span`].
    pub const fn window_of(&self, millis: i64) -> Option<i64> {
        match self.span {
            Some(span) if span > 0 => Some(millis.div_euclid(span) * span),
            _ => None,
        }
    }
}

/// A span written as the derive's `span = "..."` takes it: a whole number of `s`, `m`, `h` or
/// `d` from one second to 366 days (`"1d"`, `"15m"`), in milliseconds; `None` otherwise.
pub fn parse_span(text: &str) -> Option<i64> {
    let digits = text.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = match &text[digits.len()..] {
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return None,
    };
    let n = digits.parse::<i64>().ok().filter(|n| *n >= 1)?;
    n.checked_mul(unit).filter(|ms| *ms <= 366 * 86_400_000)
}

/// The field marking a bucket whose time bounds cover every item (`true`).
pub const BOUNDED_FIELD: &str = "bounded";
/// The field listing the summary fields of a bucket that cover every item.
pub const SUMMARIZED_FIELD: &str = "summarized";

/// The collection of marks `{_id: "<collection>", bounded: true}`: every bucket of that
/// collection carries complete time bounds, so range reads need not look for buckets without
/// them. Set by a process that creates the collection (every bucket will be written by writers
/// that keep the bounds), and by a `backfill` that completed every bucket. The mark also says
/// `numbered: true` when the library created the collection: every document it writes there
/// carries its number, and numbers are dense from 1 (`verify` reports a gap), so a key's
/// document 1 exists whenever the key has any and a key never seen opens it in one write.
pub const BOUNDED_COLLECTIONS: &str = "pattern_bounded";

/// Where and how a bucket series is stored (filled in by the derive).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BucketSpec<'a> {
    /// `#[bucket(collection = "trades")]`
    pub collection: &'a str,
    /// The key field's name in BSON (serde renames applied).
    pub key_field: &'a str,
    /// The items field's name in BSON.
    pub items_field: &'a str,
    /// `#[bucket(count = "count")]`
    pub count_field: &'a str,
    /// `#[bucket(page = "page")]`: the field numbering a key's buckets 1, 2, 3...
    pub page_field: &'a str,
    /// `#[bucket(size = 10)]`
    pub size: u32,
    /// Time bounds (with `time = "..."`) and `summary(...)`.
    pub keeps: Keeps<'a>,
}

/// The shard key a collection of a pattern should be sharded on, so that every per-key
/// operation of the pattern reaches one shard: `sh.shardCollection("<db>.<collection>",
/// {<field>: 1})`. A range key: the layouts' unique indexes (`{key, page}`, `{ref, seq}`) have
/// it as their prefix, which MongoDB requires of a unique index on a sharded collection (and
/// a hashed key would not allow them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ShardKey<'a> {
    /// The collection to shard.
    pub collection: &'a str,
    /// The shard key's one field.
    pub field: &'a str,
}

impl ShardKey<'_> {
    /// The key document: `{<field>: 1}`.
    pub fn key_document(&self) -> bson::Document {
        bson::doc! { self.field: 1 }
    }

    /// The admin command that shards the collection in database `db`.
    pub fn shard_collection_command(&self, db: &str) -> bson::Document {
        bson::doc! {
            "shardCollection": format!("{db}.{}", self.collection),
            "key": self.key_document(),
        }
    }
}

impl<'a> BucketSpec<'a> {
    /// The bucket collection's shard key: the series key (a key's buckets live on one shard;
    /// its pushes, page reads, ranges and summaries reach only that shard).
    pub const fn shard_keys(&self) -> [ShardKey<'a>; 1] {
        [ShardKey {
            collection: self.collection,
            field: self.key_field,
        }]
    }

    /// The series this bucket layout is an instance of.
    pub const fn series(&self) -> SeriesSpec<'a> {
        SeriesSpec {
            collection: self.collection,
            key_field: self.key_field,
            items_field: self.items_field,
            count_field: self.count_field,
            size: self.size,
            order: SeriesOrder::TimeId(self.page_field),
            keeps: self.keeps,
        }
    }
}

/// Where and how an outlier type is stored (filled in by the derive).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutlierSpec<'a> {
    /// `#[outlier(collection = "sales")]`
    pub collection: &'a str,
    /// The array field's name in BSON.
    pub items_field: &'a str,
    /// `#[outlier(threshold = 50)]`
    pub threshold: u32,
    /// `#[outlier(flag = "has_extras")]`
    pub flag_field: &'a str,
    /// The overflow chunks: `collection` from `overflow = "..."`, `key_field` from
    /// `owner = "..."` (default `<struct name in snake case>_id`), `items_field` from
    /// `extra = "..."` (default `<array>_extra`), size from `chunk`, ordered by `seq`.
    pub overflow: SeriesSpec<'a>,
}

impl<'a> OutlierSpec<'a> {
    /// The shard keys of the main collection (`_id`: every read and write of a parent is by
    /// its `_id`) and of the overflow collection (the parent reference: a parent's chunks live
    /// on one shard).
    pub const fn shard_keys(&self) -> [ShardKey<'a>; 2] {
        [
            ShardKey {
                collection: self.collection,
                field: "_id",
            },
            ShardKey {
                collection: self.overflow.collection,
                field: self.overflow.key_field,
            },
        ]
    }
}

/// The five ways of storing a tree in documents (the data-modeling article's models).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TreeModel {
    /// Each node holds its parent's id (`parent`, `null` for a root).
    ParentRefs,
    /// Each node holds its children's ids, in order (`children`).
    ChildRefs,
    /// Each node holds its ancestors' ids from the root down (`ancestors`) and its parent.
    Ancestors,
    /// Each node holds the ids of its ancestors as one string, `",Books,Programming,"`
    /// (`path`, `null` for a root).
    MaterializedPath,
    /// Each node holds its parent and its `left`/`right` numbers of a depth-first walk.
    NestedSet,
}

impl TreeModel {
    /// The attribute's spelling (`parent_refs`, ...).
    pub const fn name(&self) -> &'static str {
        match self {
            TreeModel::ParentRefs => "parent_refs",
            TreeModel::ChildRefs => "child_refs",
            TreeModel::Ancestors => "ancestors",
            TreeModel::MaterializedPath => "materialized_path",
            TreeModel::NestedSet => "nested_set",
        }
    }

    /// Every model, in the article's order.
    pub const ALL: [TreeModel; 5] = [
        TreeModel::ParentRefs,
        TreeModel::ChildRefs,
        TreeModel::Ancestors,
        TreeModel::MaterializedPath,
        TreeModel::NestedSet,
    ];
}

/// The names of the fields a tree model keeps in each node's document (the seed's names by
/// default). A model uses only some of them: parent references `parent`; child references
/// `children`; ancestors `ancestors` and `parent`; materialized paths `path`; nested sets
/// `parent`, `left` and `right`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TreeFields {
    /// The parent's id (parent references, ancestors, nested sets).
    pub parent: &'static str,
    /// The children's ids, in order (child references).
    pub children: &'static str,
    /// The ancestors' ids from the root down (ancestors).
    pub ancestors: &'static str,
    /// The ancestors' ids as one string (materialized paths).
    pub path: &'static str,
    /// The nested set's left number.
    pub left: &'static str,
    /// The nested set's right number.
    pub right: &'static str,
}

impl TreeFields {
    /// The seed's names: `parent`, `children`, `ancestors`, `path`, `left`, `right`.
    pub const SEED: TreeFields = TreeFields {
        parent: "parent",
        children: "children",
        ancestors: "ancestors",
        path: "path",
        left: "left",
        right: "right",
    };
}

/// Where and how a tree is stored (filled in by `#[derive(Tree)]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TreeSpec {
    /// The collection of the nodes, one document per node, `_id` = the node's id.
    pub collection: &'static str,
    /// Which of the five models stores it.
    pub model: TreeModel,
    /// The names of the fields the model keeps.
    pub fields: TreeFields,
    /// The deepest a node may be (a root is at depth 0), at least 1; `None`: unbounded.
    pub max_depth: Option<u32>,
}

impl TreeSpec {
    /// None: leave a tree's collection unsharded. It then lives on the database's primary
    /// shard beside `pattern_tree_versions`, so every operation reaches one shard and every
    /// write's transaction (which bumps the tree's version document) commits on that shard.
    /// Sharded by `_id` (the only key every model addresses nodes by), reads of one node stay on
    /// one shard but children, descendants and roots reach every shard in most models, and
    /// every write becomes a cross-shard transaction ([`guide::sharding`](crate::guide::sharding) has the table per
    /// model, checked by `tests/sharding.rs`). A category tree is small: one shard holds it.
    pub const fn shard_keys(&self) -> [ShardKey<'static>; 0] {
        []
    }

    /// A spec with the seed's field names and no depth limit.
    pub const fn new(collection: &'static str, model: TreeModel) -> Self {
        TreeSpec {
            collection,
            model,
            fields: TreeFields::SEED,
            max_depth: None,
        }
    }

    /// The same tree stored in another model (the field names and limit kept).
    pub const fn with_model(self, model: TreeModel) -> Self {
        TreeSpec { model, ..self }
    }
}

/// How a keyword array's keywords are normalised, on write and on query alike.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Normalize {
    /// Stored and looked up as given: `"Whaling"` and `"whaling"` are two keywords.
    #[default]
    AsIs,
    /// Lowercased (Unicode's lowercase mapping, `str::to_lowercase`) when written and when
    /// queried: `"Whaling"` finds `"whaling"`.
    Lowercase,
}

impl Normalize {
    /// `keyword` as stored.
    pub fn apply(self, keyword: &str) -> String {
        match self {
            Normalize::AsIs => keyword.to_owned(),
            Normalize::Lowercase => keyword.to_lowercase(),
        }
    }
}

/// A keyword array of a plain document (`#[document(keywords)]`): a `Vec<String>` field with a
/// multikey index `{<field>: 1}`, found by the keywords it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Keywords {
    /// The field's BSON name.
    pub field: &'static str,
    /// How its keywords are normalised, on write and on query.
    pub normalize: Normalize,
}
