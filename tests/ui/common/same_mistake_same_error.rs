// The same mistake gets the same error in every derive: a missing collection, an invalid
// collection name, a key given twice, an unknown key, a key that takes a value given none.
use pattern_core::{Bucket, Document, Outlier, Tree};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub struct Trade {
    pub qty: i64,
}

#[derive(Bucket)]
#[bucket(size = 10)]
pub struct NoCollectionB {
    #[bucket(key)]
    pub key: i64,
    #[bucket(items)]
    pub items: Vec<Trade>,
}

#[derive(Outlier, Serialize, Deserialize)]
#[outlier(threshold = 5, overflow = "o")]
pub struct NoCollectionO {
    #[outlier(id)]
    #[serde(rename = "_id")]
    pub id: i64,
    #[outlier(items)]
    pub items: Vec<i64>,
}

#[derive(Tree, Serialize, Deserialize)]
#[tree(model = "parent_refs")]
pub struct NoCollectionT {
    #[tree(id)]
    #[serde(rename = "_id")]
    pub id: i64,
}

#[derive(Document, Serialize, Deserialize)]
pub struct NoCollectionD {
    #[serde(rename = "_id")]
    pub id: i64,
}

#[derive(Bucket)]
#[bucket(collection = "a$b", size = 10)]
pub struct BadNameB {
    #[bucket(key)]
    pub key: i64,
    #[bucket(items)]
    pub items: Vec<Trade>,
}

#[derive(Outlier, Serialize, Deserialize)]
#[outlier(collection = "a$b", threshold = 5, overflow = "o")]
pub struct BadNameO {
    #[outlier(id)]
    #[serde(rename = "_id")]
    pub id: i64,
    #[outlier(items)]
    pub items: Vec<i64>,
}

#[derive(Tree, Serialize, Deserialize)]
#[tree(collection = "a$b", model = "parent_refs")]
pub struct BadNameT {
    #[tree(id)]
    #[serde(rename = "_id")]
    pub id: i64,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "a$b")]
pub struct BadNameD {
    #[serde(rename = "_id")]
    pub id: i64,
}

#[derive(Bucket)]
#[bucket(collection = "b", collection = "c", size = 10, nope = 1)]
pub struct TwiceB {
    #[bucket(key)]
    pub key: i64,
    #[bucket(items)]
    pub items: Vec<Trade>,
}

#[derive(Outlier, Serialize, Deserialize)]
#[outlier(collection = "b", collection = "c", threshold = 5, overflow = "o", nope = 1)]
pub struct TwiceO {
    #[outlier(id)]
    #[serde(rename = "_id")]
    pub id: i64,
    #[outlier(items)]
    pub items: Vec<i64>,
}

#[derive(Tree, Serialize, Deserialize)]
#[tree(collection = "b", collection = "c", model = "parent_refs", nope = 1)]
pub struct TwiceT {
    #[tree(id)]
    #[serde(rename = "_id")]
    pub id: i64,
}

#[derive(Document, Serialize, Deserialize)]
#[document(collection = "b", collection = "c", nope = 1)]
pub struct TwiceD {
    #[serde(rename = "_id")]
    pub id: i64,
}

fn main() {}
