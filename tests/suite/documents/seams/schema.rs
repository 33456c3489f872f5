//! The matrix's schema: one type per document feature that touches writes, each in its own
//! collection, every one of the same simple shape where it can be (`{_id, name, n}` and the
//! feature's own fields), so that one generic runner drives the single-collection features
//! and the model of each stored document is written out by hand, not by the library.

use std::collections::BTreeMap;

use bson::{doc, Bson, DateTime, Document as BsonDocument};
use pattern_core::document::{Attributes, Field};
use pattern_core::Reference;
use serde::{Deserialize, Serialize};

use super::super::*;

/// Version 1 of the versioned types: `label`, renamed `name` in version 2.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(super) struct Old {
    #[serde(rename = "_id")]
    pub(super) id: i64,
    pub(super) label: String,
    pub(super) n: i64,
}

/// What the single-collection types have in common: a name, a counter, and how the model
/// writes one down.
pub(super) trait Simple:
    Document<Id = i64> + Clone + std::fmt::Debug + PartialEq + 'static
{
    /// The counter every update path increments.
    const N: Field<Self, i64>;
    /// The row's name in the matrix.
    const ROW: &'static str;
    /// A value.
    fn make(id: i64, name: &str, n: i64) -> Self;
    /// Its stored fields as the model says the library stores them, but for the library's own
    /// fields (the version, the revision), which the runner adds.
    fn plain(&self) -> BsonDocument;
    /// The value an older build's document upgrades to (versioned types).
    fn upgraded(old: &Old) -> Self {
        Self::make(old.id, &old.label, old.n)
    }
    /// Its keyword array (`keywords(lowercase)`), when it has one.
    const TAGS: Option<Field<Self, Vec<String>>> = None;
    /// Its archive's collection, when it has the archive (`archive(age = placed, keep =
    /// pinned)`: an odd id is old, every fifth is pinned).
    const ARCHIVE_AT: &'static str = "";
}

macro_rules! simple {
    ($ty:ident, $row:literal, $($attr:tt)*) => {
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
        #[document($($attr)*)]
        pub(super) struct $ty {
            #[serde(rename = "_id")]
            pub(super) id: i64,
            pub(super) name: String,
            pub(super) n: i64,
        }

        impl Simple for $ty {
            const N: Field<Self, i64> = $ty::N;
            const ROW: &'static str = $row;
            fn make(id: i64, name: &str, n: i64) -> Self {
                $ty { id, name: name.into(), n }
            }
            fn plain(&self) -> BsonDocument {
                doc! {"_id": self.id, "name": self.name.clone(), "n": self.n}
            }
        }

        impl From<Old> for $ty {
            fn from(o: Old) -> Self {
                <$ty as Simple>::upgraded(&o)
            }
        }
    };
}

simple!(
    Versioned,
    "schema versioning",
    collection = "m_versioned",
    version = 2,
    previous(Old = 1)
);
simple!(
    WrittenBack,
    "schema versioning, write_back",
    collection = "m_written_back",
    version = 2,
    previous(Old = 1),
    write_back
);
simple!(
    Revised,
    "history",
    collection = "m_revised",
    history = "m_revised_past"
);
simple!(
    RevisedVersioned,
    "history with schema versioning",
    collection = "m_revised_versioned",
    history = "m_revised_versioned_past",
    version = 2,
    previous(Old = 1)
);
simple!(Plain, "validator only", collection = "m_plain");

/// Keywords, lowercased on write and on query.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "m_tagged")]
pub(super) struct Tagged {
    #[serde(rename = "_id")]
    pub(super) id: i64,
    pub(super) name: String,
    pub(super) n: i64,
    #[document(keywords(lowercase))]
    pub(super) tags: Vec<String>,
}

impl Simple for Tagged {
    const N: Field<Self, i64> = Tagged::N;
    const ROW: &'static str = "keywords";
    const TAGS: Option<Field<Self, Vec<String>>> = Some(Tagged::TAGS);
    fn make(id: i64, name: &str, n: i64) -> Self {
        let tags = name.split(' ').map(str::to_owned).collect();
        Tagged {
            id,
            name: name.into(),
            n,
            tags,
        }
    }
    fn plain(&self) -> BsonDocument {
        let tags: Vec<String> = self.tags.iter().map(|t| t.to_lowercase()).collect();
        doc! {"_id": self.id, "name": self.name.clone(), "n": self.n, "tags": tags}
    }
}

/// An approximate counter, written every 3 increments.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "m_counted")]
pub(super) struct Counted {
    #[serde(rename = "_id")]
    pub(super) id: i64,
    pub(super) name: String,
    pub(super) n: i64,
    #[document(approximate(every = 3))]
    pub(super) views: i64,
}

impl Simple for Counted {
    const N: Field<Self, i64> = Counted::N;
    const ROW: &'static str = "approximate counter";
    fn make(id: i64, name: &str, n: i64) -> Self {
        Counted {
            id,
            name: name.into(),
            n,
            views: 0,
        }
    }
    fn plain(&self) -> BsonDocument {
        doc! {"_id": self.id, "name": self.name.clone(), "n": self.n, "views": self.views}
    }
}

/// The archive by age: placed before the cut-off and not pinned, it moves.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "m_orders", archive(age = placed, pin = pinned))]
pub(super) struct Order {
    #[serde(rename = "_id")]
    pub(super) id: i64,
    pub(super) name: String,
    pub(super) n: i64,
    pub(super) placed: DateTime,
    pub(super) pinned: bool,
}

/// Orders of an odd id are old (placed at the epoch); every fifth is pinned.
impl Simple for Order {
    const N: Field<Self, i64> = Order::N;
    const ROW: &'static str = "archive";
    const ARCHIVE_AT: &'static str = ORDERS_ARCHIVE;
    fn make(id: i64, name: &str, n: i64) -> Self {
        let placed = if id % 2 == 1 { 0 } else { 4_000_000_000_000 };
        Order {
            id,
            name: name.into(),
            n,
            placed: DateTime::from_millis(placed),
            pinned: id % 5 == 0,
        }
    }
    fn plain(&self) -> BsonDocument {
        doc! {
            "_id": self.id, "name": self.name.clone(), "n": self.n,
            "placed": self.placed, "pinned": self.pinned,
        }
    }
}

/// A pair of single-collection features on one type (issue 67): every field of the rows
/// above, a field's feature given by its attributes (`tags: [#[document(keywords(lowercase))]]`,
/// `views: [#[document(approximate(every = 3))]]`, or none), the type's by `#[document(...)]`.
macro_rules! pair {
    (
        $ty:ident, $row:literal,
        tags: [$(#[$tags:meta])*], views: [$(#[$views:meta])*], archive: $archive:expr,
        $($attr:tt)*
    ) => {
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
        #[document($($attr)*)]
        pub(super) struct $ty {
            #[serde(rename = "_id")]
            pub(super) id: i64,
            pub(super) name: String,
            pub(super) n: i64,
            $(#[$tags])*
            pub(super) tags: Vec<String>,
            $(#[$views])*
            pub(super) views: i64,
            pub(super) placed: DateTime,
            pub(super) pinned: bool,
        }

        impl Simple for $ty {
            const N: Field<Self, i64> = $ty::N;
            const ROW: &'static str = $row;
            const TAGS: Option<Field<Self, Vec<String>>> =
                if $ty::KEYWORDS.is_empty() { None } else { Some($ty::TAGS) };
            const ARCHIVE_AT: &'static str = $archive;
            fn make(id: i64, name: &str, n: i64) -> Self {
                let placed = if id % 2 == 1 { 0 } else { 4_000_000_000_000 };
                $ty {
                    id,
                    name: name.into(),
                    n,
                    tags: name.split(' ').map(str::to_owned).collect(),
                    views: 0,
                    placed: DateTime::from_millis(placed),
                    pinned: id % 5 == 0,
                }
            }
            fn plain(&self) -> BsonDocument {
                let tags: Vec<String> = if $ty::KEYWORDS.is_empty() {
                    self.tags.clone()
                } else {
                    self.tags.iter().map(|t| t.to_lowercase()).collect()
                };
                doc! {
                    "_id": self.id, "name": self.name.clone(), "n": self.n, "tags": tags,
                    "views": self.views, "placed": self.placed, "pinned": self.pinned,
                }
            }
        }

        impl From<Old> for $ty {
            fn from(o: Old) -> Self {
                <$ty as Simple>::upgraded(&o)
            }
        }
    };
}

pair!(
    VersionedTagged, "schema versioning × keywords",
    tags: [#[document(keywords(lowercase))]], views: [], archive: "",
    collection = "p_versioned_tagged", version = 2, previous(Old = 1)
);
pair!(
    VersionedCounted, "schema versioning × approximate counter",
    tags: [], views: [#[document(approximate(every = 3))]], archive: "",
    collection = "p_versioned_counted", version = 2, previous(Old = 1)
);
pair!(
    VersionedArchived, "schema versioning × archive",
    tags: [], views: [], archive: "p_versioned_archived_archive",
    collection = "p_versioned_archived", version = 2, previous(Old = 1),
    archive(age = placed, pin = pinned)
);
pair!(
    RevisedTagged, "history × keywords",
    tags: [#[document(keywords(lowercase))]], views: [], archive: "",
    collection = "p_revised_tagged", history = "p_revised_tagged_past"
);
pair!(
    RevisedArchived, "history × archive",
    tags: [], views: [], archive: "p_revised_archived_archive",
    collection = "p_revised_archived", history = "p_revised_archived_past",
    archive(age = placed, pin = pinned)
);
pair!(
    TaggedCounted, "keywords × approximate counter",
    tags: [#[document(keywords(lowercase))]], views: [#[document(approximate(every = 3))]],
    archive: "",
    collection = "p_tagged_counted"
);
pair!(
    TaggedArchived, "keywords × archive",
    tags: [#[document(keywords(lowercase))]], views: [], archive: "p_tagged_archived_archive",
    collection = "p_tagged_archived", archive(age = placed, pin = pinned)
);
pair!(
    CountedArchived, "approximate counter × archive",
    tags: [], views: [#[document(approximate(every = 3))]], archive: "p_counted_archived_archive",
    collection = "p_counted_archived", archive(age = placed, pin = pinned)
);

/// The parent of [`Everything`]'s computed values and subset.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "p_everything_boards")]
pub(super) struct EBoard {
    #[serde(rename = "_id")]
    pub(super) id: i64,
    pub(super) count: i64,
    pub(super) total: i64,
    pub(super) recent: Vec<Everything>,
}

/// The source of [`Everything`]'s copies, with a history of its own.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(
    collection = "p_critics",
    history = "p_critics_past",
    referenced_by(Everything = critic)
)]
pub(super) struct Critic {
    #[serde(rename = "_id")]
    pub(super) id: i64,
    pub(super) name: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Reference)]
#[reference(source = Critic)]
pub(super) struct CriticRef {
    #[serde(rename = "_id")]
    pub(super) id: i64,
    pub(super) name: String,
}

/// The boards (0..3) and critics (0, 1) [`Everything`] writes need, in their first state.
pub(super) const EBOARDS: i64 = 3;

/// Every feature at once on one type (issue 67), but the approximate counter, which history
/// refuses: schema versioning, history, keywords, the archive, a computed child and a subset
/// child of [`EBoard`] (`board`: its id modulo 3; an older build's document has none), a
/// holder of a copy of a [`Critic`] (its id modulo 2; the write fills the name), the source
/// of the copies [`Pin`]s hold, and a variant of [`Things`] (whose history it takes).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(
    variant_of = Things,
    referenced_by(Pin = of),
    version = 2,
    previous(Old = 1),
    archive(age = placed, pin = pinned),
    computed(parent = EBoard, key = board, count = count, sum(n = total)),
    subset(parent = EBoard, key = board, into = recent, keep = 2, order = n)
)]
pub(super) struct Everything {
    #[serde(rename = "_id")]
    pub(super) id: i64,
    pub(super) name: String,
    pub(super) n: i64,
    #[document(keywords(lowercase))]
    pub(super) tags: Vec<String>,
    pub(super) placed: DateTime,
    pub(super) pinned: bool,
    pub(super) board: i64,
    #[document(reference)]
    pub(super) critic: Option<CriticRef>,
}

/// The polymorphic collection [`Everything`] is a variant of, with the history of both (a
/// note, its sibling, stores some of the same fields and takes part in none of its features).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[serde(tag = "kind", rename_all = "lowercase")]
#[document(
    collection = "p_everything",
    history = "p_everything_past",
    shared(id: i64, name: String, n: i64)
)]
pub(super) enum Things {
    Everything(Everything),
    Note {
        #[serde(rename = "_id")]
        id: i64,
        name: String,
        n: i64,
        board: i64,
    },
}

/// A copy of an [`Everything`]'s name (whose source is versioned and has history).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Reference)]
#[reference(source = Everything)]
pub(super) struct EverythingRef {
    #[serde(rename = "_id")]
    pub(super) id: i64,
    pub(super) name: String,
}

/// A holder of copies of [`Everything`]: its source's delete makes it `null`, and the archive
/// moves no source a pin copies.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "p_pins")]
pub(super) struct Pin {
    #[serde(rename = "_id")]
    pub(super) id: i64,
    #[document(reference)]
    pub(super) of: Option<EverythingRef>,
}

/// What a write of [`Everything`] leaves in a copy before the library fills it (the model
/// puts the critic's name in: `settle`).
pub(super) const UNFILLED: &str = "?";

impl Simple for Everything {
    const N: Field<Self, i64> = Everything::N;
    const ROW: &'static str = "every feature at once";
    const TAGS: Option<Field<Self, Vec<String>>> = Some(Everything::TAGS);
    const ARCHIVE_AT: &'static str = "p_everything_archive";
    fn make(id: i64, name: &str, n: i64) -> Self {
        let placed = if id % 2 == 1 { 0 } else { 4_000_000_000_000 };
        Everything {
            id,
            name: name.into(),
            n,
            tags: name.split(' ').map(str::to_owned).collect(),
            placed: DateTime::from_millis(placed),
            pinned: id % 5 == 0,
            board: id.rem_euclid(EBOARDS),
            critic: Some(CriticRef {
                id: id.rem_euclid(2),
                name: UNFILLED.into(),
            }),
        }
    }
    fn plain(&self) -> BsonDocument {
        let tags: Vec<String> = self.tags.iter().map(|t| t.to_lowercase()).collect();
        let critic = bson::to_bson(&self.critic).unwrap();
        doc! {
            "_id": self.id, "kind": "everything", "name": self.name.clone(), "n": self.n,
            "tags": tags, "placed": self.placed, "pinned": self.pinned, "board": self.board,
            "critic": critic,
        }
    }
}

impl From<Old> for Everything {
    fn from(o: Old) -> Self {
        <Everything as Simple>::upgraded(&o)
    }
}

/// The archive's cut-off: the odd orders are before it.
pub(super) const CUT_OFF: i64 = 1_000;
pub(super) const ORDERS_ARCHIVE: &str = "m_orders_archive";

/// The parent of the computed aggregates: a count, and the sum, minimum, maximum and average
/// of its children's `f64` scores.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "m_boards")]
pub(super) struct Board {
    #[serde(rename = "_id")]
    pub(super) id: i64,
    pub(super) count: i64,
    pub(super) sum: f64,
    pub(super) min: Option<f64>,
    pub(super) max: Option<f64>,
    pub(super) avg: Option<f64>,
}

impl Board {
    pub(super) fn empty(id: i64) -> Self {
        Board {
            id,
            count: 0,
            sum: 0.0,
            min: None,
            max: None,
            avg: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(
    collection = "m_scores",
    computed(
        parent = Board,
        key = board,
        count = count,
        sum(score = sum),
        min(score = min),
        max(score = max),
        avg(score = avg)
    )
)]
pub(super) struct Score {
    #[serde(rename = "_id")]
    pub(super) id: i64,
    pub(super) board: i64,
    pub(super) score: f64,
    pub(super) n: i64,
}

/// The parent of the subset: its 2 newest entries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "m_feeds")]
pub(super) struct Feed {
    #[serde(rename = "_id")]
    pub(super) id: i64,
    pub(super) recent: Vec<Entry>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(
    collection = "m_entries",
    subset(parent = Feed, key = feed, into = recent, keep = 2, order = date)
)]
pub(super) struct Entry {
    #[serde(rename = "_id")]
    pub(super) id: i64,
    pub(super) feed: i64,
    pub(super) date: i64,
    pub(super) n: i64,
}

/// The source of extended references: a fan-out of 1, so that a write changing two copies
/// runs its propagation in batches after the commit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "m_people", referenced_by(Film = director), fan_out = 1)]
pub(super) struct Person {
    #[serde(rename = "_id")]
    pub(super) id: i64,
    pub(super) name: String,
    pub(super) n: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Reference)]
#[reference(source = Person)]
pub(super) struct PersonRef {
    #[serde(rename = "_id")]
    pub(super) id: i64,
    pub(super) name: String,
}

/// The holder of a copy (an `Option`: `null` once its source is deleted).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "m_films")]
pub(super) struct Film {
    #[serde(rename = "_id")]
    pub(super) id: i64,
    pub(super) title: String,
    pub(super) n: i64,
    #[document(reference)]
    pub(super) director: Option<PersonRef>,
}

/// A polymorphic collection: a newtype variant with keywords and an index, a struct-like
/// variant with attributes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(variant_of = Item)]
pub(super) struct Novel {
    #[serde(rename = "_id")]
    pub(super) id: i64,
    pub(super) title: String,
    pub(super) n: i64,
    #[document(keywords(lowercase))]
    pub(super) topics: Vec<String>,
    #[document(index)]
    pub(super) isbn: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[serde(tag = "kind", rename_all = "lowercase")]
#[document(
    collection = "m_items",
    shared(id: i64, title: String, n: i64),
    variant_derive(Clone, Debug, PartialEq)
)]
pub(super) enum Item {
    Novel(Novel),
    Shirt {
        #[serde(rename = "_id")]
        id: i64,
        title: String,
        n: i64,
        size: String,
        #[document(attributes)]
        specs: Attributes<i64>,
    },
}

pub(super) fn novel(id: i64, title: &str, n: i64) -> Novel {
    Novel {
        id,
        title: title.into(),
        n,
        topics: title.split(' ').map(str::to_owned).collect(),
        isbn: format!("isbn-{id}"),
    }
}

pub(super) fn shirt(id: i64, title: &str, n: i64) -> ItemShirt {
    ItemShirt {
        id,
        title: title.into(),
        n,
        size: "M".into(),
        specs: [("Chest", 100 + n), ("arm", 60)].into_iter().collect(),
    }
}

/// What an item is stored as, written out by hand: the discriminator, a novel's topics
/// lowercased, a shirt's attributes as `{k, v}` pairs by name.
pub(super) fn item_doc(item: &Item) -> BsonDocument {
    match item {
        Item::Novel(v) => {
            let topics: Vec<String> = v.topics.iter().map(|t| t.to_lowercase()).collect();
            doc! {
                "kind": "novel", "_id": v.id, "title": v.title.clone(), "n": v.n,
                "topics": topics, "isbn": v.isbn.clone(),
            }
        }
        Item::Shirt {
            id,
            title,
            n,
            size,
            specs,
        } => {
            let sorted: BTreeMap<&String, &i64> = specs.iter().collect();
            let pairs: Vec<Bson> = (sorted.into_iter())
                .map(|(k, v)| Bson::Document(doc! {"k": k.clone(), "v": *v}))
                .collect();
            doc! {
                "kind": "shirt", "_id": *id, "title": title.clone(), "n": *n,
                "size": size.clone(), "specs": pairs,
            }
        }
    }
}
