//! on_subagent_start and on_subagent_stop: what their hooks receive.

use std::sync::Arc;

use serde_json::Value;

use super::RunAgent;

/// on_subagent_start: an agent offered as a tool is about to run its own turn (after the
/// calling agent's before_tool_call hooks allowed the call).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SubagentStartContext {
    /// The calling turn's id.
    pub request_id: Arc<str>,
    /// The calling step.
    pub step: usize,
    /// The tool call's id.
    pub call_id: Arc<str>,
    /// The agent this hook fires for, the calling one: its name, its path from the agent asked
    /// (`triage > billing`), its turn's request id and the run id.
    pub agent: Arc<RunAgent>,
    /// The agent about to run.
    pub subagent: Arc<str>,
    /// The call's arguments as they reach the subagent (`{"input": ...}`, after any
    /// before_tool_call modification).
    pub input: Value,
}

/// on_subagent_stop: the subagent's turn ended.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SubagentStopContext {
    /// The calling turn's id.
    pub request_id: Arc<str>,
    /// The calling step.
    pub step: usize,
    /// The tool call's id.
    pub call_id: Arc<str>,
    /// The agent this hook fires for, the calling one: its name, its path from the agent asked
    /// (`triage > billing`), its turn's request id and the run id.
    pub agent: Arc<RunAgent>,
    /// The agent that ran.
    pub subagent: Arc<str>,
    /// Its final answer, or why it has none (an error, a cancel, a timeout); the calling
    /// model reads the same.
    pub result: Result<String, String>,
}
