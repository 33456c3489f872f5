//! A document type's indexes and validators: the keyword, indexed and attributes fields'
//! indexes (partial per variant of a polymorphic collection), the history collection's, and
//! the `$jsonSchema` of each collection the library writes; each ensured once per store and
//! process.

use super::lock;
use super::related::{computed, reference, subset};
use super::{attributes, polymorphic, Document, Polymorphic};
use super::{REVISED_AT, REVISION};
use crate::store::query::{self, IndexSpec};
use crate::store::{Extension, ExtensionKey, Store};
use crate::Result;

/// The indexes of `D`'s collection: one multikey index `{field: 1}` per keyword array and per
/// indexed field, named as MongoDB names it by default (`<field>_1`), the compound index of
/// each attributes field; on a variant's type each partial on its variant (and named for it);
/// on a polymorphic enum, its variants' too.
pub fn indexes<D: Document>() -> Vec<IndexSpec> {
    match D::POLYMORPHIC {
        // The enum's list: every variant's (a variant's type ensures its siblings' too).
        Some(Polymorphic::Variant { .. }) => D::variant_indexes(),
        _ => {
            let mut out = own_indexes::<D>();
            out.extend(D::variant_indexes());
            out
        }
    }
}

/// The indexes `D` itself declares ([`indexes`] without a polymorphic enum's variants'), each
/// partial on its variant on a variant's type.
pub fn own_indexes<D: Document>() -> Vec<IndexSpec> {
    let single = (D::KEYWORDS.iter().map(|k| k.field))
        .chain(D::INDEXED.iter().copied())
        .map(|field| IndexSpec {
            name: format!("{field}_1"),
            keys: vec![(field.to_owned(), 1)],
            unique: false,
            partial: None,
        });
    let attributes = D::ATTRIBUTES.iter().map(|f| attributes::index(f));
    (single.chain(attributes))
        .map(polymorphic::partial::<D>)
        .collect()
}

/// What an enum's derive gathers from each variant's type `V`: its [`own_indexes`], and the
/// indexes its related patterns read its children by (computed, subset), not partial (two
/// variants may keep aggregates by one key), so that whichever of the collection's types is
/// used first ensures them all.
pub fn gathered_indexes<V: Document>() -> Vec<IndexSpec> {
    let mut out = own_indexes::<V>();
    let related = (V::COMPUTED.iter().flat_map(computed::indexes))
        .chain(V::SUBSET.iter().flat_map(subset::indexes))
        .chain(V::REFERENCES.iter().map(reference::indexes));
    for index in related {
        if !out.iter().any(|i| i.name == index.name) {
            out.push(index);
        }
    }
    out
}

/// The index of `D`'s history collection (`#[document(history = ...)]`): `{id: 1, revision:
/// -1}`, serving a document's history newest first, [`at_revision`](super::history::at_revision) and
/// [`as_of`](super::history::as_of).
pub fn history_indexes<D: Document>() -> Vec<(&'static str, IndexSpec)> {
    D::HISTORY
        .map(|h| {
            let index = IndexSpec {
                name: "pattern_history_id_1_revision_-1".to_owned(),
                keys: vec![("id".to_owned(), 1), ("revision".to_owned(), -1)],
                unique: false,
                partial: None,
            };
            (h, index)
        })
        .into_iter()
        .collect()
}

/// The `$jsonSchema` validators of `D`'s collections, one per collection the library writes
/// (a polymorphic collection's: the enum's, checking each variant by discriminator):
/// on a versioned type, the version field required, an Int32 of at least 1; with history, the
/// revision required (an Int64 of at least 0, 0 for a document adopted from before history)
/// and its time a date; and the history collection's records (`id`, `revision`, `until`,
/// `state` required). What the struct's own fields hold is serde's to check.
pub fn schemas<D: Document>() -> Vec<(&'static str, query::Schema)> {
    use crate::codec::BsonType;
    use query::Schema;
    if let Some(Polymorphic::Variant { .. }) = D::POLYMORPHIC {
        // The collection's validator is the enum's, whichever type installs it.
        return D::enum_schemas();
    }
    let mut main = Schema::object().require("_id");
    if let Some(v) = D::VERSIONING {
        main = main
            .require(v.field)
            .property(v.field, Schema::of(&[BsonType::Int]).range(Some(1), None));
    }
    if D::HISTORY.is_some() {
        main = main
            .require(REVISION)
            .property(REVISION, Schema::of(&[BsonType::Long]).range(Some(0), None))
            .property(REVISED_AT, Schema::of(&[BsonType::Date]));
    }
    if let Some(Polymorphic::Enum { field, variants }) = D::POLYMORPHIC {
        main = polymorphic::schema(field, variants, main);
    }
    let mut out = vec![(D::COLLECTION, main)];
    if let Some(h) = D::HISTORY {
        let record = Schema::object()
            .require("id")
            .require(REVISION)
            .require("until")
            .require("state")
            .property(REVISION, Schema::of(&[BsonType::Long]).range(Some(0), None))
            .property("since", Schema::of(&[BsonType::Date, BsonType::Null]))
            .property("until", Schema::of(&[BsonType::Date]))
            .property("state", Schema::object());
        out.push((h, record));
    }
    out
}

#[doc = crate::__document_doc!(ensure_validator)]
///
/// The validators: [`schemas`].
pub async fn ensure_validator<D: Document, S: Store>(store: &S) -> Result<()> {
    crate::observe::traced_op!(document.ensure_validator, store, D::COLLECTION, async {
        for (coll, schema) in schemas::<D>() {
            crate::validator::install(store, coll, &schema).await?;
        }
        Ok(())
    })
}

#[doc = crate::__document_doc!(ensure_indexes)]
///
/// The indexes: [`indexes`], [`history_indexes`].
pub async fn ensure_indexes<D: Document, S: Store>(store: &S) -> Result<()> {
    crate::observe::traced_op!(
        document.ensure_indexes,
        store,
        D::COLLECTION,
        indexes_ready::<D, S>(store)
    )
}

/// [`ensure_indexes`] inside the operations (no span of its own: once the indexes exist, a
/// lookup).
pub(crate) async fn indexes_ready<D: Document, S: Store>(store: &S) -> Result<()> {
    let ensured = &store.extensions().get(&ENSURED).0;
    let none = D::KEYWORDS.is_empty()
        && D::HISTORY.is_none()
        && D::COMPUTED.is_none()
        && D::SUBSET.is_none()
        && D::REFERENCES.is_empty()
        && D::ATTRIBUTES.is_empty()
        && D::INDEXED.is_empty()
        && D::POLYMORPHIC.is_none();
    // By type: two types over one collection may have other keywords or histories. A
    // polymorphic collection's enum and variants ensure the same indexes: by collection.
    let polymorphic;
    let me = match D::POLYMORPHIC {
        None => std::any::type_name::<D>(),
        Some(_) => {
            polymorphic = format!("polymorphic collection {}", D::COLLECTION);
            &polymorphic
        }
    };
    if none || lock(ensured).iter().any(|c| c == me) {
        return Ok(());
    }
    if store.current_transaction().is_some() {
        // Indexes are created outside transactions; the caller's ensured them or will.
        return Ok(());
    }
    for index in indexes::<D>() {
        store.create_index(D::COLLECTION, &index).await?;
    }
    for (coll, index) in history_indexes::<D>() {
        store.create_index(coll, &index).await?;
    }
    for index in D::COMPUTED.iter().flat_map(computed::indexes) {
        store.create_index(D::COLLECTION, &index).await?;
    }
    for index in D::SUBSET.iter().flat_map(subset::indexes) {
        store.create_index(D::COLLECTION, &index).await?;
    }
    for r in D::REFERENCES {
        store
            .create_index(D::COLLECTION, &reference::indexes(r))
            .await?;
    }
    // The copies' index of earlier versions, which the new one (a prefix of it) replaces.
    if !D::REFERENCES.is_empty() {
        let names = store.index_names(D::COLLECTION).await?;
        for r in D::REFERENCES {
            let former = reference::former_index(r);
            if names.contains(&former) {
                store.drop_index(D::COLLECTION, &former).await?;
            }
        }
    }
    let mut types = lock(ensured);
    if !types.iter().any(|c| c == me) {
        types.push(me.to_owned());
    }
    Ok(())
}

/// The document types whose indexes this process ensured, per store.
#[derive(Debug, Default)]
struct Ensured(std::sync::Mutex<Vec<String>>);

impl Extension for Ensured {
    fn forget(&self) {
        lock(&self.0).clear();
    }
}

static ENSURED: ExtensionKey<Ensured> = ExtensionKey::new();
