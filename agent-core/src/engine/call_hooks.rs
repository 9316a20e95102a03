//! A tool call's hooks: the before_tool_call chain (the merge rule, awaited or, for sync
//! hooks, on the spot) and the after_tool_call observers (the same two ways).

use std::sync::Arc;
use std::time::Duration;

use tracing::Instrument;

use crate::hooks::tool_hooks::{AfterHook, BeforeHook, CallState, ErasedDecision, ToolHookMeta};
use crate::hooks::{self, HookFailure, ToolOutcome, TurnError};
use crate::message::ToolCall;
use crate::tool::ToolError;
use crate::util::catch_unwind;

/// What the before_tool_call chain decided.
pub(super) enum Gate {
    /// Run the tool (with the input the chain left).
    Run,
    /// Run it once a person approves (the first reason a hook gave).
    Ask(Option<String>),
    /// Do not run it here: its result comes from outside the turn.
    Defer(Option<String>),
    /// A hook decided the outcome (blocked, substituted, or failed closed): it does not run.
    Decided(ToolOutcome),
}

/// The before_tool_call chain (merge rule: each hook sees the input the previous one left;
/// `Block`, `Substitute` and `Defer` stop it, `Ask` is kept while the chain goes on).
pub(super) async fn gate<'h>(
    hooks: impl Iterator<Item = &'h Arc<dyn BeforeHook>>,
    state: &mut CallState<'_>,
    call: &ToolCall,
) -> Gate {
    let mut asked: Option<Option<String>> = None;
    for hook in hooks {
        let meta = hook.meta();
        let span = hooks::span("before_tool_call", &meta.name);
        // A sync hook runs on the spot in its span: no boxed future (`BeforeHook::run_now`).
        let run = match span.in_scope(|| hook.run_now(state)) {
            Some(run) => run,
            None => catch_unwind(hook.run(state))
                .instrument(span)
                .await
                .unwrap_or_else(|panic| Err(HookFailure::Panic(panic))),
        };
        if let Some(gate) = decided(run, meta, state, call, &mut asked) {
            return gate;
        }
    }
    Gate::asked(asked)
}

/// [`gate`] on the spot, for sync hooks
/// ([`ToolSlot::now`](super::runtime::ToolSlot::now)).
// Always inlined into its one caller, as `observe_now` is: called from inside the closure that
// catches a panic as the engine drops a hook's decision, LLVM left both out of line, +112 and
// +137 instructions a call (`whole_turn_calls_agent` in agent-providers/benches/stream.rs).
#[inline(always)]
pub(super) fn gate_now<'h>(
    hooks: impl Iterator<Item = &'h Arc<dyn BeforeHook>>,
    state: &mut CallState<'_>,
    call: &ToolCall,
) -> Gate {
    let mut asked: Option<Option<String>> = None;
    for hook in hooks {
        let meta = hook.meta();
        let span = hooks::span("before_tool_call", &meta.name);
        let run = span
            .in_scope(|| hook.run_now(state))
            .unwrap_or_else(|| Err(not_sync(meta)));
        if let Some(gate) = decided(run, meta, state, call, &mut asked) {
            return gate;
        }
    }
    Gate::asked(asked)
}

/// What one before_tool_call hook's run does to the chain: `Some` when it ends it.
fn decided(
    run: Result<ErasedDecision, HookFailure>,
    meta: &ToolHookMeta,
    state: &mut CallState<'_>,
    call: &ToolCall,
    asked: &mut Option<Option<String>>,
) -> Option<Gate> {
    match run {
        Ok(ErasedDecision::Allow) => None,
        Ok(ErasedDecision::Modify(input)) => {
            state.input_changed(input);
            None
        }
        Ok(ErasedDecision::Block(reason)) => {
            let reason =
                reason.unwrap_or_else(|| format!("tool `{}` was blocked by a hook", call.name));
            Some(Gate::Decided(ToolOutcome::Blocked(reason)))
        }
        Ok(ErasedDecision::Substitute(output)) => {
            Some(Gate::Decided(ToolOutcome::Substituted(output)))
        }
        Ok(ErasedDecision::Ask(reason)) => {
            *asked = Some(asked.take().flatten().or(reason));
            None
        }
        Ok(ErasedDecision::Defer(reason)) => Some(Gate::Defer(reason)),
        Ok(ErasedDecision::Misfit(why)) => {
            let message = format!(
                "tool `{}` did not run: hook `{}` modified its input to arguments it does not \
                 take: {why}",
                call.name, meta.name
            );
            tracing::warn!(hook.event = "before_tool_call", hook.name = %meta.name, "{message}");
            Some(Gate::Decided(ToolOutcome::Failed(ToolError::new(message))))
        }
        Err(failure) => {
            // Failing closed, the call does not run: the model reads why.
            let error =
                hooks::settle("before_tool_call", &meta.name, meta.policy, &failure).err()?;
            let message = format!("tool `{}` did not run: {}", call.name, error.message);
            Some(Gate::Decided(ToolOutcome::Failed(ToolError::new(message))))
        }
    }
}

impl Gate {
    /// The end of a chain no hook stopped: ask (the first reason given) if one asked, else run.
    fn asked(asked: Option<Option<String>>) -> Gate {
        match asked {
            Some(reason) => Gate::Ask(reason),
            None => Gate::Run,
        }
    }
}

/// A hook a call run on the spot found async:
/// [`ToolSlot::now`](super::runtime::ToolSlot::now) rules that out, so this is the engine's
/// error, reported as the hook's failure rather than a panic.
#[cold]
fn not_sync(meta: &ToolHookMeta) -> HookFailure {
    HookFailure::Error(format!("internal: hook `{}` is not sync", meta.name))
}

/// after_tool_call: observers of every outcome; a fail-closed one that fails returns the
/// error that fails the turn after this step.
pub(super) async fn observe_outcome<'h>(
    hooks: impl Iterator<Item = &'h Arc<dyn AfterHook>>,
    state: &mut CallState<'_>,
    outcome: ToolOutcome,
    duration: Duration,
) -> Option<TurnError> {
    let outcome = Arc::new(outcome);
    for hook in hooks {
        let meta = hook.meta();
        let span = hooks::span("after_tool_call", &meta.name);
        // A sync hook runs on the spot in its span, as in `gate`.
        let run = match span.in_scope(|| hook.run_now(state, &outcome, duration)) {
            Some(run) => run,
            None => catch_unwind(hook.run(state, &outcome, duration))
                .instrument(span)
                .await
                .unwrap_or_else(|panic| Err(HookFailure::Panic(panic))),
        };
        if let Some(failed) = failed_closed(run, meta) {
            return Some(failed);
        }
    }
    None
}

/// [`observe_outcome`] on the spot, for sync hooks
/// ([`ToolSlot::now`](super::runtime::ToolSlot::now)). Always inlined, as [`gate_now`].
#[inline(always)]
pub(super) fn observe_now<'h>(
    hooks: impl Iterator<Item = &'h Arc<dyn AfterHook>>,
    state: &mut CallState<'_>,
    outcome: ToolOutcome,
    duration: Duration,
) -> Option<TurnError> {
    let outcome = Arc::new(outcome);
    for hook in hooks {
        let meta = hook.meta();
        let span = hooks::span("after_tool_call", &meta.name);
        let run = span
            .in_scope(|| hook.run_now(state, &outcome, duration))
            .unwrap_or_else(|| Err(not_sync(meta)));
        if let Some(failed) = failed_closed(run, meta) {
            return Some(failed);
        }
    }
    None
}

/// The error that fails the turn when an after_tool_call hook failed closed.
fn failed_closed(run: Result<(), HookFailure>, meta: &ToolHookMeta) -> Option<TurnError> {
    let failure = run.err()?;
    hooks::settle("after_tool_call", &meta.name, meta.policy, &failure).err()
}
