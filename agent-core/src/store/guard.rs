//! A store wrapper that turns a panic inside any store call into a [`StoreError`], so a
//! faulty store ends a turn with an error at stage `persist` instead of unwinding through it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::{
    MessageUpdate, NewMessage, NowOrLater, SessionHold, SessionStore, StoreError, StoreErrorKind,
    StoredMessage, SuspendedCall, TurnLease,
};
use crate::message::Message;
use crate::util::BoxFuture;
use crate::util::catch_panic;

/// The agent's store, guarded against panics.
pub(crate) struct PanicSafe(pub(crate) Arc<dyn SessionStore>);

impl PanicSafe {
    /// The store's address: the same for every agent built on one store.
    pub(crate) fn address(&self) -> usize {
        Arc::as_ptr(&self.0).cast::<()>().addr()
    }
}

/// One store call with its panics caught: a panic while its future is made or polled is a
/// [`StoreError`] of kind `Panicked` naming the call. A named future, not a box: the engine
/// calls [`PanicSafe`]'s own methods, which return it, so a store call allocates only the
/// store's own future (the second box it made per call, ten or more calls a turn, went with
/// the tokio channel of `tool::Reported`: 6,200 instructions a turn together, `whole_turn_agent`
/// in agent-providers/benches/stream.rs), and a write the store did on the spot nothing.
pub(crate) struct Guarded<'a, T> {
    what: &'static str,
    call: Call<'a, T>,
}

/// Where a guarded store call stands.
enum Call<'a, T> {
    /// The store's future.
    Waiting(BoxFuture<'a, Result<T, StoreError>>),
    /// A write the store did on the spot (`insert_id_now`, `update_now`), until polled.
    Done(Option<Result<T, StoreError>>),
    /// The message of the panic that made no future.
    Panicked(String),
}

/// Makes one store call with panics caught (see [`Guarded`]).
fn guarded<'a, T>(
    what: &'static str,
    call: impl FnOnce() -> BoxFuture<'a, Result<T, StoreError>>,
) -> Guarded<'a, T> {
    let call = match catch_panic(call) {
        Ok(future) => Call::Waiting(future),
        Err(message) => Call::Panicked(message),
    };
    Guarded { what, call }
}

impl<'a, T> Guarded<'a, T> {
    /// A write the store did on the spot, until polled.
    fn done(what: &'static str, done: Result<T, StoreError>) -> Self {
        Guarded {
            what,
            call: Call::Done(Some(done)),
        }
    }
}

impl<T: Unpin> Future for Guarded<'_, T> {
    type Output = Result<T, StoreError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let what = self.what;
        let polled = match &mut self.call {
            Call::Waiting(future) => catch_panic(|| future.as_mut().poll(cx)),
            Call::Done(done) => match done.take() {
                Some(done) => Ok(Poll::Ready(done)),
                None => Err("the call was polled after it finished".to_owned()),
            },
            Call::Panicked(message) => Err(std::mem::take(message)),
        };
        polled.unwrap_or_else(|message| Poll::Ready(Err(panicked(what, &message))))
    }
}

/// The error of a store call that panicked.
#[cold]
fn panicked(what: &str, message: &str) -> StoreError {
    StoreError::new(
        StoreErrorKind::Panicked,
        format!("the store panicked in {what}: {message}"),
    )
}

/// For each async store call: `PanicSafe`'s own method, which returns [`Guarded`] (what the
/// engine calls), and the trait's, the same boxed (for code that takes any store, such as
/// compaction). `what` names the call in the error a panic makes. The calls after `@by_hand`
/// get only the trait's method: their own is written below the list.
macro_rules! guard {
    (
        $($name:ident($($arg:ident: $ty:ty),*) -> $out:ty, $what:literal;)*
        @by_hand $($own:ident($($own_arg:ident: $own_ty:ty),*) -> $own_out:ty;)*
    ) => {
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

            /// [`SessionStore::keep_history`], with a panic logged.
            pub(crate) fn keep_history(&self, session: &str, messages: Vec<Message>) {
                if let Err(message) = catch_panic(|| self.0.keep_history(session, messages)) {
                    tracing::error!(session, "the store panicked in keep_history: {message}");
                }
            }

            /// [`SessionStore::keeps_history`]; a panic is logged and read as `false`.
            pub(crate) fn keeps_history(&self, messages: usize) -> bool {
                catch_panic(|| self.0.keeps_history(messages)).unwrap_or_else(|message| {
                    tracing::error!("the store panicked in keeps_history: {message}");
                    false
                })
            }

            /// [`SessionStore::lends_paired`]; a panic is logged and read as `false`.
            pub(crate) fn lends_paired(&self) -> bool {
                catch_panic(|| self.0.lends_paired()).unwrap_or_else(|message| {
                    tracing::error!("the store panicked in lends_paired: {message}");
                    false
                })
            }

            /// [`SessionStore::release`], with a panic logged.
            pub(crate) fn release(&self, session: &str) {
                if let Err(message) = catch_panic(|| self.0.release(session)) {
                    tracing::error!(session, "the store panicked in release: {message}");
                }
            }

            /// [`SessionStore::keep_hold`], with a panic logged (the hold is then released).
            pub(crate) fn keep_hold(&self, session: &str, hold: SessionHold) {
                if let Err(message) = catch_panic(|| self.0.keep_hold(session, hold)) {
                    tracing::error!(session, "the store panicked in keep_hold: {message}");
                }
            }

            /// [`SessionStore::take_hold`]; a panic is logged and read as no hold.
            pub(crate) fn take_hold(&self, session: &str, held: &str) -> Option<SessionHold> {
                catch_panic(|| self.0.take_hold(session, held)).unwrap_or_else(|message| {
                    tracing::error!(session, "the store panicked in take_hold: {message}");
                    None
                })
            }
        }

        impl SessionStore for PanicSafe {
            $(
                fn $name<'a>(&'a self, $($arg: $ty),*) -> BoxFuture<'a, Result<$out, StoreError>> {
                    Box::pin(PanicSafe::$name(self, $($arg),*))
                }
            )*
            $(
                fn $own<'a>(&'a self, $($own_arg: $own_ty),*) -> BoxFuture<'a, Result<$own_out, StoreError>> {
                    Box::pin(PanicSafe::$own(self, $($own_arg),*))
                }
            )*

            fn retain(&self, session: &str) {
                PanicSafe::retain(self, session);
            }

            fn keep_history(&self, session: &str, messages: Vec<Message>) {
                PanicSafe::keep_history(self, session, messages);
            }

            fn keeps_history(&self, messages: usize) -> bool {
                PanicSafe::keeps_history(self, messages)
            }

            fn lends_paired(&self) -> bool {
                PanicSafe::lends_paired(self)
            }

            fn release(&self, session: &str) {
                PanicSafe::release(self, session);
            }

            fn keep_hold(&self, session: &str, hold: SessionHold) {
                PanicSafe::keep_hold(self, session, hold);
            }

            fn take_hold(&self, session: &str, held: &str) -> Option<SessionHold> {
                PanicSafe::take_hold(self, session, held)
            }
        }
    };
}

guard! {
    load(session: &'a str) -> Vec<StoredMessage>, "load";
    has_rows(session: &'a str) -> bool, "has_rows";
    load_history(session: &'a str, capacity: &'a (dyn Fn(usize) -> usize + Sync)) -> Option<Vec<Message>>, "load";
    insert(session: &'a str, row: NewMessage) -> StoredMessage, "insert";
    delete(session: &'a str, id: i64) -> (), "delete";
    suspended(session: &'a str) -> Vec<SuspendedCall>, "suspended";
    set_suspended(session: &'a str, calls: Vec<SuspendedCall>) -> (), "set_suspended";
    approved_tools(session: &'a str) -> Vec<String>, "approved_tools";
    set_approved_tools(session: &'a str, tools: Vec<String>) -> (), "set_approved_tools";
    lock_turn(session: &'a str, wait: bool) -> Option<TurnLease>, "lock_turn";
    @by_hand
    insert_id(session: &'a str, row: NewMessage) -> i64;
    update(session: &'a str, id: i64, update: MessageUpdate) -> ();
}

/// The engine's writes: done on the spot by a store that can (one in memory), with no boxed
/// future each (`whole_turn_calls_agent` in agent-providers/benches/stream.rs).
impl PanicSafe {
    /// [`SessionStore::insert_id`], with panics caught: [`Self::insert_id_now`] first.
    pub(crate) fn insert_id<'a>(&'a self, session: &'a str, row: NewMessage) -> Guarded<'a, i64> {
        match self.insert_id_now(session, row) {
            NowOrLater::Now(done) => Guarded::done("insert", done),
            NowOrLater::Later(row) => self.insert_id_later(session, row),
        }
    }

    /// [`SessionStore::insert_id_now`], with a panic caught (an error, as a write's).
    pub(crate) fn insert_id_now(
        &self,
        session: &str,
        row: NewMessage,
    ) -> NowOrLater<i64, NewMessage> {
        catch_panic(|| self.0.insert_id_now(session, row))
            .unwrap_or_else(|message| NowOrLater::Now(Err(panicked("insert", &message))))
    }

    /// [`SessionStore::insert_id`] alone, with panics caught: for a row the store gave back
    /// from [`Self::insert_id_now`], which is not asked again.
    pub(crate) fn insert_id_later<'a>(
        &'a self,
        session: &'a str,
        row: NewMessage,
    ) -> Guarded<'a, i64> {
        guarded("insert", || self.0.insert_id(session, row))
    }

    /// [`SessionStore::update`], with panics caught: [`Self::update_now`] first.
    pub(crate) fn update<'a>(
        &'a self,
        session: &'a str,
        id: i64,
        update: MessageUpdate,
    ) -> Guarded<'a, ()> {
        match self.update_now(session, id, update) {
            NowOrLater::Now(done) => Guarded::done("update", done),
            NowOrLater::Later(update) => self.update_later(session, id, update),
        }
    }

    /// [`SessionStore::update_now`], with a panic caught (an error, as a write's).
    pub(crate) fn update_now(
        &self,
        session: &str,
        id: i64,
        update: MessageUpdate,
    ) -> NowOrLater<(), MessageUpdate> {
        catch_panic(|| self.0.update_now(session, id, update))
            .unwrap_or_else(|message| NowOrLater::Now(Err(panicked("update", &message))))
    }

    /// [`SessionStore::update`] alone, with panics caught: for an update the store gave back
    /// from [`Self::update_now`], which is not asked again.
    pub(crate) fn update_later<'a>(
        &'a self,
        session: &'a str,
        id: i64,
        update: MessageUpdate,
    ) -> Guarded<'a, ()> {
        guarded("update", || self.0.update(session, id, update))
    }
}
