//! What each outlier operation does and the commands it sends, written once: the functions of
//! [`outlier`](super) and the methods `#[derive(Outlier)]` generates take their documentation
//! from here (`#[doc = __outlier_doc!(push)]`). The text names the parameters both share (`id`,
//! `item`, `items`, `opts`) and links nothing, since it is also read in the user's crate.

/// The documentation of outlier operation `$op`. Not a public API: what the functions and the
/// generated methods are documented with.
#[doc(hidden)]
#[macro_export]
macro_rules! __outlier_doc {
    (save) => {
        "Inserts the document, or replaces the stored one with the same `_id`: the first \
         `threshold` items go to the main document, the rest to new overflow chunks, and the \
         previous overflow is deleted first. Not atomic as a whole: pushes to the same parent \
         while it is being replaced may be lost with the overflow it replaces."
    };
    (push) => {
        "Appends `item` to the array of parent `id`: to the main document while it is below the \
         threshold (one round trip), else to the overflow. `NotFound` when the parent does not \
         exist."
    };
    (push_many) => {
        "Appends `items` to the array of parent `id`, in order: as many as fit to the main \
         document (one conditional update), the rest to the overflow (one write per chunk \
         touched)."
    };
    (typical) => {
        "The typical document: the main document alone (the overflow is not read), its array cut \
         at the threshold. `None` when there is no such document."
    };
    (full) => {
        "The document with every item of its array, main document and overflow, in push order: \
         two finds for an outlier, one for a typical document. `None` when there is no such \
         document."
    };
    (items) => {
        "Every item of parent `id`'s array in push order, the overflow read a batch of chunks at a \
         time: for paging through a large outlier without holding it whole. Empty when there is \
         no such document."
    };
    (all_items) => {
        "Every item of parent `id`'s array, main document and overflow, in push order, decoded \
         straight from the bytes the store returned. `None` when there is no such document."
    };
    (counts) => {
        "How many items parent `id`'s array holds, main document and overflow, and in how many \
         documents (`pages`: the main document and its overflow chunks). `NotFound` when there is \
         no such document."
    };
    (is_outlier) => {
        "Whether parent `id` overflowed its threshold (its main document has the flag). \
         `NotFound` when there is no such document."
    };
    (delete) => {
        "Deletes parent `id` and its overflow; returns whether the parent existed."
    };
    (analyze) => {
        "Reads the collection (and its overflow) once and reports the items per document, the \
         document sizes, how many exceed the threshold, and a suggested threshold, with why."
    };
    (verify) => {
        "Checks every promise of the layout over the collection and its overflow (arrays within \
         the threshold, the flag exactly where overflow exists, chunks full and numbered densely, \
         no orphans); returns the defects as data."
    };
    (migrate) => {
        "Brings the documents whose arrays exceed the threshold into the layout in place, each in \
         a transaction: resumable (a checkpoint per batch), exact beside live pushes and reads, \
         `dry_run` writes nothing. Ends with `verify`."
    };
    (index_report) => {
        "Reports the main and overflow collections' indexes against those the layout needs: \
         present, missing, the library's stale ones, and the user's own (which the library never \
         drops)."
    };
    (ensure_indexes) => {
        "Creates the overflow collection's indexes now rather than on first use (and installs the \
         validators, with `#[outlier(validate)]`)."
    };
    (ensure_validator) => {
        "Installs the layout's `$jsonSchema` validators on the main and overflow collections, \
         creating them if need be (`collMod`, level \"moderate\": documents that fail them \
         already can still be repaired). From then on the server refuses a write that breaks the \
         layout (an array past the threshold, a flag that is no boolean, a chunk past `chunk`...) \
         with `store::Error::SchemaViolation`, whoever sends it."
    };
}
