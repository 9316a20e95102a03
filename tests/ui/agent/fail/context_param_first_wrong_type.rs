use agent_core::{agent, SubagentStopContext};

struct User {
    admin: bool,
}

struct Account;

struct Writer;

#[agent(context = User, subagents(researcher))]
impl Writer {
    #[hook(on_subagent_stop)]
    async fn stopped(&self, account: &Account, ctx: &SubagentStopContext) {
        let _ = (account, ctx);
    }
}

fn main() {
    let _ = |user: User| user.admin;
}
