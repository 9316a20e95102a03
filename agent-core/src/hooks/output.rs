//! Typed output: the type an agent's final answer must parse into ([`OutputType`]), how it is
//! asked of the model ([`OutputMode`]), what output validators receive and decide
//! ([`OutputContext`], [`OutputCheck`]), and why a stored answer reads back as none
//! ([`StoredOutputError`]). The answer a turn reports is in `answer.rs`.

use std::any::{Any, TypeId};
use std::fmt;
use std::marker::PhantomData;
use std::sync::{Arc, OnceLock};

use serde_json::Value;
use tracing::Instrument;

use super::answer::Output;
use super::outcome::TurnError;
use super::run::{run_hook, settle, span};
use super::{Event, FailurePolicy, Hook};
use crate::run_agent::RunAgent;
use crate::util::BoxFuture;

/// A type an agent's final answer can be: it has a JSON Schema (sent to the model), parses
/// from JSON and serializes back (the validated answer is kept and stored as JSON).
/// Implemented for every type that derives `serde::Serialize`, `serde::Deserialize` and
/// `schemars::JsonSchema`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be an agent's output type",
    label = "derive `serde::Serialize`, `serde::Deserialize` and `schemars::JsonSchema` for this type",
    note = "an output type needs all three: the schema is sent to the model, the answer is parsed and stored as JSON"
)]
pub trait OutputType:
    schemars::JsonSchema + serde::de::DeserializeOwned + serde::Serialize + Send + Sync + 'static
{
}

impl<T> OutputType for T where
    T: schemars::JsonSchema
        + serde::de::DeserializeOwned
        + serde::Serialize
        + Send
        + Sync
        + 'static
{
}

/// How a typed final answer is asked of the model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum OutputMode {
    /// Per step: [`Native`](Self::Native) when the model takes a schema
    /// ([`Model::supports_output_schema`](crate::Model::supports_output_schema)), the step
    /// offers no tools and the answer is an object offered as one (not an enum, whose schema
    /// providers do not take as a structured output's root, nor one tool per variant), else
    /// [`Tool`](Self::Tool).
    #[default]
    Auto,
    /// The provider's structured output (`ModelRequest::output_schema`); the reply's text is
    /// the JSON answer. A step that offers tools gets the final-answer tool instead: providers
    /// do not combine a forced schema with tools. The output type must be an object (a
    /// struct): any other type, or one tool per variant, is a build error.
    Native,
    /// A final-answer tool, with the type's schema as its arguments, offered beside the
    /// agent's tools (a step whose tool choice is `auto` then requires a tool call); the turn
    /// ends when the model calls it with an answer that validates.
    Tool,
    /// The schema in the system prompt; the reply's text is parsed as JSON (a fenced
    /// ```` ```json ```` block is unwrapped).
    Prompted,
}

/// Why [`Conversation::last_output`](crate::Conversation::last_output) read no typed answer
/// back.
#[derive(Debug)]
#[non_exhaustive]
pub enum StoredOutputError {
    /// The session's rows could not be loaded.
    Store(crate::store::StoreError),
    /// Neither the agent nor an agent its handoffs reach answers the type asked for.
    OtherType {
        /// The type asked for.
        asked: &'static str,
        /// The agent's output type, if it has one.
        actual: Option<&'static str>,
    },
    /// The last accepted final-answer call stored does not parse into the output type (the
    /// type changed since, or a row was written by hand): the answer as the model sent it, and
    /// why. (A text reply that does not parse is taken for no answer: another agent's reply,
    /// or an `on_stop` hook's text.)
    Unreadable {
        /// The final-answer call's arguments.
        raw: String,
        /// Why it does not parse, naming the JSON path.
        reason: String,
    },
}

impl fmt::Display for StoredOutputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoredOutputError::Store(error) => write!(f, "the session's rows: {error}"),
            StoredOutputError::OtherType {
                asked,
                actual: Some(actual),
            } => write!(
                f,
                "the agent's output type is `{actual}`, not `{asked}`, nor is that of an agent its handoffs reach"
            ),
            StoredOutputError::OtherType {
                asked,
                actual: None,
            } => write!(
                f,
                "the agent has no output type, nor has an agent its handoffs reach `{asked}`: give it `{asked}` with `AgentBuilder::output`"
            ),
            StoredOutputError::Unreadable { reason, .. } => {
                write!(f, "the last stored answer does not parse: {reason}")
            }
        }
    }
}

impl std::error::Error for StoredOutputError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoredOutputError::Store(error) => Some(error),
            _ => None,
        }
    }
}

/// validate_output: an answer that parsed into the output type, before the turn takes it.
#[derive(Debug)]
#[non_exhaustive]
pub struct OutputContext<T> {
    /// The agent whose answer this is: its name, its path from the agent asked, its turn's
    /// request id and the run id.
    pub agent: Arc<RunAgent>,
    /// This turn's id.
    pub request_id: Arc<str>,
    /// The step that gave the answer.
    pub step: usize,
    /// How many answers failed before this one in the turn.
    pub attempt: usize,
    /// The answer.
    pub output: Arc<T>,
    /// The answer as JSON.
    pub json: Value,
}

/// What a validate_output hook decides. Returning `()` accepts; returning an `Err` fails the
/// turn (the hook's default policy is fail closed).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum OutputCheck {
    /// The answer is good.
    #[default]
    Accept,
    /// Send the model back with this message to fix its answer (counts against the output
    /// retries).
    Retry(String),
}

impl OutputCheck {
    /// Sends the model back with this message.
    pub fn retry(message: impl Into<String>) -> Self {
        OutputCheck::Retry(message.into())
    }
}

/// The validate_output event for output type `T`: hooks receive [`OutputContext<T>`] and return
/// an [`OutputCheck`]; a failing hook fails the turn. Register with
/// [`AgentBuilder::validate_output`](crate::AgentBuilder::validate_output) or
/// `#[hook(validate_output)]`.
pub struct ValidateOutput<T>(PhantomData<fn() -> T>);

impl<T> fmt::Debug for ValidateOutput<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ValidateOutput")
    }
}

impl<T: OutputType> Event for ValidateOutput<T> {
    type Ctx = OutputContext<T>;
    type Out = OutputCheck;
    const NAME: &'static str = "validate_output";
    const DEFAULT_POLICY: FailurePolicy = FailurePolicy::FailClosed;
}

impl<T: OutputType> super::HookReturn<ValidateOutput<T>> for OutputCheck {
    fn into_hook_result(self) -> Result<OutputCheck, super::HookError> {
        Ok(self)
    }
}

/// An output type with the type erased: its name, schema and parser, as the engine holds it.
pub(crate) struct OutputKind {
    pub(crate) type_id: TypeId,
    pub(crate) type_name: &'static str,
    pub(crate) schema: Value,
    /// Parses an answer's JSON into the type, naming the JSON path of what does not fit; the
    /// output's text is the value serialized.
    pub(crate) parse: fn(&Value) -> Result<Output, String>,
    /// The same from JSON text, in one pass (no JSON value in between), keeping that text as
    /// the output's; the second argument says what the text is in a reason (`the answer is`,
    /// `the arguments are`).
    pub(crate) parse_text: fn(Arc<str>, &str) -> Result<Output, String>,
}

impl OutputKind {
    /// The kind of `T`.
    pub(crate) fn of<T: OutputType>() -> Self {
        OutputKind {
            type_id: TypeId::of::<T>(),
            type_name: std::any::type_name::<T>(),
            schema: crate::tool::schema_for::<T>(),
            parse: parse::<T>,
            parse_text: parse_text::<T>,
        }
    }
}

/// Parses with serde alone; only an answer that fails is parsed again, with
/// `serde_path_to_error`, to name the path (tracking it costs more than the parse itself).
fn parse<T: OutputType>(json: &Value) -> Result<Output, String> {
    let value = match <T as serde::Deserialize>::deserialize(json) {
        Ok(value) => value,
        Err(_) => serde_path_to_error::deserialize(json)
            .map_err(|error| invalid(&error.path().to_string(), error.inner()))?,
    };
    let text = serde_json::to_string(&value)
        .map_err(|error| format!("the answer does not serialize back to JSON: {error}"))?;
    Ok(output(value, text.into()))
}

/// [`parse`] from JSON text, in one pass, the text kept as the output's (not written again
/// from the value). Text that is not JSON is reported as such; a value that does not fit
/// reads as from [`parse`] (its position in the text left out: the path names it).
fn parse_text<T: OutputType>(text: Arc<str>, what: &str) -> Result<Output, String> {
    if let Ok(value) = serde_json::from_str::<T>(&text) {
        return Ok(output(value, text));
    }
    let mut json = serde_json::Deserializer::from_str(&text);
    let value: T = serde_path_to_error::deserialize(&mut json).map_err(|error| {
        let inner = error.inner();
        if !inner.is_data() {
            return format!("{what} not JSON: {inner}");
        }
        let message = inner.to_string();
        let at = format!(" at line {} column {}", inner.line(), inner.column());
        let message = message.strip_suffix(&at).unwrap_or(&message);
        invalid(&error.path().to_string(), message)
    })?;
    json.end()
        .map_err(|error| format!("{what} not JSON: {error}"))?;
    Ok(output(value, text))
}

/// Why an answer does not fit the type, at this JSON path.
fn invalid(path: &str, why: impl fmt::Display) -> String {
    match path {
        "." => format!("invalid answer: {why}"),
        _ => format!("invalid answer at `{path}`: {why}"),
    }
}

/// A parsed answer with its JSON text; its JSON value is made when read.
fn output<T: OutputType>(value: T, text: Arc<str>) -> Output {
    Output {
        text,
        json: OnceLock::new(),
        value: Arc::new(value),
        to_json: to_json::<T>,
        type_name: std::any::type_name::<T>(),
    }
}

/// An output's value as the output type serializes it (`Null` if it cannot: a map with
/// non-string keys, or a failing `Serialize`).
fn to_json<T: OutputType>(value: &(dyn Any + Send + Sync)) -> Value {
    value
        .downcast_ref::<T>()
        .and_then(|value| serde_json::to_value(value).ok())
        .unwrap_or(Value::Null)
}

/// Where an answer is validated: the turn, the agent and the step.
pub(crate) struct ValidateScope<'a> {
    pub(crate) agent: &'a Arc<RunAgent>,
    pub(crate) request_id: &'a Arc<str>,
    pub(crate) step: usize,
    pub(crate) attempt: usize,
}

/// A validate_output hook with its output type erased: what an agent keeps.
pub(crate) trait Validator: Send + Sync {
    /// The output type the hook is typed on.
    fn type_id(&self) -> TypeId;
    /// The hook's name and its priority.
    fn name(&self) -> &str;
    fn priority(&self) -> i32;
    /// Runs the hook on an answer; `Err` when it failed closed (the turn fails).
    fn check<'a>(
        &'a self,
        scope: &ValidateScope<'_>,
        output: &Output,
    ) -> BoxFuture<'a, Result<OutputCheck, TurnError>>;
}

impl<T: OutputType> Validator for Hook<ValidateOutput<T>> {
    fn type_id(&self) -> TypeId {
        TypeId::of::<T>()
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn priority(&self) -> i32 {
        self.options.priority
    }

    fn check<'a>(
        &'a self,
        scope: &ValidateScope<'_>,
        output: &Output,
    ) -> BoxFuture<'a, Result<OutputCheck, TurnError>> {
        let value = output.value.clone().downcast::<T>();
        let ctx = value.map(|output_value| OutputContext {
            agent: scope.agent.clone(),
            request_id: scope.request_id.clone(),
            step: scope.step,
            attempt: scope.attempt,
            output: output_value,
            json: output.json().clone(),
        });
        Box::pin(async move {
            // The agent checks at build that its validators are typed on its output type.
            let Ok(ctx) = ctx else {
                return Ok(OutputCheck::Accept);
            };
            let name = ValidateOutput::<T>::NAME;
            match run_hook(self, &ctx)
                .instrument(span(name, &self.name))
                .await
            {
                Ok(check) => Ok(check),
                Err(failure) => {
                    settle(name, &self.name, self.policy(), &failure).map(|()| OutputCheck::Accept)
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    struct Invoice {
        number: String,
        lines: Vec<u64>,
    }

    /// What `parse_text` says of an answer, against `parse` on the same text read as JSON.
    fn both(text: &str) -> (Result<Value, String>, Option<Result<Value, String>>) {
        let from_text =
            parse_text::<Invoice>(text.into(), "the answer is").map(|output| output.json().clone());
        let from_value = serde_json::from_str::<Value>(text)
            .ok()
            .map(|json| parse::<Invoice>(&json).map(|output| output.json().clone()));
        (from_text, from_value)
    }

    #[test]
    fn parsing_from_text_reads_as_parsing_from_a_value() {
        let good = r#" {"number":"INV-7","lines":[1,2]} "#;
        let (text, value) = both(good);
        assert_eq!(
            text,
            Ok(serde_json::json!({"number": "INV-7", "lines": [1, 2]}))
        );
        assert_eq!(Some(text), value);
        // A value that does not fit: the same reason, with its path and without a position.
        for bad in [
            r#"{"number":"INV-7","lines":[1,"two"]}"#,
            r#"{"number":"INV-7"}"#,
            r#"{"number":7,"lines":[]}"#,
            "[]",
        ] {
            let (text, value) = both(bad);
            assert!(text.is_err(), "{bad}");
            assert_eq!(Some(text), value, "{bad}");
        }
        assert_eq!(
            both(r#"{"number":"INV-7","lines":[1,"two"]}"#).0,
            Err("invalid answer at `lines[1]`: invalid type: string \"two\", expected u64".into())
        );
        assert_eq!(
            both(r#"{"number":"INV-7"}"#).0,
            Err("invalid answer: missing field `lines`".into())
        );
    }

    #[test]
    fn text_that_is_not_json_says_so_with_its_position() {
        for (text, why) in [
            ("Sure! Here it is.", "expected value at line 1 column 1"),
            (
                r#"{"number":"INV-7","lines":[]} and more"#,
                "trailing characters at line 1 column 31",
            ),
            (
                r#"{"number":"INV-7","lines":["#,
                "EOF while parsing a list at line 1 column 27",
            ),
        ] {
            assert_eq!(
                parse_text::<Invoice>(text.into(), "the answer is")
                    .map(|output| output.json().clone()),
                Err(format!("the answer is not JSON: {why}")),
                "{text}"
            );
        }
    }
}
