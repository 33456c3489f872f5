//! What each bucket operation does and the commands it sends, written once: the functions of
//! [`bucket`](super) and the methods `#[derive(Bucket)]` generates take their documentation from
//! here (`#[doc = __bucket_doc!(push)]`). The text names the parameters both share (`key`,
//! `item`, `items`, `n`, `range`, `from`, `opts`) and links nothing, since it is also read in
//! the user's crate.

/// The documentation of bucket operation `$op`. Not a public API: what the functions and the
/// generated methods are documented with.
#[doc(hidden)]
#[macro_export]
macro_rules! __bucket_doc {
    (push) => {
        "Appends `item` to `key`'s series: one write in the common case, also when it opens a \
         bucket."
    };
    (push_many) => {
        "Appends `items` to `key`'s series in order, filling the open bucket and then whole new \
         buckets: one write for the open bucket, one for all the new ones."
    };
    (page) => {
        "Page `n` (from 1) of `key`'s series, pages in push order; `None` past the last page. One \
         indexed lookup of the page number, however deep."
    };
    (pages) => {
        "Every page of `key`'s series, in order, fetched a batch of buckets per round trip."
    };
    (items) => {
        "Every item of `key`'s series, in push order."
    };
    (all_items) => {
        "Every item of `key`'s series, in push order, collected (`items` into a `Vec`)."
    };
    (range) => {
        "Every item of `key` whose time is in `range` (`from..to`, `from..=to`, `from..`, `..to`), \
         in push order, reading only the buckets whose time bounds overlap it (and buckets without \
         complete bounds, which may hold anything). In a collection whose every bucket is \
         bounded, one read: the buckets' `_id` range by window (cut by span), or by the \
         collection's width followed by its mark in the same command (one `find` within a \
         `lease_width`); otherwise two finds sent together. Items without a time are left out. \
         Needs `#[bucket(time = \"...\")]` (otherwise `InvalidInput`)."
    };
    (lease_width) => {
        "Lets range reads skip the collection's mark for a while: a lease of `lease` (1 ms to \
         60 s) on the collection's width, kept in its mark. A reader that read the mark trusts \
         the width it found for nine tenths of `lease` and sends the `_id` range alone (one \
         `find`); a push returns only once its process has known the width it relies on for a \
         whole `lease`, so a process's first push, and every push that widens the collection, \
         take `lease` longer. A read still finds every item whose push returned before it \
         began. Take it only when every program writing the collection runs a version that \
         knows it, on Tokio, with clocks that run at rates within a tenth of each other. A \
         lease only grows. Needs `#[bucket(time = \"...\")]` without `span` (otherwise \
         `InvalidInput`, as for a lease outside 1 ms to 60 s). One write."
    };
    (latest) => {
        "The last `n` items pushed to `key`, in push order: one find of the newest bucket, and one \
         more of the buckets before it when it holds fewer than `n`. The live collection alone: \
         after an archive, at most the items of the key's live buckets (its newest is never \
         archived)."
    };
    (counts) => {
        "How many items and pages `key`'s series holds (one aggregation)."
    };
    (summary) => {
        "Sum/min/max of `key`'s items whose time is in `range` (`..` for all): buckets wholly \
         inside the range with a complete summary count by their kept values (their items are not \
         read); the others (the range's edges, buckets written before the summary existed) by \
         their items. Exact: sums never wrap (`Overflow`), Decimal128 sums exactly. With \
         `#[bucket(rollup)]`, the whole history (`..`) is the key's roll-up: one find of one \
         document.\n\n\
         One round trip for the overlapping buckets' summaries, one more for the items of the \
         buckets not wholly summarized, when there are any."
    };
    (ingest) => {
        "Writes `(key, item)` pairs for many keys, each key's items in the order given, in \
         batches, each sent as one ordered batch of writes once each key's newest bucket is known \
         to this process (on MongoDB one command per kind of write, the open buckets' fills then \
         the new buckets; with roll-ups, one `bulkWrite` ending with them), and one find of the \
         open buckets of keys not seen before. Returns how many items it wrote. On an error, \
         `Error::Ingest` lists exactly the items not written: every other one was, once, so \
         ingesting those again completes the load without duplicates."
    };
    (backfill) => {
        "Fills in the time bounds and summaries of buckets written before they were kept (by an \
         older version, or by other tools), one write per bucket completed, conditional on its \
         count, reading the collection a batch at a time; returns how many buckets it completed. \
         With `#[bucket(rollup)]` it then recomputes every key's roll-up: run it with the writers \
         stopped."
    };
    (analyze) => {
        "Reads the collection once and reports its items per key, item and bucket sizes, and a \
         suggested `size`, with why."
    };
    (analyze_source) => {
        "Reads a flat collection (one document per item, keyed by `from.key_field`) once and \
         reports its items per key and sizes, with a suggested `size` for this layout."
    };
    (verify) => {
        "Checks every promise of the layout over the whole collection (counts, sizes, at most one \
         open bucket per key, pages numbered densely); returns the defects as data."
    };
    (migrate) => {
        "Moves the items of a flat collection (one document per item) into this layout, each \
         key's in time order: resumable (a checkpoint per batch, in one transaction with it), \
         exact beside live pushes, `dry_run` writes nothing. Ends with `verify`."
    };
    (index_report) => {
        "Reports the collection's indexes against those the layout needs: present, missing, the \
         library's stale ones, and the user's own (which the library never drops)."
    };
    (ensure_indexes) => {
        "Creates the collection's indexes now rather than on first use (and installs the \
         validator, with `#[bucket(validate)]`)."
    };
    (ensure_validator) => {
        "Installs the layout's `$jsonSchema` validator on the collection, creating it if need be \
         (`collMod`, level \"moderate\": documents that fail it already can still be repaired). \
         From then on the server refuses a write of a bucket that breaks the layout (`count` past \
         `size`, an array longer than `size`, a key of another type...) with \
         `store::Error::SchemaViolation`, whoever sends it."
    };
}
