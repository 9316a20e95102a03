//! A conversation: one session's history, with the `run` and `stream` APIs.

use std::any::TypeId;
use std::sync::Arc;

use tokio::sync::mpsc;

use super::{Agent, TurnStream};
use crate::cancel::CancelToken;
use crate::engine::{FinishOnDrop, SessionRef, TurnRequest, run_turn, stored_output};
use crate::hooks::{OutputType, StoredOutputError, TurnResult, inside_turn_of};
use crate::message::Message;
use crate::session::Opened;
use crate::store::{StoreError, StoreErrorKind, StoredMessage, TurnLease};

/// A conversation with an agent: history kept in the agent's store under one session id, and
/// turns that never overlap (a second turn waits for the first, whichever agent or handle on
/// the store runs it: the store holds the session's turn lock).
///
/// Each handle (and each clone) holds its session in the store: an in-memory store frees the
/// session's rows when the last handle on it is dropped (a persistent store keeps them). A turn
/// started with [`stream`](Self::stream) holds its own handle until it ends.
pub struct Conversation {
    pub(crate) agent: Agent,
    pub(crate) session: Arc<str>,
    /// The session's open mark, shared by every handle on it in this agent; none when the
    /// agent does not configure its sessions (nothing would read it, and a one-shot
    /// [`Agent::run`] would lock and grow the agent's table of marks for it each turn:
    /// `whole_turn_agent_bare` in agent-providers/benches/stream.rs).
    pub(crate) opened: Option<Arc<Opened>>,
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
            opened: self.opened.clone(),
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
        let inner = &agent.inner;
        let opened = inner
            .marks_sessions()
            .then(|| inner.sessions.opened(&session));
        inner.store.retain(&session);
        Conversation {
            agent,
            session,
            opened,
        }
    }

    /// The session as the engine sees it.
    fn session_ref(&self) -> SessionRef<'_> {
        SessionRef {
            id: &self.session,
            opened: self.opened.as_ref(),
        }
    }

    /// Whether the code running now is a hook or tool of this session's own running turn
    /// (awaited there): a call that waits for the session's turn lock would wait for that
    /// turn, which waits for it, forever.
    pub(super) fn inside_own_turn(&self) -> bool {
        inside_turn_of(self.agent.inner.store.address(), &self.session)
    }

    /// The session's turn lock, waiting for a running turn of the session to end; refused at
    /// once inside that turn ([`inside_own_turn`](Self::inside_own_turn)). `what` names the
    /// call in the error.
    pub(super) async fn lock_session(&self, what: &str) -> Result<TurnLease, StoreError> {
        if self.inside_own_turn() {
            return Err(StoreError::new(
                StoreErrorKind::Other,
                format!(
                    "{what}: called inside session `{}`'s running turn (by one of its hooks or \
                     tools), whose end it would wait for forever: call it once that turn has \
                     ended (from on_chat_response, or on a task of its own)",
                    self.session
                ),
            ));
        }
        let store = &self.agent.inner.store;
        store.lock_turn(&self.session, true).await?.ok_or_else(|| {
            StoreError::new(
                StoreErrorKind::Other,
                format!("{what}: the store refused the session's turn lock while asked to wait"),
            )
        })
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
        Ok(crate::store::history(self.rows().await?))
    }

    /// The session's last accepted typed answer, read back from its stored rows, so a
    /// conversation resumed later (another process on the same store) reads the value its
    /// last turn returned; `None` when the session holds no accepted answer. It is the
    /// final-answer call that was accepted (a failed one has an error result), or, in the
    /// native and prompted modes, the reply text no retry message followed (a fenced
    /// ```` ```json ```` block unwrapped) and that parses into `T` (a text that does not is
    /// no answer: another agent's reply, an `on_stop` hook's text); the value is parsed from
    /// it again, not validated again. `T` must be the output type of the agent or of an
    /// agent its handoffs reach (the first found, breadth first): a triage agent without one
    /// reads the answers of the desk it hands off to.
    ///
    /// ```no_run
    /// # async fn f(agent: agent_core::Agent) -> Result<(), agent_core::StoredOutputError> {
    /// # #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)] struct Invoice {}
    /// let invoice: Option<Invoice> = agent.session("s1").last_output::<Invoice>().await?;
    /// # Ok(()) }
    /// ```
    pub async fn last_output<T: OutputType>(&self) -> Result<Option<T>, StoredOutputError> {
        let asked = std::any::type_name::<T>();
        let Some(spec) = stored_output::spec_of(&self.agent.inner, TypeId::of::<T>()) else {
            let actual = self
                .agent
                .inner
                .output
                .as_ref()
                .map(|spec| spec.kind.type_name);
            return Err(StoredOutputError::OtherType { asked, actual });
        };
        let rows = self.rows().await.map_err(StoredOutputError::Store)?;
        let Some(answer) = spec.last_accepted(&rows) else {
            return Ok(None);
        };
        let output = answer
            .parsed
            .map_err(|reason| StoredOutputError::Unreadable {
                raw: answer.raw,
                reason,
            })?;
        // Parsed just now: the value is of type `T` and held once.
        match output.value.downcast::<T>().map(Arc::try_unwrap) {
            Ok(Ok(value)) => Ok(Some(value)),
            _ => Err(StoredOutputError::OtherType {
                asked,
                actual: Some(output.type_name),
            }),
        }
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

    /// Runs one turn to its end (it needs a Tokio runtime).
    ///
    /// Dropping the returned future (a `tokio::time::timeout` around it, a server handler whose
    /// client went away) cancels the turn, as its token would: the turn then finishes on a
    /// task of its own, as `aborted`, with its rows settled and on_chat_response fired once.
    /// A token the caller holds is left alone (the turn runs on a child of it).
    pub async fn run(&self, request: impl Into<TurnRequest>) -> TurnResult {
        self.start(request.into()).await
    }

    /// The turn [`run`](Self::run) awaits, boxed as a trait object here. The future of an
    /// async block is compiled in the crate that polls it: generic `run`, polled in the
    /// application's crate, would compile the whole engine's async code (a megabyte of it)
    /// again there, beside this crate's copy for subagents, and a turn would run code from
    /// both copies, far apart in the binary. Behind `dyn Future` the engine is compiled once,
    /// here (`whole_turn_agent` in agent-providers/benches/stream.rs, and `WHOLE_TURN_RSS`).
    fn start(&self, request: TurnRequest) -> FinishOnDrop<TurnResult> {
        self.clone().start_owned(request)
    }

    /// [`start`](Self::start) on this handle itself, for a turn that takes it.
    pub(super) fn start_owned(self, request: TurnRequest) -> FinishOnDrop<TurnResult> {
        let (conversation, request, cancel) = self.handed(request);
        let turn = Box::pin(async move {
            let session = conversation.session_ref();
            run_turn(&conversation.agent.inner, session, request, None).await
        });
        FinishOnDrop::new(turn, cancel)
    }

    /// Runs one turn, yielding its events as they happen. The turn runs on a spawned task (it
    /// needs a Tokio runtime). Dropping the stream before `Finished` cancels the turn (it ends
    /// as `aborted` on its task, rows settled, on_chat_response fired once), as the request's
    /// token would. A cancel ends the turn even while its events wait for the consumer to
    /// read them: those it could not send are dropped, and `Finished` still comes.
    ///
    /// When a provider retries a step whose stream broke partway, the stream yields
    /// [`Chunk::Discarded`](crate::Chunk::Discarded) and then the retried attempt's chunks from the start of the step: a
    /// consumer that shows text as it arrives drops (or marks) what it showed of that step
    /// since the step began, as `examples/chat_cli.rs` does; `StepFinished` and `Finished`
    /// hold only the attempt that completed. A post_process_message hook that changes a
    /// reply's text or calls is shown the same way: `Discarded`, then the reply it gave.
    ///
    /// Asked for from a hook or tool of the session's own running turn, whose end it would
    /// wait for forever, the turn ends at once with a `Busy` error, as [`run`](Self::run)'s
    /// does there.
    pub fn stream(&self, request: impl Into<TurnRequest>) -> TurnStream {
        self.spawn_stream(request.into())
    }

    /// [`stream`](Self::stream)'s turn, spawned here so the engine is compiled in this crate
    /// (see [`start`](Self::start)).
    fn spawn_stream(&self, mut request: TurnRequest) -> TurnStream {
        let (sender, receiver) = mpsc::channel(64);
        // Its task does not run inside the caller's turn: asked for from there, it is told so.
        request.inside_turn = self.inside_own_turn();
        let (conversation, request, cancel) = self.clone().handed(request);
        tokio::spawn(async move {
            let session = conversation.session_ref();
            run_turn(&conversation.agent.inner, session, request, Some(sender)).await;
        });
        TurnStream::new(receiver, cancel)
    }

    /// What a turn of `request` takes with it: this handle, the request (boxed, see
    /// `run_turn`) on a token of the turn's own (a child of the request's when the caller
    /// holds that one too), and that token, which cancels the turn.
    fn handed(self, mut request: TurnRequest) -> (Conversation, Box<TurnRequest>, CancelToken) {
        request.cancel.make_own();
        let cancel = request.cancel.clone();
        (self, Box::new(request), cancel)
    }
}
