use agent_core::{AgentBuilder, AgentSpec, ToolContext, agent, tool};

/// The call's id.
#[tool]
fn call_id(#[arg(default = ToolContext::default())] ctx: ToolContext) -> String {
    ctx.call_id.to_string()
}

#[derive(Default)]
struct User {
    name: String,
}

struct Desk;

#[agent(context = User)]
impl Desk {
    /// Greet the user.
    #[tool]
    fn greet(&self, #[arg(default = User::default())] user: &User) -> String {
        user.name.clone()
    }
}

fn main() {
    let _ = AgentBuilder::new("ids").tool(call_id_tool::CallId);
    let _ = Desk.builder();
}
