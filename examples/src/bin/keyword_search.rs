//! Replays the data-modeling article's keyword-search recipe: the seed's Moby-Dick document
//! with its `topics` array, the multikey index `db.volumes.createIndex({topics: 1})` (made by
//! `#[document(keywords)]`), and `db.volumes.findOne({topics: "voyage"}, {title: 1})` as a
//! typed query with a projection; then all of several keywords (`$all`), any of several
//! (`$in`), and a second collection whose keywords are lowercased on write and on query.
//!
//! In memory by default; on MongoDB (database `pattern_examples`) when `MONGODB_URI` is set:
//!
//!     cargo run -p examples --bin keyword_search

use pattern_core::store::AnyStore;
use pattern_core::{store::Store, Document};
use serde::{Deserialize, Serialize};

#[derive(Document, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[document(collection = "volumes")]
struct Volume {
    #[serde(rename = "_id")]
    id: i32,
    title: String,
    author: String,
    published: i32,
    #[serde(rename = "ISBN")]
    isbn: i64,
    #[document(keywords)]
    topics: Vec<String>,
}

/// What `{title: 1}` returns: `_id` and the title.
#[derive(Debug, Deserialize)]
struct Title {
    #[serde(rename = "_id")]
    id: i32,
    title: String,
}

#[derive(Document, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[document(collection = "articles")]
struct Article {
    #[serde(rename = "_id")]
    id: i32,
    title: String,
    #[document(keywords(lowercase))]
    tags: Vec<String>,
}

fn words(w: &[&str]) -> Vec<String> {
    w.iter().map(|s| s.to_string()).collect()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let store = AnyStore::from_env("pattern_examples").await?;
    println!("store: {}", store.kind());
    store.drop_collection("volumes").await?;
    store.drop_collection("articles").await?;

    let moby = Volume {
        id: 1,
        title: "Moby-Dick".into(),
        author: "Herman Melville".into(),
        published: 1851,
        isbn: 451526996,
        topics: words(&[
            "whaling", "allegory", "revenge", "American", "novel", "nautical", "voyage", "Cape Cod",
        ]),
    };
    moby.insert(&store).await?;
    let others = [
        (
            2,
            "The Odyssey",
            "Homer",
            -700,
            &["voyage", "epic", "nautical"][..],
        ),
        (
            3,
            "Walden",
            "Henry David Thoreau",
            1854,
            &["nature", "American"][..],
        ),
    ];
    for (id, title, author, published, topics) in others {
        let v = Volume {
            id,
            title: title.into(),
            author: author.into(),
            published,
            isbn: 1000 + i64::from(id),
            topics: words(topics),
        };
        v.insert(&store).await?;
    }
    println!(
        "indexes of volumes: {:?}",
        store.index_names("volumes").await?
    );

    // db.volumes.findOne({topics: "voyage"}, {title: 1})
    let one: Option<Title> = Volume::find(Volume::TOPICS.contains("voyage"))
        .project(Volume::TITLE)
        .ascending(Volume::ID)
        .one_as(&store)
        .await?;
    let one = one.expect("a volume about voyage");
    println!(
        "findOne(topics: voyage, title: 1): _id {}, title {:?}",
        one.id, one.title
    );

    let titles = |vs: Vec<Volume>| vs.into_iter().map(|v| v.title).collect::<Vec<_>>();
    let voyage = Volume::find(Volume::TOPICS.contains("voyage"))
        .ascending(Volume::ID)
        .all(&store)
        .await?;
    println!("voyage: {:?}", titles(voyage));
    let all = Volume::find(Volume::TOPICS.contains_all(["voyage", "whaling"]))
        .all(&store)
        .await?;
    println!("voyage and whaling: {:?}", titles(all));
    let any = Volume::find(Volume::TOPICS.contains_any(["epic", "nature"]))
        .ascending(Volume::PUBLISHED)
        .all(&store)
        .await?;
    println!("epic or nature: {:?}", titles(any));
    let exact = Volume::find(Volume::TOPICS.contains("whale"))
        .all(&store)
        .await?;
    println!("whale (no stemming): {} found", exact.len());

    // Keywords lowercased on write and on query.
    let article = Article {
        id: 1,
        title: "Schema design in Rust".into(),
        tags: words(&["MongoDB", "Rust", "Schema"]),
    };
    article.insert(&store).await?;
    let stored = Article::get(&store, &1).await?.expect("the article");
    println!("stored tags: {:?}", stored.tags);
    let found = Article::find(Article::TAGS.contains_all(["RUST", "mongodb"]))
        .all(&store)
        .await?;
    println!("RUST and mongodb: {} found", found.len());
    Ok(())
}
