//! Handoffs: the transfer tools an agent offers its model, before_handoff deciding each
//! transfer call, and the switch to the target agent once the step is recorded.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tracing::Instrument;

use super::inherit::Inherited;
use super::plan::{CallScope, TurnPlan, TurnTools};
use super::runtime::AgentRuntime;
use super::state::Turn;
use super::tool_call::CallResult;
use crate::hooks::{HandoffContext, HandoffDecision, ToolOutcomeKind, ToolResultRecord, each};
use crate::message::{Message, ToolCall};
use crate::tool::ToolSpec;

/// What history the target of a handoff sees on its first step (the session stores everything
/// either way).
#[derive(Clone, Default)]
pub enum HandoffHistory {
    /// Everything so far, the transfer call and its result included (the default).
    #[default]
    All,
    /// No earlier history: only this turn's input (the last user message).
    Input,
    /// The last `n` messages (fewer when the cut would separate a result from its call).
    Last(usize),
    /// What this function returns from everything so far. Calls left without a result (or
    /// results without a call) are dropped from what it returns.
    Custom(HistoryFilter),
}

/// A function choosing, from everything so far, the messages a handoff's target sees.
pub type HistoryFilter = Arc<dyn Fn(&[Message]) -> Vec<Message> + Send + Sync>;

impl fmt::Debug for HandoffHistory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandoffHistory::All => f.write_str("All"),
            HandoffHistory::Input => f.write_str("Input"),
            HandoffHistory::Last(n) => write!(f, "Last({n})"),
            HandoffHistory::Custom(_) => f.write_str("Custom(..)"),
        }
    }
}

impl HandoffHistory {
    /// The messages the target sees, from everything so far.
    pub(crate) fn apply(&self, messages: &[Message]) -> Vec<Message> {
        let kept = match self {
            HandoffHistory::All => return messages.to_vec(),
            HandoffHistory::Input => messages
                .iter()
                .rev()
                .find(|message| matches!(message, Message::User { .. }))
                .cloned()
                .into_iter()
                .collect(),
            HandoffHistory::Last(n) => {
                let mut start = messages.len().saturating_sub(*n);
                // A result whose call was cut off would be invalid first in a history.
                while messages
                    .get(start)
                    .is_some_and(|message| matches!(message, Message::Tool { .. }))
                {
                    start += 1;
                }
                messages[start..].to_vec()
            }
            HandoffHistory::Custom(filter) => filter(messages),
        };
        crate::message::paired(kept)
    }
}

/// A handoff an agent may make: its target, the transfer tool the model sees and the history
/// filter.
pub(crate) struct HandoffSlot {
    pub(crate) target: Arc<AgentRuntime>,
    pub(crate) spec: Arc<ToolSpec>,
    pub(crate) history: HandoffHistory,
    /// Whether the target inherits the handing agent's untyped tool hooks.
    pub(crate) inherit: bool,
}

impl HandoffSlot {
    /// The transfer tool of a handoff to `target`: `transfer_to_<name>` unless named, with a
    /// description naming the target (and what it does) unless given, and no arguments.
    pub(crate) fn new(
        target: Arc<AgentRuntime>,
        tool_name: Option<String>,
        description: Option<String>,
        history: HandoffHistory,
        inherit: bool,
    ) -> HandoffSlot {
        let name = tool_name.unwrap_or_else(|| format!("transfer_to_{}", target.name));
        let description = description.unwrap_or_else(|| match &target.description {
            Some(what) => format!("Hand the conversation to agent `{}`: {what}", target.name),
            None => format!("Hand the conversation to agent `{}`.", target.name),
        });
        let spec = ToolSpec {
            name,
            description,
            parameters: json!({"type": "object", "properties": {}, "additionalProperties": false}),
        };
        HandoffSlot {
            target,
            spec: Arc::new(spec),
            history,
            inherit,
        }
    }
}

/// Decides one transfer call: before_handoff (the current agent's hooks, failing closed),
/// without any tool-call hook. `first` is false for a second transfer call in one step, which
/// is refused without asking (one handoff per step).
pub(super) async fn decide(
    scope: &CallScope<'_>,
    call: &ToolCall,
    index: usize,
    first: bool,
) -> CallResult {
    let from = scope.tools.agent;
    let slot = &from.handoffs[index];
    let to = &slot.target.name;
    let span = tracing::info_span!(
        "handoff",
        otel.name = %format_args!("handoff {} -> {to}", from.name),
        gen_ai.agent.name = %from.name,
        gen_ai.tool.call.id = %call.id,
    );
    let decision = if first {
        let ctx = HandoffContext {
            agent: scope.me.clone(),
            request_id: scope.request_id.clone(),
            step: scope.step,
            call_id: call.id.clone(),
            tool: call.name.clone(),
            from: from.name.clone(),
            to: to.clone(),
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
            content,
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
    /// agent's.
    pub(super) fn hand_off(&mut self, plan: &mut TurnPlan<'a>, index: usize) {
        let from: &'a AgentRuntime = self.current;
        let slot = &from.handoffs[index];
        let target: &'a AgentRuntime = &slot.target;
        tracing::info!(from = %from.name, to = %target.name, "handoff");
        plan.messages = slot.history.apply(&plan.messages);
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
    }
}
