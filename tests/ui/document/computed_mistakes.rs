// A computed parent is typed: a parent field that does not exist, or of another type than the
// aggregate needs, is an error at the field's name.
use pattern_core::Document;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "films")]
pub struct Film {
    #[serde(rename = "_id")]
    pub id: i64,
    pub reviews: i32,
    pub rating_sum: i64,
    pub rating_max: i64,
}

#[derive(Document, Serialize, Deserialize)]
#[document(
    collection = "reviews",
    computed(
        parent = Film,
        key = film_id,
        count = reviews,
        sum(rating = rating_total),
        max(rating = rating_max)
    )
)]
pub struct Review {
    #[serde(rename = "_id")]
    pub id: i64,
    pub film_id: String,
    pub rating: i64,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "reviews", computed(parent = Film, key = film, sum(stars = rating_sum)))]
pub struct Missing {
    #[serde(rename = "_id")]
    pub id: i64,
}

fn main() {}
