use agent_core::{agent, CreateMessageContext};

struct Notes;

#[agent]
impl Notes {
    /// Adds two integers.
    #[tool]
    fn add(&self, a: i64, b: i64) -> i64 {
        a + b
    }

    #[hook(after_create_message)]
    fn created(&self, ctx: &CreateMessageContext) {
        let _ = &ctx.row;
    }
}

fn main() {}
