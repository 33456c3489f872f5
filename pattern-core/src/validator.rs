//! Installing the patterns' `$jsonSchema` validators, once per store and collection in this
//! process: what the bucket, outlier and tree layouts share of their `validate` option.

use std::sync::Mutex;

use crate::store::query::Schema;
use crate::store::{Extension, ExtensionKey, Store};
use crate::Result;

/// The collections whose validator this process installed, per store.
#[derive(Debug, Default)]
struct Installed(Mutex<Vec<String>>);

impl Extension for Installed {
    fn forget(&self) {
        lock(&self.0).clear();
    }
}

static INSTALLED: ExtensionKey<Installed> = ExtensionKey::new();

/// Installs `schema` as `coll`'s validator ([`Store::set_validator`]) and remembers that this
/// process did.
pub(crate) async fn install<S: Store>(store: &S, coll: &str, schema: &Schema) -> Result<()> {
    store.set_validator(coll, schema).await?;
    let mut colls = lock(&store.extensions().get(&INSTALLED).0);
    if !colls.iter().any(|c| c == coll) {
        colls.push(coll.to_owned());
    }
    Ok(())
}

/// Whether this process installed `coll`'s validator on `store`.
pub(crate) fn installed<S: Store>(store: &S, coll: &str) -> bool {
    lock(&store.extensions().get(&INSTALLED).0)
        .iter()
        .any(|c| c == coll)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
