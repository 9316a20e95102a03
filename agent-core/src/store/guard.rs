//! A store wrapper that turns a panic inside any store call into a [`StoreError`], so a
//! faulty store ends a turn with an error at stage `persist` instead of unwinding through it.

use std::sync::Arc;

use super::{
    MessageUpdate, NewMessage, SessionStore, StoreError, StoreErrorKind, StoredMessage,
    SuspendedCall, TurnLease,
};
use crate::message::Message;
use crate::util::BoxFuture;
use crate::util::{catch_panic, catch_unwind};

/// The agent's store, guarded against panics.
pub(crate) struct PanicSafe(pub(crate) Arc<dyn SessionStore>);

/// Runs one store call (creating and polling its future) with panics caught.
fn guarded<'a, T: Send + 'a>(
    what: &'static str,
    call: impl FnOnce() -> BoxFuture<'a, Result<T, StoreError>>,
) -> BoxFuture<'a, Result<T, StoreError>> {
    let panicked = move |message: String| {
        StoreError::new(
            StoreErrorKind::Panicked,
            format!("the store panicked in {what}: {message}"),
        )
    };
    match catch_panic(call) {
        Ok(future) => Box::pin(async move { catch_unwind(future).await.map_err(panicked)? }),
        Err(message) => Box::pin(std::future::ready(Err(panicked(message)))),
    }
}

impl SessionStore for PanicSafe {
    fn load<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<Vec<StoredMessage>, StoreError>> {
        guarded("load", || self.0.load(session))
    }

    fn load_history<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<Option<Vec<Message>>, StoreError>> {
        guarded("load", || self.0.load_history(session))
    }

    fn insert<'a>(
        &'a self,
        session: &'a str,
        row: NewMessage,
    ) -> BoxFuture<'a, Result<StoredMessage, StoreError>> {
        guarded("insert", || self.0.insert(session, row))
    }

    fn insert_id<'a>(
        &'a self,
        session: &'a str,
        row: NewMessage,
    ) -> BoxFuture<'a, Result<i64, StoreError>> {
        guarded("insert", || self.0.insert_id(session, row))
    }

    fn update<'a>(
        &'a self,
        session: &'a str,
        id: i64,
        update: MessageUpdate,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        guarded("update", || self.0.update(session, id, update))
    }

    fn delete<'a>(&'a self, session: &'a str, id: i64) -> BoxFuture<'a, Result<(), StoreError>> {
        guarded("delete", || self.0.delete(session, id))
    }

    fn suspended<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<Vec<SuspendedCall>, StoreError>> {
        guarded("suspended", || self.0.suspended(session))
    }

    fn set_suspended<'a>(
        &'a self,
        session: &'a str,
        calls: Vec<SuspendedCall>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        guarded("set_suspended", || self.0.set_suspended(session, calls))
    }

    fn approved_tools<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<Vec<String>, StoreError>> {
        guarded("approved_tools", || self.0.approved_tools(session))
    }

    fn set_approved_tools<'a>(
        &'a self,
        session: &'a str,
        tools: Vec<String>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        guarded("set_approved_tools", || {
            self.0.set_approved_tools(session, tools)
        })
    }

    fn lock_turn<'a>(
        &'a self,
        session: &'a str,
        wait: bool,
    ) -> BoxFuture<'a, Result<Option<TurnLease>, StoreError>> {
        guarded("lock_turn", || self.0.lock_turn(session, wait))
    }

    fn retain(&self, session: &str) {
        if let Err(message) = catch_panic(|| self.0.retain(session)) {
            tracing::error!(session, "the store panicked in retain: {message}");
        }
    }

    fn release(&self, session: &str) {
        if let Err(message) = catch_panic(|| self.0.release(session)) {
            tracing::error!(session, "the store panicked in release: {message}");
        }
    }
}
