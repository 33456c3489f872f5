//! The derive macros of [`pattern_core`](https://docs.rs/pattern-core): use them through
//! `pattern_core::{Bucket, Outlier, Tree, Document}`, which re-exports them with their documentation.
//!
//! Layout (private modules): `bucket`, `outlier`, `tree` and `document` each parse their input into a model
//! (`parse.rs`, reporting every mistake at once through `ctxt::Ctxt`) and generate code from
//! the model alone (`expand.rs`); `attr`, `shape`, `names`, `serde_names` and `codegen` hold
//! what the derives share.

use proc_macro::TokenStream;
use syn::{parse_macro_input, DeriveInput};

mod attr;
mod bson_type;
mod bucket;
mod codegen;
mod ctxt;
mod document;
mod names;
mod outlier;
mod reference;
mod serde_names;
mod shape;
mod tree;

/// `#[derive(Bucket)]`: the bucket pattern. Use it as `pattern_core::Bucket`; the attribute
/// reference is in pattern_core's documentation of the re-export (`docs/bucket.md`).
///
/// `serde` is a helper attribute of every derive: `#[serde(rename = "...")]` names a field's
/// BSON name also on a struct that does not derive serde's traits.
#[proc_macro_derive(Bucket, attributes(bucket, serde))]
pub fn derive_bucket(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    let mut out = bucket::derive(&input);
    out.extend(codegen::shard_keys(
        &input,
        quote::quote!(::pattern_core::Bucket),
        quote::quote!([::pattern_core::spec::ShardKey<'static>; 1]),
        "The bucket collection's shard key (one), as data: the series key (a key's buckets on one \
         shard; every per-key operation reaches only it). See `pattern_core::guide::sharding`.",
    ));
    out.into()
}

/// `#[derive(Outlier)]`: the outlier pattern. Use it as `pattern_core::Outlier`; the attribute
/// reference is in pattern_core's documentation of the re-export (`docs/outlier.md`).
#[proc_macro_derive(Outlier, attributes(outlier, serde))]
pub fn derive_outlier(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    let mut out = outlier::derive(&input);
    out.extend(codegen::shard_keys(
        &input,
        quote::quote!(::pattern_core::Outlier),
        quote::quote!([::pattern_core::spec::ShardKey<'static>; 2]),
        "The shard keys of the main collection (`_id`) and of the overflow collection (the \
         parent reference), as data. See `pattern_core::guide::sharding`.",
    ));
    out.into()
}

/// `#[derive(Tree)]`: a tree stored in one of the five models of MongoDB's data-modeling
/// article. Use it as `pattern_core::Tree`; the attribute reference is in pattern_core's
/// documentation of the re-export (`docs/tree.md`).
#[proc_macro_derive(Tree, attributes(tree, serde))]
pub fn derive_tree(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    let mut out = tree::derive(&input);
    out.extend(codegen::shard_keys(
        &input,
        quote::quote!(::pattern_core::Tree),
        quote::quote!([::pattern_core::spec::ShardKey<'static>; 0]),
        "None: a tree's collection is best left unsharded (on the database's primary shard, \
         where every operation and transaction reaches one shard). See `pattern_core::guide::sharding` \
         for what each operation would reach on a tree sharded by `_id`.",
    ));
    out.into()
}

/// `#[derive(Document)]`: a plain document with typed field paths (serde's renames applied),
/// conditional updates and keyword arrays. Use it as `pattern_core::Document`; the attribute
/// reference is in pattern_core's documentation of the re-export (`docs/document.md`).
#[proc_macro_derive(Document, attributes(document, serde))]
pub fn derive_document(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    document::derive(&input).into()
}

/// `#[derive(Reference)]`: a copy of chosen fields of a `Document` type, for an extended
/// reference (`#[document(reference)]` on the field holding it). Use it as
/// `pattern_core::Reference`; the attribute reference is in pattern_core's documentation of
/// the re-export (`docs/reference.md`).
#[proc_macro_derive(Reference, attributes(reference, serde))]
pub fn derive_reference(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    reference::derive(&input).into()
}
