//! A store wrapper that turns a panic inside any store call into a [`StoreError`], so a
//! faulty store ends a turn with an error at stage `persist` instead of unwinding through it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::{
    MessageUpdate, NewMessage, SessionStore, StoreError, StoreErrorKind, StoredMessage,
    SuspendedCall, TurnLease,
};
use crate::message::Message;
use crate::util::BoxFuture;
use crate::util::catch_panic;

/// The agent's store, guarded against panics.
pub(crate) struct PanicSafe(pub(crate) Arc<dyn SessionStore>);

/// One store call with its panics caught: a panic while its future is made or polled is a
/// [`StoreError`] of kind `Panicked` naming the call. A named future, not a box: the engine
/// calls [`PanicSafe`]'s own methods, which return it, so a store call allocates only the
/// store's own future (the second box it made per call, ten or more calls a turn, went with
/// the tokio channel of `tool::Reported`: 6,200 instructions a turn together, `whole_turn_agent`
/// in agent-providers/benches/stream.rs).
pub(crate) struct Guarded<'a, T> {
    what: &'static str,
    /// The store's future, or the message of the panic that made none.
    future: Result<BoxFuture<'a, Result<T, StoreError>>, String>,
}

/// Makes one store call with panics caught (see [`Guarded`]).
fn guarded<'a, T>(
    what: &'static str,
    call: impl FnOnce() -> BoxFuture<'a, Result<T, StoreError>>,
) -> Guarded<'a, T> {
    Guarded {
        what,
        future: catch_panic(call),
    }
}

impl<T> Future for Guarded<'_, T> {
    type Output = Result<T, StoreError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let what = self.what;
        let polled = match &mut self.future {
            Ok(future) => catch_panic(|| future.as_mut().poll(cx)),
            Err(message) => Err(std::mem::take(message)),
        };
        polled.unwrap_or_else(|message| {
            Poll::Ready(Err(StoreError::new(
                StoreErrorKind::Panicked,
                format!("the store panicked in {what}: {message}"),
            )))
        })
    }
}

/// For each async store call: `PanicSafe`'s own method, which returns [`Guarded`] (what the
/// engine calls), and the trait's, the same boxed (for code that takes any store, such as
/// compaction). `what` names the call in the error a panic makes.
macro_rules! guard {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $out:ty, $what:literal;)*) => {
        impl PanicSafe {
            $(
                #[doc = concat!("[`SessionStore::", stringify!($name), "`], with panics caught.")]
                pub(crate) fn $name<'a>(&'a self, $($arg: $ty),*) -> Guarded<'a, $out> {
                    guarded($what, || self.0.$name($($arg),*))
                }
            )*

            /// [`SessionStore::retain`], with a panic logged.
            pub(crate) fn retain(&self, session: &str) {
                if let Err(message) = catch_panic(|| self.0.retain(session)) {
                    tracing::error!(session, "the store panicked in retain: {message}");
                }
            }

            /// [`SessionStore::release`], with a panic logged.
            pub(crate) fn release(&self, session: &str) {
                if let Err(message) = catch_panic(|| self.0.release(session)) {
                    tracing::error!(session, "the store panicked in release: {message}");
                }
            }
        }

        impl SessionStore for PanicSafe {
            $(
                fn $name<'a>(&'a self, $($arg: $ty),*) -> BoxFuture<'a, Result<$out, StoreError>> {
                    Box::pin(PanicSafe::$name(self, $($arg),*))
                }
            )*

            fn retain(&self, session: &str) {
                PanicSafe::retain(self, session);
            }

            fn release(&self, session: &str) {
                PanicSafe::release(self, session);
            }
        }
    };
}

guard! {
    load(session: &'a str) -> Vec<StoredMessage>, "load";
    load_history(session: &'a str, capacity: &'a (dyn Fn(usize) -> usize + Sync)) -> Option<Vec<Message>>, "load";
    insert(session: &'a str, row: NewMessage) -> StoredMessage, "insert";
    insert_id(session: &'a str, row: NewMessage) -> i64, "insert";
    update(session: &'a str, id: i64, update: MessageUpdate) -> (), "update";
    delete(session: &'a str, id: i64) -> (), "delete";
    suspended(session: &'a str) -> Vec<SuspendedCall>, "suspended";
    set_suspended(session: &'a str, calls: Vec<SuspendedCall>) -> (), "set_suspended";
    approved_tools(session: &'a str) -> Vec<String>, "approved_tools";
    set_approved_tools(session: &'a str, tools: Vec<String>) -> (), "set_approved_tools";
    lock_turn(session: &'a str, wait: bool) -> Option<TurnLease>, "lock_turn";
}
