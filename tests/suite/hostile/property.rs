//! Arbitrary foreign documents, a property test on both stores: every call returns `Ok` or a
//! typed error.

use super::*;
use pattern_core::store;

/// Any BSON value of the kinds other tools write, nested a little.
fn any_bson() -> impl Strategy<Value = Bson> {
    let leaf = prop_oneof![
        Just(Bson::Null),
        any::<bool>().prop_map(Bson::Boolean),
        any::<i32>().prop_map(Bson::Int32),
        any::<i64>().prop_map(Bson::Int64),
        any::<f64>().prop_map(Bson::Double),
        "[a-z$._]{0,6}".prop_map(Bson::String),
        (0i64..4_000_000_000_000).prop_map(|ms| Bson::DateTime(bson::DateTime::from_millis(ms))),
        Just(Bson::ObjectId(bson::oid::ObjectId::new())),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Bson::Array),
            prop::collection::vec(("[a-z]{1,4}", inner), 0..4)
                .prop_map(|kv| Bson::Document(kv.into_iter().collect::<Document>())),
        ]
    })
}

/// A value for one of our fields: usually near the expected shape, sometimes anything.
fn field(expected: impl Strategy<Value = Bson> + 'static) -> impl Strategy<Value = Option<Bson>> {
    prop_oneof![
        3 => expected.prop_map(Some),
        2 => any_bson().prop_map(Some),
        1 => Just(None),
    ]
}

fn trade_like() -> impl Strategy<Value = Bson> {
    prop_oneof![
        Just(Bson::Document(
            bson::doc! {"ticker": "X", "qty": 1_i64, "date": bson::DateTime::from_millis(0)}
        )),
        any_bson(),
    ]
}

fn array_of(item: impl Strategy<Value = Bson> + 'static) -> impl Strategy<Value = Bson> {
    prop::collection::vec(item, 0..5).prop_map(Bson::Array)
}

fn small_int() -> impl Strategy<Value = Bson> {
    (-2i32..6).prop_map(Bson::Int32)
}

/// A document under key 5 of one of our collections, with each field near or far from its shape.
fn foreign_doc(
    fields: Vec<(&'static str, BoxedStrategy<Option<Bson>>)>,
) -> impl Strategy<Value = Document> {
    fields
        .into_iter()
        .fold(Just(Document::new()).boxed(), |acc, (name, strat)| {
            (acc, strat)
                .prop_map(move |(mut d, v)| {
                    if let Some(v) = v {
                        d.insert(name, v);
                    }
                    d
                })
                .boxed()
        })
}

fn bucket_doc() -> impl Strategy<Value = Document> {
    foreign_doc(vec![
        ("customerId", field(Just(Bson::Int64(5))).boxed()),
        ("count", field(small_int()).boxed()),
        ("history", field(array_of(trade_like())).boxed()),
        ("extra", field(any_bson()).boxed()),
    ])
}

fn main_doc() -> impl Strategy<Value = Document> {
    foreign_doc(vec![
        ("title", field(Just(Bson::String("t".into()))).boxed()),
        (
            "customers_purchased",
            field(array_of(prop_oneof![
                Just(Bson::String("u".into())),
                any_bson()
            ]))
            .boxed(),
        ),
        (
            "has_extras",
            field(any::<bool>().prop_map(Bson::Boolean)).boxed(),
        ),
    ])
}

fn chunk_doc() -> impl Strategy<Value = Document> {
    foreign_doc(vec![
        ("book_id", field(Just(Bson::Int64(5))).boxed()),
        ("count", field(small_int()).boxed()),
        (
            "customers_purchased_extra",
            field(array_of(prop_oneof![
                Just(Bson::String("v".into())),
                any_bson()
            ]))
            .boxed(),
        ),
        ("seq", field(small_int()).boxed()),
    ])
}

fn typed<T>(r: Result<T, Error>) {
    if let Err(e) = r {
        assert!(
            matches!(
                e,
                Error::Store(store::Error::Decode { .. })
                    | Error::Store(store::Error::Server { .. })
                    | Error::Store(store::Error::InvalidInput(_))
                    | Error::NotFound { .. }
                    | Error::Store(store::Error::DuplicateKey { .. })
            ),
            "unexpected error: {e:?}"
        );
    }
}

/// Inserts the foreign documents, then runs every read and a push of each pattern.
async fn exercise(store: AnyStore, buckets: Vec<Document>, main: Document, chunks: Vec<Document>) {
    for (i, mut d) in buckets.into_iter().enumerate() {
        d.insert("_id", format!("5_{i}"));
        store.insert_one("trades", d).await.unwrap();
    }
    let mut main = main;
    main.insert("_id", 5_i64);
    store.insert_one("sales", main).await.unwrap();
    for mut d in chunks {
        d.insert("_id", bson::oid::ObjectId::new());
        // A foreign pair of chunks with the same number fails our unique index: that is a
        // typed error too (InvalidInput from ensure_indexes), checked by the reads below.
        store.insert_one("extra_sales", d).await.unwrap();
    }
    let trade = Trade {
        ticker: "Y".into(),
        qty: 2,
        date: bson::DateTime::from_millis(1_700_000_000_000),
    };
    for n in 1..=3 {
        typed(TradeHistory::page(&store, &5, n).await);
    }
    typed(
        TradeHistory::items(&store, &5)
            .try_collect::<Vec<_>>()
            .await,
    );
    typed(
        TradeHistory::pages(&store, &5)
            .try_collect::<Vec<_>>()
            .await,
    );
    typed(TradeHistory::counts(&store, &5).await);
    typed(TradeHistory::push(&store, &5, trade.clone()).await);
    typed(TradeHistory::push_many(&store, &5, &[trade.clone(), trade]).await);
    typed(Book::typical(&store, &5).await);
    typed(Book::full(&store, &5).await);
    typed(Book::all_items(&store, &5).await);
    typed(Book::items(&store, &5).try_collect::<Vec<_>>().await);
    typed(Book::counts(&store, &5).await.map(|c| c.items));
    typed(Book::is_outlier(&store, &5).await);
    typed(Book::push(&store, &5, "w".into()).await);
    typed(Book::push_many(&store, &5, &["x".into(), "y".into(), "z".into()]).await);
}

fn cases() -> impl Strategy<Value = (Vec<Document>, Document, Vec<Document>)> {
    (
        prop::collection::vec(bucket_doc(), 0..4),
        main_doc(),
        prop::collection::vec(chunk_doc(), 0..4),
    )
}

/// Where failing cases are kept and replayed first (relative to the tests crate).
fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::Direct(
                "proptest-regressions/hostile.txt",
            ),
        )),
        ..ProptestConfig::default()
    }
}

/// Found by the property test below: a foreign chunk numbered 2^63-1 made the next number
/// overflow (a panic); it is a decode error naming the chunk.
#[tokio::test]
async fn chunk_number_at_its_maximum_is_a_decode_error() {
    let store = pattern_tests::memory_store();
    store.insert_one("sales", bson::doc! {"_id": 5_i64, "title": "t", "customers_purchased": ["a", "b"], "has_extras": true}).await.unwrap();
    store
        .insert_one("extra_sales", bson::doc! {"_id": "max", "book_id": 5_i64, "count": 2, "customers_purchased_extra": ["c", "d"], "seq": i64::MAX})
        .await
        .unwrap();
    let e = Book::push(&store, &5, "e".into()).await.unwrap_err();
    assert!(
        matches!(e, Error::Store(store::Error::Decode { ref collection, ref id, .. }) if collection == "extra_sales" && id.contains("max")),
        "{e:?}"
    );
    assert_eq!(Book::counts(&store, &5).await.map(|c| c.items).unwrap(), 4);
}

proptest! {
    #![proptest_config(config(256))]
    #[test]
    fn memory_store_survives_foreign_documents((buckets, main, chunks) in cases()) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(exercise(pattern_tests::memory_store(), buckets, main, chunks));
    }
}

proptest! {
    #![proptest_config(config(24))]
    #[test]
    fn mongo_store_survives_foreign_documents((buckets, main, chunks) in cases()) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let store = AnyStore::Mongo(pattern_tests::mongo_store("hostile").await);
            exercise(store.clone(), buckets, main, chunks).await;
            pattern_tests::drop_db(&store).await;
        });
    }
}
