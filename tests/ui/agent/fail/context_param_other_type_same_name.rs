use agent_core::{agent, HandoffContext};

pub struct User {
    pub admin: bool,
}

mod crm {
    pub struct User;
}

struct Triage;

#[agent(context = User, handoffs(billing))]
impl Triage {
    #[hook(before_handoff)]
    fn admins_only(&self, ctx: &HandoffContext, user: &crm::User) {
        let _ = (ctx, user);
    }
}

fn main() {
    let _ = |user: User| user.admin;
}
