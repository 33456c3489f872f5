//! verify and repair
#![allow(unused)]
use crate::spec::TreeSpec;
use crate::store::Store;
use crate::Result;

/// A defect of a stored tree.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Defect {}

/// What [`repair`](super::repair) did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Repair {}

pub(super) async fn verify<S: Store + ?Sized>(store: &S, spec: &TreeSpec) -> Result<Vec<Defect>> {
    unimplemented!()
}
pub(super) async fn repair<S: Store + ?Sized>(store: &S, spec: &TreeSpec) -> Result<Repair> {
    unimplemented!()
}
