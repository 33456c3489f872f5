//! The derive macros of [`pattern_core`](https://docs.rs/pattern-core): use them through
//! `pattern_core::{Bucket, Outlier, Tree, Document}`, which re-exports them with their documentation.
//!
//! Layout (private modules), serde_derive's: one front end, a back end per derive. Each derive
//! runs `derive` with its check and its back end.
//!
//! - The front end (`read`) reads the input once into one model, then checks it:
//!   - `ast`: the model, the same for every derive. The container (name, generics, serde's
//!     attributes) and its fields (serde's name, type, span); the derive's keys hang off both.
//!   - `attr`: the attributes, key by key: the key parsers all derives use, serde's attributes
//!     (`attr::serde`), and each derive's keys, read into its attribute struct (`attr::bucket`...).
//!   - `check`: the check pass, every rule that spans several keys, one module per derive.
//!   - `ctxt`: every mistake collected with its span, reported together.
//! - The back ends (`bucket`, `outlier`, `tree`, `document`, `reference`) expand the checked
//!   model alone, or beside errors emit a fallback of the same names. They share `codegen` (the
//!   method table, `Method`), `series` (the methods of the bucket and the outlier), `names` (the
//!   stored names and MongoDB's rules) and `bson_type`.

use proc_macro::TokenStream;
use syn::{parse_macro_input, DeriveInput};

use crate::ctxt::Ctxt;

mod ast;
mod attr;
mod bson_type;
mod bucket;
mod check;
mod codegen;
mod ctxt;
mod document;
mod names;
mod outlier;
mod reference;
mod series;
mod tree;

/// `#[derive(Bucket)]`: the bucket pattern. Use it as `pattern_core::Bucket`; the attribute
/// reference is in pattern_core's documentation of the re-export (`docs/bucket.md`).
///
/// `serde` is a helper attribute of every derive: `#[serde(rename = "...")]` names a field's
/// BSON name also on a struct that does not derive serde's traits.
#[proc_macro_derive(Bucket, attributes(bucket, serde))]
pub fn derive_bucket(input: TokenStream) -> TokenStream {
    derive_sharded(
        input,
        check::bucket,
        bucket::expand,
        bucket::fallback,
        1,
        "The bucket collection's shard key (one), as data: the series key (a key's buckets on one \
         shard; every per-key operation reaches only it). See `pattern_core::guide::sharding`.",
    )
}

/// `#[derive(Outlier)]`: the outlier pattern. Use it as `pattern_core::Outlier`; the attribute
/// reference is in pattern_core's documentation of the re-export (`docs/outlier.md`).
#[proc_macro_derive(Outlier, attributes(outlier, serde))]
pub fn derive_outlier(input: TokenStream) -> TokenStream {
    derive_sharded(
        input,
        check::outlier,
        outlier::expand,
        outlier::fallback,
        2,
        "The shard keys of the main collection (`_id`) and of the overflow collection (the \
         parent reference), as data. See `pattern_core::guide::sharding`.",
    )
}

/// `#[derive(Tree)]`: a tree stored in one of the five models of MongoDB's data-modeling
/// article. Use it as `pattern_core::Tree`; the attribute reference is in pattern_core's
/// documentation of the re-export (`docs/tree.md`).
#[proc_macro_derive(Tree, attributes(tree, serde))]
pub fn derive_tree(input: TokenStream) -> TokenStream {
    derive_sharded(
        input,
        check::tree,
        tree::expand,
        tree::fallback,
        0,
        "None: a tree's collection is best left unsharded (on the database's primary shard, \
         where every operation and transaction reaches one shard). See `pattern_core::guide::sharding` \
         for what each operation would reach on a tree sharded by `_id`.",
    )
}

/// `#[derive(Document)]`: a plain document with typed field paths (serde's renames applied),
/// conditional updates and keyword arrays. Use it as `pattern_core::Document`; the attribute
/// reference is in pattern_core's documentation of the re-export (`docs/document.md`).
#[proc_macro_derive(Document, attributes(document, serde))]
pub fn derive_document(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    let out = match input.data {
        // An enum: a polymorphic collection.
        syn::Data::Enum(_) => derive(
            &input,
            check::polymorphic,
            document::polymorphic::expand,
            document::polymorphic::fallback,
        ),
        _ => derive(
            &input,
            check::document,
            document::expand,
            document::fallback,
        ),
    };
    out.into()
}

/// `#[derive(Reference)]`: a copy of chosen fields of a `Document` type, for an extended
/// reference (`#[document(reference)]` on the field holding it). Use it as
/// `pattern_core::Reference`; the attribute reference is in pattern_core's documentation of
/// the re-export (`docs/reference.md`).
#[proc_macro_derive(Reference, attributes(reference, serde))]
pub fn derive_reference(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    derive(
        &input,
        check::reference,
        reference::expand,
        reference::fallback,
    )
    .into()
}

/// A pass over a derive's model: its checks.
type Check<A> = fn(&Ctxt, &ast::Container<A>);
/// A back end's expansion of a derive's model: of the checked one, or its fallback.
type Expand<A> = fn(&ast::Container<A>) -> proc_macro2::TokenStream;

/// The front end: `input` read into the derive `A`'s model, then the check pass over it; the
/// model, and every mistake of both.
fn read<A: ast::Attrs>(
    input: &DeriveInput,
    check: Check<A>,
) -> (ast::Container<'_, A>, syn::Result<()>) {
    let cx = Ctxt::new();
    let cont = ast::Container::from_ast(&cx, input);
    check(&cx, &cont);
    (cont, cx.check())
}

/// A derive: the front end (`read`), then the back end's `expand` of the checked model, or
/// beside the errors its `fallback` (so that the user sees the errors alone).
fn derive<A: ast::Attrs>(
    input: &DeriveInput,
    check: Check<A>,
    expand: Expand<A>,
    fallback: Expand<A>,
) -> proc_macro2::TokenStream {
    let (cont, checked) = read(input, check);
    codegen::or_fallback(checked.map(|()| expand(&cont)), || fallback(&cont))
}

/// A derive whose type also gets `shard_keys()` (`codegen::shard_keys`): its `keys` shard keys
/// as data, documented by `doc`.
fn derive_sharded<A: ast::Attrs>(
    input: TokenStream,
    check: Check<A>,
    expand: Expand<A>,
    fallback: Expand<A>,
    keys: usize,
    doc: &str,
) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    let mut out = derive(&input, check, expand, fallback);
    out.extend(codegen::shard_keys(&input, A::DERIVE, keys, doc));
    out.into()
}

/// For the in-process tests: the messages of every mistake in `input`.
#[cfg(test)]
fn errors<A: ast::Attrs>(input: &DeriveInput, check: Check<A>) -> Vec<String> {
    ctxt::messages(read(input, check).1)
}

/// For the in-process tests: the checked model of `input`, which has no mistake (else a panic
/// listing them).
#[cfg(test)]
fn checked<A: ast::Attrs>(input: &DeriveInput, check: Check<A>) -> ast::Container<'_, A> {
    let (cont, checked) = read(input, check);
    if let Err(e) = checked {
        panic!("{:?}", ctxt::messages::<()>(Err(e)));
    }
    cont
}

/// For the in-process tests: asserts that the generated `code` holds each of `parts`.
#[cfg(test)]
#[track_caller]
fn assert_contains(code: &str, parts: &[&str]) {
    for part in parts {
        assert!(code.contains(part), "{part} not in {code}");
    }
}
