//! `pattern archive bucket|document`.

use clap::{Args, Subcommand};

use super::layout::BucketFields;

#[derive(Subcommand, Debug)]
pub(crate) enum Archive {
    /// Move whole buckets whose items are all before a moment (never a key's newest) into an
    /// archive collection, exactly once, beside live pushes; then check both together. Run
    /// again after a kill (with the same --before): it resumes after the last batch recorded
    /// in its checkpoint and completes the moves in flight.
    Bucket(ArchiveBucket),
    /// Move the documents whose date field is before a moment, unless a flag keeps them, into
    /// an archive collection, one transaction each (exactly once beside live writes); then
    /// check that none is in both. Run again after a kill (with the same --before): it
    /// resumes after the last batch recorded in its checkpoint.
    Document(ArchiveDocument),
}

#[derive(Args, Debug)]
pub(crate) struct ArchiveDocument {
    /// The live collection.
    #[arg(long)]
    pub collection: String,
    /// The archive collection (in the same database).
    #[arg(long)]
    pub to: String,
    /// The field holding each document's date (a BSON date): older than `--before` moves.
    #[arg(long)]
    pub age: String,
    /// A boolean field: `true` pins the document live whatever its age.
    #[arg(long, alias = "keep")]
    pub pin: Option<String>,
    /// Documents dated before this moment move (RFC 3339, like `2024-01-01T00:00:00Z`).
    #[arg(long, value_parser = moment_parser)]
    pub before: bson::DateTime,
    /// Read everything, write nothing (no checkpoint), report what would move.
    #[arg(long)]
    pub dry_run: bool,
    /// Skip the check at the end.
    #[arg(long)]
    pub no_verify: bool,
}

#[derive(Args, Debug)]
pub(crate) struct ArchiveBucket {
    /// The live bucket collection.
    #[arg(long)]
    pub collection: String,
    /// The archive collection (in the same database).
    #[arg(long)]
    pub to: String,
    /// The field holding each item's time: the buckets' bounds are `<time>_min`, `<time>_max`.
    #[arg(long)]
    pub time: String,
    /// Buckets whose latest item is before this moment move (RFC 3339, like
    /// `2024-01-01T00:00:00Z`).
    #[arg(long, value_parser = moment_parser)]
    pub before: bson::DateTime,
    #[command(flatten)]
    pub fields: BucketFields,
    /// Read everything, write nothing (no checkpoint), report what would move.
    #[arg(long)]
    pub dry_run: bool,
    /// Skip the check of both collections at the end.
    #[arg(long)]
    pub no_verify: bool,
}

/// `--before 2024-01-01T00:00:00Z`.
fn moment_parser(text: &str) -> Result<bson::DateTime, String> {
    bson::DateTime::parse_rfc3339_str(text)
        .map_err(|_| format!("`{text}` is not a moment: RFC 3339, like `2024-01-01T00:00:00Z`"))
}
