//! The facade: building an agent ([`AgentBuilder`]) and running it ([`Agent`],
//! [`Conversation`], [`TurnStream`]). It holds no engine state of its own: an [`Agent`] is a
//! shared handle on the engine's runtime, and a conversation runs its turns through the engine.
//!
//! `#[agent]` generates an [`AgentSpec`] impl that registers its tools and hooks through this
//! same builder, so everything the macros do can be written by hand.

mod approval;
mod builder;
mod command_hook;
mod conversation;
mod handoff;
mod inject;
mod output;
mod stream;
mod subagent;
mod team;
mod two_sided;

use std::sync::Arc;

use crate::engine::TurnRequest;
use crate::engine::runtime::{AgentRuntime, TeamAgents};
use crate::tool::ToolSpec;

pub use approval::{AnswerError, Continued};
pub use builder::{AgentBuilder, BuildError};
pub use command_hook::{CommandEvent, CommandHook, CommandHookError};
pub use conversation::Conversation;
pub use handoff::Handoff;
pub use stream::TurnStream;
pub use subagent::Subagent;
pub use team::Team;
pub use two_sided::{SessionEnd, Side, SideId, SideStop, TwoSided, TwoSidedState, two_sided};

/// What `#[agent]` implements for an impl block: the agent's name and how it registers its
/// tools, hooks and options on a builder.
pub trait AgentSpec: Send + Sync + Sized + 'static {
    /// The agent's name.
    const NAME: &'static str;

    /// Registers this agent's tools, hooks and options.
    fn register(this: Arc<Self>, builder: AgentBuilder) -> AgentBuilder;

    /// A builder with this agent's tools, hooks and options; add a model and build.
    fn builder(self) -> AgentBuilder {
        Self::shared_builder(Arc::new(self))
    }

    /// Like [`builder`](Self::builder), for state you keep a handle to (to read it after a turn).
    fn shared_builder(this: Arc<Self>) -> AgentBuilder {
        Self::register(this, AgentBuilder::new(Self::NAME))
    }
}

/// Hooks kept apart from any agent (a free function under `#[hook]`), attached with
/// `#[agent(hooks(...))]` or [`AgentBuilder::hooks`]. Their matchers are checked when the agent
/// is built.
pub trait HookSet {
    /// Registers the hooks on a builder.
    fn register(self, builder: AgentBuilder) -> AgentBuilder;
}

/// A built agent: cheap to clone, shareable across tasks. Run turns with [`Agent::run`] (a
/// one-turn conversation) or open a [`Conversation`] to keep history across turns.
#[derive(Clone)]
pub struct Agent {
    pub(crate) inner: Arc<AgentRuntime>,
    /// The agent's team, when it was built in one ([`Team`]): held so that the teammates it
    /// links to weakly live as long as this handle.
    pub(crate) team: Option<TeamAgents>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tools: Vec<&str> = self
            .inner
            .tools
            .iter()
            .map(|slot| slot.spec().name.as_str())
            .collect();
        f.debug_struct("Agent")
            .field("name", &self.inner.name)
            .field("model", &self.inner.model.id())
            .field("max_steps", &self.inner.max_steps)
            .field("tools", &tools)
            .finish()
    }
}

impl Agent {
    /// The agent's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The agent's description, if any.
    pub fn description(&self) -> Option<&str> {
        self.inner.description.as_deref()
    }

    /// The agent's instructions (its system prompt), if any.
    pub fn instructions(&self) -> Option<&str> {
        self.inner.instructions.as_deref()
    }

    /// The tools offered to the model, in registration order.
    pub fn tools(&self) -> &[Arc<ToolSpec>] {
        &self.inner.specs
    }

    /// The step limit of a turn.
    pub fn max_steps(&self) -> usize {
        self.inner.max_steps
    }

    /// Opens a new conversation (a new session in the agent's store).
    pub fn conversation(&self) -> Conversation {
        Conversation::new(self.clone(), crate::util::new_id("session"))
    }

    /// Opens (or resumes) the conversation with this session id. Turns of one session never
    /// overlap, whichever handle (or agent on the same store) runs them.
    pub fn session(&self, session_id: impl Into<String>) -> Conversation {
        Conversation::new(self.clone(), session_id.into())
    }

    /// Runs one turn on a new conversation.
    ///
    /// The conversation is not kept: a turn that suspends (a call waiting for approval, a
    /// client's or a deferred result) cannot be answered or resumed from here, as its session
    /// id is not returned, and with the in-memory store its waiting calls are gone when `run`
    /// returns (and so are its subagents' suspended turns). Run a turn that may suspend on
    /// [`conversation`](Self::conversation) or [`session`](Self::session), and answer it there.
    pub async fn run(&self, request: impl Into<TurnRequest>) -> crate::hooks::TurnResult {
        // The new conversation is handed to the turn, not cloned for it (a clone retains the
        // session in the store and the drop of each releases it: `whole_turn_agent`).
        self.conversation().start_owned(request.into()).await
    }
}
