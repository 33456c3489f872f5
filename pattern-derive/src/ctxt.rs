//! The error accumulator: parsing records every error here and goes on, so one bad key does
//! not hide the next (serde_derive's `Ctxt`).

use std::cell::RefCell;
use std::fmt::Display;

use proc_macro2::Span;
use quote::ToTokens;

#[derive(Default)]
pub(crate) struct Ctxt {
    errors: RefCell<Vec<syn::Error>>,
}

impl Ctxt {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// An error covering `tokens` (from their first token to their last).
    pub(crate) fn error_spanned_by<T: ToTokens>(&self, tokens: T, msg: impl Display) {
        self.syn_error(syn::Error::new_spanned(tokens, msg));
    }

    pub(crate) fn error_at(&self, span: Span, msg: impl Display) {
        self.syn_error(syn::Error::new(span, msg));
    }

    pub(crate) fn syn_error(&self, err: syn::Error) {
        self.errors.borrow_mut().push(err);
    }

    /// All the errors recorded, combined into one, or `Ok` when there were none.
    pub(crate) fn check(self) -> syn::Result<()> {
        let mut errors = self.errors.into_inner().into_iter();
        let Some(mut first) = errors.next() else {
            return Ok(());
        };
        for e in errors {
            first.combine(e);
        }
        Err(first)
    }
}

/// The messages of a result's errors, in order (for the parser tests).
#[cfg(test)]
pub(crate) fn messages<T>(result: syn::Result<T>) -> Vec<String> {
    match result {
        Ok(_) => Vec::new(),
        Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
    }
}
