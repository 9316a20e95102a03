//! The type-erased tool the engine calls, and the erased values that carry typed arguments and
//! outputs through it without serializing them.

use std::any::Any;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::{Tool, ToolContext, ToolError, ToolSpec, ToolStream};
use crate::message::no_arguments;
use crate::text::Text;
use crate::util::{BoxFuture, clip};

type JsonFn = fn(&(dyn Any + Send + Sync)) -> Result<Value, String>;
type TextFn = fn(&(dyn Any + Send + Sync)) -> Result<String, String>;

/// A typed value (a tool's arguments or output) with the ability to turn itself into JSON.
///
/// Hooks typed for a tool read it back with [`downcast_ref`](Self::downcast_ref); untyped hooks
/// and the model read [`to_json`](Self::to_json).
pub struct AnyValue {
    value: Box<dyn Any + Send + Sync>,
    json: JsonFn,
    text: TextFn,
}

impl AnyValue {
    /// Wraps a value.
    pub fn new<T: Serialize + Send + Sync + 'static>(value: T) -> Self {
        fn json<T: Serialize + 'static>(value: &(dyn Any + Send + Sync)) -> Result<Value, String> {
            match value.downcast_ref::<T>() {
                Some(value) => serde_json::to_value(value).map_err(|e| e.to_string()),
                None => Err("internal: erased value of an unexpected type".to_owned()),
            }
        }
        fn text<T: Serialize + 'static>(value: &(dyn Any + Send + Sync)) -> Result<String, String> {
            match value.downcast_ref::<T>() {
                Some(value) => serde_json::to_string(value).map_err(|e| e.to_string()),
                None => Err("internal: erased value of an unexpected type".to_owned()),
            }
        }
        AnyValue {
            value: Box::new(value),
            json: json::<T>,
            text: text::<T>,
        }
    }

    /// The value, if it is a `T`.
    pub fn downcast_ref<T: 'static>(&self) -> Option<&T> {
        self.value.downcast_ref::<T>()
    }

    /// Takes the value out, if it is a `T`.
    pub fn downcast<T: 'static>(self) -> Result<T, AnyValue> {
        let AnyValue { value, json, text } = self;
        match value.downcast::<T>() {
            Ok(value) => Ok(*value),
            Err(value) => Err(AnyValue { value, json, text }),
        }
    }

    /// The value as JSON.
    pub fn to_json(&self) -> Result<Value, String> {
        if let Some(value) = self.value.downcast_ref::<Value>() {
            return Ok(value.clone());
        }
        (self.json)(&*self.value)
    }

    /// The value as the model reads it: a string as itself, anything else as JSON text
    /// (serialized directly, so struct fields keep their declared order).
    pub fn to_model_text(&self) -> Result<String, String> {
        match self.as_string() {
            Some(text) => Ok(text.to_owned()),
            None => self.serialized_text(),
        }
    }

    /// [`to_model_text`](Self::to_model_text) as shared text: a string is copied once, into
    /// the text, not first into a `String` (an allocation and a copy fewer per tool call:
    /// `whole_turn_calls_agent` in agent-providers/benches/stream.rs).
    pub(crate) fn model_text(&self) -> Result<Text, String> {
        match self.as_string() {
            Some(text) => Ok(text.into()),
            None => self.serialized_text().map(Text::from),
        }
    }

    /// The value's text when it is a string (a `String`, or JSON that is one).
    fn as_string(&self) -> Option<&str> {
        if let Some(text) = self.value.downcast_ref::<String>() {
            return Some(text);
        }
        match self.value.downcast_ref::<Value>() {
            Some(Value::String(text)) => Some(text),
            _ => None,
        }
    }

    /// The model's text of a value that is not a string: its JSON, or the string it
    /// serializes as (an enum variant, a `Cow<str>`).
    fn serialized_text(&self) -> Result<String, String> {
        let text = (self.text)(&*self.value)?;
        if text.starts_with('"') {
            return serde_json::from_str(&text).map_err(|e| e.to_string());
        }
        Ok(text)
    }
}

impl fmt::Debug for AnyValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.to_json() {
            Ok(json) => write!(f, "{json}"),
            Err(_) => f.write_str("AnyValue(..)"),
        }
    }
}

/// Arguments the model sent that do not fit the tool's arguments type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgsError {
    /// The tool's name.
    pub tool: String,
    /// Where in the arguments the problem is (`.` for the top level).
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ArgsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid arguments for tool `{}` at `{}`: {}",
            self.tool, self.path, self.message
        )
    }
}

impl std::error::Error for ArgsError {}

/// A tool with its types erased: what the engine registers and calls.
pub trait DynTool: Send + Sync + 'static {
    /// The tool as the model sees it.
    fn spec(&self) -> &Arc<ToolSpec>;

    /// Parses the model's raw JSON arguments.
    fn parse_args(&self, raw: &str) -> Result<AnyValue, ArgsError>;

    /// Validates JSON arguments (an untyped hook's modified input) against the arguments type.
    fn args_from_json(&self, value: Value) -> Result<AnyValue, ArgsError>;

    /// How long a call may run (see [`Tool::TIMEOUT`]); `None` takes the agent's default.
    fn timeout(&self) -> Option<Duration> {
        None
    }

    /// How many failed calls in a row the model may follow with another (see
    /// [`Tool::RETRIES`]); `None` takes the agent's limit.
    fn retries(&self) -> Option<usize> {
        None
    }

    /// Whether the tool runs on the client ([`ClientTool`]): its calls suspend the turn until
    /// the client submits their results. The default: no.
    fn runs_on_client(&self) -> bool {
        false
    }

    /// Whether running a call twice does no more than running it once (see
    /// [`Tool::IDEMPOTENT`]). The default: no.
    fn idempotent(&self) -> bool {
        false
    }

    /// Whether a call with these arguments (from [`parse_args`](Self::parse_args)) waits for a
    /// person's approval (see [`Tool::needs_approval`]). The default: never.
    fn needs_approval(&self, args: &AnyValue) -> bool {
        let _ = args;
        false
    }

    /// Runs the tool with arguments produced by [`parse_args`](Self::parse_args).
    fn call(
        &self,
        args: Arc<AnyValue>,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<AnyValue, ToolError>>;

    /// Whether [`call_now`](Self::call_now) runs the tool (see [`Tool::RUNS_NOW`]). The
    /// default: no.
    fn runs_now(&self) -> bool {
        false
    }

    /// Runs the tool on the spot, as [`call`](Self::call) does without a future; called only
    /// when [`runs_now`](Self::runs_now) says so. The default is an error result saying so.
    fn call_now(&self, args: Arc<AnyValue>, ctx: ToolContext) -> Result<AnyValue, ToolError> {
        let _ = (args, ctx);
        Err(not_now(&self.spec().name))
    }
}

/// The error of a tool asked to run on the spot that does not.
#[cold]
fn not_now(tool: &str) -> ToolError {
    ToolError::new(format!("tool `{tool}` does not run on the spot"))
}

impl fmt::Debug for dyn DynTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DynTool")
            .field("name", &self.spec().name)
            .finish()
    }
}

fn args_error(tool: &str, error: serde_path_to_error::Error<serde_json::Error>) -> ArgsError {
    let path = clip(&error.path().to_string()).into_owned();
    let inner = error.into_inner();
    let message = clip(&inner.to_string()).into_owned();
    if inner.is_syntax() || inner.is_eof() {
        // Not JSON at all: the position is what tells the model where it went wrong.
        return ArgsError {
            tool: tool.to_owned(),
            path: ".".to_owned(),
            message,
        };
    }
    // serde_json appends the position; the path already says where.
    let message = match message.rfind(" at line ") {
        Some(at) => message[..at].to_owned(),
        None => message,
    };
    ArgsError {
        tool: tool.to_owned(),
        path,
        message,
    }
}

/// Checks the JSON arguments `raw` against the type `A` as a tool's are parsed (blank text is
/// `{}`, only an object is taken, and a `null` serde refuses is taken out as
/// [`without_refused_nulls`] says), keeping
/// the JSON rather than the `A`: the arguments as the model sent them (less those nulls), or
/// the error the model reads, naming `tool` and the field.
pub(crate) fn checked_args<A: serde::de::DeserializeOwned>(
    tool: &str,
    raw: &str,
) -> Result<Value, ArgsError> {
    let raw = if no_arguments(raw) { "{}" } else { raw };
    let value: Value = serde_json::from_str(raw).map_err(|error| ArgsError {
        tool: tool.to_owned(),
        path: ".".to_owned(),
        message: clip(&error.to_string()).into_owned(),
    })?;
    if !value.is_object() {
        return Err(not_an_object(tool, &value));
    }
    match serde_path_to_error::deserialize::<_, A>(&value) {
        Ok(_) => Ok(value),
        Err(error) => match without_refused_nulls::<A>(|| Some(value), &error) {
            Some((_, value)) => Ok(value),
            None => Err(args_error(tool, error)),
        },
    }
}

/// Reads the JSON arguments `value` as an `A`, or the error the model (or a hook) reads, naming
/// `tool` and the field.
pub(crate) fn typed_args_of<A: serde::de::DeserializeOwned>(
    tool: &str,
    value: &Value,
) -> Result<A, ArgsError> {
    serde_path_to_error::deserialize(value).map_err(|error| args_error(tool, error))
}

/// Reads the arguments (`value` gives them as JSON, asked only when serde refused a `null`)
/// again with each `null` that serde refused taken out of its object, when that makes them
/// parse (into the `T`, with what is left of the JSON): a field that may be left out
/// (`#[serde(default)]`) then takes its default. Strict modes (OpenAI's `strict_tools`) make
/// every property required and the optional ones nullable, so a model sends `null` for such a
/// field, nested ones too. A `null` for a field that must be given still fails, with serde's
/// first error. Only a failed parse pays for this.
fn without_refused_nulls<T: serde::de::DeserializeOwned>(
    value: impl FnOnce() -> Option<Value>,
    error: &serde_path_to_error::Error<serde_json::Error>,
) -> Option<(T, Value)> {
    let refused_null = |error: &serde_path_to_error::Error<serde_json::Error>| {
        error.inner().to_string().starts_with("invalid type: null")
    };
    if !refused_null(error) {
        return None;
    }
    let mut value = value()?;
    let mut path = error.path().clone();
    // Each round takes one `null` out, so there are at most as many rounds as nulls.
    loop {
        take_member(&mut value, &path)?;
        match serde_path_to_error::deserialize::<_, T>(&value) {
            Ok(args) => return Some((args, value)),
            Err(error) if refused_null(&error) => path = error.path().clone(),
            Err(_) => return None,
        }
    }
}

/// Takes out the object member at `path`, if it is one and holds `null`.
fn take_member(value: &mut Value, path: &serde_path_to_error::Path) -> Option<()> {
    use serde_path_to_error::Segment;
    let mut segments: Vec<&Segment> = path.iter().collect();
    let Some(Segment::Map { key }) = segments.pop() else {
        return None;
    };
    let mut parent = value;
    for segment in segments {
        parent = match segment {
            Segment::Map { key } => parent.get_mut(key.as_str())?,
            Segment::Seq { index } => parent.get_mut(*index)?,
            Segment::Enum { .. } | Segment::Unknown => return None,
        };
    }
    let object = parent.as_object_mut()?;
    object.get(key.as_str())?.is_null().then_some(())?;
    object.remove(key.as_str()).map(drop)
}

/// Arguments that are JSON but no object: a tool's parameters are an object schema (the
/// builder refuses any other), and serde would read a struct from an array, by position.
fn not_an_object(tool: &str, value: &Value) -> ArgsError {
    ArgsError {
        tool: tool.to_owned(),
        path: ".".to_owned(),
        message: format!("expected a JSON object, found {}", clip(&value.to_string())),
    }
}

/// Text after the arguments' JSON value.
fn trailing(tool: &str, error: serde_json::Error) -> ArgsError {
    ArgsError {
        tool: tool.to_owned(),
        path: ".".to_owned(),
        message: error.to_string(),
    }
}

/// A typed [`Tool`] behind the [`DynTool`] interface.
pub struct TypedTool<T: Tool> {
    tool: Arc<T>,
    spec: Arc<ToolSpec>,
}

impl<T: Tool> TypedTool<T> {
    /// Erases a tool.
    pub fn new(tool: T) -> Self {
        TypedTool {
            tool: Arc::new(tool),
            spec: Arc::new(T::spec()),
        }
    }
}

impl<T: Tool> DynTool for TypedTool<T> {
    fn spec(&self) -> &Arc<ToolSpec> {
        &self.spec
    }

    fn parse_args(&self, raw: &str) -> Result<AnyValue, ArgsError> {
        let raw = if no_arguments(raw) { "{}" } else { raw };
        // Only an object, as the parameters schema says: serde would read the arguments
        // struct from an array too, by position. Fast path: plain serde_json. Path tracking
        // allocates a `String` per object key and wraps every visitor (about 2.5x the parse),
        // so it only runs again to explain a failure.
        if !raw.trim_start().starts_with('{') {
            if let Ok(value) = serde_json::from_str::<Value>(raw) {
                return Err(not_an_object(T::NAME, &value));
            }
        } else if let Ok(args) = serde_json::from_str::<T::Args>(raw) {
            return Ok(AnyValue::new(args));
        }
        let mut de = serde_json::Deserializer::from_str(raw);
        let args: T::Args = match serde_path_to_error::deserialize(&mut de) {
            Ok(args) => args,
            Err(error) => {
                let value = || serde_json::from_str(raw).ok();
                match without_refused_nulls::<T::Args>(value, &error) {
                    Some((args, _)) => return Ok(AnyValue::new(args)),
                    None => return Err(args_error(T::NAME, error)),
                }
            }
        };
        de.end().map_err(|e| trailing(T::NAME, e))?;
        Ok(AnyValue::new(args))
    }

    fn timeout(&self) -> Option<Duration> {
        T::TIMEOUT
    }

    fn idempotent(&self) -> bool {
        T::IDEMPOTENT
    }

    fn retries(&self) -> Option<usize> {
        T::RETRIES
    }

    fn needs_approval(&self, args: &AnyValue) -> bool {
        args.downcast_ref::<T::Args>()
            .is_some_and(|args| self.tool.needs_approval(args))
    }

    fn args_from_json(&self, value: Value) -> Result<AnyValue, ArgsError> {
        if !value.is_object() {
            return Err(not_an_object(T::NAME, &value));
        }
        let args: T::Args =
            serde_path_to_error::deserialize(value).map_err(|e| args_error(T::NAME, e))?;
        Ok(AnyValue::new(args))
    }

    fn call(
        &self,
        args: Arc<AnyValue>,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<AnyValue, ToolError>> {
        let tool = Arc::clone(&self.tool);
        Box::pin(async move {
            let args = typed_args::<T>(args)?;
            tool.call(args, ctx).await.map(AnyValue::new)
        })
    }

    fn runs_now(&self) -> bool {
        T::RUNS_NOW
    }

    fn call_now(&self, args: Arc<AnyValue>, ctx: ToolContext) -> Result<AnyValue, ToolError> {
        let args = typed_args::<T>(args)?;
        self.tool.call_now(args, ctx).map(AnyValue::new)
    }
}

/// A call's arguments as an `A`: taken out when the call holds the only reference, else
/// cloned; `None` when they are not an `A`.
fn owned_args<A: Clone + 'static>(args: Arc<AnyValue>) -> Option<A> {
    match Arc::try_unwrap(args) {
        Ok(owned) => owned.downcast::<A>().ok(),
        Err(shared) => shared.downcast_ref::<A>().cloned(),
    }
}

/// The typed arguments of a call of `T` (see [`owned_args`]).
fn typed_args<T: Tool>(args: Arc<AnyValue>) -> Result<T::Args, ToolError> {
    owned_args::<T::Args>(args).ok_or_else(|| {
        ToolError::new(format!(
            "internal: arguments of the wrong type for tool `{}`",
            T::NAME
        ))
    })
}

type FnToolBody =
    dyn Fn(Value, ToolContext) -> BoxFuture<'static, Result<Value, ToolError>> + Send + Sync;

type SyncBody = dyn Fn(Value, ToolContext) -> Result<Value, ToolError> + Send + Sync;

/// What an [`FnTool`] runs.
enum FnBody {
    /// A closure returning a future ([`FnTool::new`]).
    Async(Box<FnToolBody>),
    /// A closure that never waits ([`FnTool::sync`]): run on the spot.
    Sync(Arc<SyncBody>),
}

type ApprovalRule = dyn Fn(&Value) -> bool + Send + Sync;

/// A tool made at run time from a name, a description, a JSON Schema and a closure over JSON.
///
/// ```
/// use agent_core::{FnTool, ToolError};
/// let echo = FnTool::new("echo", "Echo the input.", serde_json::json!({"type": "object"}), |args, _ctx| async move {
///     Ok::<_, ToolError>(args)
/// });
/// ```
pub struct FnTool {
    spec: Arc<ToolSpec>,
    body: FnBody,
    timeout: Option<Duration>,
    approval: Option<Box<ApprovalRule>>,
    idempotent: bool,
    retries: Option<usize>,
}

impl FnTool {
    /// A tool that runs `body` with the model's JSON arguments.
    pub fn new<F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: Value,
        body: F,
    ) -> Self
    where
        F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
    {
        let body = FnBody::Async(Box::new(move |args, ctx| Box::pin(body(args, ctx))));
        FnTool::with_body(name.into(), description.into(), parameters, body)
    }

    /// A tool whose `body` never waits: a call whose hooks are sync too runs on the spot,
    /// without a future, as a `#[tool]` on a plain `fn` does (see [`Tool::RUNS_NOW`]).
    ///
    /// ```
    /// use agent_core::{FnTool, ToolError};
    /// use serde_json::json;
    /// let add = FnTool::sync("add", "Adds a and b.", json!({"type": "object"}), |args, _ctx| {
    ///     let (a, b) = (args["a"].as_i64(), args["b"].as_i64());
    ///     match a.zip(b) {
    ///         Some((a, b)) => Ok(json!(a + b)),
    ///         None => Err(ToolError::new("a and b must be integers")),
    ///     }
    /// });
    /// # let _ = add;
    /// ```
    pub fn sync<F>(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: Value,
        body: F,
    ) -> Self
    where
        F: Fn(Value, ToolContext) -> Result<Value, ToolError> + Send + Sync + 'static,
    {
        let body = FnBody::Sync(Arc::new(body));
        FnTool::with_body(name.into(), description.into(), parameters, body)
    }

    fn with_body(name: String, description: String, parameters: Value, body: FnBody) -> Self {
        let spec = ToolSpec {
            name,
            description,
            parameters,
        };
        FnTool {
            spec: Arc::new(spec),
            body,
            timeout: None,
            approval: None,
            idempotent: false,
            retries: None,
        }
    }

    /// A streaming tool: `body` returns a [`ToolStream`] whose preliminary results reach
    /// on_chunk and the stream API and whose final value the model reads (see
    /// [`ToolStream::finish`]).
    ///
    /// ```
    /// use agent_core::{FnTool, ToolStream, ToolUpdate};
    /// use serde_json::{Value, json};
    /// let index = FnTool::streaming("index", "Indexes the files.", json!({"type": "object"}), |_, _| {
    ///     ToolStream::new(async_stream::stream! {
    ///         yield ToolUpdate::Progress(json!({ "percent": 50 }));
    ///         yield ToolUpdate::<Value, Value>::Done(json!("indexed 120 files"));
    ///     })
    /// });
    /// # let _ = index;
    /// ```
    pub fn streaming<F, P>(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: Value,
        body: F,
    ) -> Self
    where
        F: Fn(Value, ToolContext) -> ToolStream<P, Value> + Send + Sync + 'static,
        P: Serialize + 'static,
    {
        let name: Arc<str> = name.into().into();
        FnTool::new(
            name.to_string(),
            description,
            parameters,
            move |args, ctx| {
                let stream = body(args, ctx);
                let name = Arc::clone(&name);
                async move { stream.finish(&name).await }
            },
        )
    }

    /// Stops a call that runs longer than `limit` (see [`Tool::TIMEOUT`]); zero, or a limit
    /// on a tool made with [`FnTool::sync`] (which runs inline, where nothing can stop it), is
    /// a build error of the agent it is added to.
    pub fn with_timeout(mut self, limit: Duration) -> Self {
        self.timeout = Some(limit);
        self
    }

    /// Marks the tool idempotent (see [`Tool::IDEMPOTENT`]).
    pub fn idempotent(mut self) -> Self {
        self.idempotent = true;
        self
    }

    /// Lets the model call the tool again after at most `retries` failed calls in a row,
    /// over the agent's limit (see [`Tool::RETRIES`]).
    pub fn with_retries(mut self, retries: usize) -> Self {
        self.retries = Some(retries);
        self
    }

    /// Makes a call wait for a person's approval when `when` says so of its arguments
    /// (`|_| true`: every call; see [`Tool::needs_approval`]).
    pub fn needs_approval(mut self, when: impl Fn(&Value) -> bool + Send + Sync + 'static) -> Self {
        self.approval = Some(Box::new(when));
        self
    }
}

use std::future::Future;

impl DynTool for FnTool {
    fn spec(&self) -> &Arc<ToolSpec> {
        &self.spec
    }

    fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    fn idempotent(&self) -> bool {
        self.idempotent
    }

    fn retries(&self) -> Option<usize> {
        self.retries
    }

    fn needs_approval(&self, args: &AnyValue) -> bool {
        match (&self.approval, args.downcast_ref::<Value>()) {
            (Some(when), Some(args)) => when(args),
            _ => false,
        }
    }

    fn parse_args(&self, raw: &str) -> Result<AnyValue, ArgsError> {
        let raw = if no_arguments(raw) { "{}" } else { raw };
        // As for typed tools: the path is only worth tracking to explain a failure.
        if let Ok(value) = serde_json::from_str::<Value>(raw) {
            return self.args_from_json(value);
        }
        let mut de = serde_json::Deserializer::from_str(raw);
        let value: Value = serde_path_to_error::deserialize(&mut de)
            .map_err(|e| args_error(&self.spec.name, e))?;
        de.end().map_err(|e| trailing(&self.spec.name, e))?;
        self.args_from_json(value)
    }

    fn args_from_json(&self, value: Value) -> Result<AnyValue, ArgsError> {
        if !value.is_object() {
            return Err(not_an_object(&self.spec.name, &value));
        }
        Ok(AnyValue::new(value))
    }

    fn call(
        &self,
        args: Arc<AnyValue>,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<AnyValue, ToolError>> {
        let args = json_args(args);
        match &self.body {
            FnBody::Async(body) => {
                let future = body(args, ctx);
                Box::pin(async move { future.await.map(AnyValue::new) })
            }
            FnBody::Sync(body) => {
                let body = Arc::clone(body);
                Box::pin(async move { body(args, ctx).map(AnyValue::new) })
            }
        }
    }

    fn runs_now(&self) -> bool {
        matches!(self.body, FnBody::Sync(_))
    }

    fn call_now(&self, args: Arc<AnyValue>, ctx: ToolContext) -> Result<AnyValue, ToolError> {
        match &self.body {
            FnBody::Sync(body) => body(json_args(args), ctx).map(AnyValue::new),
            FnBody::Async(_) => Err(not_now(&self.spec.name)),
        }
    }
}

/// An [`FnTool`] call's JSON arguments (see [`owned_args`]).
fn json_args(args: Arc<AnyValue>) -> Value {
    owned_args::<Value>(args).unwrap_or_default()
}

/// A tool the client runs: the model sees its name, description and JSON Schema, and a call
/// suspends the turn (kind [`Client`](crate::PendingKind::Client)) until the client submits its
/// result ([`Conversation::submit_result`](crate::Conversation::submit_result)); the agent never
/// runs it. Arguments must be a JSON object.
///
/// ```
/// use agent_core::ClientTool;
/// let location = ClientTool::new(
///     "get_location",
///     "The user's current location, from their device.",
///     serde_json::json!({"type": "object", "properties": {}}),
/// );
/// ```
pub struct ClientTool {
    spec: Arc<ToolSpec>,
}

impl ClientTool {
    /// A client tool with this name, description and arguments schema.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        let spec = ToolSpec {
            name: name.into(),
            description: description.into(),
            parameters,
        };
        ClientTool {
            spec: Arc::new(spec),
        }
    }
}

impl DynTool for ClientTool {
    fn spec(&self) -> &Arc<ToolSpec> {
        &self.spec
    }

    fn parse_args(&self, raw: &str) -> Result<AnyValue, ArgsError> {
        let raw = if no_arguments(raw) { "{}" } else { raw };
        let mut de = serde_json::Deserializer::from_str(raw);
        let value: Value = serde_path_to_error::deserialize(&mut de)
            .map_err(|e| args_error(&self.spec.name, e))?;
        de.end().map_err(|e| trailing(&self.spec.name, e))?;
        self.args_from_json(value)
    }

    fn args_from_json(&self, value: Value) -> Result<AnyValue, ArgsError> {
        if !value.is_object() {
            return Err(not_an_object(&self.spec.name, &value));
        }
        Ok(AnyValue::new(value))
    }

    fn runs_on_client(&self) -> bool {
        true
    }

    fn call(
        &self,
        _args: Arc<AnyValue>,
        _ctx: ToolContext,
    ) -> BoxFuture<'static, Result<AnyValue, ToolError>> {
        let message = format!(
            "tool `{}` runs on the client: its result is submitted, never run here",
            self.spec.name
        );
        Box::pin(std::future::ready(Err(ToolError::new(message))))
    }
}

#[cfg(test)]
mod tests {
    use serde::Serialize;
    use serde_json::json;

    use super::AnyValue;

    #[derive(Serialize)]
    struct Report {
        city: String,
        degrees: i32,
    }

    #[derive(Serialize)]
    enum Sky {
        Clear,
    }

    /// A string reads as itself, plain or as JSON; a struct as its JSON, fields in declared
    /// order; a value that serializes as a JSON string as that string. Both forms agree.
    #[test]
    fn the_model_reads_strings_as_themselves_and_the_rest_as_json() {
        let report = Report {
            city: "Oslo".into(),
            degrees: -3,
        };
        let cases = [
            (AnyValue::new(String::from("sunny")), "sunny"),
            (AnyValue::new(json!("sunny")), "sunny"),
            (AnyValue::new(report), r#"{"city":"Oslo","degrees":-3}"#),
            (AnyValue::new(Sky::Clear), "Clear"),
            (AnyValue::new(json!({"b": 1})), r#"{"b":1}"#),
        ];
        for (value, text) in cases {
            assert_eq!(value.to_model_text().as_deref(), Ok(text));
            assert_eq!(value.model_text().map(String::from).as_deref(), Ok(text));
        }
    }
}
