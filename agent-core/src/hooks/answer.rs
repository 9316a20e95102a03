//! A turn's typed answer as its result reports it: the validated answer ([`Output`]), what
//! became of the last one ([`OutputReport`]), and why none was accepted ([`OutputFailure`]).

use std::any::Any;
use std::fmt;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

/// A validated final answer: its JSON text, and the Rust value it parsed into.
#[derive(Clone)]
pub struct Output {
    /// The answer's JSON text: the model's own when the value parsed from it, else the value
    /// serialized (see [`text`](Self::text)). Shared with the turn's [`OutputReport::raw`].
    pub(crate) text: Arc<str>,
    /// The value as the output type serializes it, when first asked for.
    pub(crate) json: OnceLock<Value>,
    /// The value, shared with the validators' [`OutputContext::output`](crate::OutputContext::output) and each clone.
    pub(crate) value: Arc<dyn Any + Send + Sync>,
    /// Writes `value` as a JSON value (the output type's serialization).
    pub(crate) to_json: fn(&(dyn Any + Send + Sync)) -> Value,
    pub(crate) type_name: &'static str,
}

impl Output {
    /// The answer as JSON, as the output type serializes it (its fields in their declared
    /// order, a member the model left out and the type defaults written, one the type does not
    /// know left out). Made from the value when first read: a turn whose answer nobody reads
    /// as a JSON value does not pay for one.
    pub fn json(&self) -> &Value {
        self.json.get_or_init(|| (self.to_json)(&*self.value))
    }

    /// The answer as JSON text; a completed turn's [`TurnResult::text`](crate::TurnResult::text).
    /// When the answer was the model's own JSON (a native or prompted reply's text, trimmed,
    /// a fenced block unwrapped; a final-answer call's arguments) it is that text, as sent:
    /// the value parsed from it, so it reads back as the same value, but its spacing, the
    /// order of its members and members the type ignores are the model's (compare
    /// [`json`](Self::json)). An answer the engine rebuilt first (under `response`, or one
    /// tool per variant) is the value as the output type serializes it.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The answer as the agent's output type; `None` when `T` is another type.
    pub fn get<T: 'static>(&self) -> Option<&T> {
        self.value.downcast_ref()
    }

    /// The Rust name of the output type.
    pub fn type_name(&self) -> &'static str {
        self.type_name
    }
}

impl fmt::Debug for Output {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Output")
            .field("type", &self.type_name)
            .field("text", &self.text)
            .finish()
    }
}

impl PartialEq for Output {
    fn eq(&self, other: &Self) -> bool {
        self.type_name == other.type_name && self.text == other.text
    }
}

/// What became of a turn's typed answer, as on_chat_response
/// ([`ChatResponse::output`](crate::ChatResponse::output)) and run hooks
/// ([`RunHooks::on_agent_output`](crate::RunHooks::on_agent_output)) read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputReport {
    /// The last answer as the model sent it: the final-answer call's arguments, or the text
    /// (one string with the validated [`Output::text`] when that is the same text).
    pub raw: Arc<str>,
    /// Whether it parsed and passed the validators (it is then the turn's
    /// [`TurnResult::output`](crate::TurnResult::output)).
    pub validated: bool,
}

/// Why a turn ended without a typed answer: every answer failed to parse or validate, and
/// the retries ([`AgentBuilder::output_retries`](crate::AgentBuilder::output_retries)) ran
/// out. Carried by [`TurnErrorKind::Output`](crate::TurnErrorKind::Output).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputFailure {
    /// The last answer as the model sent it (the final-answer tool's arguments, or the text).
    pub raw: String,
    /// Why each answer failed, in order, one per attempt.
    pub reasons: Vec<String>,
}
