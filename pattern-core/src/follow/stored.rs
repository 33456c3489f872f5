//! The rules as data, in the follower's document (`rules`): written by every run, so that a
//! follower started without the application's types (the `pattern follow` command) keeps the
//! same derived data. Each rule writes its own document ([`Rule::stored`]) and reads it back
//! (`from_stored`); a rule that needs a type to run (schema versions, roll-ups: the type's
//! code and spec) is not stored, and is not kept by such a follower.

use bson::Bson;

use super::computed::Aggregates;
use super::copies::Copies;
use super::rule::{bad, text, Rule};
use super::subset::Subsets;
use crate::store::Store;
use crate::Result;

/// The rules of `stored` (the follower document's `rules`), each as it was registered.
pub(crate) fn rules<S: Store>(stored: &[Bson]) -> Result<Vec<Box<dyn Rule<S>>>> {
    let mut out: Vec<Box<dyn Rule<S>>> = Vec::new();
    for r in stored {
        let r = r
            .as_document()
            .ok_or_else(|| bad("a rule that is not a document"))?;
        match text(r, "rule")? {
            "copies" => out.push(Box::new(Copies::from_stored(r)?)),
            "computed" => out.push(Box::new(Aggregates::from_stored(r)?)),
            "subset" => out.push(Box::new(Subsets::from_stored(r)?)),
            other => return Err(bad(&format!("a rule `{other}`"))),
        }
    }
    Ok(out)
}
