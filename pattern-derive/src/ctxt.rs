//! The error accumulator: parsing records every error here and goes on, so one bad key does
//! not hide the next (serde_derive's `Ctxt`).

use std::cell::RefCell;
use std::fmt::Display;
use std::thread;

use proc_macro2::Span;
use quote::ToTokens;

/// Errors recorded while parsing. [`Ctxt::check`] must take them before the `Ctxt` is
/// dropped: dropping it unchecked panics, so that no path can lose an error.
pub(crate) struct Ctxt {
    /// `None` once [`Ctxt::check`] took them.
    errors: RefCell<Option<Vec<syn::Error>>>,
}

impl Ctxt {
    pub(crate) fn new() -> Self {
        Ctxt {
            errors: RefCell::new(Some(Vec::new())),
        }
    }

    /// An error covering `tokens` (from their first token to their last).
    pub(crate) fn error_spanned_by<T: ToTokens>(&self, tokens: T, msg: impl Display) {
        self.syn_error(syn::Error::new_spanned(tokens, msg));
    }

    pub(crate) fn error_at(&self, span: Span, msg: impl Display) {
        self.syn_error(syn::Error::new(span, msg));
    }

    pub(crate) fn syn_error(&self, err: syn::Error) {
        self.errors
            .borrow_mut()
            .as_mut()
            .expect("errors are recorded before they are checked")
            .push(err);
    }

    /// All the errors recorded, combined into one, or `Ok` when there were none.
    pub(crate) fn check(self) -> syn::Result<()> {
        let errors = self.errors.borrow_mut().take();
        let mut errors = errors.expect("checked once").into_iter();
        let Some(mut first) = errors.next() else {
            return Ok(());
        };
        for e in errors {
            first.combine(e);
        }
        Err(first)
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        if !thread::panicking() && self.errors.borrow().is_some() {
            panic!("forgot to check for errors");
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_returns_every_error_in_order() {
        let cx = Ctxt::new();
        cx.error_at(Span::call_site(), "first");
        cx.error_spanned_by(quote::quote!(a b), "second");
        assert_eq!(messages(cx.check()), ["first", "second"]);
        assert!(Ctxt::new().check().is_ok());
    }

    #[test]
    #[should_panic(expected = "forgot to check for errors")]
    fn dropped_unchecked_panics() {
        let cx = Ctxt::new();
        cx.error_at(Span::call_site(), "lost");
        drop(cx);
    }

    #[test]
    #[should_panic(expected = "forgot to check for errors")]
    fn dropped_unchecked_panics_without_errors_too() {
        drop(Ctxt::new());
    }

    #[test]
    #[should_panic(expected = "the test's own panic")]
    fn no_second_panic_while_panicking() {
        let _cx = Ctxt::new();
        panic!("the test's own panic");
    }
}
