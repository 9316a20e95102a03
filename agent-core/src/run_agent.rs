//! Which agent a hook fires for ([`RunAgent`]): a leaf every layer may name (hook contexts,
//! a tool's `ToolContext`, the run hooks).

use std::sync::Arc;

/// Which agent a run event or a hook fires for, and where in the run it works. Every hook
/// context carries one as `agent`, and [`current_agent`] reads the agent working now from
/// anywhere in a turn.
///
/// Contexts share it as an `Arc` made once per turn (and once per handoff): a context costs
/// one reference count for it, never an allocation, and the chunks of one model call share
/// one on_chunk context, so a streamed chunk costs nothing for it.
///
/// [`current_agent`]: crate::current_agent
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RunAgent {
    /// The agent's name.
    pub name: Arc<str>,
    /// The agents from the one asked to this one, joined by ` > ` (`triage > billing` after a
    /// handoff, `writer > researcher` inside a subagent).
    pub path: Arc<str>,
    /// The id of the turn the agent works in (a subagent's turn has its own).
    pub request_id: Arc<str>,
    /// The id of the outermost turn: the same for every agent of one run.
    pub run_id: Arc<str>,
}

impl RunAgent {
    /// An agent asked directly (not a handoff's target nor a subagent): its path is its name
    /// and its run id the request id, as the engine makes them for such a turn. For calling a
    /// tool outside a turn ([`ToolContext::new`](crate::ToolContext::new)), in tests say.
    pub fn new(name: impl Into<Arc<str>>, request_id: impl Into<Arc<str>>) -> RunAgent {
        let name = name.into();
        let request_id = request_id.into();
        RunAgent {
            path: name.clone(),
            name,
            run_id: request_id.clone(),
            request_id,
        }
    }
}
