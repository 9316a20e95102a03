//! Subagents: an agent offered to another as a tool. A call runs the subagent's own turn (its
//! own session, request id and hooks) on the call's `input` and returns its final answer; the
//! calling agent's before_tool_call and after_tool_call hooks apply to the call as to any tool,
//! and on_subagent_start / on_subagent_stop fire around the subagent's turn.

use std::sync::Arc;

use serde_json::{Value, json};

use super::plan::CallScope;
use super::request::TurnRequest;
use super::runtime::{AgentRuntime, ToolSlot};
use super::turn::{SessionRef, run_turn};
use crate::hooks::tool_hooks::CallState;
use crate::hooks::{SubagentStartContext, SubagentStopContext, ToolOutcome, TurnStatus, observe};
use crate::session::Opened;
use crate::tool::{FnTool, ToolContext, ToolError};
use crate::util::new_id;

/// The tool through which a model asks `agent`: named after the agent unless `name` is given,
/// taking `{"input": "..."}`.
pub(crate) fn tool(
    agent: Arc<AgentRuntime>,
    name: Option<String>,
    description: Option<String>,
) -> FnTool {
    let name = name.unwrap_or_else(|| agent.name.to_string());
    let description = description.unwrap_or_else(|| match &agent.description {
        Some(what) => format!("Ask agent `{}`: {what}", agent.name),
        None => format!("Ask agent `{}` and get its answer.", agent.name),
    });
    let schema = json!({
        "type": "object",
        "properties": {
            "input": {"type": "string", "description": "What to ask the agent."}
        },
        "required": ["input"],
        "additionalProperties": false
    });
    FnTool::new(name, description, schema, move |args, ctx| {
        run(agent.clone(), args, ctx)
    })
}

/// The subagent's turn, on a session of its own, cancelled with the calling turn.
async fn run(agent: Arc<AgentRuntime>, args: Value, ctx: ToolContext) -> Result<Value, ToolError> {
    let Some(input) = args.get("input").and_then(Value::as_str) else {
        return Err(ToolError::new(format!(
            "agent `{}` takes {{\"input\": \"...\"}}: the text to ask it",
            agent.name
        )));
    };
    let session = Held::open(&agent);
    let request = TurnRequest::new(input).cancel(ctx.cancel.child());
    let opened = Arc::new(Opened);
    let turn = SessionRef {
        id: &session.id,
        opened: &opened,
    };
    // Boxed: a turn inside a tool call of a turn.
    let result = Box::pin(run_turn(&agent, turn, request, None)).await;
    match result.status {
        // A typed answer goes back as its JSON.
        TurnStatus::Completed => Ok(result
            .output
            .map_or(Value::String(result.text), |output| output.json)),
        TurnStatus::Suspended => {
            let ids: Vec<&str> = result.pending.iter().map(|p| p.id.as_str()).collect();
            Err(ToolError::new(format!(
                "agent `{}` suspended: its tool calls {} wait for an answer, which a subagent's \
                 turn cannot wait for",
                agent.name,
                ids.join(", ")
            )))
        }
        status => {
            let why = result
                .error
                .map(|error| format!(": {}", error.message))
                .unwrap_or_default();
            Err(ToolError::new(format!(
                "agent `{}` ended {status}{why}",
                agent.name
            )))
        }
    }
}

/// The subagent's session, held in its store while the call runs (an in-memory store frees it
/// when the call ends, however it ends).
struct Held {
    agent: Arc<AgentRuntime>,
    id: Arc<str>,
}

impl Held {
    fn open(agent: &Arc<AgentRuntime>) -> Held {
        let id: Arc<str> = new_id("session").into();
        agent.store.retain(&id);
        Held {
            agent: agent.clone(),
            id,
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.agent.store.release(&self.id);
    }
}

/// on_subagent_start, when `slot` is a subagent; a failing fail-closed hook keeps the subagent
/// from running (the call fails with why).
pub(super) async fn started(
    scope: &CallScope<'_>,
    slot: &ToolSlot,
    state: &CallState,
) -> Result<(), ToolOutcome> {
    let Some(subagent) = slot.subagent.as_ref().map(|mark| &mark.name) else {
        return Ok(());
    };
    let caller = scope.tools.agent;
    if caller.hooks.on_subagent_start.is_empty() {
        return Ok(());
    }
    let ctx = SubagentStartContext {
        request_id: scope.request_id.clone(),
        step: scope.step,
        call_id: state.call_id.clone(),
        agent: scope.me.clone(),
        subagent: subagent.clone(),
        input: state.effective_input.to_json().unwrap_or_default(),
    };
    observe(&caller.hooks.on_subagent_start, &ctx)
        .await
        .map_err(|error| {
            let message = format!("agent `{subagent}` did not run: {}", error.message);
            ToolOutcome::Failed(ToolError::new(message))
        })
}

/// on_subagent_stop, when `slot` is a subagent; a failing fail-closed hook fails the call.
pub(super) async fn stopped(
    scope: &CallScope<'_>,
    slot: &ToolSlot,
    call_id: &Arc<str>,
    outcome: ToolOutcome,
) -> ToolOutcome {
    let Some(subagent) = slot.subagent.as_ref().map(|mark| &mark.name) else {
        return outcome;
    };
    let caller = scope.tools.agent;
    if caller.hooks.on_subagent_stop.is_empty() {
        return outcome;
    }
    let result = match &outcome {
        ToolOutcome::Executed(value) => value.to_model_text(),
        ToolOutcome::Failed(error) => Err(error.message().to_owned()),
        ToolOutcome::Blocked(reason) => Err(reason.clone()),
        ToolOutcome::Substituted(value) => value.to_model_text(),
    };
    let ctx = SubagentStopContext {
        request_id: scope.request_id.clone(),
        step: scope.step,
        call_id: call_id.clone(),
        agent: scope.me.clone(),
        subagent: subagent.clone(),
        result,
    };
    match observe(&caller.hooks.on_subagent_stop, &ctx).await {
        Ok(()) => outcome,
        Err(error) => ToolOutcome::Failed(ToolError::new(format!(
            "agent `{subagent}` ran, then {}",
            error.message
        ))),
    }
}
