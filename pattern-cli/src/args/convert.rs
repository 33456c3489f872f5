//! `pattern convert money`.

use clap::builder::TypedValueParser;
use clap::{Args, Subcommand};

use super::layout::MoneyFields;

#[derive(Subcommand, Debug)]
pub(crate) enum Convert {
    /// Amounts stored as scaled integers (1999 at scale 2) or display strings ("24.95") into a
    /// Decimal128 field, exactly or not at all; then, after a clean verification, optionally
    /// drop the old field or move the decimal into it.
    Money(ConvertMoney),
}

#[derive(Args, Debug)]
pub(crate) struct ConvertMoney {
    #[command(flatten)]
    pub fields: MoneyFields,
    /// What happens to the old field once every document verified clean.
    #[arg(long, value_enum, default_value = "keep-both")]
    pub finish: FinishArg,
    /// Documents written per transaction at most (one checkpoint each; at most 100).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..).map(|n| n as usize))]
    pub batch: usize,
    /// Read everything, write nothing (no checkpoint), report what would change.
    #[arg(long)]
    pub dry_run: bool,
}

/// The last step of a money conversion.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub(crate) enum FinishArg {
    /// Keep the old field beside the new one.
    KeepBoth,
    /// Remove the old field.
    DropOld,
    /// Move the decimal into the old field's name (the new field goes).
    IntoOld,
}
