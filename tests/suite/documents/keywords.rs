//! Keyword search on the seed's Moby-Dick, normalised keywords, and the multikey index at work on
//! both stores.

use super::*;

/// The seed's keyword document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
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

fn volume(id: i32, title: &str, published: i32, topics: &[&str]) -> Volume {
    Volume {
        id,
        title: title.into(),
        author: "someone".into(),
        published,
        isbn: 1000 + i64::from(id),
        topics: topics.iter().map(|t| t.to_string()).collect(),
    }
}

/// `{title: "Moby-Dick", author: "Herman Melville", published: 1851, ISBN: 0451526996,
/// topics: ["whaling", "allegory", "revenge", "American", "novel", "nautical", "voyage", "Cape
/// Cod"]}`
fn moby_dick() -> Volume {
    Volume {
        id: 1,
        title: "Moby-Dick".into(),
        author: "Herman Melville".into(),
        published: 1851,
        isbn: 451526996,
        topics: [
            "whaling", "allegory", "revenge", "American", "novel", "nautical", "voyage", "Cape Cod",
        ]
        .map(String::from)
        .to_vec(),
    }
}

/// The seed's projection `{title: 1}`: `_id` and the title.
#[derive(Debug, PartialEq, Deserialize)]
struct Title {
    #[serde(rename = "_id")]
    id: i32,
    title: String,
}

async fn library(store: &AnyStore) {
    moby_dick().insert(store).await.unwrap();
    volume(2, "The Odyssey", -700, &["voyage", "epic", "nautical"])
        .insert(store)
        .await
        .unwrap();
    volume(3, "Walden", 1854, &["nature", "American"])
        .insert(store)
        .await
        .unwrap();
    volume(4, "Empty", 2000, &[]).insert(store).await.unwrap();
}

/// The seed's `createIndex({topics: 1})` and `findOne({topics: "voyage"}, {title: 1})`, and
/// the queries on one keyword, all of several and any of several.
async fn keyword_search_replays_moby_dick(store: AnyStore) {
    library(&store).await;
    let names = store.index_names("volumes").await.unwrap();
    assert!(names.contains(&"topics_1".to_owned()), "{names:?}");
    let one: Option<Title> = Volume::find(Volume::TOPICS.contains("voyage"))
        .project(Volume::TITLE)
        .ascending(Volume::ID)
        .one_as(&store)
        .await
        .unwrap();
    assert_eq!(
        one,
        Some(Title {
            id: 1,
            title: "Moby-Dick".into()
        })
    );
    let titles = |found: Vec<Volume>| found.into_iter().map(|v| v.title).collect::<Vec<_>>();
    let voyage = Volume::find(Volume::TOPICS.contains("voyage"))
        .ascending(Volume::ID)
        .all(&store)
        .await
        .unwrap();
    assert_eq!(titles(voyage), ["Moby-Dick", "The Odyssey"]);
    let all = Volume::find(Volume::TOPICS.contains_all(["voyage", "whaling"]))
        .all(&store)
        .await
        .unwrap();
    assert_eq!(titles(all), ["Moby-Dick"]);
    let any = Volume::find(Volume::TOPICS.contains_any(["epic", "nature"]))
        .descending(Volume::PUBLISHED)
        .all(&store)
        .await
        .unwrap();
    assert_eq!(titles(any), ["Walden", "The Odyssey"]);
    // Keywords are compared exactly (no normalisation asked for here): "american" is not
    // "American"; no stemming: "whale" is not "whaling".
    for missing in ["american", "whale"] {
        let none = Volume::find(Volume::TOPICS.contains(missing))
            .all(&store)
            .await
            .unwrap();
        assert!(none.is_empty(), "{missing}");
    }
    let nothing = Volume::find(Volume::TOPICS.contains_all(Vec::<String>::new()))
        .all(&store)
        .await
        .unwrap();
    assert!(nothing.is_empty());
    // With another condition, and a keyword added in place.
    let old = Volume::TOPICS
        .contains("American")
        .and(Volume::PUBLISHED.lt(1852));
    let found = Volume::find(old.clone()).all(&store).await.unwrap();
    assert_eq!(titles(found), ["Moby-Dick"]);
    let add = Update::new().push(Volume::TOPICS, "transcendentalism".to_owned());
    assert!(Volume::update_one(&store, Filter::id(&3), add)
        .await
        .unwrap());
    let walden = Volume::find(Volume::TOPICS.contains("transcendentalism"))
        .project(Volume::TITLE)
        .all_as::<Title, _>(&store)
        .await
        .unwrap();
    assert_eq!(
        walden,
        [Title {
            id: 3,
            title: "Walden".into()
        }]
    );
}

/// Keywords lowercased on write and on query (`#[document(keywords(lowercase))]`); typed paths
/// named as serde stores the fields (`rename_all`, `rename`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "articles")]
#[serde(rename_all = "camelCase")]
struct Article {
    #[serde(rename = "_id")]
    id: String,
    head_line: String,
    #[document(keywords(lowercase))]
    search_tags: Vec<String>,
    read_count: i64,
}

async fn keywords_are_normalised(store: AnyStore) {
    assert_eq!(Article::HEAD_LINE.name(), "headLine");
    assert_eq!(Article::SEARCH_TAGS.name(), "searchTags");
    assert_eq!(Article::ID.name(), "_id");
    let a = Article {
        id: "a1".into(),
        head_line: "Schema design".into(),
        search_tags: vec!["MongoDB".into(), "Rust".into(), "ÉTÉ".into()],
        read_count: 0,
    };
    a.insert(&store).await.unwrap();
    let stored = documents(&store, "articles").await;
    assert_eq!(
        stored[0].get_array("searchTags").unwrap(),
        &vec![Bson::from("mongodb"), Bson::from("rust"), Bson::from("été")]
    );
    for query in ["RUST", "rust", "Rust"] {
        let found = Article::find(Article::SEARCH_TAGS.contains(query))
            .all(&store)
            .await
            .unwrap();
        assert_eq!(found.len(), 1, "{query}");
    }
    let both = Article::find(Article::SEARCH_TAGS.contains_all(["MONGODB", "Été"]))
        .all(&store)
        .await
        .unwrap();
    assert_eq!(both.len(), 1);
    let update = Update::new()
        .push(Article::SEARCH_TAGS, "Async".to_owned())
        .inc(Article::READ_COUNT, 5);
    assert!(Article::update_one(&store, Filter::id("a1"), update)
        .await
        .unwrap());
    let got = Article::get(&store, "a1").await.unwrap().unwrap();
    assert_eq!(got.search_tags, ["mongodb", "rust", "été", "async"]);
    assert_eq!(got.read_count, 5);
    // `save` normalises too.
    let mut edited = got.clone();
    edited.search_tags.push("NoSQL".into());
    edited.save(&store).await.unwrap();
    let got = Article::get(&store, "a1").await.unwrap().unwrap();
    assert_eq!(got.search_tags.last().map(String::as_str), Some("nosql"));
}

/// A library of `n` volumes, one in ten about "voyage".
async fn shelves(store: &AnyStore, n: i32) {
    moby_dick().insert(store).await.unwrap();
    for i in 2..=n {
        let topics: &[&str] = if i % 10 == 0 {
            &["voyage", "sea"]
        } else {
            &["novel", "history"]
        };
        volume(i, &format!("Volume {i}"), 1900 + i, topics)
            .insert(store)
            .await
            .unwrap();
    }
}

/// In memory, the planner walks `topics_1` for one keyword and for all of several (the first
/// one looked up, the others checked): it examines the documents holding the keyword only.
async fn memory_keyword_search_uses_the_index(store: AnyStore) {
    let AnyStore::Memory(m) = &store else {
        return;
    };
    shelves(&store, 200).await;
    let voyage = Volume::TOPICS.contains("voyage").to_query().unwrap();
    let plan = m.explain("volumes", &voyage);
    assert_eq!(plan.index.as_deref(), Some("topics_1"));
    assert_eq!((plan.examined, plan.returned), (21, 21));
    let all = (Volume::TOPICS.contains_all(["whaling", "voyage"]))
        .to_query()
        .unwrap();
    let plan = m.explain("volumes", &all);
    assert_eq!(plan.index.as_deref(), Some("topics_1"));
    assert_eq!((plan.examined, plan.returned), (1, 1));
    println!("memory explain: {plan:?}");
}

mod memory_only {
    #[tokio::test]
    async fn keyword_search_uses_the_index() {
        super::memory_keyword_search_uses_the_index(pattern_tests::memory_store()).await;
    }
}

/// On MongoDB, the very find the library sends for one keyword and for all of several, as
/// recorded by command monitoring, explained: an index scan of `topics_1` (multikey), with as
/// many documents examined as returned; the find names itself a keyword search.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mongo_keyword_search_uses_the_index() {
    let (m, log) = recording_mongo_store("documents_explain").await;
    let store = AnyStore::Mongo(m.clone());
    shelves(&store, 200).await;
    for (filter, want) in [
        (Volume::TOPICS.contains("voyage"), 21),
        (Volume::TOPICS.contains_all(["whaling", "voyage"]), 1),
    ] {
        log.lock().unwrap().clear();
        let found = Volume::find(filter)
            .project(Volume::TITLE)
            .all_as::<Title, _>(&store)
            .await
            .unwrap();
        assert_eq!(found.len(), want);
        let sent: Vec<bson::Document> = (log.lock().unwrap().iter())
            .filter(|(name, _)| name == "find")
            .map(|(_, cmd)| cmd.clone())
            .collect();
        assert_eq!(sent.len(), 1, "one find: {sent:?}");
        let find = &sent[0];
        assert_eq!(
            find.get_str("comment").unwrap(),
            "pattern scatter: keyword search"
        );
        let mut cmd = bson::Document::new();
        for k in ["find", "filter", "projection"] {
            if let Some(v) = find.get(k) {
                cmd.insert(k, v.clone());
            }
        }
        let out = m
            .database()
            .run_command(doc! {"explain": cmd.clone(), "verbosity": "executionStats"})
            .await
            .expect("explain");
        let stats = out.get_document("executionStats").expect("executionStats");
        let n = |k: &str| pattern_tests::as_int(stats.get(k).unwrap_or(&Bson::Null));
        let (examined, returned) = (n("totalDocsExamined"), n("nReturned"));
        let plan = out
            .get_document("queryPlanner")
            .and_then(|q| q.get_document("winningPlan"))
            .expect("winningPlan");
        let scans = index_scans(plan);
        println!(
            "explain of {cmd}: index scans {scans:?}, docs examined {examined:?}, returned {returned:?}"
        );
        assert!(
            scans
                .iter()
                .any(|(name, multikey)| name == "topics_1" && *multikey != Some(false)),
            "no scan of topics_1 in {plan}"
        );
        assert_eq!(returned, Some(want as i64));
        assert_eq!(examined, returned, "documents examined beyond the matches");
    }
    let _ = m.database().drop().await;
}

/// The `IXSCAN` stages of a plan: index name and `isMultiKey` where the server says.
fn index_scans(plan: &bson::Document) -> Vec<(String, Option<bool>)> {
    let mut out = Vec::new();
    if plan.get_str("stage") == Ok("IXSCAN") {
        let name = plan.get_str("indexName").unwrap_or("").to_owned();
        out.push((name, plan.get_bool("isMultiKey").ok()));
    }
    for (_, v) in plan {
        match v {
            Bson::Document(d) => out.extend(index_scans(d)),
            Bson::Array(a) => {
                for d in a.iter().filter_map(Bson::as_document) {
                    out.extend(index_scans(d));
                }
            }
            _ => {}
        }
    }
    out
}

on_both_stores!(keyword_search_replays_moby_dick, keywords_are_normalised);
