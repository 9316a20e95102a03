//! Building an agent ([`AgentBuilder`]) and running it ([`Agent`], [`Conversation`]).
//!
//! `#[agent]` generates an [`AgentSpec`] impl that registers its tools and hooks through this
//! same builder, so everything the macros do can be written by hand.

mod builder;
mod conversation;
mod inject;

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::hooks::TurnHooks;
use crate::hooks::tool_hooks::{AfterHook, BeforeHook};
use crate::model::{CallSettings, Model, ToolSpec};
use crate::store::SessionStore;
use crate::tool::DynTool;

pub use builder::{AgentBuilder, BuildError};
use conversation::SessionLocks;
pub use conversation::{Conversation, TurnEvent, TurnRequest, TurnStream};

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

/// What a turn does when another turn of its session is running.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TurnOverlap {
    /// Wait for the running turn to end (the default).
    #[default]
    Wait,
    /// End at once with status `error` and [`TurnErrorKind::Busy`](crate::TurnErrorKind::Busy);
    /// no hook fires, nothing is stored.
    Reject,
}

/// A built agent: cheap to clone, shareable across tasks. Run turns with [`Agent::run`] (a
/// one-turn conversation) or open a [`Conversation`] to keep history across turns.
#[derive(Clone)]
pub struct Agent {
    pub(crate) inner: Arc<AgentInner>,
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

pub(crate) struct AgentInner {
    pub(crate) name: Arc<str>,
    pub(crate) description: Option<String>,
    pub(crate) instructions: Option<String>,
    pub(crate) model: Arc<dyn Model>,
    pub(crate) max_steps: usize,
    pub(crate) tool_concurrency: usize,
    pub(crate) overlap: TurnOverlap,
    pub(crate) settings: CallSettings,
    pub(crate) provider_options: Map<String, Value>,
    pub(crate) tools: Vec<ToolSlot>,
    pub(crate) tool_index: HashMap<String, usize>,
    pub(crate) specs: Vec<Arc<ToolSpec>>,
    pub(crate) hooks: TurnHooks,
    pub(crate) before_hooks: Vec<Arc<dyn BeforeHook>>,
    pub(crate) after_hooks: Vec<Arc<dyn AfterHook>>,
    pub(crate) store: Arc<dyn SessionStore>,
    /// The turn lock of each open session.
    pub(crate) sessions: SessionLocks,
    /// Builds each session's configuration when it opens.
    pub(crate) configure_session: Option<crate::session::Configure>,
    /// The configuration and system prompt of each open session.
    pub(crate) session_states: crate::session::SessionStates,
}

/// A tool with the hooks that apply to it, resolved once when the agent (or turn) is built.
#[derive(Clone)]
pub(crate) struct ToolSlot {
    pub(crate) tool: Arc<dyn DynTool>,
    pub(crate) dynamic: bool,
    pub(crate) before: Vec<Arc<dyn BeforeHook>>,
    pub(crate) after: Vec<Arc<dyn AfterHook>>,
}

impl ToolSlot {
    pub(crate) fn spec(&self) -> &Arc<ToolSpec> {
        self.tool.spec()
    }

    /// Attaches every hook whose matcher matches this tool.
    pub(crate) fn resolve(
        tool: Arc<dyn DynTool>,
        dynamic: bool,
        before: &[Arc<dyn BeforeHook>],
        after: &[Arc<dyn AfterHook>],
    ) -> ToolSlot {
        let name = tool.spec().name.as_str();
        let before = before
            .iter()
            .filter(|h| h.meta().compiled.matches(name))
            .cloned()
            .collect();
        let after = after
            .iter()
            .filter(|h| h.meta().compiled.matches(name))
            .cloned()
            .collect();
        ToolSlot {
            tool,
            dynamic,
            before,
            after,
        }
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

    /// Opens (or resumes) the conversation with this session id. Every handle opened on one
    /// session shares its turn lock, so their turns never overlap.
    pub fn session(&self, session_id: impl Into<String>) -> Conversation {
        Conversation::new(self.clone(), session_id.into())
    }

    /// Runs one turn on a new conversation.
    pub async fn run(&self, request: impl Into<TurnRequest>) -> crate::TurnResult {
        self.conversation().run(request).await
    }
}
