//! after_tool_call_success / after_tool_call_failure: the turn-wide hooks that may replace a
//! call's result, or drop the call from history, before the result is stored.

use crate::hooks::{
    ModelResult, ToolOutcomeKind, ToolResultContext, ToolResultDecision, TurnError,
};
use crate::hooks::{TurnHooks, chain};
use crate::message::ToolCall;
use crate::text::Text;

use super::plan::CallScope;

/// A call's result after its success or failure hooks.
pub(super) struct Checked {
    pub(super) content: Text,
    pub(super) is_error: bool,
    /// A hook replaced the result.
    pub(super) replaced: bool,
    /// A hook dropped the call from history.
    pub(super) dropped: bool,
    /// A hook whose `on_error` says fail closed failed: the turn fails after this step.
    pub(super) error: Option<TurnError>,
}

impl Checked {
    /// The result as the call gave it, no hook having seen it.
    pub(super) fn unchanged(content: Text, is_error: bool) -> Checked {
        Checked {
            content,
            is_error,
            replaced: false,
            dropped: false,
            error: None,
        }
    }

    /// The result as the model reads it, for after_tool_call and extensions (its text shared,
    /// not copied).
    pub(super) fn model_result(&self) -> ModelResult {
        ModelResult {
            content: self.content.clone(),
            is_error: self.is_error,
            replaced: self.replaced,
            dropped: self.dropped,
        }
    }
}

/// Whether the agent has success hooks (for a valid result) or failure hooks (for an error):
/// without them a call's result is not handed to [`check`], and no future is made for it (the
/// slope of `whole_turn_calls_agent` in agent-providers/benches/stream.rs).
pub(super) fn wanted(scope: &CallScope<'_>, is_error: bool) -> bool {
    let hooks = &scope.tools.agent.hooks;
    if is_error {
        !hooks.after_tool_call_failure.is_empty()
    } else {
        !hooks.after_tool_call_success.is_empty()
    }
}

/// Whether the agent has success or failure hooks: its calls' results may wait on them.
pub(super) fn wanted_any(hooks: &TurnHooks) -> bool {
    !hooks.after_tool_call_success.is_empty() || !hooks.after_tool_call_failure.is_empty()
}

/// Runs the success hooks (the model got a valid result) or the failure hooks (an error); see
/// [`wanted`].
pub(super) async fn check(
    scope: &CallScope<'_>,
    call: &ToolCall,
    outcome: ToolOutcomeKind,
    content: Text,
    is_error: bool,
) -> Checked {
    let hooks = &scope.tools.agent.hooks;
    let mut checked = Checked::unchanged(content, is_error);
    let mut ctx = ToolResultContext {
        agent: scope.me.clone(),
        request_id: scope.request_id.clone(),
        step: scope.step,
        call: call.clone(),
        outcome,
        content: checked.content.to_string(),
        is_error,
    };
    let (mut dropped, mut replaced) = (false, false);
    let apply = |ctx: &mut ToolResultContext, decision| match decision {
        ToolResultDecision::Keep => true,
        ToolResultDecision::Replace { content, is_error } => {
            ctx.content = content;
            ctx.is_error = is_error;
            replaced = true;
            true
        }
        ToolResultDecision::Drop => {
            dropped = true;
            false
        }
    };
    let result = if is_error {
        chain(&hooks.after_tool_call_failure, &mut ctx, apply).await
    } else {
        chain(&hooks.after_tool_call_success, &mut ctx, apply).await
    };
    checked.content = ctx.content.into();
    checked.is_error = ctx.is_error;
    checked.replaced = replaced;
    checked.dropped = dropped;
    checked.error = result.err();
    checked
}
