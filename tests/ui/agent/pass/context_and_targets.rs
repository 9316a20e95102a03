//! `context = T` with hooks and tools taking `&T` (sync and async, before or after the event's
//! context, beside `ToolContext`), and handoffs and subagents given through `builder_with`.

use std::sync::Arc;

use agent_core::{
    agent, AgentBuilder, HandoffContext, HandoffDecision, Handoff, ScriptedModel,
    SubagentStartContext, Subagent, ToolContext, ToolError,
};

pub struct User {
    pub admin: bool,
}

struct Triage;

#[agent(context = crate::User, handoffs(billing, tech), subagents(ledger))]
impl Triage {
    /// Whether the user is an admin.
    #[tool]
    fn is_admin(&self, user: &User) -> bool {
        user.admin
    }

    /// Looks an invoice up.
    #[tool]
    async fn invoice(&self, id: u64, ctx: ToolContext, user: &crate::User) -> Result<String, ToolError> {
        let _ = ctx;
        Ok(format!("{id}: {}", user.admin))
    }

    /// A tool without the context.
    #[tool]
    fn ping(&self) -> &'static str {
        "pong"
    }

    #[hook(before_handoff, on_error = "fail_closed")]
    async fn gate(&self, ctx: &HandoffContext, user: &User) -> HandoffDecision {
        let _ = ctx;
        if user.admin { HandoffDecision::Allow } else { HandoffDecision::deny("admins only") }
    }

    #[hook(on_subagent_start)]
    fn started(&self, user: &User, ctx: &SubagentStartContext) {
        let _ = (user.admin, ctx);
    }
}

fn main() {
    let other = AgentBuilder::new("other").model(ScriptedModel::new([])).build().unwrap();
    let _ = Triage
        .builder_with(triage_targets::Targets {
            billing: Handoff::to(&other),
            tech: Handoff::to(&other).tool_name("ask_tech"),
            ledger: Subagent::of(&other),
        })
        .model(ScriptedModel::new([]))
        .build();
    let _ = Triage::shared_builder_with(
        Arc::new(Triage),
        triage_targets::Targets {
            billing: Handoff::to(&other),
            tech: Handoff::to(&other),
            ledger: Subagent::of(&other),
        },
    );
    assert_eq!(Triage::NAME, "Triage");
}
