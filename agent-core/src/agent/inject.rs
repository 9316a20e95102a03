//! Appending a message to a session outside a turn: [`Conversation::inject_message`].

use super::Conversation;
use crate::engine::persist::{WriteError, Writer};
use crate::message::Message;
use crate::store::{NewMessage, StoreError, StoreErrorKind, StoredMessage};

impl Conversation {
    /// Appends `message` to the session as a completed, visible row, through the agent's
    /// before/after_create_message hooks, and returns the row as stored. The next turn's model
    /// reads it in the history.
    ///
    /// A session whose turn is suspended refuses it (its waiting calls' results come first).
    /// It takes the session's turn lock, so it waits for a running turn of the session to end
    /// and never interleaves with one. Awaited from a hook or tool of the session's own
    /// running turn (before_run through after_run, tool-call hooks, tools), which it would
    /// wait for forever, it is refused at once with an error saying so. From
    /// on_chat_response and on_session_end it runs (the lock is released first), as it does
    /// from another session or a task the hook spawns without awaiting it.
    pub async fn inject_message(&self, message: Message) -> Result<StoredMessage, StoreError> {
        self.inject_row(NewMessage::completed(message)).await
    }

    /// [`Conversation::inject_message`] for a silent row: stored (people see it in
    /// transcripts) but hidden from the model.
    pub async fn inject_silent_message(
        &self,
        message: Message,
    ) -> Result<StoredMessage, StoreError> {
        let mut row = NewMessage::completed(message);
        row.silent = true;
        self.inject_row(row).await
    }

    async fn inject_row(&self, row: NewMessage) -> Result<StoredMessage, StoreError> {
        let store = &self.agent.inner.store;
        let lease = self.lock_session("inject_message").await?;
        let writer = Writer {
            agent: &self.agent.inner,
            session: &self.session,
            turn: None,
        };
        // A suspended turn's waiting calls take their results before anything else is stored.
        let written = match store.suspended(&self.session).await {
            Ok(waiting) if !waiting.is_empty() => Err(WriteError::Store(StoreError::new(
                StoreErrorKind::Other,
                format!(
                    "inject_message: session `{}` is suspended: its tool calls wait for an \
                     answer; answer them and resume the turn first",
                    self.session
                ),
            ))),
            Ok(_) => writer.insert(row).await,
            Err(error) => Err(WriteError::Store(error)),
        };
        lease.release().await;
        match written {
            Ok(stored) => Ok(stored),
            Err(WriteError::Store(error)) => Err(error),
            Err(WriteError::Hook(error) | WriteError::After(error, _)) => Err(StoreError::new(
                StoreErrorKind::Hook,
                format!("inject_message: {error}"),
            )),
        }
    }
}
