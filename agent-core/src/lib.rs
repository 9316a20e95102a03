//! Typed agents, tools and lifecycle hooks.
//!
//! Tools and hooks are plain Rust functions annotated with [`macro@tool`], [`macro@agent`] and
//! [`macro@hook`]. Hook matchers are resolved against the agent's tools when the code compiles, and
//! each hook receives the matched tools' own typed inputs and outputs. The engine runs the agent
//! loop (model steps, streaming, concurrent tool calls, history) and fires every hook at its
//! place; see the README for the hook table, decision semantics and failure policy.
//!
//! The macros are sugar over the public builder API ([`AgentBuilder`], [`Hook`], [`Matcher`]),
//! which works by hand too.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod agent;
mod cancel;
pub mod hooks;
mod message;
mod model;
pub mod session;
mod store;
mod tool;
mod tool_call;
mod turn;
mod util;

use std::future::Future;
use std::pin::Pin;

pub use agent::{
    Agent, AgentBuilder, AgentSpec, BuildError, Conversation, HookSet, TurnEvent, TurnOverlap,
    TurnRequest, TurnStream,
};
pub use agent_macros::{agent, hook, tool};
pub use cancel::CancelToken;
pub use hooks::{
    ChatErrorClassification, ChatErrorContext, ChatResponse, Chunk, ChunkContext, ClassifyContext,
    CreateMessageContext, ErrorStage, Event, FailurePolicy, FilterMessagesContext, HistoryDecision,
    Hook, HookError, HookFailure, HookOptions, HookReturn, LlmEndContext, LlmHistoryContext,
    LlmStartContext, Matcher, MatcherError, MessageCreatedContext, PostProcessContext, RunContext,
    SessionEndContext, SessionStartContext, StepConfig, StepContext, StepRecord, StopContext,
    StopDecision, StopReason, StoreToolResultContext, ToolCallContext, ToolCallDecision,
    ToolCallResultContext, ToolOutcome, ToolResultContext, ToolResultDecision, ToolResultRecord,
    TurnConfig, TurnContext, TurnError, TurnErrorKind, TurnResult, TurnStatus,
    UpdateMessageContext, event,
};
pub use message::{Message, ToolCall};
pub use model::{
    CallSettings, FinishReason, Model, ModelError, ModelErrorKind, ModelEvent, ModelRequest,
    ModelStream, OutputSchema, ScriptedModel, ScriptedStep, ToolChoice, ToolSpec, Usage,
};
pub use session::{ContextBlock, ContextProvider, SessionConfig, SessionInfo};
pub use store::{
    MemoryStore, MessageStatus, MessageUpdate, NewMessage, SessionStore, SqliteOptions,
    SqliteStore, SqliteSync, StoreError, StoredMessage, ToolStatus,
};
pub use tool::{
    AcceptsTool, AnyValue, ArgsError, DynTool, FnTool, OutputIs, Tool, ToolContext, ToolError,
    ToolInput, TypedTool, is_valid_tool_name, schema_for,
};
pub use turn::{default_classifier, is_context_overflow};

/// A boxed, sendable future (what async hooks and dynamic tools return).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What generated code reaches through `::agent_core::__private`; not a public API.
#[doc(hidden)]
pub mod __private {
    pub use schemars;
    pub use serde;
    pub use serde_json;
    pub use std::sync::{Arc, OnceLock};

    pub use crate::tool::{args_from, args_into};

    /// String equality usable in constants (checks of tools listed in `#[agent(tools(...))]`).
    pub const fn str_eq(a: &str, b: &str) -> bool {
        let (a, b) = (a.as_bytes(), b.as_bytes());
        if a.len() != b.len() {
            return false;
        }
        let mut i = 0;
        while i < a.len() {
            if a[i] != b[i] {
                return false;
            }
            i += 1;
        }
        true
    }
}
