//! What a turn holds of its team while it runs: the agents it can hand off to ([`Reach`]) and
//! the steps each may still run ([`StepAllowance`]).

use std::sync::{Arc, Weak};

use super::runtime::{AgentRuntime, HandoffSlot, HandoffTarget};

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

    /// Every agent reachable, in the order found (breadth first from the entry agent, which
    /// is not among them unless a handoff leads back to it).
    pub(super) fn agents(&self) -> impl Iterator<Item = &AgentRuntime> {
        self.held.iter().map(|agent| &**agent)
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
    /// running the steps it has left (`limit`, the first time it takes the turn), at most
    /// `usize::MAX` (an agent given that as its limit has none).
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
        (step + 1).saturating_add(left)
    }
}
