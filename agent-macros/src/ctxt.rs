//! Collects every error of one expansion so all are reported at once.

use std::cell::RefCell;
use std::fmt::Display;

use proc_macro2::TokenStream;
use quote::ToTokens;

/// An error accumulator; [`Ctxt::check`] must be called before it is dropped.
pub(crate) struct Ctxt {
    errors: RefCell<Option<Vec<syn::Error>>>,
}

impl Ctxt {
    pub(crate) fn new() -> Self {
        Ctxt {
            errors: RefCell::new(Some(Vec::new())),
        }
    }

    /// Records an error spanned on `tokens`.
    pub(crate) fn error_spanned_by(&self, tokens: impl ToTokens, message: impl Display) {
        self.syn_error(syn::Error::new_spanned(tokens.into_token_stream(), message));
    }

    /// Records an error at a span.
    pub(crate) fn error_at(&self, span: proc_macro2::Span, message: impl Display) {
        self.syn_error(syn::Error::new(span, message));
    }

    /// Records a parse error.
    pub(crate) fn syn_error(&self, error: syn::Error) {
        if let Some(errors) = self.errors.borrow_mut().as_mut() {
            errors.push(error);
        }
    }

    /// Whether any error was recorded so far.
    pub(crate) fn has_errors(&self) -> bool {
        self.errors
            .borrow()
            .as_ref()
            .is_some_and(|errors| !errors.is_empty())
    }

    /// Consumes the context: the errors as `compile_error!` tokens (empty when none).
    pub(crate) fn check(self) -> TokenStream {
        let errors = self.errors.borrow_mut().take().unwrap_or_default();
        errors
            .into_iter()
            .map(|error| error.to_compile_error())
            .collect()
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        if !std::thread::panicking() && self.errors.borrow().is_some() {
            panic!("internal: Ctxt dropped without check()");
        }
    }
}
