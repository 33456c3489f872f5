//! A polymorphic collection's variants with the other features (issue 67): a variant's
//! features run for its documents whichever type writes them, the variant's own or the enum's,
//! on every write path, on both stores, against a plain model. A sibling variant stores fields
//! of the same names and takes part in nothing: every read a feature makes of the shared
//! collection is its variant's only.
//!
//! - A child variant of computed values and of a subset: a document feeds its parent while it
//!   is that variant; a change of variant away is a delete there, one into it an insert.
//! - A variant's approximate counter: it counts for its document while it is that variant; a
//!   delete or a change of variant drops the counts not yet written.
//! - Schema versions on a variant: each variant's own; the enum reads an older variant
//!   upgraded by the variant's conversions and writes it at the variant's version; the sweep of
//!   a variant's type upgrades its variant's documents only.
//! - A variant holding copies (a `reference` field): filled by every write that makes a document
//!   that variant, through either type, and kept by its source's writes; a sibling variant's
//!   field of the same name holding a document with an `_id` is never written.
//! - A variant as the source of copies (`referenced_by` on a variant's type): its writes through
//!   either type keep its copies; a document is a source while it is that variant (a change of
//!   variant away is its delete for the copies); a copy of another variant's `_id` is not found.
//! - History, declared on the enum: one revision sequence per `_id` whatever its variant; every
//!   write through the enum or a variant's type is one revision, a change of variant too; the
//!   revision reads through a variant's type see the states when it was that variant.

use bson::{doc, Bson};
use pattern_core::document::{recompute, resubset, verify, verify_subsets, Update};
use pattern_core::follow::Follower;
use pattern_core::store::query;

use super::*;

fn by_id(id: i64) -> query::Filter {
    query::Filter::eq("_id", id)
}

// ----- A child variant of computed values and of a subset ------------------------------------

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "vp_films")]
struct Film {
    #[serde(rename = "_id")]
    id: i64,
    reviews: i64,
    stars: i64,
    recent: Vec<Review>,
}

/// The child variant: counted and summed into its film, the newest two embedded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(
    variant_of = Post,
    computed(parent = Film, key = film, count = reviews, sum(stars = stars)),
    subset(parent = Film, key = film, into = recent, keep = 2, order = at)
)]
struct Review {
    #[serde(rename = "_id")]
    id: i64,
    film: i64,
    stars: i64,
    at: i64,
}

/// A review or a note on a film: a note stores the same fields and is no child.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[serde(tag = "kind", rename_all = "lowercase")]
#[document(collection = "vp_posts", shared(id: i64, film: i64, stars: i64))]
enum Post {
    Review(Review),
    Note {
        #[serde(rename = "_id")]
        id: i64,
        film: i64,
        stars: i64,
        at: i64,
    },
}

fn review(id: i64, film: i64, stars: i64, at: i64) -> Review {
    Review {
        id,
        film,
        stars,
        at,
    }
}

fn note(id: i64, film: i64, stars: i64, at: i64) -> Post {
    Post::Note {
        id,
        film,
        stars,
        at,
    }
}

/// Every film as the posts `model` say: the reviews' count and sum, the newest two reviews;
/// `verify` and `verify_subsets` find nothing, `recompute` and `resubset` change nothing.
async fn films_agree(store: &AnyStore, model: &[Post], step: &str) {
    for f in [1, 2] {
        let mut of: Vec<Review> = (model.iter())
            .filter_map(|p| match p {
                Post::Review(r) if r.film == f => Some(r.clone()),
                _ => None,
            })
            .collect();
        let want_count = of.len() as i64;
        let want_sum: i64 = of.iter().map(|r| r.stars).sum();
        of.sort_by_key(|r| std::cmp::Reverse((r.at, r.id)));
        of.truncate(2);
        let got = Film::get(store, &f).await.unwrap().unwrap();
        let want = Film {
            id: f,
            reviews: want_count,
            stars: want_sum,
            recent: of,
        };
        assert_eq!(got, want, "film {f} after {step}");
    }
    assert_eq!(verify::<Review, _>(store).await.unwrap(), vec![], "{step}");
    let none = Vec::<String>::new();
    assert_eq!(
        verify_subsets::<Review, _>(store).await.unwrap(),
        none,
        "{step}"
    );
    let before = documents(store, "vp_films").await;
    for f in [1_i64, 2] {
        recompute::<Review, _, _>(store, &f).await.unwrap();
        resubset::<Review, _, _>(store, &f).await.unwrap();
    }
    // The same values (a sum of no child is rebuilt as an Int32 0).
    pattern_tests::assert_same_documents(&documents(store, "vp_films").await, &before);
}

fn set(model: &mut [Post], id: i64, post: Post) {
    let at = model.iter().position(|p| *p.id() == id).unwrap();
    model[at] = post;
}

async fn a_child_variant_feeds_its_parent(store: AnyStore) {
    for f in [1, 2] {
        let film = Film {
            id: f,
            reviews: 0,
            stars: 0,
            recent: vec![],
        };
        film.insert(&store).await.unwrap();
    }
    let mut model: Vec<Post> = Vec::new();
    // Inserts: through the variant's type, through the enum; a note with the same fields.
    review(1, 1, 4, 10).insert(&store).await.unwrap();
    model.push(Post::Review(review(1, 1, 4, 10)));
    Post::Review(review(2, 1, 5, 20))
        .insert(&store)
        .await
        .unwrap();
    model.push(Post::Review(review(2, 1, 5, 20)));
    note(3, 1, 100, 30).insert(&store).await.unwrap();
    model.push(note(3, 1, 100, 30));
    films_agree(&store, &model, "inserts").await;
    // Saves: the enum's (to film 2), the variant's.
    Post::Review(review(1, 2, 3, 40))
        .save(&store)
        .await
        .unwrap();
    set(&mut model, 1, Post::Review(review(1, 2, 3, 40)));
    review(2, 1, 1, 50).save(&store).await.unwrap();
    set(&mut model, 2, Post::Review(review(2, 1, 1, 50)));
    note(3, 2, 7, 60).save(&store).await.unwrap();
    set(&mut model, 3, note(3, 2, 7, 60));
    films_agree(&store, &model, "saves").await;
    // Updates: the enum's, by a shared field; the variant's.
    let inc = Update::new().inc(Post::STARS, 2);
    assert!(Post::update_one(&store, Post::ID.eq(1), inc).await.unwrap());
    set(&mut model, 1, Post::Review(review(1, 2, 5, 40)));
    let to_two = Update::new().set(Review::FILM, 2);
    assert!(Review::update_one(&store, Review::ID.eq(2), to_two)
        .await
        .unwrap());
    set(&mut model, 2, Post::Review(review(2, 2, 1, 50)));
    let inc = Update::new().inc(Post::STARS, 9);
    assert!(Post::update_one(&store, Post::ID.eq(3), inc).await.unwrap());
    set(&mut model, 3, note(3, 2, 16, 60));
    films_agree(&store, &model, "updates").await;
    // A change of variant: the review leaves (a delete for its film), the note joins.
    assert!(note(1, 2, 5, 40).change_variant(&store).await.unwrap());
    set(&mut model, 1, note(1, 2, 5, 40));
    films_agree(&store, &model, "review to note").await;
    let joined = Post::Review(review(3, 1, 8, 70));
    assert!(joined.change_variant(&store).await.unwrap());
    set(&mut model, 3, joined);
    films_agree(&store, &model, "note to review").await;
    // Deletes: the enum's of a review, the variant's; the enum's of a note.
    Post::Review(review(4, 1, 2, 80))
        .insert(&store)
        .await
        .unwrap();
    model.push(Post::Review(review(4, 1, 2, 80)));
    assert!(Post::delete(&store, &3).await.unwrap());
    model.retain(|p| *p.id() != 3);
    assert!(Review::delete(&store, &2).await.unwrap());
    model.retain(|p| *p.id() != 2);
    assert!(Post::delete(&store, &1).await.unwrap());
    model.retain(|p| *p.id() != 1);
    films_agree(&store, &model, "deletes").await;
    // In a caller's transaction, through the enum.
    pattern_core::store::transaction(&store, |tx| {
        Box::pin(async move { Post::Review(review(5, 2, 6, 90)).insert(tx).await })
    })
    .await
    .unwrap();
    note(6, 2, 60, 95).insert(&store).await.unwrap();
    model.push(Post::Review(review(5, 2, 6, 90)));
    model.push(note(6, 2, 60, 95));
    films_agree(&store, &model, "a transaction").await;
    // A drift written by another tool: `verify` finds it on the variant's children only.
    let mut wrong = query::Update {
        set: vec![("reviews".into(), Bson::Int64(9))],
        ..Default::default()
    };
    store
        .update_one("vp_films", &by_id(1), &mut wrong, false)
        .await
        .unwrap();
    let drifts = verify::<Review, _>(&store).await.unwrap();
    assert_eq!(drifts.len(), 1, "{drifts:?}");
    recompute::<Review, _, _>(&store, &1).await.unwrap();
    films_agree(&store, &model, "recompute").await;
}

/// The follower keeps a child variant's parent exact under another program's writes (MongoDB:
/// a change stream): a review and a note inserted by a raw client, and a note turned into a
/// review.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_follower_keeps_a_child_variant_parent() {
    let m = pattern_tests::mongo_store("variant_follow").await;
    let store = AnyStore::Mongo(m.clone());
    let film = Film {
        id: 1,
        reviews: 0,
        stars: 0,
        recent: vec![],
    };
    film.insert(&store).await.unwrap();
    let follower = Follower::new(m.clone(), "posts").follow::<Post>();
    assert_eq!(
        follower.rules(),
        [
            "computed vp_films over vp_posts [kind=review]",
            "subset vp_films.recent of vp_posts [kind=review]"
        ]
    );
    follower.catch_up().await.unwrap();
    let raw = pattern_tests::second_client(&m).await;
    let posts = raw.database().collection::<bson::Document>("vp_posts");
    let r = doc! {"_id": 1_i64, "kind": "review", "film": 1_i32, "stars": 4_i32, "at": 10_i64};
    let n = doc! {"_id": 2_i64, "kind": "note", "film": 1_i64, "stars": 50_i64, "at": 20_i64};
    posts.insert_many([r, n]).await.unwrap();
    follower.catch_up().await.unwrap();
    let mut model = vec![Post::Review(review(1, 1, 4, 10)), note(2, 1, 50, 20)];
    films_agree_on_one(&store, &model).await;
    let turned = doc! {"$set": {"kind": "review"}};
    posts.update_one(doc! {"_id": 2_i64}, turned).await.unwrap();
    follower.catch_up().await.unwrap();
    model[1] = Post::Review(review(2, 1, 50, 20));
    films_agree_on_one(&store, &model).await;
    pattern_tests::drop_db(&store).await;
}

/// Film 1 as the posts `model` say (the follower's test has one film).
async fn films_agree_on_one(store: &AnyStore, model: &[Post]) {
    let of: Vec<&Review> = (model.iter())
        .filter_map(|p| match p {
            Post::Review(r) => Some(r),
            _ => None,
        })
        .collect();
    let got = Film::get(store, &1).await.unwrap().unwrap();
    assert_eq!(got.reviews, of.len() as i64);
    assert_eq!(got.stars, of.iter().map(|r| r.stars).sum::<i64>());
    let mut newest: Vec<Review> = of.into_iter().cloned().collect();
    newest.sort_by_key(|r| std::cmp::Reverse((r.at, r.id)));
    newest.truncate(2);
    assert_eq!(got.recent, newest);
    assert_eq!(verify::<Review, _>(store).await.unwrap(), vec![]);
}

// ----- A variant's approximate counter -------------------------------------------------------

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(variant_of = Page)]
struct Article {
    #[serde(rename = "_id")]
    id: i64,
    #[document(approximate(every = 3))]
    views: i64,
}

/// An article or a video: a video stores a `views` field of its own, no counter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[serde(tag = "kind", rename_all = "lowercase")]
#[document(collection = "vp_pages", shared(id: i64, views: i64))]
enum Page {
    Article(Article),
    Video {
        #[serde(rename = "_id")]
        id: i64,
        views: i64,
    },
}

async fn views(store: &AnyStore, id: i64) -> i64 {
    let found = store
        .find("vp_pages", &by_id(id), &Default::default())
        .await;
    let doc = found.unwrap().pop().unwrap();
    pattern_tests::as_int(doc.get("views").unwrap()).unwrap()
}

fn pending(store: &AnyStore, id: i64) -> u64 {
    pattern_core::document::pending::<Article, _, _>(store, "views", &id).unwrap()
}

async fn a_variant_counter_counts_its_variant(store: AnyStore) {
    Article { id: 1, views: 0 }.insert(&store).await.unwrap();
    Page::Video { id: 2, views: 0 }
        .insert(&store)
        .await
        .unwrap();
    Page::Article(Article { id: 3, views: 0 })
        .insert(&store)
        .await
        .unwrap();
    // Every third increment writes, to the article.
    for _ in 0..3 {
        Article::increment_views(&store, &1).await.unwrap();
    }
    assert_eq!((views(&store, 1).await, pending(&store, 1)), (3, 0));
    // The video's `views` is no counter: the write that would reach it finds no article.
    Article::increment_views(&store, &2).await.unwrap();
    Article::increment_views(&store, &2).await.unwrap();
    let third = Article::increment_views(&store, &2).await;
    assert!(matches!(third, Err(Error::NotFound { .. })), "{third:?}");
    assert_eq!((views(&store, 2).await, pending(&store, 2)), (0, 3));
    // A change of variant through the enum drops the counts of what it was: the video's
    // failed ones here, an article's pending ones below.
    assert!(Page::Article(Article { id: 2, views: 0 })
        .change_variant(&store)
        .await
        .unwrap());
    assert_eq!(pending(&store, 2), 0);
    Article::increment_views(&store, &3).await.unwrap();
    Article::increment_views(&store, &3).await.unwrap();
    assert_eq!(pending(&store, 3), 2);
    assert!(Page::Video { id: 3, views: 50 }
        .change_variant(&store)
        .await
        .unwrap());
    assert_eq!(pending(&store, 3), 0);
    assert_eq!(Article::flush(&store).await.unwrap(), 0);
    assert_eq!(views(&store, 3).await, 50, "nothing written into the video");
    // A delete through the enum drops them too.
    Article::increment_views(&store, &1).await.unwrap();
    assert_eq!(pending(&store, 1), 1);
    assert!(Page::delete(&store, &1).await.unwrap());
    assert_eq!(pending(&store, 1), 0);
    // The article made of the video counts from what it was written with.
    for _ in 0..4 {
        Article::increment_views(&store, &2).await.unwrap();
    }
    assert_eq!(Article::flush(&store).await.unwrap(), 1);
    assert_eq!(views(&store, 2).await, 4);
}

// ----- History on the enum --------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(variant_of = Item)]
struct Book {
    #[serde(rename = "_id")]
    id: i64,
    title: String,
    price: i64,
}

/// A catalogue audited whole: every write of a book or a shirt is a revision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[serde(tag = "kind", rename_all = "lowercase")]
#[document(
    collection = "vp_items",
    history = "vp_items_past",
    shared(id: i64, price: i64),
    variant_derive(Clone, Debug, PartialEq)
)]
enum Item {
    Book(Book),
    Shirt {
        #[serde(rename = "_id")]
        id: i64,
        title: String,
        price: i64,
        size: String,
    },
}

fn book(price: i64) -> Book {
    Book {
        id: 1,
        title: "Dune".into(),
        price,
    }
}

async fn revision_of(store: &AnyStore, id: i64) -> Option<i64> {
    let found = store
        .find("vp_items", &by_id(id), &Default::default())
        .await;
    let doc = found.unwrap().pop()?;
    doc.get(pattern_core::document::REVISION)
        .and_then(pattern_tests::as_int)
}

async fn history_is_the_collections(store: AnyStore) {
    use futures::TryStreamExt;
    use pattern_core::document::{at_revision, history};
    // insert through the variant: 1; the enum's save: 2; the variant's update: 3; the enum's
    // update by a shared field: 4.
    book(10).insert(&store).await.unwrap();
    Item::Book(book(12)).save(&store).await.unwrap();
    let set = Update::new().set(Book::TITLE, "Dune Messiah".to_owned());
    assert!(Book::update_one(&store, Book::ID.eq(1), set).await.unwrap());
    let inc = Update::new().inc(Item::PRICE, 1);
    assert!(Item::update_one(&store, Item::ID.eq(1), inc).await.unwrap());
    assert_eq!(revision_of(&store, 1).await, Some(4));
    let messiah = Book {
        id: 1,
        title: "Dune Messiah".into(),
        price: 13,
    };
    // The enum's conditional writes: at the revision read, and refused at a stale one.
    Item::Book(book(20)).save_if(&store, 4).await.unwrap();
    let stale = Item::Book(book(30)).save_if(&store, 4).await;
    assert!(matches!(stale, Err(Error::Conflict { .. })), "{stale:?}");
    Item::update_if(&store, &1, 5, Update::new().set(Item::PRICE, 21))
        .await
        .unwrap();
    assert_eq!(revision_of(&store, 1).await, Some(6));
    // A change of variant: one revision, the book it was recorded.
    let shirt = Item::Shirt {
        id: 1,
        title: "Dune tee".into(),
        price: 25,
        size: "M".into(),
    };
    assert!(shirt.change_variant(&store).await.unwrap());
    assert_eq!(revision_of(&store, 1).await, Some(7));
    // The enum's history: every revision, each as the variant it was.
    let all: Vec<_> = Item::history(&store, &1).try_collect().await.unwrap();
    let numbers: Vec<u64> = all.iter().map(|r| r.revision).collect();
    assert_eq!(numbers, [7, 6, 5, 4, 3, 2, 1]);
    assert_eq!(all[0].document, shirt);
    assert_eq!(all[1].document, Item::Book(book(21)));
    assert_eq!(all[3].document, Item::Book(messiah.clone()));
    // Through the variant's type: the states when it was a book.
    let books: Vec<_> = history::<Book, _, _>(&store, &1)
        .try_collect()
        .await
        .unwrap();
    let numbers: Vec<u64> = books.iter().map(|r| r.revision).collect();
    assert_eq!(numbers, [6, 5, 4, 3, 2, 1]);
    assert_eq!(
        at_revision::<Book, _, _>(&store, &1, 4).await.unwrap(),
        Some(messiah)
    );
    assert_eq!(
        at_revision::<Book, _, _>(&store, &1, 7).await.unwrap(),
        None
    );
    let tee = at_revision::<ItemShirt, _, _>(&store, &1, 7).await.unwrap();
    assert_eq!(tee.map(|t| t.size), Some("M".to_owned()));
    // The variant's conditional update does not reach another variant's document.
    let on_shirt = pattern_core::document::update_if::<Book, _, _>(
        &store,
        &1,
        7,
        Update::new().set(Book::PRICE, 0),
    )
    .await;
    assert!(
        matches!(on_shirt, Err(Error::Conflict { .. })),
        "{on_shirt:?}"
    );
    // The generated struct's writes are revisions too; the enum's delete_if records the last.
    let set = Update::new().set(ItemShirt::SIZE, "L".to_owned());
    assert!(ItemShirt::update_one(&store, ItemShirt::ID.eq(1), set)
        .await
        .unwrap());
    // Revision 7, a shirt, is a recorded state now: still no book.
    let books: Vec<_> = history::<Book, _, _>(&store, &1)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(books.len(), 6);
    assert_eq!(
        at_revision::<Book, _, _>(&store, &1, 7).await.unwrap(),
        None
    );
    Item::delete_if(&store, &1, 8).await.unwrap();
    let past = store
        .find(
            "vp_items_past",
            &query::Filter::eq("id", 1_i64),
            &Default::default(),
        )
        .await
        .unwrap();
    assert_eq!(past.len(), 8, "every state recorded");
    // A new `_id` through the enum's insert: revision 1.
    Item::Book(Book {
        id: 2,
        title: "Emma".into(),
        price: 5,
    })
    .insert(&store)
    .await
    .unwrap();
    assert_eq!(revision_of(&store, 2).await, Some(1));
}

// ----- Schema versions on a variant -------------------------------------------------------------

/// Version 1 of a gadget: no colour.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct GadgetV1 {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
}

impl From<GadgetV1> for Gadget {
    fn from(v: GadgetV1) -> Gadget {
        Gadget {
            id: v.id,
            name: v.name,
            colour: "black".into(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(variant_of = Stock, version = 2, previous(GadgetV1 = 1))]
struct Gadget {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
    colour: String,
}

/// A gadget or a tool: a tool has the same fields and no versions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[serde(tag = "kind", rename_all = "lowercase")]
#[document(collection = "vp_stock", shared(id: i64, name: String))]
enum Stock {
    Gadget(Gadget),
    Tool {
        #[serde(rename = "_id")]
        id: i64,
        name: String,
        colour: String,
    },
}

async fn stored(store: &AnyStore, id: i64) -> bson::Document {
    let found = store
        .find("vp_stock", &by_id(id), &Default::default())
        .await;
    found.unwrap().pop().unwrap()
}

fn gadget(id: i64, name: &str, colour: &str) -> Gadget {
    Gadget {
        id,
        name: name.into(),
        colour: colour.into(),
    }
}

fn tool(id: i64, name: &str) -> Stock {
    Stock::Tool {
        id,
        name: name.into(),
        colour: "red".into(),
    }
}

async fn a_variant_has_versions_of_its_own(store: AnyStore) {
    use pattern_core::adopt::Options;
    use pattern_core::document::migrate;
    // An older build's gadgets (version 1, and one written before versions), a tool.
    let raw = [
        doc! {"_id": 1_i64, "kind": "gadget", "name": "lamp", "schema_version": 1},
        doc! {"_id": 2_i64, "kind": "gadget", "name": "fan"},
        doc! {"_id": 3_i64, "kind": "tool", "name": "saw", "colour": "red"},
    ];
    for d in raw {
        store.insert_one("vp_stock", d).await.unwrap();
    }
    // Read through the enum and through the variant: upgraded by the gadget's conversions.
    let lamp = gadget(1, "lamp", "black");
    assert_eq!(
        Stock::get(&store, &1).await.unwrap(),
        Some(Stock::Gadget(lamp.clone()))
    );
    assert_eq!(
        Gadget::get(&store, &2).await.unwrap(),
        Some(gadget(2, "fan", "black"))
    );
    assert_eq!(Stock::get(&store, &3).await.unwrap(), Some(tool(3, "saw")));
    // The enum's save writes the gadget's version; a tool carries none.
    Stock::Gadget(gadget(1, "lamp", "white"))
        .save(&store)
        .await
        .unwrap();
    assert_eq!(stored(&store, 1).await.get_i32("schema_version"), Ok(2));
    tool(7, "drill").insert(&store).await.unwrap();
    assert!(stored(&store, 7).await.get("schema_version").is_none());
    // The enum's update of an older gadget upgrades it first; of a tool, applies as it is.
    let rename = Update::new().set(Stock::NAME, "desk fan".to_owned());
    assert!(Stock::update_one(&store, Stock::ID.eq(2), rename)
        .await
        .unwrap());
    assert_eq!(
        Gadget::get(&store, &2).await.unwrap(),
        Some(gadget(2, "desk fan", "black"))
    );
    assert_eq!(stored(&store, 2).await.get_i32("schema_version"), Ok(2));
    let rename = Update::new().set(Stock::NAME, "hand saw".to_owned());
    assert!(Stock::update_one(&store, Stock::ID.eq(3), rename)
        .await
        .unwrap());
    assert_eq!(
        Stock::get(&store, &3).await.unwrap(),
        Some(tool(3, "hand saw"))
    );
    // A gadget a newer build wrote: never read as another shape, never overwritten.
    let newer = doc! {"_id": 4_i64, "kind": "gadget", "name": "?", "schema_version": 3};
    store.insert_one("vp_stock", newer.clone()).await.unwrap();
    let read = Stock::get(&store, &4).await;
    assert!(
        matches!(
            read,
            Err(Error::NewerVersion {
                found: 3,
                known: 2,
                ..
            })
        ),
        "{read:?}"
    );
    let over = Stock::Gadget(gadget(4, "x", "x")).save(&store).await;
    assert!(matches!(over, Err(Error::NewerVersion { .. })), "{over:?}");
    let changed = tool(4, "x").change_variant(&store).await;
    assert!(
        matches!(changed, Err(Error::NewerVersion { .. })),
        "{changed:?}"
    );
    assert_eq!(stored(&store, 4).await, newer, "untouched");
    // A document of a kind this build does not know: its update says so at once, untouched.
    let widget = doc! {"_id": 17_i64, "kind": "widget", "name": "?"};
    store.insert_one("vp_stock", widget.clone()).await.unwrap();
    let rename = || Update::new().set(Stock::NAME, "w".to_owned());
    let unknown = Stock::update_one(&store, Stock::ID.eq(17), rename()).await;
    assert!(
        matches!(unknown, Err(Error::UnknownVariant { .. })),
        "{unknown:?}"
    );
    assert_eq!(stored(&store, 17).await, widget, "untouched");
    // A tool turned into a gadget is written at the gadget's version.
    assert!(Stock::Gadget(gadget(3, "saw", "grey"))
        .change_variant(&store)
        .await
        .unwrap());
    assert_eq!(stored(&store, 3).await.get_i32("schema_version"), Ok(2));
    // The gadget's sweep: its older documents only (a tool without a version field is none).
    let raw = [
        doc! {"_id": 5_i64, "kind": "gadget", "name": "kettle", "schema_version": 1},
        doc! {"_id": 6_i64, "kind": "tool", "name": "rake", "colour": "red"},
    ];
    for d in raw {
        store.insert_one("vp_stock", d).await.unwrap();
    }
    let swept = migrate::<Gadget, _>(&store, &Options::default())
        .await
        .unwrap();
    assert_eq!((swept.upgraded, swept.failed), (1, 0), "{swept:?}");
    assert_eq!(stored(&store, 5).await.get_i32("schema_version"), Ok(2));
    let rake = stored(&store, 6).await;
    assert_eq!(rake.get_str("kind"), Ok("tool"));
    assert!(rake.get("schema_version").is_none(), "{rake:?}");
    let checkpoint = "upgrade:vp_stock[kind=gadget]:v2";
    assert!(pattern_tests::checkpoint(&store, checkpoint)
        .await
        .is_some());
}

// ----- A variant holding copies ----------------------------------------------------------------

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "vp_makers", referenced_by(Kit = maker))]
struct Maker {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, pattern_core::Reference)]
#[reference(source = Maker)]
struct MakerRef {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(variant_of = Piece)]
struct Kit {
    #[serde(rename = "_id")]
    id: i64,
    #[document(reference)]
    maker: MakerRef,
}

/// A label a loose piece carries: a document with an `_id`, no copy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Label {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[serde(tag = "kind", rename_all = "lowercase")]
#[document(collection = "vp_pieces")]
enum Piece {
    Kit(Kit),
    Loose {
        #[serde(rename = "_id")]
        id: i64,
        maker: Label,
    },
}

fn kit(id: i64, maker: i64) -> Kit {
    Kit {
        id,
        maker: MakerRef {
            id: maker,
            name: "?".into(),
        },
    }
}

fn loose(id: i64, maker: i64, name: &str) -> Piece {
    Piece::Loose {
        id,
        maker: Label {
            id: maker,
            name: name.into(),
        },
    }
}

/// The maker's name piece `id` holds, as stored.
async fn maker_name(store: &AnyStore, id: i64) -> String {
    let found = store
        .find("vp_pieces", &by_id(id), &Default::default())
        .await;
    let doc = found.unwrap().pop().unwrap();
    doc.get_document("maker")
        .unwrap()
        .get_str("name")
        .unwrap()
        .to_owned()
}

async fn a_variant_holds_copies(store: AnyStore) {
    use pattern_core::document::verify_copies;
    for (id, name) in [(1, "Meccano"), (2, "Lego")] {
        let maker = Maker {
            id,
            name: name.into(),
        };
        maker.insert(&store).await.unwrap();
    }
    // Filled by the variant's insert and the enum's; a loose piece's label is its own.
    kit(10, 1).insert(&store).await.unwrap();
    Piece::Kit(kit(11, 1)).insert(&store).await.unwrap();
    loose(12, 1, "my own").insert(&store).await.unwrap();
    assert_eq!(maker_name(&store, 10).await, "Meccano");
    assert_eq!(maker_name(&store, 11).await, "Meccano");
    // The source's write reaches the kits, not the loose piece's label of the same `_id`.
    let set = Update::new().set(Maker::NAME, "Meccano Ltd".to_owned());
    assert!(Maker::update_one(&store, Maker::ID.eq(1), set)
        .await
        .unwrap());
    assert_eq!(maker_name(&store, 10).await, "Meccano Ltd");
    assert_eq!(maker_name(&store, 11).await, "Meccano Ltd");
    assert_eq!(maker_name(&store, 12).await, "my own");
    Maker {
        id: 1,
        name: "Meccano".into(),
    }
    .save(&store)
    .await
    .unwrap();
    assert_eq!(maker_name(&store, 10).await, "Meccano");
    assert_eq!(maker_name(&store, 12).await, "my own");
    // The enum's save moves a kit to another maker: filled from it.
    Piece::Kit(kit(11, 2)).save(&store).await.unwrap();
    assert_eq!(maker_name(&store, 11).await, "Lego");
    // A loose piece made a kit is filled; a kit made loose keeps the label it is given.
    assert!(Piece::Kit(kit(12, 2)).change_variant(&store).await.unwrap());
    assert_eq!(maker_name(&store, 12).await, "Lego");
    assert!(loose(10, 2, "scratched")
        .change_variant(&store)
        .await
        .unwrap());
    assert_eq!(maker_name(&store, 10).await, "scratched");
    assert_eq!(verify_copies::<Kit, _>(&store).await.unwrap(), vec![]);
    // Maker 1 is copied by no kit now (the loose piece's label is no copy): it may go.
    assert!(Maker::delete(&store, &1).await.unwrap());
    let still = Maker::delete(&store, &2).await;
    assert!(
        matches!(still, Err(Error::StillReferenced { .. })),
        "{still:?}"
    );
    assert_eq!(maker_name(&store, 10).await, "scratched");
}

/// The follower keeps a variant's copies, its rule named for the variant.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_follower_keeps_a_variant_copies() {
    let m = pattern_tests::mongo_store("variant_copies").await;
    let store = AnyStore::Mongo(m.clone());
    let follower = Follower::new(m.clone(), "pieces").follow::<Piece>();
    assert_eq!(follower.rules(), ["copies vp_pieces.maker [kind=kit]"]);
    let maker = Maker {
        id: 1,
        name: "Meccano".into(),
    };
    maker.insert(&store).await.unwrap();
    kit(10, 1).insert(&store).await.unwrap();
    loose(11, 1, "my own").insert(&store).await.unwrap();
    follower.catch_up().await.unwrap();
    let raw = pattern_tests::second_client(&m).await;
    let makers = raw.database().collection::<bson::Document>("vp_makers");
    makers
        .update_one(doc! {"_id": 1_i64}, doc! {"$set": {"name": "Meccano Ltd"}})
        .await
        .unwrap();
    follower.catch_up().await.unwrap();
    assert_eq!(maker_name(&store, 10).await, "Meccano Ltd");
    assert_eq!(maker_name(&store, 11).await, "my own");
    pattern_tests::drop_db(&store).await;
}

// ----- A variant as the source of copies ------------------------------------------------------

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(variant_of = Person, referenced_by(Movie = director))]
struct Director {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, pattern_core::Reference)]
#[reference(source = Director)]
struct DirectorRef {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "vp_movies")]
struct Movie {
    #[serde(rename = "_id")]
    id: i64,
    #[document(reference)]
    director: DirectorRef,
}

/// Directors and actors: an actor has a name too, and no copies.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[serde(tag = "kind", rename_all = "lowercase")]
#[document(collection = "vp_people", shared(id: i64, name: String))]
enum Person {
    Director(Director),
    Actor {
        #[serde(rename = "_id")]
        id: i64,
        name: String,
    },
}

fn movie(id: i64, director: i64) -> Movie {
    Movie {
        id,
        director: DirectorRef {
            id: director,
            name: "?".into(),
        },
    }
}

async fn director_of(store: &AnyStore, id: i64) -> String {
    Movie::get(store, &id).await.unwrap().unwrap().director.name
}

async fn a_variant_is_a_source(store: AnyStore) {
    use pattern_core::document::verify_copies;
    let director = |id, name: &str| Director {
        id,
        name: name.into(),
    };
    director(1, "Varda").insert(&store).await.unwrap();
    Person::Actor {
        id: 2,
        name: "Bonnaire".into(),
    }
    .insert(&store)
    .await
    .unwrap();
    movie(10, 1).insert(&store).await.unwrap();
    assert_eq!(director_of(&store, 10).await, "Varda");
    // A copy of an actor's `_id` finds no director.
    let of_actor = movie(11, 2).insert(&store).await;
    assert!(
        matches!(of_actor, Err(Error::NotFound { .. })),
        "{of_actor:?}"
    );
    // The director's writes through the enum and through its type reach the copy.
    Person::Director(director(1, "Agnès Varda"))
        .save(&store)
        .await
        .unwrap();
    assert_eq!(director_of(&store, 10).await, "Agnès Varda");
    let set = Update::new().set(Director::NAME, "A. Varda".to_owned());
    assert!(Director::update_one(&store, Director::ID.eq(1), set)
        .await
        .unwrap());
    assert_eq!(director_of(&store, 10).await, "A. Varda");
    let set = Update::new().set(Person::NAME, "Varda".to_owned());
    assert!(Person::update_one(&store, Person::ID.eq(1), set)
        .await
        .unwrap());
    assert_eq!(director_of(&store, 10).await, "Varda");
    // An actor's writes reach no copy.
    let set = Update::new().set(Person::NAME, "Sandrine".to_owned());
    assert!(Person::update_one(&store, Person::ID.eq(2), set)
        .await
        .unwrap());
    assert_eq!(verify_copies::<Movie, _>(&store).await.unwrap(), vec![]);
    // Copied, the director stays one: a change of variant away is refused as its delete is.
    let actor = Person::Actor {
        id: 1,
        name: "Varda".into(),
    };
    let away = actor.change_variant(&store).await;
    assert!(
        matches!(away, Err(Error::StillReferenced { .. })),
        "{away:?}"
    );
    let deleted = Person::delete(&store, &1).await;
    assert!(
        matches!(deleted, Err(Error::StillReferenced { .. })),
        "{deleted:?}"
    );
    assert_eq!(
        Director::get(&store, &1).await.unwrap(),
        Some(director(1, "Varda"))
    );
    // Copied by nothing, it may become an actor.
    assert!(Movie::delete(&store, &10).await.unwrap());
    assert!(actor.change_variant(&store).await.unwrap());
    assert_eq!(Director::get(&store, &1).await.unwrap(), None);
}

on_both_stores!(
    a_variant_is_a_source,
    a_variant_holds_copies,
    a_variant_has_versions_of_its_own,
    a_child_variant_feeds_its_parent,
    a_variant_counter_counts_its_variant,
    history_is_the_collections
);
