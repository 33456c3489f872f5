//! `pattern migrate attributes`.

use clap::Args;

use super::layout::RunArgs;

#[derive(Args, Debug)]
pub(crate) struct MigrateAttributes {
    /// The collection, rewritten in place.
    #[arg(long)]
    pub collection: String,
    /// The top-level fields to move, comma-separated: each becomes a `{k, v}` pair named after
    /// it.
    #[arg(long, value_delimiter = ',', required = true)]
    pub fields: Vec<String>,
    /// The array field that holds the pairs (`#[document(attributes)]`'s field).
    #[arg(long, default_value = "attributes")]
    pub into: String,
    #[command(flatten)]
    pub run: RunArgs,
}
