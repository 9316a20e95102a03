//! A conversation: one session's history and its turn lock, with the `run` and `stream` APIs.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, PoisonError, Weak};
use std::task::{Context, Poll};

use futures_core::Stream;
use serde_json::{Map, Value};
use tokio::sync::{Mutex, mpsc};

use super::Agent;
use crate::cancel::CancelToken;
use crate::hooks::{Chunk, StepRecord, TurnResult};
use crate::message::Message;
use crate::store::{StoreError, StoredMessage};

/// One turn's input and options.
#[derive(Clone, Debug, Default)]
pub struct TurnRequest {
    /// The user's input (empty: no new user message, as in a continuation).
    pub input: String,
    /// Messages stored at the start of the turn, before the input (tool results from a client,
    /// several user messages, ...).
    pub messages: Vec<Message>,
    /// Custom fields hooks can read (`TurnContext::body`).
    pub body: Map<String, Value>,
    /// Whether this turn continues an earlier one.
    pub continuation: bool,
    /// Cancel this token to abort the turn; it then ends as `aborted`.
    pub cancel: CancelToken,
}

impl TurnRequest {
    /// A request with this input.
    pub fn new(input: impl Into<String>) -> Self {
        TurnRequest {
            input: input.into(),
            ..TurnRequest::default()
        }
    }

    /// Uses this cancellation token.
    pub fn cancel(mut self, token: CancelToken) -> Self {
        self.cancel = token;
        self
    }

    /// Sets the custom body.
    pub fn body(mut self, body: Map<String, Value>) -> Self {
        self.body = body;
        self
    }

    /// Stores these messages at the start of the turn, before the input.
    pub fn messages(mut self, messages: impl IntoIterator<Item = Message>) -> Self {
        self.messages.extend(messages);
        self
    }

    /// Marks the turn as a continuation.
    pub fn continuation(mut self, continuation: bool) -> Self {
        self.continuation = continuation;
        self
    }
}

impl From<&str> for TurnRequest {
    fn from(input: &str) -> Self {
        TurnRequest::new(input)
    }
}

impl From<String> for TurnRequest {
    fn from(input: String) -> Self {
        TurnRequest::new(input)
    }
}

/// What the stream API yields, in order; [`TurnEvent::Finished`] is always last.
#[derive(Clone, Debug)]
pub enum TurnEvent {
    /// A streamed chunk (text, reasoning, tool input, tool call, tool result).
    Chunk {
        /// The step number.
        step: usize,
        /// The chunk.
        chunk: Chunk,
    },
    /// A step finished.
    StepFinished(StepRecord),
    /// The turn ended.
    Finished(TurnResult),
}

/// A conversation with an agent: history kept in the agent's store under one session id, and
/// turns that never overlap (a second turn waits for the first).
///
/// Each handle (and each clone) holds its session in the store: an in-memory store frees the
/// session's rows when the last handle on it is dropped (a persistent store keeps them). A turn
/// started with [`stream`](Self::stream) holds its own handle until it ends.
pub struct Conversation {
    pub(crate) agent: Agent,
    pub(crate) session: Arc<str>,
    pub(crate) lock: Arc<Mutex<()>>,
}

impl std::fmt::Debug for Conversation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conversation")
            .field("agent", &self.agent.name())
            .field("session", &self.session)
            .finish()
    }
}

impl Clone for Conversation {
    fn clone(&self) -> Self {
        self.agent.inner.store.retain(&self.session);
        Conversation {
            agent: self.agent.clone(),
            session: self.session.clone(),
            lock: self.lock.clone(),
        }
    }
}

impl Drop for Conversation {
    fn drop(&mut self) {
        self.agent.inner.store.release(&self.session);
    }
}

impl Conversation {
    pub(crate) fn new(agent: Agent, session: String) -> Self {
        let session: Arc<str> = session.into();
        let lock = agent.inner.sessions.lock_for(&session);
        agent.inner.store.retain(&session);
        Conversation {
            agent,
            session,
            lock,
        }
    }

    /// The session id.
    pub fn session_id(&self) -> &str {
        &self.session
    }

    /// The agent.
    pub fn agent(&self) -> &Agent {
        &self.agent
    }

    /// The history a model reads: the session's completed, visible messages, oldest first.
    pub async fn history(&self) -> Result<Vec<Message>, StoreError> {
        Ok(crate::store::history(&self.rows().await?))
    }

    /// Every stored row of the session (pending and failed ones too), oldest first.
    pub async fn rows(&self) -> Result<Vec<StoredMessage>, StoreError> {
        self.agent.inner.store.load(&self.session).await
    }

    /// Appends messages to the session and runs a turn on them, in one call (no other input).
    pub async fn run_messages(&self, messages: impl IntoIterator<Item = Message>) -> TurnResult {
        self.run(TurnRequest::default().messages(messages)).await
    }

    /// Continues the last turn: runs a turn with no new input (`continuation = true`) in which
    /// the model goes on from the history as it stands. As in Think, this happens whenever the
    /// history holds an assistant message (the model extends or follows up its answer), and
    /// also when it ends with something the model has not answered (a user message or a tool
    /// result, say one a client added). Returns `None`, running nothing, when there is nothing
    /// to continue: an empty session, or one with neither an assistant message nor an
    /// unanswered message.
    pub async fn continue_last_turn(&self) -> Result<Option<TurnResult>, StoreError> {
        let history = self.history().await?;
        let unanswered = matches!(
            history.last(),
            Some(Message::User { .. } | Message::Tool { .. })
        );
        let answered = history
            .iter()
            .any(|message| matches!(message, Message::Assistant { .. }));
        if !(unanswered || answered) {
            return Ok(None);
        }
        Ok(Some(
            self.run(TurnRequest::default().continuation(true)).await,
        ))
    }

    /// Runs one turn to its end.
    pub async fn run(&self, request: impl Into<TurnRequest>) -> TurnResult {
        crate::turn::run_turn(self, request.into(), None).await
    }

    /// Runs one turn, yielding its events as they happen. The turn runs on a spawned task (it
    /// needs a Tokio runtime) and keeps running if the stream is dropped; cancel it through the
    /// request's token.
    ///
    /// When a provider retries a step whose stream broke partway, the stream yields
    /// [`Chunk::Discarded`] and then the retried attempt's chunks from the start of the step: a
    /// consumer that shows text as it arrives drops (or marks) what it showed of that step
    /// since the step began, as `examples/chat_cli.rs` does; `StepFinished` and `Finished`
    /// hold only the attempt that completed.
    pub fn stream(&self, request: impl Into<TurnRequest>) -> TurnStream {
        let (sender, receiver) = mpsc::channel(64);
        let conversation = self.clone();
        let request = request.into();
        tokio::spawn(async move {
            crate::turn::run_turn(&conversation, request, Some(sender)).await;
        });
        TurnStream { receiver }
    }
}

/// The turn locks of an agent's open sessions: every [`Conversation`] opened on one session id
/// shares one lock, so turns in a session never overlap, however many handles serve it.
#[derive(Default)]
pub(crate) struct SessionLocks {
    inner: std::sync::Mutex<LockTable>,
}

#[derive(Default)]
struct LockTable {
    locks: HashMap<Arc<str>, Weak<Mutex<()>>>,
    /// Sessions no handle keeps open are forgotten when the table grows to this size.
    prune_at: usize,
}

impl SessionLocks {
    /// The turn lock of `session`, shared with every open handle on it.
    pub(crate) fn lock_for(&self, session: &Arc<str>) -> Arc<Mutex<()>> {
        let mut table = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(lock) = table.locks.get(session).and_then(Weak::upgrade) {
            return lock;
        }
        if table.locks.len() >= table.prune_at {
            table.locks.retain(|_, lock| lock.strong_count() > 0);
            table.prune_at = (table.locks.len() * 2).max(64);
        }
        let lock = Arc::new(Mutex::new(()));
        table.locks.insert(session.clone(), Arc::downgrade(&lock));
        lock
    }
}

/// The events of one turn, as they happen.
#[derive(Debug)]
pub struct TurnStream {
    receiver: mpsc::Receiver<TurnEvent>,
}

impl Stream for TurnStream {
    type Item = TurnEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<TurnEvent>> {
        self.receiver.poll_recv(cx)
    }
}

impl TurnStream {
    /// The next event, or `None` after [`TurnEvent::Finished`].
    pub async fn next(&mut self) -> Option<TurnEvent> {
        self.receiver.recv().await
    }
}
