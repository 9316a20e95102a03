//! Tool hooks that follow a turn into another agent on purpose: a handoff or a subagent marked
//! to inherit passes the calling agent's untyped (JSON) before/after_tool_call hooks on, and
//! they run, matched by their matchers against the other agent's tools, before its own.
//! Without the mark each agent runs its own hooks only (isolate, the default).

use std::sync::{Arc, LazyLock};

use super::runtime::AgentRuntime;
use crate::hooks::tool_hooks::{AfterHook, BeforeHook};

tokio::task_local! {
    /// The hooks a subagent call passes on to the subagent's turn.
    static PASSED: Option<Arc<Inherited>>;
}

/// The tool hooks a turn inherited from the agents that handed work to it.
#[derive(Clone, Default)]
pub(crate) struct Inherited {
    before: Vec<Arc<dyn BeforeHook>>,
    after: Vec<Arc<dyn AfterHook>>,
}

impl Inherited {
    /// What `from` passes on: what it inherited, then its own untyped tool hooks (a typed
    /// hook reads one agent's tool types and stays with that agent).
    pub(crate) fn passed_on(from: &AgentRuntime, inherited: &Inherited) -> Arc<Inherited> {
        let mut passed = inherited.clone();
        let untyped_before = from.before_hooks.iter().filter(|h| h.meta().untyped);
        passed.before.extend(untyped_before.cloned());
        let untyped_after = from.after_hooks.iter().filter(|h| h.meta().untyped);
        passed.after.extend(untyped_after.cloned());
        Arc::new(passed)
    }

    /// The hooks a new turn inherits: those its subagent call passed on, or none: one empty
    /// set shared by every such turn (an allocation and its free a turn fewer,
    /// `whole_turn_agent_bare` in agent-providers/benches/stream.rs).
    pub(crate) fn for_new_turn() -> Arc<Inherited> {
        static NONE: LazyLock<Arc<Inherited>> = LazyLock::new(Arc::default);
        PASSED
            .try_with(Clone::clone)
            .ok()
            .flatten()
            .unwrap_or_else(|| NONE.clone())
    }

    /// Whether the code running now is inside a call that passes hooks on: a plain tool called
    /// there is scoped with none, so a turn it starts inherits nothing (elsewhere there is
    /// nothing to hide, and its call goes unscoped: `tool_call::invoke`).
    pub(crate) fn passed_here() -> bool {
        PASSED.try_with(Option::is_some).unwrap_or(false)
    }

    /// Whether every inherited tool hook is sync (or none is inherited).
    pub(crate) fn is_sync(&self) -> bool {
        self.before.iter().all(|hook| hook.is_sync())
            && self.after.iter().all(|hook| hook.is_sync())
    }

    /// The inherited before_tool_call hooks whose matchers select `tool`.
    pub(crate) fn before_for<'a>(
        &'a self,
        tool: &'a str,
    ) -> impl Iterator<Item = &'a Arc<dyn BeforeHook>> + 'a {
        self.before
            .iter()
            .filter(move |hook| hook.meta().compiled.matches(tool))
    }

    /// The inherited after_tool_call hooks whose matchers select `tool`.
    pub(crate) fn after_for<'a>(
        &'a self,
        tool: &'a str,
    ) -> impl Iterator<Item = &'a Arc<dyn AfterHook>> + 'a {
        self.after
            .iter()
            .filter(move |hook| hook.meta().compiled.matches(tool))
    }
}

/// Runs `future` (a subagent call) so that the subagent's turn inherits `passed` (none when
/// the subagent is isolated, whatever an outer call passed). (A plain function, not twice the
/// size of `future`: see `run_scope::working`.)
pub(crate) fn passing<F: Future>(
    passed: Option<Arc<Inherited>>,
    future: F,
) -> impl Future<Output = F::Output> {
    PASSED.scope(passed, future)
}
