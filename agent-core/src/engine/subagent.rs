//! Subagents: an agent offered to another as a tool. A call runs the subagent's own turn (its
//! own session, request id and hooks) on the call's `input` and returns its final answer; the
//! calling agent's before_tool_call and after_tool_call hooks apply to the call as to any tool,
//! and on_subagent_start / on_subagent_stop fire around the subagent's turn
//! (`subagent_call.rs`).
//!
//! A subagent's turn that suspends suspends the call to it: the subagent's session stays in its
//! store, and its waiting calls, with the hold on its session ([`SessionHold`]), pass up to the
//! caller's turn (`tool_call.rs`), which keeps them with its own session. When the caller's turn resumes, the call runs again: it writes
//! the answers to the subagent's waiting calls and resumes the subagent's turn, whose final
//! answer is the call's result. What passes between the call and the subagent's turn goes
//! through a task-local cell ([`Passing`](super::subagent_call::Passing)).

use std::sync::Arc;

use serde_json::{Value, json};

use super::FinishOnDrop;
use super::request::TurnRequest;
use super::runtime::AgentRuntime;
use super::subagent_call::{self, Resume, Suspension};
use super::turn::{SessionRef, run_turn};
use crate::hooks::{StopReason, TurnStatus};
use crate::session::Opened;
use crate::store::{CallAnswer, SessionHold};
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

/// The subagent's turn, on a session of its own, cancelled with the calling turn: a new one,
/// or the suspended one the call resumes. A turn that suspends leaves its suspension in the
/// call's cell and keeps its session.
async fn run(agent: Arc<AgentRuntime>, args: Value, ctx: ToolContext) -> Result<Value, ToolError> {
    let cell = subagent_call::cell();
    let resume = cell.as_ref().and_then(subagent_call::take_resume);
    let (session, request) = match resume {
        Some(resume) => {
            answer(&agent, &resume).await?;
            let mut request = TurnRequest::default().cancel(ctx.cancel.child());
            request.continuation = true;
            request.resume = true;
            // The hold the caller's session kept on the subagent's, or, where its store keeps
            // none, the one it kept counted for good.
            let session = match resume.hold {
                Some(hold) => hold,
                None => SessionHold::adopt(&agent.store, resume.session.into()),
            };
            (session, request)
        }
        None => {
            let Some(input) = args.get("input").and_then(Value::as_str) else {
                return Err(ToolError::new(format!(
                    "agent `{}` takes {{\"input\": \"...\"}}: the text to ask it",
                    agent.name
                )));
            };
            let request = TurnRequest::new(input).cancel(ctx.cancel.child());
            let session = SessionHold::retain(&agent.store, new_id("session").into());
            (session, request)
        }
    };
    let opened = agent.marks_sessions().then(|| Arc::new(Opened::default()));
    // Dropped before it ends (the calling turn cancelled, the call past its timeout), the
    // subagent's turn is cancelled and finishes on a task of its own, as a dropped
    // `Conversation::run` does: its rows settled, its hooks fired, its session then released.
    let cancel = request.cancel.clone();
    let runtime = agent.clone();
    let turn = Box::pin(async move {
        let turn = SessionRef {
            id: session.id(),
            opened: opened.as_ref(),
        };
        let result = run_turn(&runtime, turn, Box::new(request), None).await;
        (result, session)
    });
    let (result, session) = FinishOnDrop::new(turn, cancel).await;
    if let Some(cell) = &cell {
        subagent_call::spent(cell, result.total_usage);
    }
    match result.status {
        // A typed answer goes back as its JSON.
        TurnStatus::Completed => match result.output {
            Some(output) => Ok(output.json().clone()),
            // Asked for a typed answer, the subagent ended without a valid one (out of steps):
            // its rejected text is not an answer. Nor is no text at all (out of steps after a
            // step of tool calls, an empty reply): the caller's model would read an empty
            // success.
            None if agent.output.is_some() || result.text.trim().is_empty() => {
                let reason = result
                    .stop_reason
                    .filter(|reason| *reason != StopReason::Finished)
                    .map(|reason| format!(" ({reason})"))
                    .unwrap_or_default();
                let answer = match agent.output {
                    Some(_) => "a valid answer",
                    None => "an answer",
                };
                Err(ToolError::new(format!(
                    "agent `{}` ended without {answer}{reason}",
                    agent.name
                )))
            }
            None => Ok(Value::String(result.text.into())),
        },
        TurnStatus::Suspended => {
            let ids: Vec<&str> = result.pending.iter().map(|p| p.id.as_str()).collect();
            let why = format!(
                "agent `{}` suspended: its tool calls {} wait for an answer",
                agent.name,
                ids.join(", ")
            );
            if let Some(cell) = cell {
                // Held for the resume: the caller's session keeps the waiting calls, and the
                // hold on the subagent's session until it resumes it or is freed.
                let suspension = Suspension {
                    session,
                    pending: result.pending,
                };
                subagent_call::suspend(&cell, suspension);
            }
            Err(ToolError::new(why))
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

/// Gives the subagent's waiting calls the answers the caller's session kept for them (a tool
/// approved for good is approved in the subagent's session too).
async fn answer(agent: &AgentRuntime, resume: &Resume) -> Result<(), ToolError> {
    let store = &agent.store;
    let failed = |error: crate::store::StoreError| {
        ToolError::new(format!(
            "agent `{}`'s suspended turn cannot be resumed: its store failed: {error}",
            agent.name
        ))
    };
    let session = resume.session.as_str();
    let mut waiting = store.suspended(session).await.map_err(failed)?;
    if waiting.len() != resume.answers.len() {
        return Err(ToolError::new(format!(
            "agent `{}`'s suspended turn is gone (session `{session}` holds {} waiting calls, \
             not the {} answered): its store lost it, or it ended before this call's result \
             was stored",
            agent.name,
            waiting.len(),
            resume.answers.len()
        )));
    }
    let mut approved = Vec::new();
    for (call, answer) in waiting.iter_mut().zip(&resume.answers) {
        if *answer == CallAnswer::ApproveAlways {
            approved.push(crate::store::standing_name(
                &agent.name,
                &call.agent,
                &call.call.tool,
            ));
        }
        call.answer = Some(answer.clone());
    }
    if !approved.is_empty() {
        let mut tools = store.approved_tools(session).await.map_err(failed)?;
        for tool in approved {
            if !tools.contains(&tool) {
                tools.push(tool);
            }
        }
        store
            .set_approved_tools(session, tools)
            .await
            .map_err(failed)?;
    }
    store.set_suspended(session, waiting).await.map_err(failed)
}
