//! Where a conversation's history lives between turns: the [`HistoryStore`] seam and the
//! in-memory store used by default.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, PoisonError};

use crate::BoxFuture;
use crate::message::Message;

/// A failure of the history store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreError(pub String);

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StoreError {}

/// Keeps each session's messages. The engine appends the user's message when a turn starts and
/// the turn's assistant and tool messages when it ends (partial ones too, on error or abort).
pub trait HistoryStore: Send + Sync {
    /// The session's messages, oldest first.
    fn load<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<Vec<Message>, StoreError>>;

    /// Appends messages to the session.
    fn append<'a>(
        &'a self,
        session: &'a str,
        messages: &'a [Message],
    ) -> BoxFuture<'a, Result<(), StoreError>>;
}

/// A store in process memory: history lasts as long as the store.
#[derive(Debug, Default)]
pub struct MemoryStore {
    sessions: Mutex<HashMap<String, Vec<Message>>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl HistoryStore for MemoryStore {
    fn load<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<Vec<Message>, StoreError>> {
        let sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        let messages = sessions.get(session).cloned().unwrap_or_default();
        Box::pin(std::future::ready(Ok(messages)))
    }

    fn append<'a>(
        &'a self,
        session: &'a str,
        messages: &'a [Message],
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        sessions
            .entry(session.to_owned())
            .or_default()
            .extend_from_slice(messages);
        Box::pin(std::future::ready(Ok(())))
    }
}
