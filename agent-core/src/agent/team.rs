//! Agents built together so that they may hand off to one another in any direction
//! ([`Team`]): each [`Handoff::named`](super::Handoff::named) is linked to the teammate of that
//! name once every agent is built.

use std::sync::Arc;

use super::{Agent, AgentBuilder, BuildError};
use crate::engine::runtime::{TeamAgents, link};

/// Agents built together, so that handoffs between them may form cycles: triage hands off to
/// billing, and billing back to triage. Each agent names its teammates with
/// [`Handoff::named`](super::Handoff::named); [`Team::build`] builds every agent, checks that
/// each name is one of the team's agents, and links them.
///
/// Memory: an agent holds its teammates weakly (strong links around a cycle would never be
/// freed). Every [`Agent`] handle taken from the team, and every other agent built with one of
/// them as a handoff target or subagent, holds the whole team instead, so the team's agents
/// live while any of these does and are freed with the last.
///
/// ```
/// use agent_core::{AgentBuilder, Handoff, ScriptedModel, ScriptedStep, Team};
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let team = Team::build([
///     AgentBuilder::new("triage")
///         .model(ScriptedModel::new([ScriptedStep::new().tool_call("h1", "transfer_to_billing", "{}")]))
///         .handoff(Handoff::named("billing")),
///     AgentBuilder::new("billing")
///         .description("Handles invoices.")
///         .model(ScriptedModel::new([ScriptedStep::new().text("Refunded.")]))
///         .handoff(Handoff::named("triage")),
/// ])
/// .unwrap();
/// let result = team.agent("triage").unwrap().run("refund please").await;
/// assert_eq!((&*result.agent.name, result.text.as_str()), ("billing", "Refunded."));
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Team {
    agents: Vec<Agent>,
}

impl Team {
    /// Builds the agents and links their named handoffs. Every problem is reported at once,
    /// each naming its agent: an agent's own build problems, two agents of one name, and a
    /// named handoff to none of the team's agents.
    pub fn build(agents: impl IntoIterator<Item = AgentBuilder>) -> Result<Team, BuildError> {
        let builders: Vec<AgentBuilder> = agents.into_iter().collect();
        let roster = Roster(builders.iter().map(AgentBuilder::roster_entry).collect());
        let mut problems = Vec::new();
        for (at, (name, _)) in roster.0.iter().enumerate() {
            if roster.0[..at].iter().any(|(other, _)| other == name) {
                problems.push(format!(
                    "two agents of the team are named `{name}`: give each agent its own name"
                ));
            }
        }
        let mut built = Vec::with_capacity(builders.len());
        for (builder, (name, _)) in builders.into_iter().zip(&roster.0) {
            match builder.runtime(Some(&roster)) {
                Ok(runtime) => built.push(Arc::new(runtime)),
                Err(error) => problems.extend(
                    error
                        .problems
                        .into_iter()
                        .map(|problem| format!("agent `{name}`: {problem}")),
                ),
            }
        }
        if !problems.is_empty() {
            return Err(BuildError { problems });
        }
        link(&built);
        let team: TeamAgents = built.iter().cloned().collect();
        let agents = built
            .into_iter()
            .map(|inner| Agent {
                inner,
                team: Some(team.clone()),
            })
            .collect();
        Ok(Team { agents })
    }

    /// The team's agent named `name`.
    pub fn agent(&self, name: &str) -> Option<&Agent> {
        self.agents.iter().find(|agent| agent.name() == name)
    }

    /// The team's agents, in the order they were given.
    pub fn agents(&self) -> &[Agent] {
        &self.agents
    }
}

/// The names and descriptions of a team's agents, which their named handoffs are checked
/// against while each is built.
pub(super) struct Roster(Vec<(String, Option<String>)>);

impl Roster {
    /// The description of the team's agent `name`; a problem when the team has none of that
    /// name.
    pub(super) fn description(&self, name: &str, problems: &mut Vec<String>) -> Option<&str> {
        match self.0.iter().find(|(agent, _)| agent == name) {
            Some((_, description)) => description.as_deref(),
            None => {
                let names: Vec<String> = self.0.iter().map(|(n, _)| format!("`{n}`")).collect();
                problems.push(format!(
                    "handoff to `{name}`: no agent of the team is named `{name}` (the team: {})",
                    names.join(", ")
                ));
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Handoff, ScriptedModel, ScriptedStep, ToolOutcomeKind};

    /// `Team::build` links every named handoff before any handle exists; an agent whose named
    /// handoff was left unlinked still answers a transfer call with an error result.
    #[tokio::test]
    async fn a_transfer_to_a_teammate_never_linked_is_an_error_result() {
        let roster = Roster(vec![("billing".to_owned(), None)]);
        let runtime = AgentBuilder::new("triage")
            .model(ScriptedModel::new([
                ScriptedStep::new().tool_call("h1", "transfer_to_billing", "{}"),
                ScriptedStep::new().text("Still triage."),
            ]))
            .handoff(Handoff::named("billing"))
            .runtime(Some(&roster))
            .unwrap();
        let triage = Agent {
            inner: Arc::new(runtime),
            team: None,
        };

        let result = triage.run("refund").await;

        assert_eq!(&*result.agent.name, "triage");
        assert_eq!(result.text, "Still triage.");
        let record = &result.steps[0].tool_results[0];
        assert_eq!(record.outcome, ToolOutcomeKind::Rejected);
        assert!(record.is_error);
        assert_eq!(
            record.content,
            "agent `billing` cannot take the turn: it is not linked to `triage` (or no longer exists)"
        );
    }
}
