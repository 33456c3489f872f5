//! The attribute pattern (`#[document(attributes)] specs: Attributes<V>`) on both stores:
//! stored as an array of `{k, v}` by name under the index `{specs.k: 1, specs.v: 1}`; a query on
//! one attribute is one `$elemMatch`, so a document whose name and value come from different
//! elements never matches (the classic pitfall, shown); a differential test of random documents
//! and queries against a plain model; a document another tool wrote with a name twice is a
//! typed error; `explain` shows the compound index used, on MongoDB and in memory.

use pattern_core::store;
use std::collections::BTreeMap;

use pattern_core::document::Attributes;
use pattern_core::store::query;

use super::*;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Document)]
#[document(collection = "parts")]
struct Part {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
    #[document(attributes)]
    specs: Attributes<i64>,
}

fn part(id: i64, specs: &[(&str, i64)]) -> Part {
    Part {
        id,
        name: format!("part {id}"),
        specs: specs.iter().map(|(k, v)| (*k, *v)).collect(),
    }
}

async fn ids(store: &AnyStore, filter: Filter<Part>) -> Vec<i64> {
    let mut out: Vec<i64> = (Part::find(filter).all(store).await.unwrap().into_iter())
        .map(|p| p.id)
        .collect();
    out.sort();
    out
}

async fn stored_as_pairs_and_queried_within_one_element(store: AnyStore) {
    part(1, &[("watts", 250), ("voltage", 110)])
        .insert(&store)
        .await
        .unwrap();
    part(2, &[("voltage", 230)]).insert(&store).await.unwrap();
    let raw = documents(&store, "parts").await;
    assert_eq!(
        raw[0].get_array("specs").unwrap(),
        &vec![
            Bson::Document(doc! {"k": "voltage", "v": 110_i64}),
            Bson::Document(doc! {"k": "watts", "v": 250_i64}),
        ],
        "an array of {{k, v}} by name"
    );
    assert_eq!(
        Part::get(&store, &1).await.unwrap().unwrap(),
        part(1, &[("watts", 250), ("voltage", 110)])
    );
    let names = store.index_names("parts").await.unwrap();
    assert!(
        names.iter().any(|n| n == "pattern_attributes_specs"),
        "{names:?}"
    );
    // The pitfall: `voltage` in one element, a value over 200 in another. Two dotted
    // conditions match part 1; the attribute query does not.
    let dotted = query::Filter::And(vec![
        query::Filter::Eq("specs.k".into(), Bson::String("voltage".into())),
        query::Filter::Gt("specs.v".into(), Bson::Int64(200)),
    ]);
    if matches!(store, AnyStore::Mongo(_)) {
        let found = store
            .find("parts", &dotted, &pattern_tests::read_back())
            .await
            .unwrap();
        assert_eq!(
            found.len(),
            2,
            "MongoDB matches both with separate conditions"
        );
    }
    assert_eq!(
        ids(&store, Part::SPECS.attribute("voltage").gt(200)).await,
        [2]
    );
    assert_eq!(
        ids(&store, Part::SPECS.attribute("watts").exists()).await,
        [1]
    );
    assert_eq!(
        ids(&store, Part::SPECS.attribute("voltage").between(100, 120)).await,
        [1]
    );
    // Two attributes of one document: each its own element.
    let both = Part::SPECS
        .attribute("voltage")
        .eq(110)
        .and(Part::SPECS.attribute("watts").gte(250));
    assert_eq!(ids(&store, both).await, [1]);
    // A document another tool wrote with a name twice: a typed error, nothing guessed.
    let twice = doc! {"_id": 3_i64, "name": "bad", "specs": [{"k": "a", "v": 1_i64}, {"k": "a", "v": 2_i64}]};
    store.insert_one("parts", twice).await.unwrap();
    let err = Part::get(&store, &3).await.unwrap_err();
    assert!(
        matches!(&err, Error::Store(store::Error::Decode { .. }))
            && err.to_string().contains("appears twice"),
        "{err}"
    );
}

/// Random documents and random queries on one or two attributes, on both stores, against a
/// model evaluating each query on the documents' maps.
async fn random_queries_match_a_model(store: AnyStore) {
    let mut next = pattern_tests::rng(0x853c_49e6_748f_ea9b_u64);
    let keys = ["a", "b", "c", "d", "e"];
    let mut model: BTreeMap<i64, BTreeMap<String, i64>> = BTreeMap::new();
    for id in 0..pattern_tests::scale(80, 2_000) as i64 {
        let specs: Vec<(&str, i64)> = (0..next(5))
            .map(|_| (keys[next(5) as usize], next(10) as i64))
            .collect();
        let p = part(id, &specs);
        model.insert(id, p.specs.0.clone());
        p.insert(&store).await.unwrap();
    }
    type Cond = (Filter<Part>, Box<dyn Fn(Option<i64>) -> bool>);
    let random = |next: &mut dyn FnMut(u64) -> u64| -> (String, Cond) {
        let key = keys[next(6) as usize % 5].to_owned();
        let (x, y) = (next(11) as i64, next(11) as i64);
        let a = Part::SPECS.attribute(key.clone());
        let cond: Cond = match next(8) {
            0 => (a.eq(x), Box::new(move |v| v == Some(x))),
            1 => (a.gt(x), Box::new(move |v| v.is_some_and(|v| v > x))),
            2 => (a.gte(x), Box::new(move |v| v.is_some_and(|v| v >= x))),
            3 => (a.lt(x), Box::new(move |v| v.is_some_and(|v| v < x))),
            4 => (a.lte(x), Box::new(move |v| v.is_some_and(|v| v <= x))),
            5 => (
                a.between(x.min(y), x.max(y)),
                Box::new(move |v| v.is_some_and(|v| x.min(y) <= v && v <= x.max(y))),
            ),
            6 => (
                a.is_in([x, y]),
                Box::new(move |v| v == Some(x) || v == Some(y)),
            ),
            _ => (a.exists(), Box::new(|v| v.is_some())),
        };
        (key, cond)
    };
    for q in 0..pattern_tests::scale(150, 3_000) {
        let (k1, (f1, c1)) = random(&mut next);
        let two = next(3) == 0;
        let (filter, want): (Filter<Part>, Vec<i64>) = if two {
            let (k2, (f2, c2)) = random(&mut next);
            let want = (model.iter())
                .filter(|(_, m)| c1(m.get(&k1).copied()) && c2(m.get(&k2).copied()))
                .map(|(id, _)| *id)
                .collect();
            (f1.and(f2), want)
        } else {
            let want = (model.iter())
                .filter(|(_, m)| c1(m.get(&k1).copied()))
                .map(|(id, _)| *id)
                .collect();
            (f1, want)
        };
        let shown = format!("{filter:?}");
        assert_eq!(ids(&store, filter).await, want, "query {q}: {shown}");
    }
}

/// In memory, the planner walks the compound index too: its entries hold each element's name
/// and value together (as MongoDB's multikey entries through an array of documents do), and an
/// element match bounds both, so an attribute query examines only the documents that hold a
/// matching element.
async fn memory_attribute_query_uses_the_compound_index(store: AnyStore) {
    let AnyStore::Memory(m) = &store else {
        unreachable!("an in-memory test")
    };
    for id in 0..200 {
        part(id, &[("voltage", id % 7), ("watts", id)])
            .insert(&store)
            .await
            .unwrap();
    }
    let plan = |f: Filter<Part>| m.explain("parts", &f.to_query().unwrap());
    let eq = plan(Part::SPECS.attribute("voltage").eq(3));
    assert_eq!(eq.index.as_deref(), Some("pattern_attributes_specs"));
    assert_eq!((eq.examined, eq.returned), (29, 29));
    let range = plan(Part::SPECS.attribute("watts").between(10, 19));
    assert_eq!(range.index.as_deref(), Some("pattern_attributes_specs"));
    assert_eq!((range.examined, range.returned), (10, 10));
    // Another attribute's values in the range do not count: `voltage` 3 is no `watts` 3.
    let watts = plan(Part::SPECS.attribute("watts").lte(3));
    assert_eq!((watts.examined, watts.returned), (4, 4));
    let none = plan(Part::SPECS.attribute("amps").exists());
    assert_eq!((none.examined, none.returned), (0, 0));
    // An update that changes a value moves its entry.
    let bump = Update::new().set(Part::SPECS, part(5, &[("watts", 1_000)]).specs);
    assert!(Part::update_one(&store, Part::ID.eq(5), bump)
        .await
        .unwrap());
    let moved = plan(Part::SPECS.attribute("watts").gt(900));
    assert_eq!((moved.examined, moved.returned), (1, 1));
    let gone = plan(Part::SPECS.attribute("voltage").eq(5));
    assert_eq!((gone.examined, gone.returned), (27, 27));
}

on_both_stores!(
    stored_as_pairs_and_queried_within_one_element,
    random_queries_match_a_model,
);

mod memory_only {
    #[tokio::test]
    async fn attribute_query_uses_the_compound_index() {
        super::memory_attribute_query_uses_the_compound_index(pattern_tests::memory_store()).await;
    }
}

/// On MongoDB, the find the library sends for one attribute, explained: an index scan of
/// `pattern_attributes_specs`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mongo_attribute_query_uses_the_compound_index() {
    let (m, log) = recording_mongo_store("documents_attributes_explain").await;
    let store = AnyStore::Mongo(m.clone());
    for id in 0..200 {
        part(id, &[("voltage", id % 7), ("watts", id)])
            .insert(&store)
            .await
            .unwrap();
    }
    log.lock().unwrap().clear();
    let found = ids(&store, Part::SPECS.attribute("voltage").eq(3)).await;
    assert_eq!(found.len(), 29);
    let find = (log.lock().unwrap().iter())
        .find(|(name, _)| name == "find")
        .map(|(_, cmd)| cmd.clone())
        .expect("a find");
    let filter = find.get_document("filter").unwrap().clone();
    assert_eq!(
        filter,
        doc! {"specs.k": "voltage", "specs.v": 3_i64, "specs": {"$elemMatch": {"k": "voltage", "v": 3_i64}}}
    );
    let out = m
        .database()
        .run_command(
            doc! {"explain": {"find": "parts", "filter": filter}, "verbosity": "executionStats"},
        )
        .await
        .expect("explain");
    let plan = out
        .get_document("queryPlanner")
        .and_then(|q| q.get_document("winningPlan"))
        .expect("winningPlan");
    assert!(
        plan.to_string().contains("pattern_attributes_specs"),
        "no scan of the compound index in {plan}"
    );
    let _ = m.database().drop().await;
}
