//! What the message hooks receive and may return: the session hooks, the transforms of the
//! history and of the messages the engine stores, and the store-write hooks (docs/design.md §4, rows
//! filter_messages to before/after_update_message, and after_tool_call_success/failure).

use std::sync::Arc;

use crate::hooks::{RunAgent, ToolOutcomeKind, TurnError, TurnStatus};
use crate::message::{Message, ToolCall};
use crate::store::{MessageUpdate, NewMessage, StoredMessage};

/// on_session_start: the first turn of a session (no stored rows when it starts). It fires once
/// while the session is open in the process, even if that turn stored nothing (a tripped input
/// guardrail, say).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SessionStartContext {
    /// The agent this hook fires for: the turn's entry agent (the frame hooks are its own, after
    /// a handoff too), with its name, its path from the agent asked (`triage`, `writer >
    /// researcher` in a subagent's turn), its turn's request id and the run id.
    pub agent: Arc<RunAgent>,
    /// The session's id.
    pub session_id: Arc<str>,
    /// The id of the turn that opens the session.
    pub request_id: Arc<str>,
}

/// on_session_end: a turn of the session ended (after on_chat_response), however it ended.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SessionEndContext {
    /// The agent this hook fires for: the turn's entry agent (the frame hooks are its own, after
    /// a handoff too), with its name, its path from the agent asked (`triage`, `writer >
    /// researcher` in a subagent's turn), its turn's request id and the run id.
    pub agent: Arc<RunAgent>,
    /// The session's id.
    pub session_id: Arc<str>,
    /// The id of the turn that ended.
    pub request_id: Arc<str>,
    /// How the turn ended.
    pub status: TurnStatus,
    /// The error surfaced, when it ended in error.
    pub error: Option<TurnError>,
}

/// filter_messages: the rows loaded for a turn, as the previous hook left them. What a hook
/// returns is what the turn reads its history from; it is never written back to the store.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct FilterMessagesContext {
    /// The agent this hook fires for: the turn's entry agent (the frame hooks are its own, after
    /// a handoff too), with its name, its path from the agent asked (`triage`, `writer >
    /// researcher` in a subagent's turn), its turn's request id and the run id.
    pub agent: Arc<RunAgent>,
    /// This turn's id.
    pub request_id: Arc<str>,
    /// The session's id.
    pub session_id: Arc<str>,
    /// The rows (a snapshot).
    pub rows: Vec<StoredMessage>,
}

/// prefilter_llm_history: the messages about to be sent to the model, as the previous hook left
/// them.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct LlmHistoryContext {
    /// The agent this hook fires for, the one running the step: its name, its path from the
    /// agent asked (`triage > billing`), its turn's request id and the run id.
    pub agent: Arc<RunAgent>,
    /// This turn's id.
    pub request_id: Arc<str>,
    /// The step about to call the model.
    pub step: usize,
    /// The messages of the model request (shared with the request, not copied).
    pub messages: Arc<Vec<Message>>,
}

/// What a prefilter_llm_history hook decides.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum HistoryDecision {
    /// Send the messages as they are.
    #[default]
    Keep,
    /// Send these messages instead (the next hook sees them), paired as
    /// [`TurnConfig::messages`](crate::TurnConfig::messages) pairs them.
    Replace(Vec<Message>),
    /// Do not call the model: the turn ends with this assistant message (stored, and the
    /// turn's text). Later hooks do not run.
    Block(Message),
}

/// post_process_message: the model's reply before it is stored, as the previous hook left it.
/// A replacement must be an assistant message; its tool calls are the ones that run. When the
/// hooks change the reply's text or calls, on_chunk and the stream API get
/// [`Chunk::Discarded`](crate::Chunk::Discarded) and then the reply as stored, so a client
/// drops what the model streamed.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct PostProcessContext {
    /// The agent this hook fires for, the one running the step: its name, its path from the
    /// agent asked (`triage > billing`), its turn's request id and the run id.
    pub agent: Arc<RunAgent>,
    /// This turn's id.
    pub request_id: Arc<str>,
    /// The step that produced the reply.
    pub step: usize,
    /// The assistant message.
    pub message: Message,
}

/// before_create_message: a row about to be inserted, as the previous hook left it.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct CreateMessageContext {
    /// The agent this hook fires for: the entry agent of the turn writing the row (the message
    /// hooks are its own, for the rows of a handoff's target too), with its name, its path from
    /// the agent asked, its turn's request id and the run id; `None` outside a turn.
    pub agent: Option<Arc<RunAgent>>,
    /// The session's id.
    pub session_id: Arc<str>,
    /// The turn writing the row (`None` for rows added outside a turn, e.g.
    /// `Conversation::inject_message`).
    pub request_id: Option<Arc<str>>,
    /// The row.
    pub row: NewMessage,
}

/// after_create_message: a row as it was stored.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct MessageCreatedContext {
    /// The agent this hook fires for: the entry agent of the turn writing the row (the message
    /// hooks are its own, for the rows of a handoff's target too), with its name, its path from
    /// the agent asked, its turn's request id and the run id; `None` outside a turn.
    pub agent: Option<Arc<RunAgent>>,
    /// The session's id.
    pub session_id: Arc<str>,
    /// The turn that wrote the row (`None` outside a turn).
    pub request_id: Option<Arc<str>>,
    /// The stored row, with its id.
    pub row: StoredMessage,
}

/// before_update_message (the fields as the previous hook left them) and after_update_message
/// (the fields as applied): an update of one stored row.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct UpdateMessageContext {
    /// The agent this hook fires for: the entry agent of the turn writing the row (the message
    /// hooks are its own, for the rows of a handoff's target too), with its name, its path from
    /// the agent asked, its turn's request id and the run id; `None` outside a turn.
    pub agent: Option<Arc<RunAgent>>,
    /// The session's id.
    pub session_id: Arc<str>,
    /// The turn updating the row (`None` outside a turn).
    pub request_id: Option<Arc<str>>,
    /// The row's id.
    pub id: i64,
    /// The changed fields.
    pub update: MessageUpdate,
}

/// after_tool_call_success / after_tool_call_failure: a tool call's result before it is stored,
/// as the previous hook left it. Success means the model got a valid result (the tool ran, or a
/// hook blocked or substituted the call); failure means it got an error. Neither fires for an
/// unknown tool or arguments that do not parse.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ToolResultContext {
    /// The agent this hook fires for, the one running the step: its name, its path from the
    /// agent asked (`triage > billing`), its turn's request id and the run id.
    pub agent: Arc<RunAgent>,
    /// This turn's id.
    pub request_id: Arc<str>,
    /// The step.
    pub step: usize,
    /// The call the model made.
    pub call: ToolCall,
    /// How the call ended.
    pub outcome: ToolOutcomeKind,
    /// The text the model will read.
    pub content: String,
    /// Whether the model will read it as an error.
    pub is_error: bool,
}

/// What an after_tool_call_success / after_tool_call_failure hook decides.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ToolResultDecision {
    /// Store the result as it is.
    #[default]
    Keep,
    /// Store this result instead (the next hook sees it).
    Replace {
        /// The text the model reads.
        content: String,
        /// Whether it is an error.
        is_error: bool,
    },
    /// Remove the call from history: its result is not stored and the call is taken out of
    /// the assistant message. Later hooks do not run.
    Drop,
}

/// before_store_tool_result: a tool result message just before it is stored, as the previous
/// hook left it. A replacement must stay a tool message answering the same call.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct StoreToolResultContext {
    /// The agent this hook fires for, the one running the step: its name, its path from the
    /// agent asked (`triage > billing`), its turn's request id and the run id.
    pub agent: Arc<RunAgent>,
    /// This turn's id.
    pub request_id: Arc<str>,
    /// The step.
    pub step: usize,
    /// The tool message.
    pub message: Message,
}
