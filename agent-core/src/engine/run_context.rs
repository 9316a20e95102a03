//! The typed run context: a value of the application's own type given per turn
//! ([`TurnRequest::context`](super::TurnRequest::context)) and read, typed, by every hook and
//! tool of every agent in that turn ([`run_context`]). The turn carries it in its scope
//! (`run_scope::running`).

use std::any::{Any, type_name};
use std::fmt;
use std::sync::Arc;

use super::run_scope::RunContextValue;

/// Why [`run_context`] has no value of the type asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunContextError {
    /// The type asked for.
    pub asked: &'static str,
    /// The type of the turn's context, when it has one.
    pub carried: Option<&'static str>,
}

impl fmt::Display for RunContextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.carried {
            Some(carried) => write!(
                f,
                "the turn's run context is a `{carried}`, not the `{}` asked for",
                self.asked
            ),
            None => write!(
                f,
                "the turn has no run context (asked for a `{}`): give one with `TurnRequest::context`, \
                 and read it from code the turn runs (a hook, a tool, not a task it spawned)",
                self.asked
            ),
        }
    }
}

impl std::error::Error for RunContextError {}

/// The running turn's context, typed: the value given with
/// [`TurnRequest::context`](super::TurnRequest::context), readable from every hook and tool of
/// every agent the turn reaches (handoff targets and subagents too). Call it from code the
/// turn runs; a task spawned from there does not carry it (pass the `Arc` along).
///
/// ```
/// use agent_core::{AgentBuilder, FnTool, ScriptedModel, ScriptedStep, TurnRequest, run_context};
/// struct User { id: u64 }
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let whoami = FnTool::new("whoami", "The user's id.", serde_json::json!({"type": "object"}),
///     |_, _| async { Ok(serde_json::json!(run_context::<User>()?.id)) });
/// let agent = AgentBuilder::new("a")
///     .model(ScriptedModel::new([ScriptedStep::new().tool_call("c", "whoami", "{}"), ScriptedStep::new().text("ok")]))
///     .dyn_tool(whoami)
///     .build()
///     .unwrap();
/// let result = agent.run(TurnRequest::new("who am I?").context(User { id: 7 })).await;
/// assert_eq!(result.steps[0].tool_results[0].content, "7");
/// # }
/// ```
pub fn run_context<T: Any + Send + Sync>() -> Result<Arc<T>, RunContextError> {
    let error = |carried| RunContextError {
        asked: type_name::<T>(),
        carried,
    };
    match RunContextValue::current() {
        Some(context) => context
            .downcast::<T>()
            .map_err(|carried| error(Some(carried))),
        None => Err(error(None)),
    }
}
