//! Handoffs in a turn: before_handoff deciding each transfer call, and the switch to the target
//! agent once the step is recorded. An agent's handoffs (its transfer tools and their targets)
//! are in `runtime.rs`, what a turn holds of its team in `reach.rs`, and the history a target
//! sees in `handoff_history.rs`.

use std::sync::Arc;
use std::time::Duration;

use tracing::Instrument;

use super::inherit::Inherited;
use super::plan::{CallScope, TurnPlan, TurnTools};
use super::reach::Reach;
use super::runtime::AgentRuntime;
use super::state::Turn;
use super::tool_call::{CallResult, rejected};
use crate::hooks::{HandoffContext, HandoffDecision, ToolOutcomeKind, ToolResultRecord, each};
use crate::message::ToolCall;
use crate::util::catch_panic;

/// Decides one transfer call: its arguments checked against the handoff's input type (when
/// it has one; a call they do not fit is rejected, as a tool's), then before_handoff (the
/// current agent's hooks, failing closed), without any tool-call hook. `first` is false for
/// a second transfer call in one step, which is refused without asking (one handoff per
/// step).
pub(super) async fn decide(
    scope: &CallScope<'_>,
    call: &ToolCall,
    index: usize,
    first: bool,
) -> CallResult {
    let from = scope.tools.agent;
    let slot = &from.handoffs[index];
    let to = &slot.to;
    if scope.reach.target(slot).is_none() {
        let why = format!(
            "agent `{to}` cannot take the turn: it is not linked to `{}` (or no longer exists)",
            from.name
        );
        return rejected(call, why);
    }
    let span = tracing::info_span!(
        "handoff",
        otel.name = %format_args!("handoff {} -> {to}", from.name),
        gen_ai.agent.name = %from.name,
        gen_ai.tool.call.id = %call.id,
    );
    let decision = if first {
        // Arguments that do not fit the input type are the model's mistake, answered as a
        // tool's bad arguments are: it reads which field, and the agent stays.
        let input = match &slot.input {
            None => None,
            Some(input) => match catch_panic(|| input.read(&call.name, &call.arguments)) {
                Ok(Ok(input)) => Some(input),
                Ok(Err(error)) => return rejected(call, error.to_string()),
                Err(panic) => {
                    let why = format!(
                        "reading the arguments of transfer tool `{}` panicked: {panic}",
                        call.name
                    );
                    return rejected(call, why);
                }
            },
        };
        let ctx = HandoffContext {
            agent: scope.me.clone(),
            request_id: scope.request_id.clone(),
            step: scope.step,
            call_id: call.id.to_string(),
            tool: call.name.to_string(),
            from: from.name.clone(),
            to: to.clone(),
            input,
        };
        let mut decision = HandoffDecision::Allow;
        let asked = each(&from.hooks.before_handoff, &ctx, |out| {
            if decision == HandoffDecision::Allow {
                decision = out;
            }
        })
        .instrument(span)
        .await;
        match asked {
            Ok(()) => decision,
            Err(error) => HandoffDecision::Deny(Some(format!(
                "the handoff from `{}` to `{to}` was denied: {error}",
                from.name
            ))),
        }
    } else {
        HandoffDecision::Deny(Some(format!(
            "only one handoff per step: `{}` was not taken",
            call.name
        )))
    };
    let (content, outcome, handoff) = match decision {
        HandoffDecision::Allow => (
            format!("Transferred to agent `{to}`."),
            ToolOutcomeKind::HandedOff,
            Some(index),
        ),
        HandoffDecision::Deny(reason) => (
            reason.unwrap_or_else(|| {
                format!("the handoff from `{}` to `{to}` was denied", from.name)
            }),
            ToolOutcomeKind::Blocked,
            None,
        ),
    };
    CallResult {
        record: ToolResultRecord {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content: content.into(),
            is_error: false,
            outcome,
            duration: Duration::ZERO,
        },
        error: None,
        dropped: false,
        handoff,
        pending: Vec::new(),
        via: None,
    }
}

impl<'a> Turn<'a> {
    /// The target of the current agent's handoff `index` takes over the rest of the turn: its
    /// model, instructions, tools, step limit, settings and step hooks, on the history its
    /// filter keeps. The turn's frame (session, store, run and message hooks) stays the entry
    /// agent's. Run hooks see the current agent end, the handoff and the target start, and the
    /// stream API a `Handoff` event. Returns the target; `None` (nothing changes) when the turn
    /// does not hold it, which `decide` has already answered.
    pub(super) async fn hand_off(
        &mut self,
        plan: &mut TurnPlan<'a>,
        index: usize,
    ) -> Option<&'a AgentRuntime> {
        let from: &'a AgentRuntime = self.current;
        let reach: &'a Reach = self.reach;
        let slot = &from.handoffs[index];
        let target = reach.target(slot)?;
        tracing::info!(from = %from.name, to = %target.name, "handoff");
        if let Some(run) = &self.run {
            let output = self.outcome.steps.last().map_or("", |s| s.text.as_str());
            run.fire(&self.me, "on_agent_end", |hooks, agent| {
                hooks.on_agent_end(agent, output)
            });
            run.fire(&self.me, "on_handoff", |hooks, agent| {
                hooks.on_handoff(agent, &target.name)
            });
        }
        self.me = self.me.hand_to(&target.name);
        if let Some(run) = &self.run {
            run.fire(&self.me, "on_agent_start", |hooks, agent| {
                hooks.on_agent_start(agent)
            });
        }
        plan.set_history(Arc::new(slot.history.apply(&plan.messages)));
        self.inherited = if slot.inherit {
            Inherited::passed_on(from, &self.inherited)
        } else {
            Arc::default()
        };
        plan.model = target.model.clone();
        plan.system = target.instructions.clone();
        plan.tools = TurnTools {
            agent: target,
            extra: Vec::new(),
            active: None,
            step_active: None,
        };
        plan.tool_choice = Default::default();
        plan.max_steps = target.max_steps.max(1);
        plan.settings = target.settings.clone();
        plan.provider_options = target.provider_options.clone();
        self.current = target;
        let (from, to) = (from.name.clone(), target.name.clone());
        self.emit(super::TurnEvent::Handoff { from, to }).await;
        Some(target)
    }
}
