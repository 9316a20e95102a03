//! Typed agents, tools and lifecycle hooks.
//!
//! Tools and hooks are plain Rust functions annotated with [`macro@tool`], [`macro@agent`] and
//! [`macro@hook`]; observers of a whole run are an impl block under [`macro@run_hooks`]. Hook
//! matchers are resolved against the agent's tools when the code compiles, and each hook
//! receives the matched tools' own typed inputs and outputs. The engine runs the agent
//! loop (model steps, streaming, concurrent tool calls, history) and fires every hook at its
//! place. The [`event`] page is the hook index: every event, what its hooks receive and may
//! return, its failure policy and the engine function that fires it; the README adds the
//! decision semantics and the failure policy in full.
//!
//! The macros are sugar over the public builder API ([`AgentBuilder`], [`Hook`], [`Matcher`]),
//! which works by hand too.
//!
//! # Layout
//!
//! Every public item has one path, at the crate root (plus the event markers in [`event`]).
//! Inside, the modules form layers that depend one way, with no cycles:
//!
//! - `agent` (the facade): [`AgentBuilder`], [`Agent`], [`Conversation`], [`TurnStream`];
//! - `engine`: the turn loop, its steps, tool calls, persistence through the message hooks,
//!   and an agent's runtime state (tools, hook lists, store, session locks);
//! - `session`: session configuration, context blocks, compaction;
//! - `hooks`: the event catalogue, [`Hook`] and its options, contexts and decisions, matchers,
//!   and the one runner that applies the failure policy;
//! - the leaves: `model` ([`Model`], [`ScriptedModel`]), `tool` ([`Tool`], [`ToolSpec`]),
//!   `store` ([`SessionStore`], [`MemoryStore`], [`SqliteStore`]), `message`, `cancel`,
//!   `run_agent` ([`RunAgent`]), `util`;
//! - under them all, `text`: [`Text`], the shared string that messages hold.
#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

mod agent;
mod cancel;
mod engine;
mod hooks;
mod message;
mod model;
mod partial_json;
mod run_agent;
mod session;
mod store;
mod text;
mod tool;
mod util;
mod weak_table;

pub use agent::{
    Agent, AgentBuilder, AgentSpec, AnswerError, BuildError, CommandEvent, CommandHook,
    CommandHookError, Continued, Conversation, Handoff, HookSet, SessionEnd, Side, SideId,
    SideStop, Subagent, Team, TurnStream, TwoSided, TwoSidedState, two_sided,
};
pub use agent_macros::{agent, hook, run_hooks, tool};
pub use cancel::CancelToken;
pub use engine::{
    Budget, Guardrail, GuardrailVerdict, HandoffHistory, HistoryFilter, Price, PriceTable,
    RunContextError, TurnEvent, TurnOverlap, TurnRequest, current_agent, default_classifier,
    is_context_overflow, run_context,
};
pub use hooks::{
    AsyncHookFn, AsyncHookFnWith, ChatErrorClassification, ChatErrorContext, ChatResponse, Chunk,
    ChunkContext, ClassifyContext, CreateMessageContext, EXTENSION_SNAPSHOT_VERSION, ErrorStage,
    Event, Extension, ExtensionEvent, FailurePolicy, FilterMessagesContext, GuardrailKind,
    HandoffContext, HandoffDecision, HistoryDecision, Hook, HookError, HookFailure, HookOptions,
    HookReturn, LlmEndContext, LlmHistoryContext, LlmStartContext, Matcher, MatcherError,
    MessageCreatedContext, ModelResult, Output, OutputCheck, OutputContext, OutputError,
    OutputFailure, OutputMode, OutputReport, OutputType, PostProcessContext, RunAgent, RunContext,
    RunHooks, SessionEndContext, SessionStartContext, StepConfig, StepContext, StepRecord,
    StopContext, StopDecision, StopReason, StoreToolResultContext, StoredOutputError,
    SubagentStartContext, SubagentStopContext, ToolCallContext, ToolCallDecision,
    ToolCallResultContext, ToolOutcome, ToolOutcomeKind, ToolResultContext, ToolResultDecision,
    ToolResultRecord, TurnConfig, TurnContext, TurnError, TurnErrorKind, TurnResult, TurnStatus,
    TurnWideEvent, UpdateMessageContext, event,
};
pub use message::{Message, ToolCall, is_paired, no_arguments};
pub use model::{
    CallSettings, DeltaText, FinishReason, Model, ModelError, ModelErrorKind, ModelEvent,
    ModelRequest, ModelStream, OutputSchema, ScriptedModel, ScriptedStep, ToolChoice, Usage,
};
pub use partial_json::PartialJson;
pub use session::{
    ContextBlock, ContextProvider, SUMMARY_HEADING, SessionConfig, SessionInfo, Summarizer,
    TokenCounter, cut_point, default_token_counter, is_boundary, summary_message,
};
pub use store::{
    CallAnswer, ExpectedTable, LeaseHolder, MemoryStore, MessageColumns, MessageRow, MessageStatus,
    MessageUpdate, NewMessage, NowOrLater, PendingCall, PendingKind, ReleaseTurn, SessionHold,
    SessionStore, SqliteOptions, SqliteStore, SqliteSync, StoreError, StoreErrorKind,
    StoredMessage, SubagentTurn, SuspendedCall, ToolStatus, TurnLease, TurnLocks,
    missing_from_schema,
};
pub use text::Text;
pub use tool::{
    AnyValue, ArgsError, ClientTool, DynTool, FnTool, Tool, ToolContext, ToolError, ToolInput,
    ToolSpec, ToolStream, ToolUpdate, TypedTool, is_valid_tool_name, schema_for, tool_progress,
};
pub use util::BoxFuture;

/// What generated code reaches through `::agent_core::__private`; not a public API.
#[doc(hidden)]
pub mod __private {
    pub use schemars;
    pub use serde;
    pub use serde_json;
    pub use std::sync::{Arc, OnceLock};

    // The compile-time checks and glue `#[tool]` and `#[agent]` generate; not for users.
    pub use crate::tool::{AcceptsTool, OutputIs, args_from, args_into};

    /// What `builder()` on an agent with handoffs or subagents requires, and nothing has:
    /// `#[agent]` gives such an agent `builder_with(targets)` instead, and this trait's
    /// message says so where `builder()` is called.
    #[diagnostic::on_unimplemented(
        message = "this agent declares handoffs or subagents: build it with `builder_with`, which takes each of them",
        label = "`builder()` would leave out the agent's handoffs and subagents",
        note = "`#[agent(handoffs(billing))] impl Triage` generates `Triage::builder_with(triage_targets::Targets {{ billing: Handoff::to(&billing) }})` (and `shared_builder_with` for an `Arc`)"
    )]
    pub trait BuildWithTargets {}

    /// What a streaming tool's preliminary results must be: `Serialize`. `#[tool]` requires it
    /// at the preliminary type of its `ToolStream<P, T>`, so a missing derive is one error
    /// there, in these words.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be a preliminary tool result: it does not implement `Serialize`",
        label = "add `#[derive(serde::Serialize)]` to this type",
        note = "on_chunk and the stream API receive a streaming tool's preliminary results as JSON: derive `serde::Serialize` on your type, or report a type that has it"
    )]
    pub trait ToolPreliminary: serde::Serialize {}

    impl<T: serde::Serialize> ToolPreliminary for T {}

    /// A streaming tool's call: its stream, polled to the final value. The future is boxed so
    /// that its type does not name `P`: the bound is then checked once, at the call.
    pub fn finish_stream<P: ToolPreliminary + 'static, T: Send + 'static>(
        stream: crate::ToolStream<P, T>,
        tool: &'static str,
    ) -> crate::BoxFuture<'static, Result<T, crate::ToolError>> {
        Box::pin(stream.finish(tool))
    }

    /// What a tool's error type must be: `Display`, since the model reads a failed call's
    /// error as text. `#[tool]` turns a `Result<T, E>` tool's error into a `ToolError` through
    /// [`tool_error`], spanned on `E`, so an error type without `Display` is one error there, in
    /// these words.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be a tool's error type: it does not implement `Display`",
        label = "implement `std::fmt::Display` for this type",
        note = "the model reads a failed call's error as text (`error.to_string()`): implement `Display` for the error type (`thiserror::Error`'s derive does), or return `Result<T, ToolError>` or `Result<T, String>`"
    )]
    pub trait ToolErrorType: std::fmt::Display {}

    impl<T: std::fmt::Display + ?Sized> ToolErrorType for T {}

    /// A tool's error as the `ToolError` the model reads.
    pub fn tool_error<E: ToolErrorType>(error: E) -> crate::ToolError {
        crate::ToolError::from_display(error)
    }

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

    /// Compile-time proof that `C` is the context hooks of event `Self` receive. `#[hook]`
    /// passes the context through [`ContextIs::cast`] at the hook's parameter, so a context the
    /// macro cannot name (an alias, say) is one type mismatch on that parameter's type rather
    /// than a closure-signature error about generated code.
    pub trait ContextIs<C>: crate::Event {
        /// The context, as the hook's parameter type.
        fn cast(ctx: &Self::Ctx) -> &C;
    }

    impl<E: crate::Event> ContextIs<E::Ctx> for E {
        fn cast(ctx: &E::Ctx) -> &E::Ctx {
            ctx
        }
    }

    /// Compile-time proof that a validate_output hook's answer parameter (`&A`) borrows the
    /// agent's output type `Self`: `#[hook(validate_output)]` passes the answer through
    /// [`answer_as`] at that parameter's type, so another type is one error there.
    #[diagnostic::on_unimplemented(
        message = "this `validate_output` hook's answer has the agent's output type `{Self}`, not `{A}`",
        label = "write `&{Self}` here",
        note = "`#[agent(output = {Self})]` gives every answer the type `{Self}`"
    )]
    pub trait AnswerIs<A> {
        /// The answer, as the hook's parameter type.
        fn answer(&self) -> &A;
    }

    impl<T> AnswerIs<T> for T {
        fn answer(&self) -> &T {
            self
        }
    }

    /// The answer `T` as the hook's parameter type `A`, which must be `T`.
    pub fn answer_as<T: AnswerIs<A>, A>(answer: &T) -> &A {
        answer.answer()
    }

    /// Compile-time proof that a tool parameter's type `T` has what its args struct needs: a
    /// JSON Schema, serde both ways, `Clone` and `Debug`. `#[tool]` asks [`ParamProbe`] for
    /// its verdict at each parameter's type ([`ParamOk`] or [`ParamLacking`]) and requires
    /// this of it, so a type lacking any of them, or several, is one error there, in these
    /// words, and the args struct's impls add none.
    #[diagnostic::on_unimplemented(
        message = "`{T}` cannot be a tool parameter: it needs a JSON Schema, `Serialize`, `Deserialize`, `Clone` and `Debug`",
        label = "add `#[derive(schemars::JsonSchema, serde::Serialize, serde::Deserialize, Clone, Debug)]` to this type",
        note = "the model reads a tool's parameters as JSON Schema and sends them as JSON, and hooks read them typed: derive these on your type (schemars 1.x), or for a type from another crate enable its `serde` and `schemars` features or wrap it in a type of yours"
    )]
    pub trait ToolParam<T> {}

    impl<T> ToolParam<T> for ParamOk {}

    /// [`ParamProbe`]'s verdict on a type with every trait a tool parameter needs.
    pub struct ParamOk;

    /// [`ParamProbe`]'s verdict on a type lacking one of them.
    pub struct ParamLacking;

    /// Asserts [`ToolParam`] of a parameter type's verdict (in a function `#[tool]` generates
    /// and never calls).
    pub fn tool_param<T, V: ToolParam<T>>(_: V) {}

    /// The schema of a tool parameter's type `T`, resolved where `#[tool]` names the concrete
    /// type (autoref specialisation): `T`'s own schema when it has one ([`ParamHasSchema`]),
    /// else a placeholder ([`ParamLacksSchema`]) so that the args struct's derive adds no error
    /// to the one [`ToolParam`] reports.
    pub struct ParamProbe<T>(core::marker::PhantomData<T>);

    impl<T> ParamProbe<T> {
        /// The probe; call the methods on `&ParamProbe::<T>::new()`.
        pub const fn new() -> Self {
            ParamProbe(core::marker::PhantomData)
        }
    }

    impl<T> Default for ParamProbe<T> {
        fn default() -> Self {
            Self::new()
        }
    }

    /// [`ParamProbe`] for a type with a JSON Schema: its own.
    pub trait ParamHasSchema {
        /// `T::schema_name`.
        fn schema_name(&self) -> std::borrow::Cow<'static, str>;
        /// `T::schema_id`.
        fn schema_id(&self) -> std::borrow::Cow<'static, str>;
        /// `T::inline_schema`.
        fn inline_schema(&self) -> bool;
        /// `T::json_schema`.
        fn json_schema(&self, generator: &mut schemars::SchemaGenerator) -> schemars::Schema;
        /// Whether `T` is optional (an `Option`).
        fn is_option(&self) -> bool;
    }

    impl<T: schemars::JsonSchema> ParamHasSchema for ParamProbe<T> {
        fn schema_name(&self) -> std::borrow::Cow<'static, str> {
            T::schema_name()
        }
        fn schema_id(&self) -> std::borrow::Cow<'static, str> {
            T::schema_id()
        }
        fn inline_schema(&self) -> bool {
            T::inline_schema()
        }
        fn json_schema(&self, generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
            T::json_schema(generator)
        }
        fn is_option(&self) -> bool {
            T::_schemars_private_is_option()
        }
    }

    /// [`ParamProbe`] for a type without a JSON Schema: a placeholder (never used: the tool
    /// does not compile).
    pub trait ParamLacksSchema {
        /// A placeholder.
        fn schema_name(&self) -> std::borrow::Cow<'static, str> {
            std::borrow::Cow::Borrowed("NoSchema")
        }
        /// A placeholder.
        fn schema_id(&self) -> std::borrow::Cow<'static, str> {
            std::borrow::Cow::Borrowed("agent_core::NoSchema")
        }
        /// A placeholder.
        fn inline_schema(&self) -> bool {
            true
        }
        /// A placeholder.
        fn json_schema(&self, _: &mut schemars::SchemaGenerator) -> schemars::Schema {
            schemars::Schema::default()
        }
        /// A placeholder.
        fn is_option(&self) -> bool {
            false
        }
    }

    impl<T> ParamLacksSchema for &ParamProbe<T> {}

    /// [`ParamProbe`] for a type with every trait a tool parameter needs: the verdict, and what
    /// the args struct's impls of `Clone`, `Debug` and serde's traits call, field by field.
    pub trait ParamHasTraits<T> {
        /// The type has every trait: [`ParamOk`].
        fn verdict(&self) -> ParamOk {
            ParamOk
        }
        /// `T::clone`.
        fn clone_param(&self, value: &T) -> T;
        /// The value, as `Debug`.
        fn debug_param<'v>(&self, value: &'v T) -> &'v dyn std::fmt::Debug;
        /// The value, as `Serialize`.
        fn serialize_param<'v>(&self, value: &'v T) -> &'v T;
        /// `T::deserialize`.
        fn deserialize_param<'de, D: serde::Deserializer<'de>>(&self, d: D) -> Result<T, D::Error>;
    }

    impl<T> ParamHasTraits<T> for ParamProbe<T>
    where
        T: schemars::JsonSchema
            + serde::Serialize
            + serde::de::DeserializeOwned
            + Clone
            + std::fmt::Debug,
    {
        fn clone_param(&self, value: &T) -> T {
            value.clone()
        }
        fn debug_param<'v>(&self, value: &'v T) -> &'v dyn std::fmt::Debug {
            value
        }
        fn serialize_param<'v>(&self, value: &'v T) -> &'v T {
            value
        }
        fn deserialize_param<'de, D: serde::Deserializer<'de>>(&self, d: D) -> Result<T, D::Error> {
            T::deserialize(d)
        }
    }

    /// [`ParamProbe`] for a type lacking one of [`ParamHasTraits`]' traits: placeholders, so
    /// the args struct compiles and the [`ToolParam`] error is the only one (never run: the
    /// tool does not compile).
    pub trait ParamLacksTraits<T> {
        /// The type lacks a trait: [`ParamLacking`], which [`ToolParam`] reports.
        fn verdict(&self) -> ParamLacking {
            ParamLacking
        }
        /// A placeholder.
        fn clone_param(&self, _: &T) -> T {
            unreachable!("a tool parameter without `Clone` does not compile")
        }
        /// A placeholder.
        fn debug_param<'v>(&self, _: &'v T) -> &'v dyn std::fmt::Debug {
            &"?"
        }
        /// A placeholder.
        fn serialize_param<'v>(&self, _: &'v T) -> &'v () {
            &()
        }
        /// A placeholder.
        fn deserialize_param<'de, D: serde::Deserializer<'de>>(&self, _: D) -> Result<T, D::Error> {
            Err(serde::de::Error::custom(
                "a tool parameter without `Deserialize` does not compile",
            ))
        }
    }

    impl<T> ParamLacksTraits<T> for &ParamProbe<T> {}
}
