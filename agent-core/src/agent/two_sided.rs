//! Two-sided sessions (Standard Agents' `dual_ai` and `ai_human`): two agents, or an agent and
//! a person, taking turns in one session until a side stops it or the session reaches its turn
//! limit ([`TwoSided`]); their state is readable from every hook and tool ([`two_sided`]).

use std::fmt;
use std::sync::{Mutex, PoisonError};

use super::{Agent, BuildError, Conversation};
use crate::engine::TurnRequest;
use crate::hooks::TurnResult;

tokio::task_local! {
    /// The two-sided session whose side is taking its turn on this task.
    static STATE: TwoSidedState;
}

/// One side of a two-sided session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SideId {
    /// Side A: the agent that takes the first turn (the only agent of an `ai_human` session).
    A,
    /// Side B: the other agent, or the person.
    B,
}

impl fmt::Display for SideId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SideId::A => "a",
            SideId::B => "b",
        })
    }
}

/// What stops the session on a side's behalf.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SideStop {
    /// Nothing: the side takes turns until the other side stops the session or its turn limit
    /// is reached (the default).
    Never,
    /// The side's turn ends with content (a completed turn with a non-empty answer).
    ReturnsContent,
    /// The side calls this tool (one of its agent's tools) during its turn.
    Tool(String),
}

/// An agent as one side of a two-sided session: its own instructions (the agent's), tools and
/// hooks, and what stops the session on its behalf.
#[derive(Clone, Debug)]
pub struct Side {
    agent: Agent,
    stop: SideStop,
}

impl Side {
    /// `agent` as a side that never stops the session itself.
    pub fn new(agent: &Agent) -> Side {
        Side {
            agent: agent.clone(),
            stop: SideStop::Never,
        }
    }

    /// The session stops once this side's turn ends with content.
    pub fn stop_on_content(mut self) -> Side {
        self.stop = SideStop::ReturnsContent;
        self
    }

    /// The session stops once this side calls `tool` (a tool of its agent).
    pub fn stop_tool(mut self, tool: impl Into<String>) -> Side {
        self.stop = SideStop::Tool(tool.into());
        self
    }

    /// Whether this turn meets the side's stop condition.
    fn stops(&self, result: &TurnResult) -> bool {
        match &self.stop {
            SideStop::Never => false,
            SideStop::ReturnsContent => result.is_completed() && !result.text.is_empty(),
            SideStop::Tool(name) => result
                .steps
                .iter()
                .any(|step| step.tool_calls.iter().any(|call| &call.name == name)),
        }
    }
}

/// The state of a two-sided session, as Standard Agents gives its hooks: readable from every
/// hook and tool of a side's turn with [`two_sided`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TwoSidedState {
    /// Turns taken so far, both sides counted (the person's too), this one included.
    pub turn_count: usize,
    /// The side taking this turn.
    pub current_side: SideId,
    /// Whether the session has stopped.
    pub stopped: bool,
    /// Which side stopped it (`None` while it runs, or when its turn limit stopped it).
    pub stopped_by: Option<SideId>,
}

/// The state of the two-sided session whose side is taking its turn, from any hook or tool of
/// that turn; `None` outside a two-sided session.
pub fn two_sided() -> Option<TwoSidedState> {
    STATE.try_with(Clone::clone).ok()
}

/// A session whose two sides take turns: `dual_ai` (two agents, each reading the other's
/// answers as its input) or `ai_human` (an agent and a person). Each side keeps its own
/// history of the exchange in its agent's store, so a side can be resumed: side A under the
/// session id, side B under the session id followed by `:b`, so the two histories stay apart
/// when both agents share one store (or are one agent).
pub struct TwoSided {
    a: Side,
    b: Option<Side>,
    conversations: (Conversation, Option<Conversation>),
    max_session_turns: Option<usize>,
    state: Mutex<TwoSidedState>,
}

impl fmt::Debug for TwoSided {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TwoSided")
            .field("a", &self.a)
            .field("b", &self.b)
            .field("state", &self.state())
            .finish()
    }
}

/// Why [`TwoSided::run`] returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionEnd {
    /// This side's stop condition was met.
    StoppedBy(SideId),
    /// The session reached its turn limit.
    MaxSessionTurns,
    /// A side's turn did not complete (an error, a cancel, or a suspension: a call of its
    /// waits for approval or a result); its result is the last one, its status saying which.
    /// A suspended side's calls can be answered, and its turn resumed, on a conversation of
    /// that side's session (`agent.session(id)`, side B's id ending in `:b`); `TwoSided`
    /// itself does not resume it.
    TurnFailed(SideId),
    /// It is the person's turn (an `ai_human` session): answer with
    /// [`TwoSided::human_turn`].
    HumanTurn,
}

impl TwoSided {
    /// Two agents taking turns (`dual_ai`), side A first: side A's history is session
    /// `session` of its agent, side B's is session `{session}:b` of its agent (its own even
    /// when both agents share a store). A side whose stop tool is not one of its agent's tools
    /// is an error.
    pub fn dual(a: Side, b: Side, session: &str) -> Result<TwoSided, BuildError> {
        check_stop_tool(&a)?;
        check_stop_tool(&b)?;
        let conversations = (
            a.agent.session(session.to_owned()),
            Some(b.agent.session(format!("{session}:{}", SideId::B))),
        );
        Ok(TwoSided::new(a, Some(b), conversations))
    }

    /// An agent (side A) and a person (side B) taking turns (`ai_human`): the person's
    /// messages come through [`human_turn`](Self::human_turn).
    pub fn ai_human(a: Side, session: &str) -> Result<TwoSided, BuildError> {
        check_stop_tool(&a)?;
        let conversations = (a.agent.session(session.to_owned()), None);
        Ok(TwoSided::new(a, None, conversations))
    }

    fn new(a: Side, b: Option<Side>, conversations: (Conversation, Option<Conversation>)) -> Self {
        TwoSided {
            a,
            b,
            conversations,
            max_session_turns: None,
            state: Mutex::new(TwoSidedState {
                turn_count: 0,
                current_side: SideId::A,
                stopped: false,
                stopped_by: None,
            }),
        }
    }

    /// Stops the session after this many turns, both sides counted.
    pub fn max_session_turns(mut self, turns: usize) -> Self {
        self.max_session_turns = Some(turns);
        self
    }

    /// The session's state now.
    pub fn state(&self) -> TwoSidedState {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// `dual_ai`: side A answers `opening`, then the sides take turns, each reading the
    /// other's last answer as its input, until a side's stop condition is met, a turn fails,
    /// or the turn limit is reached. Returns why, and every turn's result in order. On an
    /// `ai_human` session, side A answers `opening` once and it is the person's turn.
    pub async fn run(&self, opening: &str) -> (SessionEnd, Vec<TurnResult>) {
        let mut results = Vec::new();
        let mut input = opening.to_owned();
        let mut side = SideId::A;
        loop {
            if let Some(end) = self.limit_reached() {
                return (end, results);
            }
            let (result, end) = self.turn(side, &input).await;
            input = result.text.to_string();
            results.push(result);
            if let Some(end) = end {
                return (end, results);
            }
            side = match (side, &self.b) {
                (SideId::A, Some(_)) => SideId::B,
                (SideId::A, None) => return (SessionEnd::HumanTurn, results),
                (SideId::B, _) => SideId::A,
            };
        }
    }

    /// `ai_human`: the person's message (counted as side B's turn), then side A's turn on it.
    /// `None` when the session has stopped (a side's stop condition or the turn limit): the
    /// agent is not asked.
    pub async fn human_turn(&self, message: &str) -> Option<TurnResult> {
        if self.state().stopped || self.limit_reached().is_some() {
            return None;
        }
        {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.turn_count += 1;
            state.current_side = SideId::B;
        }
        if self.limit_reached().is_some() {
            return None;
        }
        Some(self.turn(SideId::A, message).await.0)
    }

    /// The turn limit, when reached: the session stops.
    fn limit_reached(&self) -> Option<SessionEnd> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(by) = state.stopped_by.filter(|_| state.stopped) {
            return Some(SessionEnd::StoppedBy(by));
        }
        let max = self.max_session_turns?;
        (state.turn_count >= max).then(|| {
            state.stopped = true;
            SessionEnd::MaxSessionTurns
        })
    }

    /// One side's turn on `input`, its state readable from its hooks and tools; how the
    /// session ends after it, if it does.
    async fn turn(&self, side: SideId, input: &str) -> (TurnResult, Option<SessionEnd>) {
        let seen = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.turn_count += 1;
            state.current_side = side;
            state.clone()
        };
        let (spec, conversation) = match (side, &self.b, &self.conversations.1) {
            (SideId::B, Some(b), Some(conversation)) => (b, conversation),
            _ => (&self.a, &self.conversations.0),
        };
        let result = STATE
            .scope(seen, conversation.run(TurnRequest::new(input)))
            .await;
        if !result.is_completed() {
            return (result, Some(SessionEnd::TurnFailed(side)));
        }
        if spec.stops(&result) {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.stopped = true;
            state.stopped_by = Some(side);
            return (result, Some(SessionEnd::StoppedBy(side)));
        }
        (result, None)
    }
}

/// A side's stop tool must be one of its agent's tools.
fn check_stop_tool(side: &Side) -> Result<(), BuildError> {
    let SideStop::Tool(name) = &side.stop else {
        return Ok(());
    };
    let tools: Vec<&str> = side.agent.tools().iter().map(|t| t.name.as_str()).collect();
    if tools.contains(&name.as_str()) {
        return Ok(());
    }
    let has = if tools.is_empty() {
        "it has no tools".to_owned()
    } else {
        format!("its tools: {}", tools.join(", "))
    };
    Err(BuildError {
        problems: vec![format!(
            "side agent `{}` has no tool `{name}` to stop the session with ({has}); add the tool to the agent",
            side.agent.name()
        )],
    })
}
