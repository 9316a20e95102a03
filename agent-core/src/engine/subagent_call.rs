//! A call to a subagent, as the calling turn's tool call sees it: on_subagent_start and
//! on_subagent_stop around it, and the task-local [`Passing`] cell through which the call and
//! the subagent's turn (`subagent.rs`) hand each other a suspended turn to resume, the
//! suspension it ended in and what it used.

use std::sync::{Arc, Mutex, PoisonError};

use super::plan::CallScope;
use super::runtime::ToolSlot;
use crate::hooks::tool_hooks::CallState;
use crate::hooks::{SubagentStartContext, SubagentStopContext, ToolOutcome, observe};
use crate::model::Usage;
use crate::store::{CallAnswer, PendingCall, SessionHold};
use crate::tool::ToolError;

tokio::task_local! {
    /// The cell of the call to a subagent running in this task (the innermost one).
    static PASSING: Arc<Mutex<Passing>>;
}

/// What passes between a call to a subagent and the subagent's turn.
#[derive(Default)]
pub(super) struct Passing {
    /// The suspended turn the call resumes, taken by the subagent's turn.
    resume: Option<Resume>,
    /// The suspension the subagent's turn ended in.
    suspended: Option<Suspension>,
    /// What the subagent's turn used, its own subagents' included.
    usage: Usage,
}

/// A subagent's suspended turn to resume, with the answers to its waiting calls (in order), and
/// the hold on its session that the caller's session kept, if its store keeps holds.
pub(crate) struct Resume {
    pub(crate) session: String,
    pub(crate) answers: Vec<CallAnswer>,
    pub(crate) hold: Option<SessionHold>,
}

/// A subagent's turn that suspended: the hold on its session and its waiting calls.
pub(crate) struct Suspension {
    pub(crate) session: SessionHold,
    pub(crate) pending: Vec<PendingCall>,
}

/// The cell for one call to a subagent, resuming `resume` when given.
pub(super) fn passing(resume: Option<Resume>) -> Arc<Mutex<Passing>> {
    Arc::new(Mutex::new(Passing {
        resume,
        suspended: None,
        usage: Usage::default(),
    }))
}

/// Runs the call's tool future with its cell. (A plain function, not twice the size of
/// `call`: see `run_scope::working`.)
pub(super) fn scoped<F: Future>(
    cell: Arc<Mutex<Passing>>,
    call: F,
) -> impl Future<Output = F::Output> {
    PASSING.scope(cell, call)
}

/// The cell of the call to a subagent that runs in this task, if one does (the subagent's
/// turn, run as that call's tool).
pub(super) fn cell() -> Option<Arc<Mutex<Passing>>> {
    PASSING.try_with(Arc::clone).ok()
}

/// The suspended turn the call resumes, taken once by the subagent's turn.
pub(super) fn take_resume(cell: &Arc<Mutex<Passing>>) -> Option<Resume> {
    cell.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .resume
        .take()
}

/// Leaves the suspension the subagent's turn ended in, for the call to pass up.
pub(super) fn suspend(cell: &Arc<Mutex<Passing>>, suspension: Suspension) {
    cell.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .suspended = Some(suspension);
}

/// Leaves what the subagent's turn used (`TurnResult::total_usage`), for the call to count.
pub(super) fn spent(cell: &Arc<Mutex<Passing>>, usage: Usage) {
    cell.lock().unwrap_or_else(PoisonError::into_inner).usage = usage;
}

/// Adds what the subagent's turn left in the cell to the calling turn's `total`.
pub(super) fn count_spent(cell: &Arc<Mutex<Passing>>, total: &Mutex<Usage>) {
    let usage = cell.lock().unwrap_or_else(PoisonError::into_inner).usage;
    total
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .add(&usage);
}

/// The suspension the subagent's turn left in the cell, if it suspended.
pub(super) fn suspension(cell: &Arc<Mutex<Passing>>) -> Option<Suspension> {
    cell.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .suspended
        .take()
}

/// on_subagent_start, when `slot` is a subagent; a failing fail-closed hook keeps the subagent
/// from running (the call fails with why).
pub(super) async fn started(
    scope: &CallScope<'_>,
    slot: &ToolSlot,
    state: &CallState<'_>,
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
