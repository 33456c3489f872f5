//! What each tree operation does and the commands it sends, written once: the typed functions
//! of [`tree`](super) and the methods `#[derive(Tree)]` generates take their documentation
//! from here (`#[doc = __tree_doc!(move_to)]`). The text names the parameters both share
//! (`id`, `parent`, `new_parent`, `of`, `max_depth`) and links nothing, since it is also read
//! in the user's crate.

/// The documentation of tree operation `$op`. Not a public API: what the typed functions and
/// the generated methods are documented with.
#[doc(hidden)]
#[macro_export]
macro_rules! __tree_doc {
    (ensure_indexes) => {
        "Creates the model's indexes now rather than on first use (once per store and process; \
         every other operation does), and installs the validator with `#[tree(validate)]`.\n\n\
         One command per index (two for ancestors and nested sets, else one)."
    };
    (ensure_validator) => {
        "Installs the model's `$jsonSchema` validator on the tree's collection, creating it if \
         need be (`collMod`, level \"moderate\": nodes that fail it already can still be \
         repaired). From then on the server refuses a write of a node whose model fields have \
         the wrong types (a parent that is not an id, `children` that is no array of ids, a \
         nested set without its numbers...) with `store::Error::SchemaViolation`, whoever sends it."
    };
    (insert_root) => {
        "Inserts the node as a new root. `DuplicateKey` when its id exists.\n\n\
         One insert. In nested sets a transaction that numbers the root after every node \
         (finding the largest `right` reads the collection: no index serves it, and roots are \
         rare)."
    };
    (insert_child) => {
        "Inserts the node as the last child of `parent`. `UnknownNode` when `parent` does not \
         exist, `DuplicateKey` when the node's id does, `TooDeep` past `max_depth`.\n\n\
         One transaction of a few commands whatever the tree's size: the parent's read, the \
         insert (child references also push to the parent's array, nested sets renumber in one \
         update). `max_depth` adds a query in the parent and child references and nested sets."
    };
    (save) => {
        "Writes the node's own data (`$set` of each field the struct serializes), keeping its \
         place in the tree. A field the struct no longer writes keeps its stored value. \
         `UnknownNode` when the node does not exist.\n\n\
         One update in every model. The model's fields are not touched."
    };
    (get) => {
        "The node `id`, or `None`.\n\nOne query in every model."
    };
    (parent) => {
        "The parent of node `id`; `None` for a root. `UnknownNode` when `id` does not exist.\n\n\
         One query (a `$graphLookup`), two for materialized paths (the node, then its parent)."
    };
    (children) => {
        "The children of node `id`, in the model's order: the array's (child references), `left` \
         (nested sets), the id (the others).\n\n\
         One query, two for materialized paths (the node's path first)."
    };
    (siblings) => {
        "The other children of node `id`'s parent (the other roots, for a root), in the order \
         of `children`.\n\n\
         The queries of `parent`, then those of `children` (or of `roots`): two, up to four for \
         materialized paths."
    };
    (ancestors) => {
        "The ancestors of node `id`, from the root down to its parent.\n\n\
         One query, two for materialized paths."
    };
    (descendants) => {
        "The descendants of node `id` in pre-order (each node before its children, children in \
         the order of `children`), down to `max_depth` levels below it (`Some(1)`: the \
         children), or all of them.\n\n\
         One query in the parent and child references (a `$graphLookup`) and ancestors, two in \
         materialized paths and nested sets (the node first)."
    };
    (depth) => {
        "The depth of node `id`: 0 for a root.\n\nOne query in every model."
    };
    (is_descendant) => {
        "Whether node `id` is a descendant of node `of` (a node is not its own descendant; \
         `false` when `of` does not exist). `UnknownNode` when `id` does not exist.\n\n\
         One query in every model."
    };
    (move_to) => {
        "Moves node `id` and its subtree under `new_parent` (as its last child), or makes it a \
         root (`None`). `Cycle` when `new_parent` is the node or one of its descendants, \
         `TooDeep` when the subtree would go past `max_depth`.\n\n\
         Atomic: one transaction of a few commands whatever the subtree's size (ancestors, \
         materialized paths and nested sets rewrite the subtree with one update). `max_depth` \
         adds a read of the subtree."
    };
    (delete_subtree) => {
        "Deletes node `id` and all its descendants; returns how many nodes.\n\n\
         Atomic: one transaction of a few commands whatever the subtree's size."
    };
    (delete_node) => {
        "Deletes node `id` alone; its children move up to its parent (or become roots).\n\n\
         Atomic: one transaction of a few commands. Child references rewrite the array that \
         lists the node."
    };
    (roots) => {
        "Every root, in the order of `children`.\n\n\
         One query (child references read every node: a root is a node no array lists)."
    };
    (walk) => {
        "The whole tree in pre-order, each node with its depth (for the materialized-paths \
         model, the order of the full paths).\n\n\
         One read of every node, ordered in memory."
    };
    (verify) => {
        "Every defect of the stored tree, as data, with the nodes read (`is_clean()` when the \
         tree is sound).\n\nOne read of every node."
    };
    (repair) => {
        "Rebuilds the model's fields from the parent links the nodes hold; reports what it \
         changed and what it could not repair.\n\n\
         One transaction: one read of every node, one update per node it fixes."
    };
    (index_report) => {
        "Reports the collection's indexes against those the model needs: present, missing, and \
         the user's own (which the library never drops).\n\n\
         One `listIndexes`."
    };
}
