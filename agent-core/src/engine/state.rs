//! A running turn's state ([`Turn`]: what it runs in and what it has produced), how it ends
//! ([`End`], [`Flow`]), and the writes every part of the turn makes through the message hooks.

use std::sync::Arc;

use tokio::sync::mpsc;

use super::events::TurnEvent;
use super::inherit::Inherited;
use super::limits::RunLimits;
use super::output_spec::PartialAnswer;
use super::persist::{Strictness, WriteError, Writer};
use super::reach::Reach;
use super::run_scope::RunScope;
use super::runtime::AgentRuntime;
use crate::cancel::CancelToken;
use crate::hooks::Extension;
use crate::hooks::{
    ChatErrorClassification, Chunk, ErrorStage, RunAgent, StepRecord, StopReason, ToolResultRecord,
    TurnError, TurnErrorKind,
};
use crate::message::Message;
use crate::model::Usage;
use crate::session::{OpenSession, Opened};
use crate::store::{MessageUpdate, NewMessage, NowOrLater, PendingCall, StoreError, SuspendedCall};
use crate::text::Text;
use crate::util::NowOr;

/// One running turn: what it runs in and what it has produced so far.
pub(super) struct Turn<'a> {
    /// The agent the turn was asked of: its session, store and the turn's frame hooks.
    pub(super) agent: &'a AgentRuntime,
    /// The agent running the steps: the first one, or the target of the last handoff.
    pub(super) current: &'a AgentRuntime,
    /// The agents the turn may hand off to, held while it runs (`reach.rs`).
    pub(super) reach: &'a Reach,
    pub(super) session_id: &'a Arc<str>,
    /// The session's open mark (its configuration lives as long as it), when the agent
    /// configures its sessions.
    pub(super) opened: Option<&'a Arc<Opened>>,
    pub(super) request_id: Arc<str>,
    pub(super) continuation: bool,
    pub(super) cancel: CancelToken,
    pub(super) sink: Option<mpsc::Sender<TurnEvent>>,
    pub(super) outcome: Outcome,
    /// What the running step has written but not finished (`settle.rs`).
    pub(super) open: OpenRows,
    /// The step's chunks held back until its reply passes the output guardrails (`None` when
    /// the agent has none: chunks go out as they stream).
    pub(super) held: std::sync::Mutex<Option<Vec<Chunk>>>,
    /// The typed answer's partial reader of the step streamed last, kept only when a
    /// post_process_message hook may replace its reply: the replacement's partials are read by
    /// it (`step.rs`, `show_replaced`). Boxed, as it is kept only then.
    pub(super) partials: std::sync::Mutex<Option<Box<PartialAnswer>>>,
    /// The tool hooks inherited from the agents that handed work to this turn (`inherit.rs`).
    pub(super) inherited: Arc<Inherited>,
    /// The agent the turn was asked of, as its frame hooks report it (`run_scope.rs`).
    pub(super) frame: Arc<RunAgent>,
    /// The agent running the steps and where it sits in the run: `frame`, or the target of the
    /// last handoff.
    pub(super) me: Arc<RunAgent>,
    /// The agent's and the session's extensions (`hooks/extension.rs`), known once the session is
    /// open.
    pub(super) extensions: Arc<[Extension]>,
    /// The run's limits, when it has any (`limits.rs`).
    pub(super) limits: Option<Arc<RunLimits>>,
    /// The run the turn belongs to, when run hooks observe it (`run_scope.rs`).
    pub(super) run: Option<RunScope>,
    /// What the turn tracks of its session (`compact.rs`).
    pub(super) session: SessionTurn,
    /// The turn's `invoke_agent` span, to record usage on when the turn ends.
    pub(super) span: tracing::Span,
}

/// What the turn has produced so far.
#[derive(Default)]
pub(super) struct Outcome {
    pub(super) steps: Vec<StepRecord>,
    /// Messages this turn adds to the history (after the user's).
    pub(super) added: Vec<Message>,
    pub(super) usage: Usage,
    /// What the turns of the subagents its tool calls ran used, theirs included
    /// (`TurnResult::total_usage`). Behind a lock: the step's calls run concurrently.
    pub(super) subagent_usage: std::sync::Mutex<Usage>,
    /// The last step's text (the answer), or partial text when a stream broke.
    pub(super) text: Text,
    pub(super) user_persisted: bool,
    /// The calls left waiting for an answer, when a step suspended the turn.
    pub(super) pending: Vec<PendingCall>,
    /// What became of the calls a resumed turn answered.
    pub(super) resumed: Vec<ToolResultRecord>,
    /// The validated typed answer (`output.rs`).
    pub(super) output: Option<crate::hooks::Output>,
    /// The typed answers that failed so far.
    pub(super) attempts: super::output_spec::Attempts,
}

/// How a turn ends.
pub(super) enum End {
    /// It completed (the model finished, or a limit and on_stop ended it).
    Completed(StopReason),
    /// It failed at a stage.
    Failed(TurnError, ErrorStage),
    /// It was cancelled.
    Aborted,
    /// Tool calls wait for an answer (`Outcome::pending`).
    Suspended,
}

impl End {
    /// A failure of the turn's own hooks or logic (stage `turn`).
    #[cold]
    pub(super) fn turn(error: TurnError) -> End {
        End::Failed(error, ErrorStage::Turn)
    }
}

/// What a part of a turn returns: `Err` when the turn ends there, however it ends (completed
/// included); `Ok` when it goes on.
pub(super) type Flow<T = ()> = Result<T, End>;

/// What one turn tracks of its session.
#[derive(Default)]
pub(super) struct SessionTurn {
    /// The open session, when the agent configures sessions.
    pub(super) open: Option<Arc<OpenSession>>,
    /// Compactions run before steps this turn.
    pub(super) compactions: usize,
    /// Whether the turn was retried after a context overflow.
    pub(super) retried: bool,
    /// Steps recorded when the history was last compacted (their usage predates it).
    pub(super) usage_from: usize,
    /// The classification of the error that ended the steps, made once.
    pub(super) classification: Option<ChatErrorClassification>,
    /// A resumed turn: the answered calls still to run before its first step (`resume.rs`).
    pub(super) resume: Option<Vec<SuspendedCall>>,
    /// The session's tools approved for good (their calls run without asking), read from the
    /// store when the turn first runs tool calls.
    pub(super) approved_tools: Option<Vec<String>>,
}

impl Turn<'_> {
    /// Sends an event to the stream API, when the turn streams. A cancel stops the wait for
    /// room (the event is then not sent): a consumer that keeps its stream but stops reading
    /// does not hold the cancelled turn, and its session, for as long as it keeps it.
    pub(super) async fn emit(&self, event: TurnEvent) {
        if let Some(sink) = &self.sink {
            // A dropped stream only stops the events; the turn still completes.
            let _ = self.cancel.unless(sink.send(event)).await;
        }
    }

    /// Stores a row of this session; a failure ends the turn at stage `persist`.
    pub(super) async fn insert(&self, row: NewMessage) -> Flow<i64> {
        let written = self.writer().insert_id(row, Strictness::Policy).await;
        written.map_err(write_failed)
    }

    /// Stores a row; says whether the row was written (also when the turn must end: a
    /// fail-closed after_create_message hook fails after the insert), and gives the message as
    /// stored when a before_create_message hook could have changed it. Written on the spot
    /// when no message hook reads the write and the store writes so
    /// (`SessionStore::insert_id_now`): a turn's writes then make no future, nor poll one
    /// (`whole_turn_agent` and the slope of `whole_turn_calls_agent` in
    /// agent-providers/benches/stream.rs); otherwise awaited, boxed.
    pub(super) fn insert_tracked(
        &self,
        row: NewMessage,
    ) -> NowOr<'_, (Option<i64>, Option<Message>, Flow)> {
        let row = if self.writer().inserts_plain() {
            match self.agent.store.insert_id_now(self.session_id, row) {
                NowOrLater::Now(inserted) => {
                    let written = inserted.map(|id| (id, None)).map_err(WriteError::Store);
                    return NowOr::Now(std::future::ready(inserted_row(written)));
                }
                NowOrLater::Later(row) => row,
            }
        } else {
            row
        };
        NowOr::Later(Box::pin(self.insert_awaited(row)))
    }

    /// [`insert_tracked`](Self::insert_tracked) awaited: through the message hooks, or to a
    /// store that does not write on the spot.
    async fn insert_awaited(&self, row: NewMessage) -> (Option<i64>, Option<Message>, Flow) {
        let writer = self.writer();
        let written = if writer.inserts_plain() {
            // The store gave the row back from `insert_id_now`: not asked again.
            let inserted = self.agent.store.insert_id_later(self.session_id, row).await;
            inserted.map(|id| (id, None)).map_err(WriteError::Store)
        } else if self.agent.hooks.before_create_message.is_empty() {
            let inserted = writer.insert_id(row, Strictness::Policy).await;
            inserted.map(|id| (id, None))
        } else {
            let inserted = writer.insert_as(row, Strictness::Policy).await;
            inserted.map(|stored| (stored.id, Some(stored.message)))
        };
        inserted_row(written)
    }

    /// Updates a row; says whether the update was written (also when the turn must end), and
    /// gives the message it stored when a before_update_message hook could have changed it. On
    /// the spot when it can, as [`insert_tracked`](Self::insert_tracked).
    pub(super) fn update_tracked(
        &self,
        id: i64,
        update: MessageUpdate,
    ) -> NowOr<'_, (bool, Option<Message>, Flow)> {
        let update = if self.writer().updates_plain() {
            match self.agent.store.update_now(self.session_id, id, update) {
                NowOrLater::Now(updated) => {
                    let written = updated.map(|()| None).map_err(WriteError::Store);
                    return NowOr::Now(std::future::ready(updated_row(written)));
                }
                NowOrLater::Later(update) => update,
            }
        } else {
            update
        };
        NowOr::Later(Box::pin(self.update_awaited(id, update)))
    }

    /// [`update_tracked`](Self::update_tracked) awaited.
    async fn update_awaited(
        &self,
        id: i64,
        update: MessageUpdate,
    ) -> (bool, Option<Message>, Flow) {
        let writer = self.writer();
        let written = if writer.updates_plain() {
            // The store gave the update back from `update_now`: not asked again.
            let updated = self.agent.store.update_later(self.session_id, id, update);
            updated.await.map(|()| None).map_err(WriteError::Store)
        } else {
            writer.update(id, update).await
        };
        updated_row(written)
    }

    /// Writes this session's rows through the message hooks (`persist.rs`).
    pub(super) fn writer(&self) -> Writer<'_> {
        Writer {
            agent: self.agent,
            session: self.session_id,
            turn: Some(&self.frame),
        }
    }

    /// Updates a row of this session; a failure ends the turn at stage `persist`.
    pub(super) async fn update(&self, id: i64, update: MessageUpdate) -> Flow {
        let updated = self.writer().update(id, update).await;
        updated.map(drop).map_err(write_failed)
    }

    /// Deletes the pending assistant row of a model call that produced nothing. No message hook
    /// fires: the row never held a message.
    pub(super) async fn discard(&self, row: i64) -> Flow {
        self.agent
            .store
            .delete(self.session_id, row)
            .await
            .map_err(|error| End::Failed(store_error(error), ErrorStage::Persist))
    }

    /// Stores a message this turn adds and keeps it, as stored (see [`as_stored`]), for the
    /// turn's result; gives it back, for the history.
    pub(super) async fn add(&mut self, message: Message) -> Flow<Message> {
        let (_, stored, flow) = self
            .insert_tracked(NewMessage::completed(message.clone()))
            .await;
        flow?;
        let message = as_stored(message, stored);
        self.outcome.added.push(message.clone());
        Ok(message)
    }
}

/// A failed write ends the turn: at stage `persist` when the store failed, `turn` when a
/// fail-closed message hook did.
/// A tracked insert's row id, when written, the message as stored when a hook could have
/// changed it, and whether the turn goes on.
fn inserted_row(
    written: Result<(i64, Option<Message>), WriteError>,
) -> (Option<i64>, Option<Message>, Flow) {
    match written {
        Ok((id, stored)) => (Some(id), stored, Ok(())),
        Err(WriteError::After(error, id)) => (Some(id), None, Err(End::turn(error))),
        Err(error) => (None, None, Err(write_failed(error))),
    }
}

/// Whether a tracked update was written, the message it stored when a hook could have changed
/// it, and whether the turn goes on.
fn updated_row(written: Result<Option<Message>, WriteError>) -> (bool, Option<Message>, Flow) {
    match written {
        Ok(stored) => (true, stored, Ok(())),
        Err(WriteError::After(error, _)) => (true, None, Err(End::turn(error))),
        Err(error) => (false, None, Err(write_failed(error))),
    }
}

/// The message a turn keeps (in its history and its result) for a row it wrote: `stored`, the
/// message as a before_create_message or before_update_message hook left it, so that the
/// turn's next steps read what the next turn will read from the rows; `own` when no hook could
/// have changed it, or when the hook made it another kind of message, or made it answer or
/// make other tool calls (the turn keeps its calls paired with their results).
///
/// Inlined, with the hook's case apart: a turn without message hooks (`None`) keeps its own
/// message with no call and no copy (`whole_turn_calls_agent` in
/// agent-providers/benches/stream.rs).
#[inline]
pub(super) fn as_stored(own: Message, stored: Option<Message>) -> Message {
    match stored {
        None => own,
        Some(stored) => stored_if_fits(own, stored),
    }
}

/// [`as_stored`] when a message hook ran.
#[cold]
fn stored_if_fits(own: Message, stored: Message) -> Message {
    let same_calls = |a: &[crate::message::ToolCall], b: &[crate::message::ToolCall]| {
        a.len() == b.len() && a.iter().zip(b).all(|(a, b)| a.id == b.id)
    };
    let fits = match (&own, &stored) {
        (Message::System { .. }, Message::System { .. })
        | (Message::User { .. }, Message::User { .. }) => true,
        (Message::Assistant { tool_calls: a, .. }, Message::Assistant { tool_calls: b, .. }) => {
            same_calls(a, b)
        }
        (Message::Tool { call_id: a, .. }, Message::Tool { call_id: b, .. }) => a == b,
        _ => false,
    };
    if fits {
        stored
    } else {
        tracing::warn!(
            "a message hook changed a row's role or tool calls; the turn goes on with its own \
             message"
        );
        own
    }
}

pub(super) fn write_failed(error: WriteError) -> End {
    match error {
        WriteError::Store(error) => End::Failed(store_error(error), ErrorStage::Persist),
        WriteError::Hook(error) | WriteError::After(error, _) => {
            End::Failed(error, ErrorStage::Turn)
        }
    }
}

#[cold]
pub(super) fn store_error(error: StoreError) -> TurnError {
    TurnError::new(
        TurnErrorKind::Store,
        format!("history store failed: {error}"),
    )
}

/// What the running step has written but not finished.
#[derive(Default)]
pub(super) struct OpenRows {
    /// The reply's row while it is pending, with what the reply holds so far.
    pub(super) pending: Option<(i64, Message)>,
    /// The calls of the stored reply, at their positions in it, until their results are
    /// stored (`None` once answered): the call's id and tool, all an error result for it
    /// needs (not its arguments, which may be long).
    pub(super) calls: Vec<Option<OpenCall>>,
    /// The typed answer the step validated, as stored before the turn returned it: if the
    /// turn ends without returning it, it is marked not accepted (`settle.rs`).
    pub(super) answer: Option<AnswerRow>,
}

/// A call of the stored reply that has no stored result yet.
pub(super) struct OpenCall {
    pub(super) id: Text,
    pub(super) tool: Text,
}

/// Where a validated typed answer is stored.
pub(super) enum AnswerRow {
    /// The reply's row (native and prompted modes).
    Text(i64),
    /// The final-answer call's result row, and that result.
    Call(i64, Message),
}
