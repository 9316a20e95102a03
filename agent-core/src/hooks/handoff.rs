//! before_handoff: what its hooks receive ([`HandoffContext`]) and decide ([`HandoffDecision`]).

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::RunAgent;
use crate::tool::{ArgsError, typed_args_of};

/// before_handoff: the current agent's model called a transfer tool to hand the rest of the
/// turn to another agent.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct HandoffContext {
    /// The agent this hook fires for, the one handing off: its name, its path from the agent
    /// asked (`triage`), its turn's request id and the run id.
    pub agent: Arc<RunAgent>,
    /// This turn's id.
    pub request_id: Arc<str>,
    /// The step whose reply asked for the handoff.
    pub step: usize,
    /// The transfer call's id.
    pub call_id: String,
    /// The transfer tool's name.
    pub tool: String,
    /// The agent handing off (whose hook this is).
    pub from: Arc<str>,
    /// The agent asked to take over.
    pub to: Arc<str>,
    /// What the model passed to the handoff's target, when the handoff takes an input
    /// ([`Handoff::input`](crate::Handoff::input)): the transfer call's arguments as it sent
    /// them, already checked against the input type (less a `null` the type refused for a
    /// field it may leave out). `None` for a handoff without an input type, whatever the model
    /// sent. Read it typed with [`input_as`](Self::input_as).
    pub input: Option<Value>,
}

impl HandoffContext {
    /// The input as a `T` (the handoff's input type, or any type its JSON fits). An error
    /// naming the transfer tool and the field when it does not fit, or when the handoff
    /// carries no input.
    ///
    /// ```
    /// use agent_core::{HandoffContext, HandoffDecision};
    /// #[derive(serde::Deserialize)]
    /// struct Escalation {
    ///     reason: String,
    /// }
    /// fn gate(ctx: &HandoffContext) -> HandoffDecision {
    ///     match ctx.input_as::<Escalation>() {
    ///         Ok(escalation) if escalation.reason.is_empty() => {
    ///             HandoffDecision::deny("give the reason for the escalation")
    ///         }
    ///         Ok(_) => HandoffDecision::Allow,
    ///         Err(error) => HandoffDecision::deny(error.to_string()),
    ///     }
    /// }
    /// # let _ = gate;
    /// ```
    pub fn input_as<T: DeserializeOwned>(&self) -> Result<T, ArgsError> {
        match &self.input {
            Some(input) => typed_args_of(&self.tool, input),
            None => Err(ArgsError {
                tool: self.tool.clone(),
                path: ".".to_owned(),
                message: format!(
                    "the handoff to `{}` takes no input: give it a type with `Handoff::input`",
                    self.to
                ),
            }),
        }
    }
}

/// What a before_handoff hook decides. Returning `()` allows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum HandoffDecision {
    /// The target takes over after this step.
    #[default]
    Allow,
    /// The current agent stays; the model reads the reason (or a default naming both agents)
    /// as the transfer call's result.
    Deny(Option<String>),
}

impl HandoffDecision {
    /// Denies with a reason the model reads.
    pub fn deny(reason: impl Into<String>) -> Self {
        HandoffDecision::Deny(Some(reason.into()))
    }
}
