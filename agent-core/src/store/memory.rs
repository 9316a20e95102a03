//! A store in process memory: for tests, and for agents that need no history after they exit.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use super::{
    MessageUpdate, NewMessage, SessionStore, StoreError, StoredMessage, ToolStatus, now_micros,
};
use crate::BoxFuture;
use crate::message::Message;

/// Sessions kept in memory; history lasts as long as the store.
#[derive(Debug, Default)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    next_id: i64,
    sessions: HashMap<String, Vec<StoredMessage>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

/// The tool status a tool row carries.
pub(crate) fn tool_status(message: &Message) -> Option<ToolStatus> {
    match message {
        Message::Tool { is_error: true, .. } => Some(ToolStatus::Error),
        Message::Tool { .. } => Some(ToolStatus::Success),
        _ => None,
    }
}

impl SessionStore for MemoryStore {
    fn load<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<Vec<StoredMessage>, StoreError>> {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let rows = inner.sessions.get(session).cloned().unwrap_or_default();
        Box::pin(std::future::ready(Ok(rows)))
    }

    fn insert<'a>(
        &'a self,
        session: &'a str,
        row: NewMessage,
    ) -> BoxFuture<'a, Result<StoredMessage, StoreError>> {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.next_id += 1;
        let stored = StoredMessage {
            id: inner.next_id,
            session_id: session.to_owned(),
            tool_status: tool_status(&row.message),
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
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let row = inner
            .sessions
            .get_mut(session)
            .and_then(|rows| rows.iter_mut().find(|row| row.id == id));
        let result = match row {
            None => Err(StoreError(format!(
                "no message {id} in session `{session}`"
            ))),
            Some(row) => {
                if let Some(message) = update.message {
                    row.tool_status = tool_status(&message);
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
}
