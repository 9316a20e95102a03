//! Support for the engine's integration tests (`tests/engine_*.rs`): a [`Trace`] recorder, hooks
//! that record every event they see as `event(detail)` entries, and a few hand-written tools
//! (no macros: these tests exercise the public builder API alone); the store [`conformance`]
//! suite; and a throwaway [`postgres`] cluster.

pub mod conformance;
pub mod postgres;

use std::fmt::Display;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use agent_core::{
    AgentBuilder, AnyValue, BoxFuture, Chunk, DynTool, Event, Hook, HookReturn, Matcher,
    MemoryStore, MessageUpdate, NewMessage, SessionStore, StopReason, StoreError, StoredMessage,
    Tool, ToolContext, ToolError, ToolInput, TurnEvent, TurnResult, TurnStatus, TurnStream, event,
    schema_for,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An ordered, shared record of what happened: hooks and tools push entries, tests compare the
/// whole list.
#[derive(Clone, Debug, Default)]
pub struct Trace(Arc<Mutex<Vec<String>>>);

impl Trace {
    /// An empty trace.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends one entry.
    pub fn push(&self, entry: impl Into<String>) {
        self.lock().push(entry.into());
    }

    /// Returns every entry so far and empties the trace.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.lock())
    }

    /// Every entry so far, leaving them in place.
    pub fn snapshot(&self) -> Vec<String> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Builds an expected trace from string literals.
pub fn lines(entries: &[&str]) -> Vec<String> {
    entries.iter().map(|entry| (*entry).to_owned()).collect()
}

/// A chunk as trace entries spell it: `text:Hi`, `reasoning:..`, `tool_start:c1 add`,
/// `tool_input:c1`, `tool_call:c1 add`, `tool_result:c1 add ok` (or `error`).
pub fn describe_chunk(chunk: &Chunk) -> String {
    match chunk {
        Chunk::TextDelta(text) => format!("text:{text}"),
        Chunk::Discarded { reason } => format!("discarded:{reason}"),
        Chunk::ReasoningDelta(text) => format!("reasoning:{text}"),
        Chunk::ToolInputStart { id, name } => format!("tool_start:{id} {name}"),
        Chunk::ToolInputDelta { id, .. } => format!("tool_input:{id}"),
        Chunk::ToolCall(call) => format!("tool_call:{} {}", call.id, call.name),
        Chunk::ToolResult {
            id, name, is_error, ..
        } => {
            let status = if *is_error { "error" } else { "ok" };
            format!("tool_result:{id} {name} {status}")
        }
        Chunk::ToolPreliminary { id, name, content } => {
            format!("tool_preliminary:{id} {name} {content}")
        }
        other => format!("{other:?}"),
    }
}

/// Reads a turn's stream to its end: its chunks as [`describe_chunk`] spells them, in order,
/// and the turn's result (the stream must end with `Finished`).
pub async fn shown_chunks(mut stream: TurnStream) -> (Vec<String>, TurnResult) {
    let mut shown = Vec::new();
    let mut finished = None;
    while let Some(event) = stream.next().await {
        match event {
            TurnEvent::Chunk { chunk, .. } => shown.push(describe_chunk(&chunk)),
            TurnEvent::Finished(result) => finished = Some(result),
            _ => {}
        }
    }
    (shown, finished.expect("the stream ends with Finished"))
}

/// A turn status as trace entries spell it.
pub fn status_name(status: TurnStatus) -> &'static str {
    match status {
        TurnStatus::Completed => "completed",
        TurnStatus::Error => "error",
        TurnStatus::Aborted => "aborted",
        TurnStatus::Suspended => "suspended",
    }
}

/// A stop reason as trace entries spell it.
pub fn stop_name(reason: StopReason) -> &'static str {
    reason.as_str()
}

/// Keeps a clone of every context a hook of some event received, for assertions on fields the
/// trace does not spell out.
#[derive(Debug)]
pub struct Seen<T>(Arc<Mutex<Vec<T>>>);

impl<T> Clone for Seen<T> {
    fn clone(&self) -> Self {
        Seen(Arc::clone(&self.0))
    }
}

impl<T> Default for Seen<T> {
    fn default() -> Self {
        Seen(Arc::default())
    }
}

impl<T: Clone + Send + 'static> Seen<T> {
    /// Nothing seen yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// A hook of event `E` that keeps what it receives and returns `()` (no change).
    pub fn hook<E>(&self, name: &str) -> Hook<E>
    where
        E: Event<Ctx = T>,
        (): HookReturn<E>,
    {
        let seen = self.clone();
        Hook::sync(name, move |ctx: &T| seen.lock().push(ctx.clone()))
    }

    /// Everything seen so far, emptying the list.
    pub fn take(&self) -> Vec<T> {
        std::mem::take(&mut *self.lock())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<T>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// How a hook built by [`failing`] fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// It returns `Err("it broke")`.
    Error,
    /// It panics with `it exploded`.
    Panic,
    /// An async hook that sleeps a minute under a 20 ms timeout.
    Timeout,
}

impl Failure {
    /// How the engine reports this failure after the hook's name (`hook `NAME` ...`).
    pub fn reported(self) -> &'static str {
        match self {
            Failure::Error => "returned an error: it broke",
            Failure::Panic => "panicked: it exploded",
            Failure::Timeout => "timed out after 20 ms",
        }
    }
}

/// A hook of any event that fails the way `failure` says.
pub fn failing<E: Event>(name: &str, failure: Failure) -> Hook<E>
where
    (): HookReturn<E>,
{
    match failure {
        Failure::Error => Hook::sync(name, |_: &E::Ctx| Err::<(), _>("it broke")),
        Failure::Panic => Hook::sync(name, |_: &E::Ctx| -> Result<(), String> {
            panic!("it exploded")
        }),
        Failure::Timeout => Hook::from_async(name, |_: &E::Ctx| {
            Box::pin(async {
                tokio::time::sleep(Duration::from_secs(60)).await;
            })
        })
        .timeout(Duration::from_millis(20)),
    }
}

/// Registers hooks that record events into a [`Trace`].
pub trait Recorded: Sized {
    /// One recording hook for every turn-wide event:
    ///
    /// `before_run(INPUT)`, `before_turn`, `before_step(N)`, `on_llm_start(N)`,
    /// `on_chunk(CHUNK)` (see [`describe_chunk`]), `on_llm_end(N)`, `on_step_finish(N)` (with
    /// ` output_failure: REASON` when the step's typed answer failed),
    /// `on_stop(REASON)`, `after_run(STATUS)`, `classify_chat_error(STAGE)`,
    /// `on_chat_error(STAGE)`, `on_chat_response(STATUS)`.
    fn record_turn(self, trace: &Trace) -> Self;

    /// An untyped before and after_tool_call hook on every tool (also tools added at run time):
    /// `before_tool_call(NAME ID)` (allows the call) and `after_tool_call(NAME ID OUTCOME)`.
    fn record_tool_calls(self, trace: &Trace) -> Self;

    /// Both of the above.
    fn record_all(self, trace: &Trace) -> Self {
        self.record_turn(trace).record_tool_calls(trace)
    }
}

impl Recorded for AgentBuilder {
    fn record_turn(self, trace: &Trace) -> Self {
        let t = trace.clone();
        let builder = self.hook(Hook::<event::BeforeRun>::sync("trace", move |ctx| {
            t.push(format!("before_run({})", ctx.input));
        }));
        let t = trace.clone();
        let builder = builder.hook(Hook::<event::BeforeTurn>::sync("trace", move |_| {
            t.push("before_turn");
        }));
        let t = trace.clone();
        let builder = builder.hook(Hook::<event::BeforeStep>::sync("trace", move |ctx| {
            t.push(format!("before_step({})", ctx.step));
        }));
        let t = trace.clone();
        let builder = builder.hook(Hook::<event::OnLlmStart>::sync("trace", move |ctx| {
            t.push(format!("on_llm_start({})", ctx.step));
        }));
        let t = trace.clone();
        let builder = builder.hook(Hook::<event::OnChunk>::sync("trace", move |ctx| {
            t.push(format!("on_chunk({})", describe_chunk(&ctx.chunk)));
        }));
        let t = trace.clone();
        let builder = builder.hook(Hook::<event::OnLlmEnd>::sync("trace", move |ctx| {
            t.push(format!("on_llm_end({})", ctx.step));
        }));
        let t = trace.clone();
        let builder = builder.hook(Hook::<event::OnStepFinish>::sync(
            "trace",
            move |ctx| match &ctx.output_failure {
                None => t.push(format!("on_step_finish({})", ctx.step)),
                Some(why) => t.push(format!(
                    "on_step_finish({} output_failure: {why})",
                    ctx.step
                )),
            },
        ));
        let t = trace.clone();
        let builder = builder.hook(Hook::<event::OnStop>::sync("trace", move |ctx| {
            t.push(format!("on_stop({})", stop_name(ctx.reason)));
        }));
        let t = trace.clone();
        let builder = builder.hook(Hook::<event::AfterRun>::sync("trace", move |ctx| {
            t.push(format!("after_run({})", status_name(ctx.status)));
        }));
        let t = trace.clone();
        let builder = builder.hook(Hook::<event::ClassifyChatError>::sync(
            "trace",
            move |ctx| t.push(format!("classify_chat_error({})", ctx.stage.as_str())),
        ));
        let t = trace.clone();
        let builder = builder.hook(Hook::<event::OnChatError>::sync("trace", move |ctx| {
            t.push(format!("on_chat_error({})", ctx.stage.as_str()));
        }));
        let t = trace.clone();
        builder.hook(Hook::<event::OnChatResponse>::sync("trace", move |ctx| {
            t.push(format!("on_chat_response({})", status_name(ctx.status)));
        }))
    }

    fn record_tool_calls(self, trace: &Trace) -> Self {
        let t = trace.clone();
        let builder = self.before_tool_call(
            Matcher::all().dynamic(),
            Hook::<event::BeforeToolCall<Value>>::sync("trace", move |ctx| {
                t.push(format!(
                    "before_tool_call({} {})",
                    ctx.tool_name, ctx.call_id
                ));
            }),
        );
        let t = trace.clone();
        builder.after_tool_call(
            Matcher::all().dynamic(),
            Hook::<event::AfterToolCall<Value>>::sync("trace", move |ctx| {
                t.push(format!(
                    "after_tool_call({} {} {})",
                    ctx.tool_name,
                    ctx.call_id,
                    ctx.outcome.kind()
                ));
            }),
        )
    }
}

/// Implements [`ToolInput`] for a tool's own args type, the way `#[tool]` does: the type carries
/// that one tool's arguments, and substitutes the tool's own output type.
#[macro_export]
macro_rules! own_args {
    ($args:ty => $tool:ty) => {
        impl ::agent_core::ToolInput for $args {
            type Output = <$tool as ::agent_core::Tool>::Output;

            fn accepts(tool: &str) -> bool {
                tool == <$tool as ::agent_core::Tool>::NAME
            }

            fn from_args(tool: &str, args: &::agent_core::AnyValue) -> Option<Self> {
                if tool == <$tool as ::agent_core::Tool>::NAME {
                    args.downcast_ref::<$args>().cloned()
                } else {
                    None
                }
            }

            fn into_args(
                self,
                tool: &dyn ::agent_core::DynTool,
            ) -> Result<::agent_core::AnyValue, String> {
                if tool.spec().name == <$tool as ::agent_core::Tool>::NAME {
                    Ok(::agent_core::AnyValue::new(self))
                } else {
                    Err(format!(
                        "arguments of tool `{}` given for tool `{}`",
                        <$tool as ::agent_core::Tool>::NAME,
                        tool.spec().name
                    ))
                }
            }
        }
    };
}

fn schema_of<T: schemars::JsonSchema>(cell: &'static OnceLock<Value>) -> &'static Value {
    cell.get_or_init(schema_for::<T>)
}

/// Arguments of [`Add`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AddArgs {
    /// The first addend.
    pub a: i64,
    /// The second addend.
    pub b: i64,
}

/// `add`: adds two integers; records `add(A,B)` when it runs.
#[derive(Clone, Debug, Default)]
pub struct Add {
    /// Where the tool records its runs.
    pub trace: Trace,
}

impl Add {
    /// An `add` tool recording into `trace`.
    pub fn traced(trace: &Trace) -> Self {
        Add {
            trace: trace.clone(),
        }
    }
}

impl Tool for Add {
    const NAME: &'static str = "add";
    const DESCRIPTION: &'static str = "Add two integers.";
    type Args = AddArgs;
    type Output = i64;

    fn schema() -> &'static Value {
        static SCHEMA: OnceLock<Value> = OnceLock::new();
        schema_of::<AddArgs>(&SCHEMA)
    }

    async fn call(&self, args: AddArgs, _ctx: ToolContext) -> Result<i64, ToolError> {
        self.trace.push(format!("add({},{})", args.a, args.b));
        args.a
            .checked_add(args.b)
            .ok_or_else(|| ToolError::new("the sum overflows"))
    }
}

own_args!(AddArgs => Add);

/// Arguments of [`ReadFile`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReadFileArgs {
    /// Path relative to the workspace root.
    pub path: String,
}

/// `read_file`: answers `contents of PATH`; records `read_file(PATH)`.
#[derive(Clone, Debug, Default)]
pub struct ReadFile {
    /// Where the tool records its runs.
    pub trace: Trace,
}

impl ReadFile {
    /// A `read_file` tool recording into `trace`.
    pub fn traced(trace: &Trace) -> Self {
        ReadFile {
            trace: trace.clone(),
        }
    }
}

impl Tool for ReadFile {
    const NAME: &'static str = "read_file";
    const DESCRIPTION: &'static str = "Read a UTF-8 text file.";
    type Args = ReadFileArgs;
    type Output = String;

    fn schema() -> &'static Value {
        static SCHEMA: OnceLock<Value> = OnceLock::new();
        schema_of::<ReadFileArgs>(&SCHEMA)
    }

    async fn call(&self, args: ReadFileArgs, _ctx: ToolContext) -> Result<String, ToolError> {
        self.trace.push(format!("read_file({})", args.path));
        Ok(format!("contents of {}", args.path))
    }
}

own_args!(ReadFileArgs => ReadFile);

/// Arguments of [`WriteFile`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WriteFileArgs {
    /// Path relative to the workspace root.
    pub path: String,
    /// The new contents.
    pub contents: String,
}

/// What [`WriteFile`] reports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WriteReport {
    /// The file written.
    pub path: String,
    /// How many bytes were written.
    pub bytes: usize,
}

/// `write_file`: pretends to write; records `write_file(PATH)`.
#[derive(Clone, Debug, Default)]
pub struct WriteFile {
    /// Where the tool records its runs.
    pub trace: Trace,
}

impl WriteFile {
    /// A `write_file` tool recording into `trace`.
    pub fn traced(trace: &Trace) -> Self {
        WriteFile {
            trace: trace.clone(),
        }
    }
}

impl Tool for WriteFile {
    const NAME: &'static str = "write_file";
    const DESCRIPTION: &'static str = "Replace a file's contents.";
    type Args = WriteFileArgs;
    type Output = WriteReport;

    fn schema() -> &'static Value {
        static SCHEMA: OnceLock<Value> = OnceLock::new();
        schema_of::<WriteFileArgs>(&SCHEMA)
    }

    async fn call(&self, args: WriteFileArgs, _ctx: ToolContext) -> Result<WriteReport, ToolError> {
        self.trace.push(format!("write_file({})", args.path));
        Ok(WriteReport {
            bytes: args.contents.len(),
            path: args.path,
        })
    }
}

own_args!(WriteFileArgs => WriteFile);

/// Arguments of [`GetWeather`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GetWeatherArgs {
    /// The city.
    pub city: String,
}

/// What [`GetWeather`] reports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Weather {
    /// The city.
    pub city: String,
    /// The temperature in degrees Celsius.
    pub celsius: i32,
}

/// `get_weather`: always 21 °C; records `get_weather(CITY)`.
#[derive(Clone, Debug, Default)]
pub struct GetWeather {
    /// Where the tool records its runs.
    pub trace: Trace,
}

impl GetWeather {
    /// A `get_weather` tool recording into `trace`.
    pub fn traced(trace: &Trace) -> Self {
        GetWeather {
            trace: trace.clone(),
        }
    }
}

impl Tool for GetWeather {
    const NAME: &'static str = "get_weather";
    const DESCRIPTION: &'static str = "Current weather for a city.";
    type Args = GetWeatherArgs;
    type Output = Weather;

    fn schema() -> &'static Value {
        static SCHEMA: OnceLock<Value> = OnceLock::new();
        schema_of::<GetWeatherArgs>(&SCHEMA)
    }

    async fn call(&self, args: GetWeatherArgs, _ctx: ToolContext) -> Result<Weather, ToolError> {
        self.trace.push(format!("get_weather({})", args.city));
        Ok(Weather {
            city: args.city,
            celsius: 21,
        })
    }
}

own_args!(GetWeatherArgs => GetWeather);

/// The input of a hook matching both file tools: what `#[agent]` generates for `"..._file"`.
#[derive(Clone, Debug, PartialEq)]
pub enum FileCall {
    /// A `read_file` call.
    Read(ReadFileArgs),
    /// A `write_file` call.
    Write(WriteFileArgs),
}

impl FileCall {
    /// The path either call names.
    pub fn path(&self) -> &str {
        match self {
            FileCall::Read(args) => &args.path,
            FileCall::Write(args) => &args.path,
        }
    }
}

impl ToolInput for FileCall {
    type Output = Value;

    fn accepts(tool: &str) -> bool {
        tool == ReadFile::NAME || tool == WriteFile::NAME
    }

    fn from_args(tool: &str, args: &AnyValue) -> Option<Self> {
        ReadFileArgs::from_args(tool, args)
            .map(FileCall::Read)
            .or_else(|| WriteFileArgs::from_args(tool, args).map(FileCall::Write))
    }

    fn into_args(self, tool: &dyn DynTool) -> Result<AnyValue, String> {
        match self {
            FileCall::Read(args) => args.into_args(tool),
            FileCall::Write(args) => args.into_args(tool),
        }
    }
}

/// Arguments of [`Nap`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NapArgs {
    /// How long to sleep, in milliseconds.
    pub ms: u64,
}

/// `nap`: sleeps; records `nap(MS)` before and `nap done` after sleeping.
#[derive(Clone, Debug, Default)]
pub struct Nap {
    /// Where the tool records its runs.
    pub trace: Trace,
}

impl Nap {
    /// A `nap` tool recording into `trace`.
    pub fn traced(trace: &Trace) -> Self {
        Nap {
            trace: trace.clone(),
        }
    }
}

impl Tool for Nap {
    const NAME: &'static str = "nap";
    const DESCRIPTION: &'static str = "Sleep for a while.";
    type Args = NapArgs;
    type Output = String;

    fn schema() -> &'static Value {
        static SCHEMA: OnceLock<Value> = OnceLock::new();
        schema_of::<NapArgs>(&SCHEMA)
    }

    async fn call(&self, args: NapArgs, _ctx: ToolContext) -> Result<String, ToolError> {
        self.trace.push(format!("nap({})", args.ms));
        tokio::time::sleep(Duration::from_millis(args.ms)).await;
        self.trace.push("nap done");
        Ok("rested".to_owned())
    }
}

own_args!(NapArgs => Nap);

/// A tool named `hang` that never returns, and says on `started` when it has begun.
pub fn hanging_tool(started: tokio::sync::mpsc::UnboundedSender<()>) -> agent_core::FnTool {
    agent_core::FnTool::new(
        "hang",
        "Never returns.",
        serde_json::json!({"type": "object"}),
        move |_, _| {
            let _ = started.send(());
            async {
                std::future::pending::<()>().await;
                Ok::<Value, ToolError>(Value::Null)
            }
        },
    )
}

/// Fails a test that would otherwise hang: awaits `future` for at most ten seconds.
pub async fn within<T>(what: impl Display, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(Duration::from_secs(10), future).await {
        Ok(value) => value,
        Err(_) => panic!("timed out: {what}"),
    }
}

/// A memory store that pushes every load and write to a [`Trace`], so store operations can be
/// compared in order with hook events.
pub struct TracedStore {
    inner: MemoryStore,
    trace: Trace,
}

impl SessionStore for TracedStore {
    fn load<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<Vec<StoredMessage>, StoreError>> {
        self.trace.push("store.load");
        self.inner.load(session)
    }

    fn insert<'a>(
        &'a self,
        session: &'a str,
        row: NewMessage,
    ) -> BoxFuture<'a, Result<StoredMessage, StoreError>> {
        self.trace.push(format!(
            "store.insert({} {} {:?})",
            row.message.role(),
            row.status.as_str(),
            row.message.text()
        ));
        self.inner.insert(session, row)
    }

    fn update<'a>(
        &'a self,
        session: &'a str,
        id: i64,
        update: MessageUpdate,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let status = update.status.map(|s| s.as_str()).unwrap_or("-");
        let text = update
            .message
            .as_ref()
            .map(|m| m.text().to_owned())
            .unwrap_or_default();
        let silent = if update.silent == Some(true) {
            " silent"
        } else {
            ""
        };
        self.trace
            .push(format!("store.update({id} {status} {text:?}{silent})"));
        self.inner.update(session, id, update)
    }

    fn delete<'a>(&'a self, session: &'a str, id: i64) -> BoxFuture<'a, Result<(), StoreError>> {
        self.trace.push(format!("store.delete({id})"));
        self.inner.delete(session, id)
    }

    fn suspended<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<Vec<agent_core::SuspendedCall>, StoreError>> {
        self.inner.suspended(session)
    }

    fn approved_tools<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<Vec<String>, StoreError>> {
        self.inner.approved_tools(session)
    }

    fn set_approved_tools<'a>(
        &'a self,
        session: &'a str,
        tools: Vec<String>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.inner.set_approved_tools(session, tools)
    }

    fn set_suspended<'a>(
        &'a self,
        session: &'a str,
        calls: Vec<agent_core::SuspendedCall>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let ids: Vec<&str> = calls.iter().map(|c| c.call.id.as_str()).collect();
        self.trace
            .push(format!("store.set_suspended({})", ids.join(",")));
        self.inner.set_suspended(session, calls)
    }

    fn lock_turn<'a>(
        &'a self,
        session: &'a str,
        wait: bool,
    ) -> BoxFuture<'a, Result<Option<agent_core::TurnLease>, StoreError>> {
        self.inner.lock_turn(session, wait)
    }

    fn retain(&self, session: &str) {
        self.inner.retain(session);
    }

    fn release(&self, session: &str) {
        self.inner.release(session);
    }

    fn has_rows<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.trace.push("store.has_rows");
        self.inner.has_rows(session)
    }

    fn keep_hold(&self, session: &str, hold: agent_core::SessionHold) {
        self.inner.keep_hold(session, hold);
    }

    fn take_hold(&self, session: &str, held: &str) -> Option<agent_core::SessionHold> {
        self.inner.take_hold(session, held)
    }
}

impl TracedStore {
    /// A traced, empty store, shared.
    pub fn shared(trace: &Trace) -> Arc<TracedStore> {
        Arc::new(TracedStore {
            inner: MemoryStore::new(),
            trace: trace.clone(),
        })
    }
}

/// Panics unless every tool call in `messages` has exactly one result among the tool messages
/// right after its assistant message (ids pair within a step only) and every result answers a
/// call: what a provider requires of a request.
pub fn assert_paired(messages: &[agent_core::Message]) {
    use agent_core::Message;
    let mut at = 0;
    while at < messages.len() {
        match &messages[at] {
            Message::Assistant { tool_calls, .. } => {
                let mut open: Vec<&str> = tool_calls.iter().map(|c| c.id.as_str()).collect();
                at += 1;
                while let Some(Message::Tool { call_id, .. }) = messages.get(at) {
                    let Some(position) = open.iter().position(|id| id == call_id) else {
                        panic!(
                            "result {call_id} at {at} answers no call of its step: {messages:#?}"
                        );
                    };
                    open.swap_remove(position);
                    at += 1;
                }
                assert!(
                    open.is_empty(),
                    "calls {open:?} have no result: {messages:#?}"
                );
            }
            Message::Tool { call_id, .. } => {
                panic!("result {call_id} at {at} follows no assistant message: {messages:#?}")
            }
            _ => at += 1,
        }
    }
}

/// Panics unless the stored session is whole: no pending row, and its history (completed,
/// not silent) pairs every call with one result.
pub fn assert_whole(rows: &[agent_core::StoredMessage]) {
    let pending: Vec<i64> = rows
        .iter()
        .filter(|row| row.status == agent_core::MessageStatus::Pending)
        .map(|row| row.id)
        .collect();
    assert!(pending.is_empty(), "pending rows {pending:?}: {rows:#?}");
    let history: Vec<agent_core::Message> = rows
        .iter()
        .filter(|row| row.status == agent_core::MessageStatus::Completed && !row.silent)
        .map(|row| row.message.clone())
        .collect();
    assert_paired(&history);
}

/// The store at `db` for the test binaries: a PostgreSQL database when `db` is a `postgres://`
/// URL, else a SQLite file, with a turn lease of `lease` (default: the store's).
pub async fn open_store(
    db: &str,
    lease: Option<Duration>,
) -> Result<Arc<dyn SessionStore>, StoreError> {
    if db.starts_with("postgres://") || db.starts_with("postgresql://") {
        let mut options = agent_postgres::PostgresOptions::default();
        if let Some(lease) = lease {
            options = options.turn_lease(lease);
        }
        let store = agent_postgres::PostgresStore::connect_with(db, options).await?;
        return Ok(Arc::new(store));
    }
    let mut options = agent_core::SqliteOptions::default();
    if let Some(lease) = lease {
        options = options.turn_lease(lease);
    }
    Ok(Arc::new(agent_core::SqliteStore::open_with(db, options)?))
}

/// A fresh folder under the system's temp dir for one test, removed when dropped (also when
/// the test panics), so test runs leave nothing behind.
pub struct Scratch(std::path::PathBuf);

impl Scratch {
    /// Creates `{temp}/{name}-{pid}`, emptied first.
    pub fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the test's temp folder");
        Scratch(dir)
    }
}

impl std::ops::Deref for Scratch {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The text of each message of a session's history, oldest first.
pub async fn history_texts(conversation: &agent_core::Conversation) -> Vec<String> {
    let history = conversation.history().await.unwrap();
    history.iter().map(|m| m.text().to_owned()).collect()
}

/// A `triage` agent whose model hands the turn to `target` in its first step (call `h1` of
/// `transfer_to_<target>`); the builder takes more settings before `build`.
pub fn triage_handing_to(target: &agent_core::Agent) -> AgentBuilder {
    let transfer = format!("transfer_to_{}", target.name());
    let step = agent_core::ScriptedStep::new().tool_call("h1", transfer, "{}");
    AgentBuilder::new("triage")
        .model(agent_core::ScriptedModel::new([step]))
        .handoff(target)
}
