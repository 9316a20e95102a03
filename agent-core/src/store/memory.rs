//! A store in process memory: for tests, one-shot runs, and agents that need no history after
//! they exit.

use std::collections::HashMap;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::{Mutex, PoisonError};
use std::task::{Context, Poll};

use super::{
    MessageUpdate, NewMessage, SessionStore, StoreError, StoreErrorKind, StoredMessage,
    SuspendedCall, ToolStatus, TurnLease, TurnLocks, now_micros,
};
use crate::util::BoxFuture;

/// The answer of a session that keeps nothing of a kind (no waiting call, no standing
/// approval): an empty list, from a future of no size, which `Box::pin` does not allocate
/// (every turn reads the waiting calls, and every turn with tool calls the approvals).
struct Nothing<T>(PhantomData<fn() -> T>);

impl<T> Default for Nothing<T> {
    fn default() -> Self {
        Nothing(PhantomData)
    }
}

impl<T> Future for Nothing<T> {
    type Output = Result<Vec<T>, StoreError>;

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Self::Output> {
        Poll::Ready(Ok(Vec::new()))
    }
}

/// Sessions kept in process memory, each for as long as a handle holds it.
///
/// A session's rows live while at least one [`Conversation`](crate::Conversation) on it (or a
/// clone of one, or a turn still running on it) is alive, and are freed when the last one is
/// dropped: `Agent::run` leaves nothing behind, and a process that opens conversations for days
/// holds only the live ones. To keep a history across handles, keep one `Conversation` open, or
/// use a persistent store such as [`SqliteStore`](crate::SqliteStore).
#[derive(Debug, Default)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
    /// One turn at a time per session, for every agent using this store.
    locks: TurnLocks,
}

#[derive(Debug, Default)]
struct Inner {
    next_id: i64,
    sessions: HashMap<String, Vec<StoredMessage>>,
    /// The calls each suspended session waits on.
    suspended: HashMap<String, Vec<SuspendedCall>>,
    /// Each session's tools approved for good.
    approved: HashMap<String, Vec<String>>,
    /// How many handles hold each session (see [`SessionStore::retain`]).
    holders: HashMap<String, usize>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many sessions the store holds rows for.
    pub fn session_count(&self) -> usize {
        self.lock().sessions.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl SessionStore for MemoryStore {
    fn load<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<Vec<StoredMessage>, StoreError>> {
        let inner = self.lock();
        let rows = inner.sessions.get(session).cloned().unwrap_or_default();
        Box::pin(std::future::ready(Ok(rows)))
    }

    fn insert<'a>(
        &'a self,
        session: &'a str,
        row: NewMessage,
    ) -> BoxFuture<'a, Result<StoredMessage, StoreError>> {
        let mut inner = self.lock();
        inner.next_id += 1;
        let stored = StoredMessage {
            id: inner.next_id,
            session_id: session.to_owned(),
            tool_status: ToolStatus::of(&row.message),
            message: row.message,
            created_at: now_micros(),
            request_sent_at: row.request_sent_at,
            response_completed_at: None,
            status: row.status,
            silent: row.silent,
        };
        // Only a new session's first row pays for its key.
        match inner.sessions.get_mut(session) {
            Some(rows) => rows.push(stored.clone()),
            None => {
                inner
                    .sessions
                    .insert(session.to_owned(), vec![stored.clone()]);
            }
        }
        Box::pin(std::future::ready(Ok(stored)))
    }

    fn update<'a>(
        &'a self,
        session: &'a str,
        id: i64,
        update: MessageUpdate,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let mut inner = self.lock();
        let row = inner
            .sessions
            .get_mut(session)
            .and_then(|rows| rows.iter_mut().find(|row| row.id == id));
        let result = match row {
            None => Err(StoreError::new(
                StoreErrorKind::NotFound,
                format!("no message {id} in session `{session}`"),
            )),
            Some(row) => {
                if let Some(message) = update.message {
                    row.tool_status = ToolStatus::of(&message);
                    row.message = message;
                }
                if let Some(status) = update.status {
                    row.status = status;
                }
                if update.response_completed_at.is_some() {
                    row.response_completed_at = update.response_completed_at;
                }
                if let Some(silent) = update.silent {
                    row.silent = silent;
                }
                Ok(())
            }
        };
        Box::pin(std::future::ready(result))
    }

    fn delete<'a>(&'a self, session: &'a str, id: i64) -> BoxFuture<'a, Result<(), StoreError>> {
        let mut inner = self.lock();
        let rows = inner.sessions.get_mut(session);
        let at = rows
            .as_ref()
            .and_then(|rows| rows.iter().position(|row| row.id == id));
        let result = match (rows, at) {
            (Some(rows), Some(at)) => {
                rows.remove(at);
                Ok(())
            }
            _ => Err(StoreError::new(
                StoreErrorKind::NotFound,
                format!("no message {id} in session `{session}`"),
            )),
        };
        Box::pin(std::future::ready(result))
    }

    fn suspended<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<Vec<SuspendedCall>, StoreError>> {
        match self.lock().suspended.get(session) {
            Some(calls) => Box::pin(std::future::ready(Ok(calls.clone()))),
            None => Box::pin(Nothing::default()),
        }
    }

    fn set_suspended<'a>(
        &'a self,
        session: &'a str,
        calls: Vec<SuspendedCall>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let mut inner = self.lock();
        if calls.is_empty() {
            inner.suspended.remove(session);
        } else {
            inner.suspended.insert(session.to_owned(), calls);
        }
        Box::pin(std::future::ready(Ok(())))
    }

    fn approved_tools<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<Vec<String>, StoreError>> {
        match self.lock().approved.get(session) {
            Some(tools) => Box::pin(std::future::ready(Ok(tools.clone()))),
            None => Box::pin(Nothing::default()),
        }
    }

    fn set_approved_tools<'a>(
        &'a self,
        session: &'a str,
        tools: Vec<String>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let mut inner = self.lock();
        if tools.is_empty() {
            inner.approved.remove(session);
        } else {
            inner.approved.insert(session.to_owned(), tools);
        }
        Box::pin(std::future::ready(Ok(())))
    }

    fn lock_turn<'a>(
        &'a self,
        session: &'a str,
        wait: bool,
    ) -> BoxFuture<'a, Result<Option<TurnLease>, StoreError>> {
        Box::pin(async move { Ok(self.locks.lock(session, wait).await.map(TurnLease::local)) })
    }

    fn retain(&self, session: &str) {
        let mut inner = self.lock();
        match inner.holders.get_mut(session) {
            Some(count) => *count += 1,
            None => {
                inner.holders.insert(session.to_owned(), 1);
            }
        }
    }

    fn release(&self, session: &str) {
        let mut inner = self.lock();
        let Some(count) = inner.holders.get_mut(session) else {
            return;
        };
        *count -= 1;
        if *count == 0 {
            inner.holders.remove(session);
            inner.sessions.remove(session);
            inner.suspended.remove(session);
            inner.approved.remove(session);
        }
    }
}
