//! How steps and turns end: step records, stop reasons and decisions, statuses, errors and
//! their classification, what the post-outcome hooks receive, and why a result has no typed
//! answer.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::answer::{Output, OutputFailure};
use super::tool_context::ToolOutcomeKind;
use crate::message::{Message, ToolCall};
use crate::model::{FinishReason, ModelErrorKind, Usage};
use crate::run_agent::RunAgent;
use crate::store::PendingCall;
use crate::text::Text;

/// One finished step: on_step_finish receives it, and turn results keep them all.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct StepRecord {
    /// The agent that ran the step (the one on_step_finish fires for): its name, its path from
    /// the agent asked (`triage > billing`), its turn's request id and the run id.
    pub agent: Arc<RunAgent>,
    /// The step number.
    pub step: usize,
    /// The model's id.
    pub model: String,
    /// The text streamed.
    pub text: Text,
    /// The reasoning streamed.
    pub reasoning: Text,
    /// The tool calls asked for, in the model's order (the reply's own list, shared).
    pub tool_calls: Arc<[ToolCall]>,
    /// Their results, in the same order (none for a call an after_tool_call_success/failure
    /// hook dropped from history).
    pub tool_results: Vec<ToolResultRecord>,
    /// Why the model stopped.
    pub finish_reason: FinishReason,
    /// Token usage of the step's model call.
    pub usage: Usage,
    /// What the provider sent beyond text, reasoning, calls and usage, in order (see
    /// [`ModelEvent::ProviderMetadata`](crate::ModelEvent::ProviderMetadata)).
    pub provider_metadata: Vec<serde_json::Value>,
    /// Why the typed answer this step gave was not accepted (it did not parse, or a
    /// validate_output hook sent it back); `None` when the step gave no answer or an accepted
    /// one. The model is sent back with it while output retries remain
    /// ([`TurnEvent::OutputRetry`](crate::TurnEvent::OutputRetry) follows the step), else the
    /// turn fails.
    pub output_failure: Option<String>,
}

/// One tool call's result in a step record.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ToolResultRecord {
    /// The call id.
    pub call_id: Text,
    /// The tool's name.
    pub name: Text,
    /// What the model received.
    pub content: Text,
    /// Whether the model received an error.
    pub is_error: bool,
    /// How the call ended (`Rejected` when the tool was unknown or its arguments invalid, and
    /// no hook ran).
    pub outcome: ToolOutcomeKind,
    /// How long the tool ran.
    pub duration: Duration,
}

/// Why a turn stopped: on its own, or at a limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopReason {
    /// The model finished on its own.
    Finished,
    /// The agent's step limit was reached.
    MaxSteps,
    /// The run's limit on model calls (`TurnRequest::max_turns`) was reached, across every
    /// agent of the run.
    MaxTurns,
    /// The run's token or cost budget (`TurnRequest::budget`) was spent, across every agent
    /// of the run.
    MaxBudget,
    /// A tool failed more times in a row than its retry limit allows
    /// ([`AgentBuilder::tool_retries`](crate::AgentBuilder::tool_retries)).
    ToolRetries,
    /// A tool the agent stops at answered a call, and its result is the answer
    /// ([`AgentBuilder::stop_at_tools`](crate::AgentBuilder::stop_at_tools)).
    Tool,
}

impl StopReason {
    /// The reason in snake_case: `finished`, `max_steps`, `max_turns`, `max_budget`,
    /// `tool_retries`, `tool`.
    pub fn as_str(&self) -> &'static str {
        match self {
            StopReason::Finished => "finished",
            StopReason::MaxSteps => "max_steps",
            StopReason::MaxTurns => "max_turns",
            StopReason::MaxBudget => "max_budget",
            StopReason::ToolRetries => "tool_retries",
            StopReason::Tool => "tool",
        }
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// on_stop: a limit ended the turn.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct StopContext {
    /// This turn's id.
    pub request_id: Arc<str>,
    /// Which limit.
    pub reason: StopReason,
    /// The agent this hook fires for, the one running when the limit was hit: its name, its path
    /// from the agent asked (`triage > billing`), its turn's request id and the run id.
    pub agent: Arc<RunAgent>,
    /// Steps run in this turn.
    pub steps: usize,
    /// The last step's text.
    pub text: Text,
    /// Tokens used so far: by the whole run (subagents' turns included) when it has a limit
    /// or budget, else by this turn and the subagents' turns it ran (as
    /// [`TurnResult::total_usage`] counts them).
    pub usage: Usage,
}

/// What an on_stop hook decides. Returning `()` leaves it to the limit's default.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum StopDecision {
    /// The limit's own ending: `max_steps` completes the turn quietly (as Think does),
    /// `max_turns`, `max_budget` and `tool_retries` fail it with [`TurnErrorKind::Limit`] (as
    /// Stratus does).
    #[default]
    Default,
    /// End the turn as completed (stop reason stays the limit).
    Complete,
    /// End the turn as completed with this final answer.
    Output(String),
    /// Fail the turn with this message.
    Fail(String),
}

/// How a turn ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TurnStatus {
    /// It produced a final answer.
    Completed,
    /// An error ended it.
    Error,
    /// It was cancelled.
    Aborted,
    /// Tool calls wait for an answer from outside the turn
    /// ([`TurnResult::pending`]); the turn goes on once every one has one
    /// ([`Conversation::resume`](crate::Conversation::resume)).
    Suspended,
}

impl TurnStatus {
    /// The status as on_chat_response reports it: `completed`, `error`, `aborted`,
    /// `suspended`.
    pub fn as_str(&self) -> &'static str {
        match self {
            TurnStatus::Completed => "completed",
            TurnStatus::Error => "error",
            TurnStatus::Aborted => "aborted",
            TurnStatus::Suspended => "suspended",
        }
    }
}

impl fmt::Display for TurnStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error that ended a turn.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TurnError {
    /// What failed.
    pub kind: TurnErrorKind,
    /// A readable description.
    pub message: String,
}

/// What a guardrail checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GuardrailKind {
    /// The user's input, before the first model call.
    Input,
    /// The final output, before it is stored, streamed or reported.
    Output,
}

impl fmt::Display for GuardrailKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            GuardrailKind::Input => "input",
            GuardrailKind::Output => "output",
        })
    }
}

/// What kind of failure ended a turn.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TurnErrorKind {
    /// The model call failed.
    Model(ModelErrorKind),
    /// The model reported an error inside its stream.
    ModelInBand,
    /// A hook failed and its policy failed the turn.
    Hook {
        /// The event.
        event: &'static str,
        /// The hook's name.
        hook: String,
    },
    /// An on_stop hook failed the turn.
    Stopped,
    /// The run reached this limit and no on_stop hook supplied an output. The message says
    /// which limit; for [`StopReason::ToolRetries`] it names the tool, how many times in a
    /// row it failed, its limit, and the last error the model read.
    Limit(StopReason),
    /// A guardrail tripped.
    Guardrail {
        /// On the input or on the output.
        kind: GuardrailKind,
        /// The guardrail's name.
        name: String,
    },
    /// The history store failed.
    Store,
    /// Another turn of the session was running and the agent rejects overlapping turns.
    Busy,
    /// A hook replaced the error.
    Custom,
    /// The turn lacks the run context its agent declares (`AgentBuilder::context_type`), or
    /// carries one of another type.
    Context,
    /// The turn does not fit the session's suspension: a turn started while tool calls wait
    /// for an answer (answer them and resume the suspended turn first), or a resume of a
    /// session with no suspended turn.
    Suspended,
    /// Code the turn ran outside any hook or tool (a session's token counter, say) panicked.
    /// Panics in hooks and tools follow the failure policy; a model's or a store's panic is
    /// reported as that model's or store's error.
    Panicked,
    /// No answer parsed into the agent's output type and passed its validators before the
    /// output retries ran out: the last raw answer and every reason.
    Output(OutputFailure),
}

impl TurnError {
    /// An error of this kind.
    pub fn new(kind: TurnErrorKind, message: impl Into<String>) -> Self {
        TurnError {
            kind,
            message: message.into(),
        }
    }

    /// An error an on_chat_error hook surfaces instead of the original.
    pub fn custom(message: impl Into<String>) -> Self {
        TurnError::new(TurnErrorKind::Custom, message)
    }
}

impl fmt::Display for TurnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TurnError {}

/// Where in a turn an error happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorStage {
    /// Reading the request.
    Parse,
    /// Storing messages.
    Persist,
    /// The turn's own logic and its hooks.
    Turn,
    /// The model's stream.
    Stream,
    /// Recovering from an earlier error.
    Recovery,
    /// Assembling the transcript.
    Transcript,
}

impl ErrorStage {
    /// The stage's name as Think spells it.
    pub fn as_str(&self) -> &'static str {
        match self {
            ErrorStage::Parse => "parse",
            ErrorStage::Persist => "persist",
            ErrorStage::Turn => "turn",
            ErrorStage::Stream => "stream",
            ErrorStage::Recovery => "recovery",
            ErrorStage::Transcript => "transcript",
        }
    }
}

/// What kind of error ended a turn, as classify_chat_error says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChatErrorClassification {
    /// The conversation no longer fits the model's context window.
    ContextOverflow,
    /// The provider is rate limiting.
    RateLimit,
    /// A passing failure worth retrying.
    Transient,
    /// A failure that will not go away.
    Fatal,
    /// Not known.
    Unknown,
}

impl ChatErrorClassification {
    /// The classification as Think spells it: `context_overflow`, `rate_limit`, `transient`,
    /// `fatal`, `unknown`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ChatErrorClassification::ContextOverflow => "context_overflow",
            ChatErrorClassification::RateLimit => "rate_limit",
            ChatErrorClassification::Transient => "transient",
            ChatErrorClassification::Fatal => "fatal",
            ChatErrorClassification::Unknown => "unknown",
        }
    }
}

impl fmt::Display for ChatErrorClassification {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for ErrorStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// classify_chat_error: the error to classify.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ClassifyContext {
    /// The agent this hook fires for: the turn's entry agent (the frame hooks are its own, after
    /// a handoff too), with its name, its path from the agent asked (`triage`, `writer >
    /// researcher` in a subagent's turn), its turn's request id and the run id.
    pub agent: Arc<RunAgent>,
    /// This turn's id.
    pub request_id: Arc<str>,
    /// The error.
    pub error: TurnError,
    /// Where it happened.
    pub stage: ErrorStage,
}

/// on_chat_error: the error that ended a turn.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ChatErrorContext {
    /// The agent this hook fires for: the turn's entry agent (the frame hooks are its own, after
    /// a handoff too), with its name, its path from the agent asked (`triage`, `writer >
    /// researcher` in a subagent's turn), its turn's request id and the run id.
    pub agent: Arc<RunAgent>,
    /// This turn's id.
    pub request_id: Arc<str>,
    /// The error.
    pub error: TurnError,
    /// Where it happened.
    pub stage: ErrorStage,
    /// Whether the user's message was already stored.
    pub messages_persisted: bool,
    /// The classification, from classify_chat_error or the default classifier.
    pub classification: ChatErrorClassification,
    /// The partial assistant text persisted before this hook ran.
    pub partial_text: String,
}

/// on_chat_response: how the turn ended, once per turn.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ChatResponse {
    /// The agent this hook fires for: the turn's entry agent (the frame hooks are its own, after
    /// a handoff too), with its name, its path from the agent asked (`triage`, `writer >
    /// researcher` in a subagent's turn), its turn's request id and the run id.
    pub agent: Arc<RunAgent>,
    /// This turn's id.
    pub request_id: Arc<str>,
    /// The final (or partial) assistant message.
    pub message: Message,
    /// Whether this turn continued an earlier one.
    pub continuation: bool,
    /// How it ended.
    pub status: TurnStatus,
    /// The error surfaced, when it ended in error.
    pub error: Option<TurnError>,
    /// The tool calls left waiting for an answer, when it ended `suspended` (as
    /// [`TurnResult::pending`] lists them); empty otherwise.
    pub pending: Vec<PendingCall>,
    /// The typed answer, when the agent that answered has an output type and the model gave
    /// one: the last answer as sent and whether it validated.
    pub output: Option<super::OutputReport>,
}

/// The outcome of a turn: what `run` returns and the stream API's last event.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TurnResult {
    /// This turn's id.
    pub request_id: Arc<str>,
    /// The agent that ran the turn's last step: the agent asked, or the target of the last
    /// handoff (`triage > billing`), with its turn's request id and the run id. after_run,
    /// though the entry agent's hook, reads this one: the result's, not the hook's.
    pub agent: Arc<RunAgent>,
    /// How the turn ended.
    pub status: TurnStatus,
    /// The final answer (the last step's text, or what on_stop supplied; partial on error/abort).
    /// With a typed answer, its JSON text ([`Output::text`]): the model's own JSON when it
    /// answered with the value itself, which in the native and prompted modes is the last
    /// step's text (trimmed, a fenced block unwrapped).
    pub text: Text,
    /// Why it stopped, when it completed.
    pub stop_reason: Option<StopReason>,
    /// Every step, in order.
    pub steps: Vec<StepRecord>,
    /// The messages this turn added to the conversation.
    pub messages: Vec<Message>,
    /// Token usage over all steps: this turn's own model calls (a handoff target's steps
    /// included), not its subagents'.
    pub usage: Usage,
    /// Token usage of the whole turn: [`usage`](Self::usage) plus that of every subagent turn
    /// its tool calls ran, theirs included, each counted once. A subagent's turn cut off
    /// mid-way (its call timed out or the turn was cancelled) is left out: it finishes on a
    /// task of its own. A run's budget counts every model call as it ends, cut off or not.
    pub total_usage: Usage,
    /// The error surfaced, when the turn ended in error.
    pub error: Option<TurnError>,
    /// The error's classification, when the turn ended in error.
    pub classification: Option<ChatErrorClassification>,
    /// The tool calls waiting for an answer, in the model's order, when the turn is
    /// [suspended](TurnStatus::Suspended).
    pub pending: Vec<PendingCall>,
    /// A resumed turn: what became of each call it answered, in the model's order
    /// (`executed`, `blocked` for a denied call or a gate blocking after the approval,
    /// `interrupted`, ...).
    pub resumed: Vec<ToolResultRecord>,
    /// The validated typed answer, when the agent that answered has an output type
    /// ([`AgentBuilder::output`](crate::AgentBuilder::output)) and the turn completed.
    pub output: Option<Output>,
}

impl TurnResult {
    /// True when the turn completed.
    pub fn is_completed(&self) -> bool {
        self.status == TurnStatus::Completed
    }

    /// The validated answer as its Rust type: the agent's output type (the handoff target's,
    /// when one answered). Only a completed turn has one: a turn that failed after its answer
    /// validated (a failing `after_run` hook, say) keeps the answer in [`output`](Self::output)'s
    /// field, but this returns [`OutputError::Missing`] with the turn's error.
    ///
    /// ```
    /// # use agent_core::{AgentBuilder, ScriptedModel, ScriptedStep};
    /// #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    /// struct Total { cents: u64 }
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let model = ScriptedModel::new([ScriptedStep::new().tool_call("c1", "final_result", r#"{"cents": 1250}"#)]);
    /// let agent = AgentBuilder::new("till").model(model).output::<Total>().build().unwrap();
    /// let result = agent.run("What do I owe?").await;
    /// assert_eq!(result.output::<Total>().unwrap().cents, 1250);
    /// # }
    /// ```
    pub fn output<T: 'static>(&self) -> Result<&T, OutputError> {
        let completed = self.output.as_ref().filter(|_| self.is_completed());
        let Some(output) = completed else {
            return Err(OutputError::Missing {
                status: self.status,
                error: self.error.clone(),
            });
        };
        output.get().ok_or(OutputError::OtherType {
            asked: std::any::type_name::<T>(),
            actual: output.type_name,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::FinishReason;

    /// A missing answer says why by how the turn ended, never telling an agent that has an
    /// output type to add one.
    #[test]
    fn a_missing_answer_says_why_by_the_turns_status() {
        let missing = |status| {
            OutputError::Missing {
                status,
                error: None,
            }
            .to_string()
        };
        assert_eq!(
            missing(TurnStatus::Completed),
            "the turn completed without a typed answer: the agent that answered has no output \
             type (`AgentBuilder::output`), or the turn ended before an answer validated (at \
             `max_steps`, by an `on_stop` hook, by a `prefilter_llm_history` block)"
        );
        assert_eq!(
            missing(TurnStatus::Suspended),
            "the turn has no typed answer yet: it is suspended; answer its waiting calls and \
             resume it (`Conversation::resume`), whose result has the answer"
        );
        assert_eq!(
            missing(TurnStatus::Aborted),
            "the turn has no typed answer (status `aborted`)"
        );
        let failed = OutputError::Missing {
            status: TurnStatus::Error,
            error: Some(TurnError::new(TurnErrorKind::Custom, "hook `x` failed")),
        };
        assert_eq!(
            failed.to_string(),
            "the turn has no typed answer: hook `x` failed"
        );
    }

    #[test]
    fn outcomes_display_in_snake_case_as_on_the_wire() {
        let shown = |value: &dyn fmt::Display| value.to_string();
        assert_eq!(shown(&TurnStatus::Completed), "completed");
        assert_eq!(shown(&TurnStatus::Error), "error");
        assert_eq!(shown(&TurnStatus::Aborted), "aborted");
        assert_eq!(shown(&TurnStatus::Suspended), "suspended");
        assert_eq!(shown(&StopReason::Finished), "finished");
        assert_eq!(shown(&StopReason::MaxSteps), "max_steps");
        assert_eq!(shown(&FinishReason::Stop), "stop");
        assert_eq!(shown(&FinishReason::Length), "length");
        assert_eq!(shown(&FinishReason::ToolCalls), "tool_calls");
        assert_eq!(shown(&FinishReason::ContentFilter), "content_filter");
        assert_eq!(
            shown(&FinishReason::Other("pause_turn".to_owned())),
            "pause_turn"
        );
        assert_eq!(
            shown(&ChatErrorClassification::ContextOverflow),
            "context_overflow"
        );
        assert_eq!(shown(&ChatErrorClassification::RateLimit), "rate_limit");
        assert_eq!(shown(&ChatErrorClassification::Transient), "transient");
        assert_eq!(shown(&ChatErrorClassification::Fatal), "fatal");
        assert_eq!(shown(&ChatErrorClassification::Unknown), "unknown");
        assert_eq!(shown(&ErrorStage::Persist), "persist");
        // The wire form of a finish reason is its serde form.
        for reason in [
            FinishReason::Stop,
            FinishReason::ToolCalls,
            FinishReason::ContentFilter,
        ] {
            assert_eq!(
                serde_json::to_value(&reason).unwrap(),
                serde_json::Value::String(reason.to_string())
            );
        }
    }
}

/// Why [`TurnResult::output`] has no value of the type asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutputError {
    /// The turn ended without a validated answer: how it ended, and its error (a
    /// [`TurnErrorKind::Output`] when every answer failed).
    Missing {
        /// How the turn ended.
        status: TurnStatus,
        /// The turn's error, if it failed.
        error: Option<TurnError>,
    },
    /// The answer is of another type than the one asked for.
    OtherType {
        /// The type asked for.
        asked: &'static str,
        /// The answer's type.
        actual: &'static str,
    },
}

impl fmt::Display for OutputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OutputError::Missing {
                error: Some(error), ..
            } => write!(f, "the turn has no typed answer: {error}"),
            OutputError::Missing {
                status: TurnStatus::Completed,
                ..
            } => f.write_str(
                "the turn completed without a typed answer: the agent that answered has no \
                 output type (`AgentBuilder::output`), or the turn ended before an answer \
                 validated (at `max_steps`, by an `on_stop` hook, by a \
                 `prefilter_llm_history` block)",
            ),
            OutputError::Missing {
                status: TurnStatus::Suspended,
                ..
            } => f.write_str(
                "the turn has no typed answer yet: it is suspended; answer its waiting calls \
                 and resume it (`Conversation::resume`), whose result has the answer",
            ),
            OutputError::Missing { status, .. } => {
                write!(f, "the turn has no typed answer (status `{status}`)")
            }
            OutputError::OtherType { asked, actual } => {
                write!(f, "the answer is a `{actual}`, not a `{asked}`")
            }
        }
    }
}

impl std::error::Error for OutputError {}
