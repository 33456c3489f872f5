//! The driver side: the seed's commands, hand-written.

use bson::{doc, Document};
use futures::TryStreamExt;
use mongodb::options::{UpdateOneModel, WriteModel};
use pattern_bench::Trade;

use crate::bench::Bench;
use crate::seed::{SeedBucket, ROLLED_DRIVER, TRADES_DRIVER};
use crate::{PAGE, THRESHOLD};

impl Bench {
    /// The seed's push, the key matched by equality.
    pub(crate) async fn driver_push(&self, coll: &str, key: i64, t: &Trade) {
        let id = format!("{key}_{}", t.date.timestamp_millis() / 1000);
        self.db
            .collection::<Document>(coll)
            .update_one(
                doc! {"customerId": key, "count": {"$lt": 10}},
                doc! {
                    "$push": {"history": bson::to_bson(t).unwrap()},
                    "$inc": {"count": 1},
                    "$setOnInsert": {"_id": id, "customerId": key},
                },
            )
            .upsert(true)
            .await
            .unwrap();
    }

    /// What the library's push sends, hand-written: the seed's upsert on the open bucket of
    /// `key`, with the guard that the page number is absent or a number (a bucket another
    /// tool wrote with a string there is never pushed into), the time bounds kept (`$min` /
    /// `$max` of the trade's date), and the page number (push `i` of a fresh key is in page
    /// `i / 10 + 1`) and the bounded mark set when the push opens a bucket. With `total`, the
    /// series also keeps the total quantity: its `$inc` in the same update, and the mark
    /// naming it on insert.
    pub(crate) async fn driver_push_kept(
        &self,
        coll: &str,
        key: i64,
        i: i64,
        t: &Trade,
        total: bool,
    ) {
        let id = format!("{key}_{}", t.date.timestamp_millis() / 1000);
        let not_a_number = [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 17, -1, 127];
        let mut inc = doc! {"count": 1};
        let mut on_insert =
            doc! {"_id": id, "customerId": key, "page": i / 10 + 1, "bounded": true};
        if total {
            inc.insert("qty_sum", t.qty);
            on_insert.insert("summarized", vec!["qty_sum"]);
        }
        self.db
            .collection::<Document>(coll)
            .update_one(
                doc! {
                    "customerId": key,
                    "count": {"$lt": 10},
                    "page": {"$not": {"$type": &not_a_number[..]}},
                },
                doc! {
                    "$push": {"history": bson::to_bson(t).unwrap()},
                    "$inc": inc,
                    "$min": {"date_min": t.date},
                    "$max": {"date_max": t.date},
                    "$setOnInsert": on_insert,
                },
            )
            .upsert(true)
            .await
            .unwrap();
    }

    /// [`Bench::driver_push_kept`] with the total, and the key's roll-up (in the roll-ups'
    /// collection, by the key as its `_id`) in the same command: one ordered client
    /// `bulkWrite` of the two updates, as the library sends it.
    pub(crate) async fn driver_push_rolled(&self, key: i64, i: i64, t: &Trade) {
        let id = format!("{key}_{}", t.date.timestamp_millis() / 1000);
        let not_a_number = [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 17, -1, 127];
        let ns = mongodb::Namespace::new(self.db.name(), ROLLED_DRIVER);
        let push = UpdateOneModel::builder()
            .namespace(ns.clone())
            .filter(doc! {
                "customerId": key,
                "count": {"$lt": 10},
                "page": {"$not": {"$type": &not_a_number[..]}},
            })
            .update(doc! {
                "$push": {"history": bson::to_bson(t).unwrap()},
                "$inc": {"count": 1, "qty_sum": t.qty},
                "$min": {"date_min": t.date},
                "$max": {"date_max": t.date},
                "$setOnInsert": {
                    "_id": id, "customerId": key, "page": i / 10 + 1, "bounded": true,
                    "summarized": ["qty_sum"],
                },
            })
            .upsert(true)
            .build();
        let rollups = format!("{ROLLED_DRIVER}.rollups");
        let rollup = UpdateOneModel::builder()
            .namespace(mongodb::Namespace::new(self.db.name(), &rollups))
            .filter(doc! {"_id": key})
            .update(doc! {
                "$inc": {"rollup_items": 1_i64, "qty_sum": t.qty},
                "$setOnInsert": {"rollup_summarized": ["qty_sum"]},
            })
            .upsert(true)
            .build();
        let models: Vec<WriteModel> = vec![push.into(), rollup.into()];
        self.db
            .client()
            .bulk_write(models)
            .ordered(true)
            .await
            .unwrap();
    }

    /// The seed's page read, the key matched by equality.
    pub(crate) async fn driver_page(&self, key: i64) -> Option<SeedBucket> {
        self.db
            .collection::<SeedBucket>(TRADES_DRIVER)
            .find_one(doc! {"customerId": key})
            .sort(doc! {"_id": 1})
            .skip(PAGE - 1)
            .await
            .unwrap()
    }

    /// The seed's atomic form of its push below the threshold.
    pub(crate) async fn driver_outlier_push(&self, id: i64, item: String) {
        let field = format!("customers_purchased.{}", THRESHOLD - 1);
        let r = self
            .sales_driver()
            .update_one(
                doc! {"_id": id, field: {"$exists": false}},
                doc! {"$push": {"customers_purchased": item}},
            )
            .await
            .unwrap();
        assert_eq!(r.matched_count, 1, "below the threshold");
    }

    /// The seed's read of an outlier: the main document, then its overflow by `book_id`.
    pub(crate) async fn driver_all(&self, id: i64) -> Vec<String> {
        let main = self
            .sales_driver()
            .find_one(doc! {"_id": id})
            .await
            .unwrap()
            .expect("a book");
        let mut all = main.customers_purchased;
        if main.has_extras {
            let mut extras = self
                .extra_driver()
                .find(doc! {"book_id": id})
                .sort(doc! {"seq": 1})
                .await
                .unwrap();
            while let Some(e) = extras.try_next().await.unwrap() {
                all.extend(e.customers_purchased_extra);
            }
        }
        all
    }
}
