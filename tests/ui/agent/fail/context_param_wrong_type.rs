use agent_core::{agent, HandoffContext, HandoffDecision};

struct User {
    admin: bool,
}

struct Account;

struct Triage;

#[agent(context = User, handoffs(billing))]
impl Triage {
    #[hook(before_handoff)]
    fn admins_only(&self, ctx: &HandoffContext, account: &Account) -> HandoffDecision {
        let _ = (ctx, account);
        HandoffDecision::Allow
    }
}

fn main() {
    let _ = |user: User| user.admin;
}
