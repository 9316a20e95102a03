//! Handoffs: the transfer tools an agent offers its model, before_handoff deciding each
//! transfer call, and the switch to the target agent once the step is recorded.

use std::fmt;
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use serde_json::json;
use tracing::Instrument;

use super::inherit::Inherited;
use super::plan::{CallScope, TurnPlan, TurnTools};
use super::runtime::AgentRuntime;
use super::state::Turn;
use super::tool_call::{CallResult, rejected};
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
    /// The last `n` messages (fewer when the cut would separate a result from its call),
    /// after the latest user message when none of them is one: the target always sees what it
    /// is asked (and a provider refuses a request with no message).
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
                let is_user = |message: &Message| matches!(message, Message::User { .. });
                let asked = match messages[start..].iter().any(is_user) {
                    true => None,
                    false => messages[..start].iter().rev().find(|m| is_user(m)),
                };
                asked
                    .into_iter()
                    .chain(&messages[start..])
                    .cloned()
                    .collect()
            }
            HandoffHistory::Custom(filter) => filter(messages),
        };
        crate::message::paired(kept)
    }
}

/// The agent a handoff goes to.
pub(crate) enum HandoffTarget {
    /// An agent built before the one handing off, held by it.
    Built(Arc<AgentRuntime>),
    /// A teammate named by the handoff, linked when the team is built (`link`). Held weakly:
    /// teammates may hand off to each other both ways, and strong links would make a cycle
    /// that is never freed; the team holds its agents instead (`TeamAgents`).
    Linked(OnceLock<Weak<AgentRuntime>>),
}

/// A handoff an agent may make: its target, the transfer tool the model sees and the history
/// filter.
pub(crate) struct HandoffSlot {
    pub(crate) target: HandoffTarget,
    /// The target's name.
    pub(crate) to: Arc<str>,
    pub(crate) spec: Arc<ToolSpec>,
    pub(crate) history: HandoffHistory,
    /// Whether the target inherits the handing agent's untyped tool hooks.
    pub(crate) inherit: bool,
}

/// What a handoff's transfer tool is made from, besides its target.
pub(crate) struct TransferTool {
    pub(crate) tool_name: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) history: HandoffHistory,
    pub(crate) inherit: bool,
}

impl HandoffSlot {
    /// The transfer tool of a handoff to the agent named `to` (whose description is
    /// `what`): `transfer_to_<name>` unless named, with a description naming the target (and
    /// what it does) unless given, and no arguments.
    pub(crate) fn new(
        target: HandoffTarget,
        to: Arc<str>,
        what: Option<&str>,
        tool: TransferTool,
    ) -> HandoffSlot {
        let name = tool
            .tool_name
            .unwrap_or_else(|| format!("transfer_to_{to}"));
        let description = tool.description.unwrap_or_else(|| match what {
            Some(what) => format!("Hand the conversation to agent `{to}`: {what}"),
            None => format!("Hand the conversation to agent `{to}`."),
        });
        let spec = ToolSpec {
            name,
            description,
            parameters: json!({"type": "object", "properties": {}, "additionalProperties": false}),
        };
        HandoffSlot {
            target,
            to,
            spec: Arc::new(spec),
            history: tool.history,
            inherit: tool.inherit,
        }
    }
}

/// Links every named handoff of a team's agents to the agent of its name (the builder checked
/// that each name is one agent's).
pub(crate) fn link(team: &[Arc<AgentRuntime>]) {
    for agent in team {
        for slot in &agent.handoffs {
            let HandoffTarget::Linked(link) = &slot.target else {
                continue;
            };
            if let Some(target) = team.iter().find(|target| target.name == slot.to) {
                // The agents were just built: nothing linked them before.
                let _ = link.set(Arc::downgrade(target));
            }
        }
    }
}

/// The agents a turn can hand off to, held while it runs (a linked target is held only weakly
/// by its teammates), so that the turn can borrow whichever it switches to.
#[derive(Default)]
pub(super) struct Reach {
    held: Vec<Arc<AgentRuntime>>,
}

impl Reach {
    /// Every agent reachable from `entry` through handoffs, each once.
    pub(super) fn of(entry: &AgentRuntime) -> Reach {
        let mut reach = Reach::default();
        reach.visit(entry);
        let mut next = 0;
        while let Some(agent) = reach.held.get(next).cloned() {
            reach.visit(&agent);
            next += 1;
        }
        reach
    }

    fn visit(&mut self, agent: &AgentRuntime) {
        for slot in &agent.handoffs {
            let target = match &slot.target {
                HandoffTarget::Built(target) => Some(target.clone()),
                HandoffTarget::Linked(link) => link.get().and_then(Weak::upgrade),
            };
            if let Some(target) = target
                && !self.held.iter().any(|held| Arc::ptr_eq(held, &target))
            {
                self.held.push(target);
            }
        }
    }

    /// The target of `slot`: `None` when it is a teammate that was never linked or no longer
    /// lived when the turn started.
    pub(super) fn target<'a>(&'a self, slot: &'a HandoffSlot) -> Option<&'a AgentRuntime> {
        match &slot.target {
            HandoffTarget::Built(target) => Some(target),
            HandoffTarget::Linked(link) => {
                let link = link.get()?;
                let held = self
                    .held
                    .iter()
                    .find(|held| Weak::as_ptr(link) == Arc::as_ptr(held));
                held.map(|held| &**held)
            }
        }
    }
}

/// How many more steps each agent of a turn may run: an agent's step limit bounds all the
/// steps it runs in the turn, however often handoffs give it the turn back, so agents handing
/// a turn back and forth stop.
pub(super) struct StepAllowance<'a> {
    /// Each agent that has run, with the steps it has left.
    left: Vec<(&'a AgentRuntime, usize)>,
    /// The step the current agent took over at.
    from: usize,
}

impl<'a> StepAllowance<'a> {
    /// The first agent runs from step 0 with `limit` steps.
    pub(super) fn new(agent: &'a AgentRuntime, limit: usize) -> Self {
        StepAllowance {
            left: vec![(agent, limit)],
            from: 0,
        }
    }

    /// `from` handed the turn to `to` after step `step`: the turn's new step limit, `to`
    /// running the steps it has left (`limit`, the first time it takes the turn).
    pub(super) fn hand_off(
        &mut self,
        from: &'a AgentRuntime,
        to: &'a AgentRuntime,
        limit: usize,
        step: usize,
    ) -> usize {
        let ran = step + 1 - self.from;
        if let Some((_, left)) = self.left.iter_mut().find(|(a, _)| std::ptr::eq(*a, from)) {
            *left = left.saturating_sub(ran);
        }
        self.from = step + 1;
        let left = match self.left.iter().find(|(a, _)| std::ptr::eq(*a, to)) {
            Some(&(_, left)) => left,
            None => {
                self.left.push((to, limit));
                limit
            }
        };
        step + 1 + left
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
        let ctx = HandoffContext {
            agent: scope.me.clone(),
            request_id: scope.request_id.clone(),
            step: scope.step,
            call_id: call.id.to_string(),
            tool: call.name.to_string(),
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
