//! The layouts the arguments describe, as the `pattern_core` specs the derives would build,
//! with the derives' default names. A spec borrows its names: from the arguments (owned by
//! the parsed command line), and from the names derived from them (`<collection>_id`,
//! `<array>_extra`, `<time>_min`, `<field>_sum`...), computed here into owned `String`s
//! ([`OutlierNames`], [`KeptNames`]) that the command keeps while it runs.

mod bucket;
mod outlier;

use pattern_core::adopt::money::{Finish, MoneyConversion};
use pattern_core::money::Form;

use crate::args::{FinishArg, MoneyFields};
use crate::exit::Failure;

pub(crate) use bucket::{bucket_keeps, bucket_spec, KeptNames};
pub(crate) use outlier::OutlierNames;

/// The money conversion the arguments name.
pub(crate) fn money_conversion(f: &MoneyFields, finish: FinishArg) -> MoneyConversion<'_> {
    MoneyConversion {
        collection: &f.collection,
        from: &f.from,
        form: f.scaled.map_or(Form::Text, Form::Scaled),
        to: &f.to,
        finish: match finish {
            FinishArg::KeepBoth => Finish::KeepBoth,
            FinishArg::DropOld => Finish::DropOld,
            FinishArg::IntoOld => Finish::IntoOld,
        },
    }
}

/// Refuses two roles stored under one field name.
fn distinct(names: &[(&str, &String)], what: &str) -> Result<(), Failure> {
    for (i, (role, name)) in names.iter().enumerate() {
        if name.is_empty() {
            return Err(Failure::usage(format!(
                "{role} of a {what} needs a field name, got an empty one"
            )));
        }
        if let Some((other, _)) = names[..i].iter().find(|(_, n)| n == name) {
            return Err(Failure::usage(format!(
                "{other} and {role} would both be stored in the {what}'s field {name:?}: name one differently"
            )));
        }
    }
    Ok(())
}
