//! The run a turn belongs to ([`RunScope`]): its run hooks and the agent now working, with its
//! path; handed to subagents' turns through a task-local while a step's tools run.

use std::sync::Arc;

use crate::hooks::{RunAgent, RunHooks};
use crate::util::catch_panic;

tokio::task_local! {
    /// The calling turn's run while its step's tools run: a subagent's turn joins it.
    static CALLER: Option<RunScope>;
}

/// A turn's run hooks and the agent now working.
#[derive(Clone)]
pub(crate) struct RunScope {
    hooks: Arc<[Arc<dyn RunHooks>]>,
    pub(crate) agent: RunAgent,
}

impl RunScope {
    /// The run of a turn of `agent` with `request_id`: a new run, or the calling turn's when
    /// this turn is a subagent's. `None` when nobody observes the run.
    pub(crate) fn new(
        hooks: Vec<Arc<dyn RunHooks>>,
        agent: &Arc<str>,
        request_id: &Arc<str>,
    ) -> Option<RunScope> {
        let caller = CALLER.try_with(Clone::clone).ok().flatten();
        let (mut all, path, run_id) = match caller {
            Some(caller) => (
                caller.hooks.to_vec(),
                Arc::from(format!("{} > {agent}", caller.agent.path)),
                caller.agent.run_id,
            ),
            None => (Vec::new(), agent.clone(), request_id.clone()),
        };
        all.extend(hooks);
        if all.is_empty() {
            return None;
        }
        Some(RunScope {
            hooks: all.into(),
            agent: RunAgent {
                name: agent.clone(),
                path,
                request_id: request_id.clone(),
                run_id,
            },
        })
    }

    /// Adds observers (a session's, once it is open).
    pub(crate) fn join(
        scope: &mut Option<RunScope>,
        more: &[Arc<dyn RunHooks>],
        agent: &Arc<str>,
        request_id: &Arc<str>,
    ) {
        if more.is_empty() {
            return;
        }
        match scope {
            Some(scope) => {
                let mut all = scope.hooks.to_vec();
                all.extend(more.iter().cloned());
                scope.hooks = all.into();
            }
            None => *scope = RunScope::new(more.to_vec(), agent, request_id),
        }
    }

    /// Calls every observer, a panicking one logged and skipped.
    pub(crate) fn fire(&self, event: &'static str, call: impl Fn(&dyn RunHooks, &RunAgent)) {
        for hooks in self.hooks.iter() {
            if let Err(panic) = catch_panic(|| call(&**hooks, &self.agent)) {
                tracing::warn!(run.event = event, "a run hook panicked (ignored): {panic}");
            }
        }
    }

    /// The agent named `to` takes over from the current one (a handoff).
    pub(crate) fn hand_to(&mut self, to: &Arc<str>) {
        self.agent.path = Arc::from(format!("{} > {to}", self.agent.path));
        self.agent.name = to.clone();
    }
}

/// Runs `future` (a step's tool calls) so that a subagent's turn it starts joins `scope`.
pub(crate) async fn calling<F: Future>(scope: Option<RunScope>, future: F) -> F::Output {
    CALLER.scope(scope, future).await
}
