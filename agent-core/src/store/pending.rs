//! Tool calls a suspended turn left waiting for an answer from outside the turn (a person's
//! approval), and the answers given to them: kept with the session, so a suspension survives
//! the process.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Why a call waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum PendingKind {
    /// It runs once a person approves it (`#[tool(needs_approval)]`, or a before_tool_call
    /// hook's `ToolCallDecision::Ask`).
    Approval,
    /// Its tool runs on the client ([`ClientTool`](crate::ClientTool)), which submits the
    /// result.
    Client,
    /// A before_tool_call hook deferred it (`ToolCallDecision::Defer`): its result comes from
    /// outside the turn.
    Deferred,
}

impl PendingKind {
    /// The kind's name: `approval`, `client` or `deferred`.
    pub fn as_str(&self) -> &'static str {
        match self {
            PendingKind::Approval => "approval",
            PendingKind::Client => "client",
            PendingKind::Deferred => "deferred",
        }
    }

    /// Whether a call of this kind waits for a result (from a client or from outside the
    /// turn) rather than for an approval.
    pub fn takes_result(&self) -> bool {
        !matches!(self, PendingKind::Approval)
    }
}

impl fmt::Display for PendingKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A tool call a suspended turn left waiting: [`TurnResult::pending`](crate::TurnResult::pending)
/// lists them, and the conversation's answering methods take its `id`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PendingCall {
    /// The model's id for the call.
    pub id: String,
    /// The tool called.
    pub tool: String,
    /// The arguments the model sent, as JSON: what an approval approves.
    pub arguments: Value,
    /// What the call would run with as things stand, when a before_tool_call hook's `Modify`
    /// changed the model's arguments before the call came to wait (a hook that redacts or
    /// narrows them, then one that asks): show these to whoever approves. `None` when they
    /// are the model's. The gates run again when the turn resumes, so what runs is what they
    /// decide then, from the model's arguments (or from [`CallAnswer::ApproveWith`]'s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified_arguments: Option<Value>,
    /// Why it waits, as a person reads it.
    pub reason: String,
    /// What it waits for.
    pub kind: PendingKind,
    /// Hex SHA-256 of the tool name and the canonical arguments: an answer given with it
    /// ([`Conversation::answer`](crate::Conversation::answer)) answers exactly this call.
    pub fingerprint: String,
    /// When the agent has an approval key
    /// ([`AgentBuilder::approval_key`](crate::AgentBuilder::approval_key)): hex HMAC-SHA256 of
    /// the session, the call's assistant row, its id, tool and fingerprint, which an answer must
    /// carry. Only the key's holder can make one, and it answers only this suspension of this
    /// call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// The subagents the call waits in, outermost first: empty for the agent's own call;
    /// `["worker"]` for a call of the subagent `worker`, whose turn suspended inside the
    /// agent's call to it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub path: Vec<String>,
}

/// An answer to a [`PendingCall`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "answer")]
#[non_exhaustive]
pub enum CallAnswer {
    /// Run the call with the arguments the model sent.
    Approve,
    /// Run the call with these arguments instead (checked against the tool's arguments type
    /// when given).
    ApproveWith {
        /// The arguments to run with.
        arguments: Value,
    },
    /// Run the call with the arguments the model sent, and from now on every call of its tool
    /// in this session without asking (a standing approval, until revoked).
    ApproveAlways,
    /// Do not run it; the model reads the reason as the call's result.
    Deny {
        /// Why, as the model reads it.
        reason: String,
    },
    /// The call's result, from the client or from outside the turn (client and deferred
    /// calls): the model reads it as the call's result (a string as itself, anything else as
    /// JSON).
    Result {
        /// The output.
        output: Value,
        /// Whether it is an error the model reads.
        is_error: bool,
    },
}

impl CallAnswer {
    /// Whether the answer lets the call run.
    pub fn approves(&self) -> bool {
        matches!(
            self,
            CallAnswer::Approve | CallAnswer::ApproveWith { .. } | CallAnswer::ApproveAlways
        )
    }
}

impl fmt::Display for CallAnswer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallAnswer::Approve => f.write_str("approved"),
            CallAnswer::ApproveWith { arguments } => write!(f, "approved with {arguments}"),
            CallAnswer::ApproveAlways => f.write_str("approved for the session"),
            CallAnswer::Deny { reason } => write!(f, "denied: {reason}"),
            CallAnswer::Result {
                output,
                is_error: false,
            } => write!(f, "result {output}"),
            CallAnswer::Result { output, .. } => write!(f, "error result {output}"),
        }
    }
}

/// A waiting call as the store keeps it: the call, where it sits in the session, and its answer
/// once given.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SuspendedCall {
    /// The call.
    pub call: PendingCall,
    /// The row of the assistant message that holds the call.
    pub row: i64,
    /// The step (of the turn that suspended) whose reply made the call.
    pub step: usize,
    /// The agent that made the call: the agent asked, or the target of a handoff, which the
    /// resumed turn hands to again before it runs the call.
    #[serde(default)]
    pub agent: String,
    /// The agent a transfer call of the same step handed the turn to (its handoff was allowed),
    /// which the resumed turn hands to once the waiting calls are answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff: Option<String>,
    /// The answer, once given.
    pub answer: Option<CallAnswer>,
    /// The execution record: when (µs since the Unix epoch) the approved call started to
    /// run, stored before the tool runs. Its result row, stored once it ran, completes it. A
    /// call started without a result was interrupted (its process stopped mid-run): a resume
    /// runs it again only when its tool is idempotent.
    #[serde(default)]
    pub started_at: Option<i64>,
    /// For a call waiting in a subagent's suspended turn: the agent's call to that subagent,
    /// which the resumed turn runs again to resume the subagent's turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<SubagentTurn>,
    /// The answer a call of one of the agent's stop tools (`AgentBuilder::stop_at_tools`) gave
    /// in the step before it suspended, kept on the step's first waiting call: the resumed turn
    /// ends with it once the waiting calls are answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<String>,
}

/// The name a standing approval ([`CallAnswer::ApproveAlways`]) of `tool` of `agent` is kept
/// under in a session of the agent `entry` (the agent asked): the tool's own name for the
/// entry agent's tools, `agent/tool` for a tool of an agent the turn handed off to, which is
/// another tool even under the same name (tool names hold no `/`, so the two never meet).
pub(crate) fn standing_name(entry: &str, agent: &str, tool: &str) -> String {
    if agent == entry {
        tool.to_owned()
    } else {
        format!("{agent}/{tool}")
    }
}

/// Whether the standing approval kept as `kept` (see [`standing_name`]) is of `tool` of
/// `agent`, in a session of the agent `entry`.
pub(crate) fn is_standing(kept: &str, entry: &str, agent: &str, tool: &str) -> bool {
    if agent == entry {
        kept == tool
    } else {
        kept.strip_prefix(agent)
            .and_then(|rest| rest.strip_prefix('/'))
            == Some(tool)
    }
}

impl SuspendedCall {
    /// The id of the call of the agent's step that waits: its own, or its call to the subagent
    /// the call waits in.
    pub(crate) fn step_call_id(&self) -> &str {
        self.via.as_ref().map_or(&self.call.id, |via| &via.call_id)
    }

    /// The tool of that call of the agent's step: its own, or the subagent's.
    pub(crate) fn step_call_tool(&self) -> &str {
        self.via.as_ref().map_or(&self.call.tool, |via| &via.tool)
    }
}

/// An agent's call to a subagent whose turn suspended (kept with the agent's waiting calls):
/// where the subagent's turn is kept, and the call that resumes it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SubagentTurn {
    /// The id of the agent's call to the subagent.
    pub call_id: String,
    /// The tool through which the agent asked the subagent.
    pub tool: String,
    /// The arguments the model sent with that call.
    pub arguments: Value,
    /// The subagent's session, in the subagent's store: its rows and its own waiting calls.
    pub session: String,
}

/// The waiting calls as the calls of their step: each of the agent's own calls alone, and the
/// calls waiting in one call to a subagent together.
pub(crate) fn units(waiting: &[SuspendedCall]) -> Vec<&[SuspendedCall]> {
    let mut units = Vec::new();
    let mut at = 0;
    while at < waiting.len() {
        let len = match &waiting[at].via {
            Some(via) => waiting[at..]
                .iter()
                .take_while(|w| w.via.as_ref() == Some(via))
                .count(),
            None => 1,
        };
        units.push(&waiting[at..at + len]);
        at += len;
    }
    units
}
