//! The check pass (serde_derive's `internals/check.rs`): every rule that spans several keys of a
//! derive, the container's with each other, with the fields', or the fields' with each other.
//! It runs over the model ([`crate::ast::Container`]) once it is read, before the derive's back
//! end expands it, and reports each mistake with its span; the model it passes is the one the
//! back end trusts (a required key given, one field per role...).
//!
//! One function per derive, in its file; what two derives share beside them (`roles.rs`: the
//! fields a flag marks).

mod bucket;
mod document;
mod outlier;
mod polymorphic;
mod reference;
mod roles;
mod tree;
mod versions;

pub(crate) use bucket::bucket;
pub(crate) use document::document;
pub(crate) use outlier::outlier;
pub(crate) use polymorphic::polymorphic;
pub(crate) use reference::reference;
pub(crate) use tree::tree;
