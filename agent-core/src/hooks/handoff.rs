//! before_handoff: what its hooks receive ([`HandoffContext`]) and decide ([`HandoffDecision`]).

use std::sync::Arc;

use super::RunAgent;

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
