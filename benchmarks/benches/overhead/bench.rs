//! What both sides run against: the data loaded, the operations prepared, run and cleaned up.

use std::hint::black_box;
use std::sync::atomic::{AtomicI64, Ordering};

use bson::{doc, Document};
use futures::StreamExt;
use mongodb::{Collection, Database, IndexModel};
use pattern_bench::{Book, Trade, TradeHistory};
use pattern_core::store::MongoStore;
use pattern_core::{store::Store, Bucket};

use crate::op::{Op, Side};
use crate::seed::{
    book, buyer, seed_book, trade, SeedBook, SeedBucket, SeedExtra, TradeRolled, TradeTotals,
    EXTRA_DRIVER, ROLLED_DRIVER, SALES_DRIVER, TOTALS_DRIVER, TRADES_DRIVER, TRADES_DRIVER_IX,
};
use crate::{LOADERS, OUTLIER_BASE, OUTLIER_BUYERS, PAGE, PAGES, THRESHOLD, TYPICAL_BUYERS};

/// Everything both sides run against.
pub(crate) struct Bench {
    pub(crate) store: MongoStore,
    pub(crate) db: Database,
    pub(crate) keys: i64,
    pub(crate) books: i64,
    pub(crate) outliers: i64,
    /// Fresh keys and book ids for the pushes (never loaded, never reused).
    pub(crate) fresh: AtomicI64,
}

/// What an untimed preparation made for a batch of operations: the first fresh key or book.
pub(crate) struct Batch {
    base: i64,
    count: i64,
}

impl Bench {
    fn trades_driver(&self) -> Collection<Document> {
        self.db.collection(TRADES_DRIVER)
    }
    pub(crate) fn sales_driver(&self) -> Collection<SeedBook> {
        self.db.collection(SALES_DRIVER)
    }
    pub(crate) fn extra_driver(&self) -> Collection<SeedExtra> {
        self.db.collection(EXTRA_DRIVER)
    }

    /// Loads both sides with the same data and creates their indexes.
    pub(crate) async fn load(&self) {
        let items: Vec<Trade> = (0..PAGES * 10).map(trade).collect();
        TradeHistory::ensure_indexes(&self.store).await.unwrap();
        futures::stream::iter(0..self.keys)
            .for_each_concurrent(LOADERS, |k| {
                let items = &items;
                async move {
                    TradeHistory::push_many(&self.store, &k, items)
                        .await
                        .unwrap()
                }
            })
            .await;
        let trades = self.trades_driver();
        trades
            .create_index(
                IndexModel::builder()
                    .keys(doc! {"customerId": 1, "count": 1})
                    .build(),
            )
            .await
            .unwrap();
        trades
            .create_index(
                IndexModel::builder()
                    .keys(doc! {"customerId": 1, "_id": 1})
                    .build(),
            )
            .await
            .unwrap();
        let buckets: Vec<Document> = (0..self.keys)
            .flat_map(|k| {
                items.chunks(10).map(move |c| {
                    let first = c[0].date.timestamp_millis() / 1000;
                    bson::to_document(&SeedBucket {
                        id: format!("{k}_{first}"),
                        customer_id: k,
                        count: c.len() as i32,
                        history: c.to_vec(),
                    })
                    .unwrap()
                })
            })
            .collect();
        for chunk in buckets.chunks(1_000) {
            trades.insert_many(chunk).await.unwrap();
        }
        // The same buckets under the library's indexes (created by the store, as the library
        // creates its own).
        for index in TradeHistory::SPEC.series().indexes() {
            self.store
                .create_index(TRADES_DRIVER_IX, &index)
                .await
                .unwrap();
        }
        let same = self.db.collection::<Document>(TRADES_DRIVER_IX);
        for chunk in buckets.chunks(1_000) {
            same.insert_many(chunk).await.unwrap();
        }

        // The pushes that keep a summary start empty on both sides, under the same indexes.
        TradeTotals::ensure_indexes(&self.store).await.unwrap();
        for index in TradeTotals::SPEC.series().indexes() {
            self.store
                .create_index(TOTALS_DRIVER, &index)
                .await
                .unwrap();
        }
        TradeRolled::ensure_indexes(&self.store).await.unwrap();
        for index in TradeRolled::SPEC.series().indexes() {
            self.store
                .create_index(ROLLED_DRIVER, &index)
                .await
                .unwrap();
        }

        Book::ensure_indexes(&self.store).await.unwrap();
        let books: Vec<Book> = (0..self.books)
            .map(|id| book(id, TYPICAL_BUYERS))
            .chain((0..self.outliers).map(|i| book(OUTLIER_BASE + i, OUTLIER_BUYERS)))
            .collect();
        futures::stream::iter(&books)
            .for_each_concurrent(
                LOADERS,
                |b| async move { b.save(&self.store).await.unwrap() },
            )
            .await;
        self.extra_driver()
            .create_index(
                IndexModel::builder()
                    .keys(doc! {"book_id": 1, "seq": 1})
                    .build(),
            )
            .await
            .unwrap();
        let mains: Vec<SeedBook> = books.iter().map(seed_book).collect();
        for chunk in mains.chunks(1_000) {
            self.sales_driver().insert_many(chunk).await.unwrap();
        }
        let extras: Vec<SeedExtra> = books
            .iter()
            .filter(|b| b.customers_purchased.len() > THRESHOLD)
            .flat_map(|b| {
                b.customers_purchased[THRESHOLD..]
                    .chunks(pattern_core::outlier::DEFAULT_CHUNK as usize)
                    .enumerate()
                    .map(|(i, c)| SeedExtra {
                        book_id: b.id,
                        seq: i as i64 + 1,
                        count: c.len() as i32,
                        customers_purchased_extra: c.to_vec(),
                    })
            })
            .collect();
        if !extras.is_empty() {
            self.extra_driver().insert_many(extras).await.unwrap();
        }
    }

    /// Both sides read the same thing, and the pushes that keep a summary write the same
    /// documents.
    pub(crate) async fn check(&self) {
        let key = -1_i64;
        for i in 0..12 {
            TradeTotals::push(&self.store, &key, trade(i))
                .await
                .unwrap();
            self.driver_push_kept(TOTALS_DRIVER, key, i, &trade(i), true)
                .await;
        }
        let docs = |coll: &'static str| async move {
            let c = self.db.collection::<Document>(coll);
            let found = c.find(doc! {"customerId": key}).sort(doc! {"page": 1});
            let docs: Vec<mongodb::error::Result<Document>> = found.await.unwrap().collect().await;
            let docs: Vec<Document> = docs.into_iter().map(Result::unwrap).collect();
            c.delete_many(doc! {"customerId": key}).await.unwrap();
            docs
        };
        let (lib, drv) = (
            docs(TradeTotals::SPEC.collection).await,
            docs(TOTALS_DRIVER).await,
        );
        assert_eq!(lib, drv, "the same documents from both sides' pushes");
        assert_eq!(lib.len(), 2);
        for i in 0..12 {
            TradeRolled::push(&self.store, &key, trade(i))
                .await
                .unwrap();
            self.driver_push_rolled(key, i, &trade(i)).await;
        }
        let (lib, drv) = (
            docs(TradeRolled::SPEC.collection).await,
            docs(ROLLED_DRIVER).await,
        );
        assert_eq!(lib, drv, "the same buckets from both sides' pushes");
        assert_eq!(lib.len(), 2);
        let rollup = |coll: String| async move {
            let c = self.db.collection::<Document>(&coll);
            let found = c.find_one_and_delete(doc! {"_id": key}).await.unwrap();
            found.expect("a roll-up")
        };
        let lib_rollup = rollup(format!("{}.rollups", TradeRolled::SPEC.collection)).await;
        let drv_rollup = rollup(format!("{ROLLED_DRIVER}.rollups")).await;
        assert_eq!(
            lib_rollup, drv_rollup,
            "the same roll-up from both sides' pushes"
        );
        for k in [0, self.keys - 1] {
            let lib = TradeHistory::page(&self.store, &k, PAGE)
                .await
                .unwrap()
                .unwrap();
            let drv = self.driver_page(k).await.unwrap();
            assert_eq!(lib.items, drv.history, "page {PAGE} of key {k}");
        }
        let lib = Book::typical(&self.store, &0).await.unwrap().unwrap();
        let drv = self
            .sales_driver()
            .find_one(doc! {"_id": 0_i64})
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (lib.doc.customers_purchased, lib.has_extras),
            (drv.customers_purchased, drv.has_extras)
        );
        let lib = Book::all_items(&self.store, &OUTLIER_BASE)
            .await
            .unwrap()
            .unwrap();
        let drv = self.driver_all(OUTLIER_BASE).await;
        assert_eq!(lib.len(), OUTLIER_BUYERS);
        assert_eq!(lib, drv);
    }

    /// Untimed: fresh keys (bucket push) or fresh empty books (outlier push) for `n` operations.
    pub(crate) async fn prepare(&self, op: Op, side: Side, n: u64) -> Batch {
        let count = match op {
            Op::BucketPush
            | Op::BucketPushSameIndexes
            | Op::BucketPushKept
            | Op::BucketPushTotals
            | Op::BucketPushRollup => 1,
            Op::OutlierPush => (n as usize).div_ceil(THRESHOLD) as i64,
            _ => return Batch { base: 0, count: 0 },
        };
        let base = self.fresh.fetch_add(count, Ordering::Relaxed);
        if op == Op::OutlierPush {
            let books: Vec<Book> = (base..base + count).map(|id| book(id, 0)).collect();
            match side {
                Side::Library => {
                    for b in &books {
                        b.save(&self.store).await.unwrap();
                    }
                }
                Side::Driver => {
                    let seeds: Vec<SeedBook> = books.iter().map(seed_book).collect();
                    self.sales_driver().insert_many(seeds).await.unwrap();
                }
            }
        }
        Batch { base, count }
    }

    /// Untimed: deletes what a batch of pushes wrote, so the collections keep their size.
    pub(crate) async fn cleanup(&self, op: Op, side: Side, batch: &Batch) {
        let ids: Vec<i64> = (batch.base..batch.base + batch.count).collect();
        match (op, side) {
            (Op::BucketPush | Op::BucketPushSameIndexes | Op::BucketPushKept, Side::Library) => {
                // Every bucket holds its key field (the struct's `customerId`).
                let coll = self
                    .db
                    .collection::<Document>(TradeHistory::SPEC.collection);
                coll.delete_many(doc! {"customerId": {"$in": &ids}})
                    .await
                    .unwrap();
            }
            (Op::BucketPushSameIndexes | Op::BucketPushKept, Side::Driver) => {
                self.db
                    .collection::<Document>(TRADES_DRIVER_IX)
                    .delete_many(doc! {"customerId": {"$in": &ids}})
                    .await
                    .unwrap();
            }
            (Op::BucketPush, Side::Driver) => {
                self.trades_driver()
                    .delete_many(doc! {"customerId": {"$in": &ids}})
                    .await
                    .unwrap();
            }
            (Op::BucketPushTotals | Op::BucketPushRollup, side) => {
                let coll = match (op, side) {
                    (Op::BucketPushTotals, Side::Library) => TradeTotals::SPEC.collection,
                    (Op::BucketPushTotals, Side::Driver) => TOTALS_DRIVER,
                    (_, Side::Library) => TradeRolled::SPEC.collection,
                    (_, Side::Driver) => ROLLED_DRIVER,
                };
                self.db
                    .collection::<Document>(coll)
                    .delete_many(doc! {"customerId": {"$in": &ids}})
                    .await
                    .unwrap();
            }
            (Op::OutlierPush, Side::Library) => {
                for id in &ids {
                    assert!(Book::delete(&self.store, id).await.unwrap());
                }
            }
            (Op::OutlierPush, Side::Driver) => {
                self.sales_driver()
                    .delete_many(doc! {"_id": {"$in": &ids}})
                    .await
                    .unwrap();
            }
            _ => {}
        }
    }

    /// Operation `i` of a batch: the timed part.
    pub(crate) async fn run(&self, op: Op, side: Side, batch: &Batch, i: u64) {
        let i = i as i64;
        match (op, side) {
            (Op::BucketPush | Op::BucketPushSameIndexes | Op::BucketPushKept, Side::Library) => {
                TradeHistory::push(&self.store, &batch.base, trade(i))
                    .await
                    .unwrap();
            }
            (Op::BucketPush, Side::Driver) => {
                self.driver_push(TRADES_DRIVER, batch.base, &trade(i)).await
            }
            (Op::BucketPushSameIndexes, Side::Driver) => {
                self.driver_push(TRADES_DRIVER_IX, batch.base, &trade(i))
                    .await
            }
            (Op::BucketPushTotals, Side::Library) => {
                TradeTotals::push(&self.store, &batch.base, trade(i))
                    .await
                    .unwrap();
            }
            (Op::BucketPushTotals, Side::Driver) => {
                self.driver_push_kept(TOTALS_DRIVER, batch.base, i, &trade(i), true)
                    .await
            }
            (Op::BucketPushRollup, Side::Library) => {
                TradeRolled::push(&self.store, &batch.base, trade(i))
                    .await
                    .unwrap();
            }
            (Op::BucketPushRollup, Side::Driver) => {
                self.driver_push_rolled(batch.base, i, &trade(i)).await
            }
            (Op::BucketPushKept, Side::Driver) => {
                self.driver_push_kept(TRADES_DRIVER_IX, batch.base, i, &trade(i), false)
                    .await
            }
            (Op::BucketPage, Side::Library) => {
                let page = TradeHistory::page(&self.store, &(i % self.keys), PAGE)
                    .await
                    .unwrap();
                black_box(page.expect("a page"));
            }
            (Op::BucketPage, Side::Driver) => {
                black_box(self.driver_page(i % self.keys).await.expect("a page"));
            }
            (Op::OutlierPush, _) => {
                let id = batch.base + i / THRESHOLD as i64;
                let item = buyer(i as usize % THRESHOLD);
                if side == Side::Library {
                    Book::push(&self.store, &id, item).await.unwrap();
                } else {
                    self.driver_outlier_push(id, item).await;
                }
            }
            (Op::TypicalRead, Side::Library) => {
                let t = Book::typical(&self.store, &(i % self.books)).await.unwrap();
                black_box(t.expect("a book"));
            }
            (Op::TypicalRead, Side::Driver) => {
                let id = i % self.books;
                black_box(
                    self.sales_driver()
                        .find_one(doc! {"_id": id})
                        .await
                        .unwrap()
                        .expect("a book"),
                );
            }
            (Op::OutlierRead, Side::Library) => {
                let id = OUTLIER_BASE + i % self.outliers;
                let all = Book::all_items(&self.store, &id).await.unwrap();
                black_box(all.expect("a book"));
            }
            (Op::OutlierRead, Side::Driver) => {
                black_box(self.driver_all(OUTLIER_BASE + i % self.outliers).await);
            }
        }
    }
}
