//! What each document operation does and the commands it sends, written once: the functions of
//! [`document`](super) and the methods `#[derive(Document)]` generates take their
//! documentation from here (`#[doc = __document_doc!(save)]`). The text names the parameters
//! both share (`id`, `filter`, `update`, `expected`, `n`, `time`, `options`, `opts`), says
//! "the document" for the method's `self` and the function's `doc`, and links nothing, since it
//! is also read in the user's crate.

/// The documentation of document operation `$op`. Not a public API: what the functions and the
/// generated methods are documented with.
#[doc(hidden)]
#[macro_export]
macro_rules! __document_doc {
    (ensure_indexes) => {
        "Creates the type's indexes now rather than on first use (once per store and process; \
         the writes and finds ensure them first): the multikey index of each keyword array and \
         indexed field, each attributes field's, the history collection's, and those its \
         computed parent, subset and references are read by.\n\n\
         One command per index."
    };
    (ensure_validator) => {
        "Installs the `$jsonSchema` validators of the collections the library writes (the \
         schema version and the revision fields, the history records; `document::schemas` \
         lists them): `collMod`, level \"moderate\", so a document stored before may still be \
         updated, and one without a version or a revision is adopted by its next write."
    };
    (insert) => {
        "Inserts the document, keywords normalised, its schema version stamped. \
         `DuplicateKey` when its `_id` exists. With history: revision 1 (or the next after a \
         deleted one's).\n\n\
         One `insert`; with history, a `find` of its last recorded revision first. With a \
         computed parent, a subset or references, one transaction that also fills the copies \
         it holds and brings its parent in line."
    };
    (save) => {
        "Writes the whole document over the one with its `_id`, or inserts it. Last writer \
         wins: for fields that change together under a condition, `update_one`; with history, \
         `save_if`. Never over a document of a newer schema version (`NewerVersion`) nor, in a \
         polymorphic collection, of another variant (`OtherVariant`): nothing written.\n\n\
         One `update` with a replacement and `upsert`. With history, a computed parent, a \
         subset or references, one transaction that reads the stored document first, records \
         the state it replaces (history) and brings in line what the others keep of it."
    };
    (get) => {
        "The document with this `_id`, or `None`, upgraded from its stored schema version (and \
         written back with `write_back`); `NewerVersion` for a version this build does not \
         know.\n\nOne `find`."
    };
    (update_one) => {
        "Applies `update` to the first document matching `filter`, atomically; whether one \
         matched (and was updated). The article's checkout: \
         `Book::ID.eq(id).and(Book::AVAILABLE.gt(0))`, \
         `Update::new().inc(Book::AVAILABLE, -1).push(Book::CHECKOUT, item)`: `false` means no \
         copy was available, and nothing was written. Refuses, before sending anything, a \
         filter or update whose values did not serialize, and an update that does nothing \
         (`InvalidInput`).\n\n\
         One `update` command. On a versioned type the update applies to a document at this \
         build's version only (its paths are this version's): when none matched, a `find` \
         looks for a match at another version: an older one is upgraded (written back, \
         compare-and-set) and the update tried again; a newer one is `NewerVersion`, nothing \
         written. With history, a computed parent, a subset or references, one transaction \
         that records the state it replaces (history) and brings in line what the others \
         keep of it."
    };
    (delete) => {
        "Deletes the document with this `_id`; whether there was one. Its history stays \
         (`history`, `as_of`). `StillReferenced` when other documents hold a required copy of \
         it: nothing deleted.\n\n\
         One `delete`. With history, a computed parent, a subset or references, one \
         transaction that reads it, records its last state (history) and brings in line what \
         the others keep of it."
    };
    (find) => {
        "A find of the documents matching `filter`: add a projection, a sort, a limit, then \
         read them with `all`, `all_as`, `one`, `one_as` or `stream`."
    };
    (migrate) => {
        "The sweep: upgrades every document stored at an older schema version to this one, in \
         batches of `options.batch_items` (at most 1,000), resumable after a kill, beside live \
         readers and writers of any version; with `dry_run`, reads and counts only. A document \
         a conversion refuses is left as it is and reported. On a type with history each \
         upgrade is a revision. A run after a finished one writes nothing unless an older \
         document appeared since."
    };
    (recompute) => {
        "Rebuilds the aggregates of the parent `id` from its children (after writes by other \
         tools). `NotFound` when the parent does not exist.\n\n\
         One transaction: a `find` of the children, an `update` of the parent."
    };
    (verify) => {
        "The parents whose stored aggregates differ from their children's. Numbers compare by \
         value (an Int32 3 equals an Int64 3; averages within 1e-9 relative).\n\n\
         One scan of the children, one of the parents."
    };
    (resubset) => {
        "Rewrites the subset of the parent `id` from its children (after writes by other \
         tools, or a change of `keep` or `order`). `NotFound` when the parent does not \
         exist.\n\n\
         One transaction: a read of the first children, an `update` of the parent."
    };
    (verify_subsets) => {
        "The parents whose subset differs from their children's first `keep` by the order \
         (their `_id`s, relaxed Extended JSON): run `resubset` on them.\n\n\
         One scan of the parents, one read of each one's first children."
    };
    (subset) => {
        "The subset the parent `id` embeds, as this type: what a read of the parent gives \
         without a lookup; `None` without the parent. Every child: `find` by the key, with a \
         sort.\n\n\
         One `find` of the parent."
    };
    (verify_copies) => {
        "The copies the documents hold (`#[document(reference)]` fields) that differ from \
         their source, or whose source is gone (after writes by other tools).\n\n\
         One scan, one `find` of the sources per 1,000 documents."
    };
    (repair_copies) => {
        "Brings every copy `verify_copies` lists in line with its source, source by source, in \
         batches of `opts.batch_items` (at most 1,000, so 1,000 by default), each a \
         transaction that reads the source as it is then. Copies of a deleted source behind a \
         required reference are listed, left as they are; behind an optional one, set to \
         `null`. Killed, it is run again: it finds what is left."
    };
    (propagate) => {
        "Finishes the propagations of this type's writes past its `fan_out` that are recorded \
         and not finished (a `deferred` type's, or a killed one's): in batches of `fan_out` \
         copies (or `opts.batch_items`, when not the default), each a transaction that reads \
         the source as it is then and sets the copies listed as differing from it; the last \
         one removes the job. `opts.progress` is called after each batch with the copies set \
         so far."
    };
    (pending_propagations) => {
        "The propagations of this type's writes recorded and not finished, each with the time \
         since which its copies not yet reached are stale.\n\n\
         One `find` of `pattern_references`."
    };
    (get_revision) => {
        "The document with this `_id` and its revision (for `save_if`, `update_if`, \
         `delete_if`), or `None`. Upgraded to the current schema version, never written back \
         (the revision is the one read).\n\nOne `find`."
    };
    (save_if) => {
        "Writes the whole document over the stored one if that is still at revision \
         `expected` (the revision the caller read, with `get_revision`); else `Conflict` with \
         the revision found (`None`: deleted), nothing written.\n\n\
         One transaction: a read, the history record, the replacement."
    };
    (update_if) => {
        "Applies `update` to the document `id` if it is still at revision `expected`; else \
         `Conflict`, nothing written. A document at an older schema version is upgraded first, \
         in the same transaction (a revision of its own).\n\n\
         One transaction: a read, the history record, the update."
    };
    (delete_if) => {
        "Deletes the document `id` if it is still at revision `expected`; else `Conflict`, \
         nothing written. Its history stays.\n\n\
         One transaction: a read, the history record, the delete."
    };
    (history) => {
        "The revisions of the document `id`, newest first: the current one (unless deleted), \
         then each recorded one, each upgraded to the current schema version.\n\n\
         A stream: 100 records per `find`, by revision (the history collection's index \
         `{id: 1, revision: -1}`)."
    };
    (at_revision) => {
        "The document `id` as it was at revision `n`, or `None` when it never had that \
         revision.\n\n\
         One `find`, two when `n` is not the current revision."
    };
    (as_of) => {
        "The document `id` as it was at `time` (by the writers' clocks), or `None` when it did \
         not exist then (not yet inserted, or deleted). A revision written before history was \
         turned on counts from the beginning of time.\n\n\
         One `find`, two for a past state."
    };
}
