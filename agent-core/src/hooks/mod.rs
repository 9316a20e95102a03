//! Hooks: the event catalogue, hook values with their options, what each event's hooks
//! receive and decide, and the one runner that applies the failure policy.

mod answer;
mod context;
pub(crate) mod extension;
mod handoff;
mod matcher;
mod messages;
mod outcome;
pub(crate) mod output;
mod returns;
mod run;
mod run_hooks;
mod subagent;
mod tool_context;
pub(crate) mod tool_hooks;

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use crate::util::BoxFuture;

pub use crate::run_agent::RunAgent;
pub use answer::{Output, OutputFailure, OutputReport};
pub use context::*;
pub(crate) use event::TurnHooks;
pub use extension::{Extension, ExtensionEvent, SNAPSHOT_VERSION as EXTENSION_SNAPSHOT_VERSION};
pub use handoff::*;
pub use matcher::{Matcher, MatcherError};
pub use messages::*;
pub use outcome::*;
pub use output::{OutputCheck, OutputContext, OutputMode, OutputType, StoredOutputError};
pub use returns::HookReturn;
pub(crate) use run::{
    RunningTurn, chain, each, every, inside_turn_of, observe, observe_every, observe_now, settle,
    span, stopped_on_cancel,
};
pub use run_hooks::RunHooks;
pub use subagent::*;
pub use tool_context::*;

/// A lifecycle event: its context, what its hooks return, and its default failure policy.
///
/// The marker types are in [`event`]; `#[hook(EVENT)]` names them in snake case.
pub trait Event: Send + Sync + 'static {
    /// What the hook receives (by reference).
    type Ctx: Send + Sync + 'static;
    /// What the engine takes from the hook (after [`HookReturn`] normalised the return value).
    type Out: Send + 'static;
    /// The event's snake-case name, as `#[hook]` spells it.
    const NAME: &'static str;
    /// What a failing hook of this event does unless its `on_error` says otherwise.
    const DEFAULT_POLICY: FailurePolicy;
}

/// Events whose hooks apply to the whole turn (every event but the two tool-call ones);
/// implemented by the markers in [`event`] only.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a turn-wide event: `AgentBuilder::hook` does not take its hooks",
    label = "register a tool-call hook with `.before_tool_call(Matcher, hook)` or `.after_tool_call(Matcher, hook)`",
    note = "`AgentBuilder::hook` takes the hooks of turn-wide events; tool-call hooks go to `.before_tool_call(Matcher::tool(\"name\"), hook)` and `.after_tool_call(Matcher::all(), hook)`, and a `validate_output` hook to `.validate_output(hook)`"
)]
pub trait TurnWideEvent: Event {
    /// Where the agent keeps this event's hooks.
    #[doc(hidden)]
    fn slot(hooks: &mut TurnHooks) -> &mut Vec<Hook<Self>>
    where
        Self: Sized;
}

/// What a failing hook does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailurePolicy {
    /// The failure is logged and the turn goes on as if the hook had not been there.
    FailOpen,
    /// The failure stops what the hook guards: a tool call does not run, or the turn fails.
    FailClosed,
}

/// The error a hook returns (any `Display` error converts into it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookError(pub String);

impl fmt::Display for HookError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HookError {}

/// How a hook failed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HookFailure {
    /// It returned an error.
    Error(String),
    /// It panicked (the panic was caught).
    Panic(String),
    /// It ran past its `timeout_ms`.
    Timeout(Duration),
    /// The turn was cancelled while it ran (an async hook is stopped then).
    Cancelled,
}

impl std::error::Error for HookFailure {}

impl fmt::Display for HookFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HookFailure::Error(message) => write!(f, "returned an error: {message}"),
            HookFailure::Panic(message) => write!(f, "panicked: {message}"),
            HookFailure::Timeout(after) => write!(f, "timed out after {} ms", after.as_millis()),
            HookFailure::Cancelled => f.write_str("was stopped: the turn was cancelled"),
        }
    }
}

/// Options every hook has: `priority`, `on_error` and `timeout_ms` of `#[hook]`. Build them
/// with the setters of [`Hook`] (or of this type, to set them all at once with
/// [`Hook::options`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HookOptions {
    /// Hooks of one event run by ascending priority, then in registration order.
    pub priority: i32,
    /// Overrides the event's default failure policy.
    pub on_error: Option<FailurePolicy>,
    /// Fails an async hook that runs longer than this (on a sync hook, a build error of the
    /// agent it is added to: nothing can stop a hook that runs inline).
    pub timeout: Option<Duration>,
}

impl HookOptions {
    /// The defaults: priority 0, the event's failure policy, no timeout.
    pub fn new() -> Self {
        HookOptions::default()
    }

    /// Sets the priority (lower runs first).
    pub fn priority(mut self, priority: i32) -> Self {
        self.priority = priority;
        self
    }

    /// Overrides the event's default failure policy.
    pub fn on_error(mut self, policy: FailurePolicy) -> Self {
        self.on_error = Some(policy);
        self
    }

    /// Fails an async hook that runs longer than this (on a sync hook, a build error).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

pub(crate) type SyncBody<E> =
    Box<dyn Fn(&<E as Event>::Ctx) -> Result<<E as Event>::Out, HookError> + Send + Sync>;
pub(crate) type AsyncBody<E> = Box<
    dyn for<'a> Fn(&'a <E as Event>::Ctx) -> BoxFuture<'a, Result<<E as Event>::Out, HookError>>
        + Send
        + Sync,
>;

pub(crate) enum HookBody<E: Event> {
    Sync(SyncBody<E>),
    Async(AsyncBody<E>),
}

/// A function or closure taking a hook context by reference and returning a `Send` future
/// that may borrow it: what [`Hook::new_async`] accepts. Implemented for every such `Fn`,
/// including `async fn` items and async closures.
pub trait AsyncHookFn<'a, C: 'a>: Fn(&'a C) -> <Self as AsyncHookFn<'a, C>>::Future {
    /// The future the call returns.
    type Future: Future<Output = <Self as AsyncHookFn<'a, C>>::Output> + Send + 'a;
    /// What the future yields (a [`HookReturn`] of the event).
    type Output;
}

impl<'a, C: 'a, F, Fut> AsyncHookFn<'a, C> for F
where
    F: Fn(&'a C) -> Fut,
    Fut: Future + Send + 'a,
{
    type Future = Fut;
    type Output = Fut::Output;
}

/// [`AsyncHookFn`] with the hook's state as a first argument: what [`Hook::new_async_with`]
/// accepts.
pub trait AsyncHookFnWith<'a, S: 'a, C: 'a>:
    Fn(&'a S, &'a C) -> <Self as AsyncHookFnWith<'a, S, C>>::Future
{
    /// The future the call returns.
    type Future: Future<Output = <Self as AsyncHookFnWith<'a, S, C>>::Output> + Send + 'a;
    /// What the future yields (a [`HookReturn`] of the event).
    type Output;
}

impl<'a, S: 'a, C: 'a, F, Fut> AsyncHookFnWith<'a, S, C> for F
where
    F: Fn(&'a S, &'a C) -> Fut,
    Fut: Future + Send + 'a,
{
    type Future = Fut;
    type Output = Fut::Output;
}

/// One hook of event `E`: a name, its options and its body (sync or async).
///
/// ```
/// use agent_core::{Hook, event, ChunkContext};
/// let meter = Hook::<event::OnChunk>::sync("meter", |ctx: &ChunkContext| {
///     let _ = ctx.step;
/// })
/// .priority(-1);
/// ```
pub struct Hook<E: Event> {
    pub(crate) name: String,
    pub(crate) options: HookOptions,
    pub(crate) body: HookBody<E>,
}

impl<E: Event> Hook<E> {
    /// A hook that runs inline, returning anything that fits the event ([`HookReturn`]).
    pub fn sync<R, F>(name: impl Into<String>, body: F) -> Self
    where
        R: HookReturn<E>,
        F: Fn(&E::Ctx) -> R + Send + Sync + 'static,
    {
        let body: SyncBody<E> = Box::new(move |ctx| body(ctx).into_hook_result());
        Hook {
            name: name.into(),
            options: HookOptions::default(),
            body: HookBody::Sync(body),
        }
    }

    /// An async hook: `body` returns a boxed future borrowing the context.
    pub fn from_async<R, F>(name: impl Into<String>, body: F) -> Self
    where
        R: HookReturn<E> + 'static,
        F: for<'a> Fn(&'a E::Ctx) -> BoxFuture<'a, R> + Send + Sync + 'static,
    {
        let body: AsyncBody<E> = Box::new(move |ctx| {
            let future = body(ctx);
            Box::pin(async move { future.await.into_hook_result() })
        });
        Hook {
            name: name.into(),
            options: HookOptions::default(),
            body: HookBody::Async(body),
        }
    }

    /// An async hook from an `async fn` or an async closure, no boxing written by hand:
    /// `Hook::new_async("audit", async |ctx: &ChunkContext| { .. })`. Annotate the context type
    /// (closures cannot infer it through the higher-ranked bound). An async closure that
    /// captures state is not an `Fn`: pass the state with [`Hook::new_async_with`] instead.
    ///
    /// ```
    /// use agent_core::{Hook, event, StepRecord};
    /// async fn log_step(record: &StepRecord) {
    ///     println!("step {} took {} tool calls", record.step, record.tool_calls.len());
    /// }
    /// let by_fn = Hook::<event::OnStepFinish>::new_async("log", log_step);
    /// let by_closure = Hook::<event::OnStepFinish>::new_async("usage", async |record: &StepRecord| {
    ///     println!("{:?}", record.usage);
    /// });
    /// # let _ = (by_fn, by_closure);
    /// ```
    pub fn new_async<F>(name: impl Into<String>, body: F) -> Self
    where
        F: for<'a> AsyncHookFn<'a, E::Ctx> + Send + Sync + 'static,
        for<'a> <F as AsyncHookFn<'a, E::Ctx>>::Output: HookReturn<E>,
    {
        let body: AsyncBody<E> = Box::new(move |ctx| {
            let future = body(ctx);
            Box::pin(async move { future.await.into_hook_result() })
        });
        Hook {
            name: name.into(),
            options: HookOptions::default(),
            body: HookBody::Async(body),
        }
    }

    /// An async hook with state: `body` receives `&state` beside the context, so an async
    /// closure or `async fn` can use shared state without capturing it.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use agent_core::{Hook, event, ChunkContext};
    /// let chunks = Hook::<event::OnChunk>::new_async_with(
    ///     "count",
    ///     AtomicUsize::new(0),
    ///     async |count: &AtomicUsize, _ctx: &ChunkContext| {
    ///         count.fetch_add(1, Ordering::Relaxed);
    ///     },
    /// );
    /// # let _ = chunks;
    /// ```
    pub fn new_async_with<S, F>(name: impl Into<String>, state: S, body: F) -> Self
    where
        S: Send + Sync + 'static,
        F: for<'a> AsyncHookFnWith<'a, S, E::Ctx> + Send + Sync + 'static,
        for<'a> <F as AsyncHookFnWith<'a, S, E::Ctx>>::Output: HookReturn<E>,
    {
        let state = Arc::new(state);
        let body = Arc::new(body);
        let body: AsyncBody<E> = Box::new(move |ctx| {
            let (state, body) = (Arc::clone(&state), Arc::clone(&body));
            Box::pin(async move { body(&state, ctx).await.into_hook_result() })
        });
        Hook {
            name: name.into(),
            options: HookOptions::default(),
            body: HookBody::Async(body),
        }
    }

    /// Sets the priority (lower runs first; default 0).
    pub fn priority(mut self, priority: i32) -> Self {
        self.options.priority = priority;
        self
    }

    /// Overrides the event's default failure policy.
    pub fn on_error(mut self, policy: FailurePolicy) -> Self {
        self.options.on_error = Some(policy);
        self
    }

    /// Fails the hook if it runs longer than this. For async hooks: on a sync hook, which runs
    /// inline where nothing can stop it, it is a build error of the agent it is added to, as
    /// zero is.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.options.timeout = Some(timeout);
        self
    }

    /// Replaces all options at once.
    pub fn options(mut self, options: HookOptions) -> Self {
        self.options = options;
        self
    }

    /// The hook's name (used in logs and error messages).
    pub fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn policy(&self) -> FailurePolicy {
        self.options.on_error.unwrap_or(E::DEFAULT_POLICY)
    }

    /// Whether it runs inline ([`Hook::sync`]).
    pub(crate) fn is_sync(&self) -> bool {
        matches!(self.body, HookBody::Sync(_))
    }
}

impl<E: Event> fmt::Debug for Hook<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hook")
            .field("event", &E::NAME)
            .field("name", &self.name)
            .field("options", &self.options)
            .finish()
    }
}

/// The event marker types, one per hook event, and the hook index.
///
#[doc = include_str!("../../docs/hooks.md")]
pub mod event {
    use super::*;
    use crate::message::Message;
    use crate::store::{MessageUpdate, NewMessage, StoredMessage};
    use crate::tool::ToolInput;

    pub use super::output::ValidateOutput;

    macro_rules! events {
        ($($(#[$doc:meta])* $ty:ident = $name:literal / $field:ident, $ctx:ty => $out:ty, $policy:ident;)*) => {
            /// A public type in a private module: [`TurnWideEvent::slot`] can name it, users
            /// cannot (which also seals the trait).
            mod lists {
                use super::*;

                /// The hooks of every turn-wide event, each list in run order once built.
                #[derive(Default)]
                pub struct TurnHooks {
                    $(pub(crate) $field: Vec<Hook<$ty>>,)*
                }

                impl TurnHooks {
                    /// Sorts every list by priority, keeping registration order among equals.
                    pub(crate) fn sort(&mut self) {
                        $(self.$field.sort_by_key(|hook| hook.options.priority);)*
                    }
                }
            }
            pub(crate) use lists::TurnHooks;
        $(
            $(#[$doc])*
            #[derive(Debug)]
            pub struct $ty;
            impl Event for $ty {
                type Ctx = $ctx;
                type Out = $out;
                const NAME: &'static str = $name;
                const DEFAULT_POLICY: FailurePolicy = FailurePolicy::$policy;
            }
            impl TurnWideEvent for $ty {
                fn slot(hooks: &mut TurnHooks) -> &mut Vec<Hook<Self>> {
                    &mut hooks.$field
                }
            }
        )*};
    }

    events! {
        /// First in a turn, before anything else; failing aborts the turn before any model call.
        ///
        /// Fired by `Turn::before_run` in `engine/turn.rs`.
        BeforeRun = "before_run" / before_run, RunContext => (), FailClosed;
        /// Before the first step: may change the turn's model, prompt, messages, tools and settings.
        ///
        /// Fired by `Turn::before_turn` in `engine/turn.rs`.
        BeforeTurn = "before_turn" / before_turn, TurnContext => Option<TurnConfig>, FailClosed;
        /// Before each model call: may change that step's model, prompt, messages and tools.
        ///
        /// Fired by `Turn::prepare` in `engine/step.rs`.
        BeforeStep = "before_step" / before_step, StepContext => Option<StepConfig>, FailClosed;
        /// Just before each model call.
        ///
        /// Fired by `Turn::llm_start` in `engine/model_call.rs`.
        OnLlmStart = "on_llm_start" / on_llm_start, LlmStartContext => (), FailOpen;
        /// After each model call, with its response, usage and latency.
        ///
        /// Fired by `Turn::llm_end` in `engine/model_call.rs`.
        OnLlmEnd = "on_llm_end" / on_llm_end, LlmEndContext => (), FailOpen;
        /// Each streamed chunk.
        ///
        /// Fired by `StepStream::chunk_now` in `engine/model_stream.rs`.
        OnChunk = "on_chunk" / on_chunk, ChunkContext => (), FailOpen;
        /// After each step, with the full step record.
        ///
        /// Fired by `Turn::record` in `engine/step.rs`.
        OnStepFinish = "on_step_finish" / on_step_finish, StepRecord => (), FailOpen;
        /// A limit ends the turn: may finish it with an output, or fail it.
        ///
        /// Fired by `Turn::stop` in `engine/step.rs`.
        OnStop = "on_stop" / on_stop, StopContext => StopDecision, FailClosed;
        /// After a turn completed and its result was built, before its response hooks (not
        /// after a turn that suspended); failing (the default policy) fails the turn, keeping
        /// the result's content.
        ///
        /// Fired by `Turn::finish` in `engine/turn.rs`.
        AfterRun = "after_run" / after_run, TurnResult => (), FailClosed;
        /// After the turn ended and its messages were stored; once per turn (a suspended
        /// turn's with its waiting calls).
        ///
        /// Fired by `Turn::finish` in `engine/turn.rs`.
        OnChatResponse = "on_chat_response" / on_chat_response, ChatResponse => (), FailOpen;
        /// An error ended the turn: may replace the error surfaced.
        ///
        /// Fired by `Turn::fail` in `engine/turn.rs`.
        OnChatError = "on_chat_error" / on_chat_error, ChatErrorContext => Option<TurnError>, FailOpen;
        /// A turn errored, before on_chat_error: classify the error.
        ///
        /// Fired by `classify` in `engine/classify.rs`.
        ClassifyChatError = "classify_chat_error" / classify_chat_error, ClassifyContext => Option<ChatErrorClassification>, FailOpen;
        /// The first turn of a session (no stored rows when it starts), before before_run.
        ///
        /// Fired by `Turn::session_start` in `engine/lifecycle.rs`.
        OnSessionStart = "on_session_start" / on_session_start, SessionStartContext => (), FailOpen;
        /// After every turn of the session ends (errors included), after on_chat_response.
        ///
        /// Fired by `session_end` in `engine/lifecycle.rs`.
        OnSessionEnd = "on_session_end" / on_session_end, SessionEndContext => (), FailOpen;
        /// The rows loaded for a turn: may return the rows to read the history from (never
        /// written back).
        ///
        /// Fired by `filter_rows` in `engine/history.rs`.
        FilterMessages = "filter_messages" / filter_messages, FilterMessagesContext => Option<Vec<StoredMessage>>, FailOpen;
        /// Just before each model call: may replace the messages sent, or block the call.
        ///
        /// Fired by `prefilter` in `engine/history.rs`.
        PrefilterLlmHistory = "prefilter_llm_history" / prefilter_llm_history, LlmHistoryContext => HistoryDecision, FailOpen;
        /// The model's reply, before it is stored: may replace it.
        ///
        /// Fired by `post_process` in `engine/history.rs`.
        PostProcessMessage = "post_process_message" / post_process_message, PostProcessContext => Option<Message>, FailOpen;
        /// Before every stored insert: may change the row.
        ///
        /// Fired by `Writer::insert_as` in `engine/persist.rs`.
        BeforeCreateMessage = "before_create_message" / before_create_message, CreateMessageContext => Option<NewMessage>, FailOpen;
        /// After every stored insert, with the stored row.
        ///
        /// Fired by `Writer::insert_as` in `engine/persist.rs`.
        AfterCreateMessage = "after_create_message" / after_create_message, MessageCreatedContext => (), FailOpen;
        /// Before every stored update: may change the fields.
        ///
        /// Fired by `Writer::update_as` in `engine/persist.rs`.
        BeforeUpdateMessage = "before_update_message" / before_update_message, UpdateMessageContext => Option<MessageUpdate>, FailOpen;
        /// After every stored update, with the fields applied.
        ///
        /// Fired by `Writer::update_as` in `engine/persist.rs`.
        AfterUpdateMessage = "after_update_message" / after_update_message, UpdateMessageContext => (), FailOpen;
        /// After a tool call the model got a valid result from, before the result is stored:
        /// may replace the result or drop the call from history.
        ///
        /// Fired by `check` in `engine/tool_results.rs`.
        AfterToolCallSuccess = "after_tool_call_success" / after_tool_call_success, ToolResultContext => ToolResultDecision, FailOpen;
        /// After a tool call that ended in an error, before the result is stored: may replace
        /// the result or drop the call from history.
        ///
        /// Fired by `check` in `engine/tool_results.rs`.
        AfterToolCallFailure = "after_tool_call_failure" / after_tool_call_failure, ToolResultContext => ToolResultDecision, FailOpen;
        /// A tool result message just before it is stored: may replace it.
        ///
        /// Fired by `tool_result` in `engine/history.rs`.
        BeforeStoreToolResult = "before_store_tool_result" / before_store_tool_result, StoreToolResultContext => Option<Message>, FailOpen;
        /// The model called a transfer tool: allow the handoff to the target agent, or deny it
        /// (the model reads the reason). Fails closed: a failing hook denies.
        ///
        /// Fired by `decide` in `engine/handoff.rs`.
        BeforeHandoff = "before_handoff" / before_handoff, HandoffContext => HandoffDecision, FailClosed;
        /// An agent offered as a tool is about to run its own turn.
        ///
        /// Fired by `started` in `engine/subagent_call.rs`.
        OnSubagentStart = "on_subagent_start" / on_subagent_start, SubagentStartContext => (), FailOpen;
        /// A subagent's turn ended, with its final answer or why it has none.
        ///
        /// Fired by `stopped` in `engine/subagent_call.rs`.
        OnSubagentStop = "on_subagent_stop" / on_subagent_stop, SubagentStopContext => (), FailOpen;
    }

    /// Before a tool runs: allow, modify, block or substitute the call.
    ///
    /// Fired by `gate` in `engine/call_hooks.rs`.
    pub struct BeforeToolCall<I>(PhantomData<fn() -> I>);

    impl<I: ToolInput> Event for BeforeToolCall<I> {
        type Ctx = ToolCallContext<I>;
        type Out = ToolCallDecision<I>;
        const NAME: &'static str = "before_tool_call";
        const DEFAULT_POLICY: FailurePolicy = FailurePolicy::FailClosed;
    }

    /// After every tool outcome (executed, failed, blocked or substituted).
    ///
    /// Fired by `observe_outcome` in `engine/call_hooks.rs`.
    pub struct AfterToolCall<I, O = serde_json::Value>(PhantomData<fn() -> (I, O)>);

    impl<I: ToolInput, O: Send + Sync + 'static> Event for AfterToolCall<I, O> {
        type Ctx = ToolCallResultContext<I, O>;
        type Out = ();
        const NAME: &'static str = "after_tool_call";
        const DEFAULT_POLICY: FailurePolicy = FailurePolicy::FailOpen;
    }
}
