// The types keep variants apart: a variant-only field is no path of the enum, nor of another
// variant; a shared field is a path of the enum.
use pattern_core::document::{Filter, Update};
use pattern_core::Document;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Document)]
#[serde(tag = "kind")]
#[document(collection = "products", shared(price: i64))]
pub enum Product {
    Shirt {
        #[serde(rename = "_id")]
        id: u32,
        price: i64,
        size: String,
    },
    Cable {
        #[serde(rename = "_id")]
        id: u32,
        price: i64,
        #[document(index)]
        metres: u32,
    },
}

fn main() {
    // Fine: a shared field over the enum, a variant's own field over the variant.
    let _: Filter<Product> = Product::PRICE.gt(3);
    let _: Update<ProductShirt> = Update::new().set(ProductShirt::SIZE, "L");
    // A shirt's field in an update of the enum, and of a cable.
    let _: Update<Product> = Update::new().set(ProductShirt::SIZE, "L");
    let _: Filter<ProductCable> = ProductShirt::SIZE.eq("L");
}
