use agent_core::{agent, AgentSpec, OutputCheck, OutputContext};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, JsonSchema)]
struct Invoice {
    total_cents: u64,
}

struct User {
    limit_cents: u64,
}

/// Reads invoices: the answer, its context and the run context, in any order, sync or async.
#[agent(output = Invoice, context = User)]
impl Clerk {
    #[hook(validate_output)]
    fn by_context(&self, ctx: &OutputContext<Invoice>) -> OutputCheck {
        let _ = (ctx.step, ctx.attempt);
        OutputCheck::Accept
    }

    #[hook(validate_output)]
    async fn under_limit(&self, user: &User, invoice: &Invoice) -> OutputCheck {
        if invoice.total_cents > user.limit_cents {
            OutputCheck::retry("over the limit")
        } else {
            OutputCheck::Accept
        }
    }

    #[hook(validate_output)]
    fn all_three(
        &self,
        ctx: &agent_core::OutputContext<Invoice>,
        user: &User,
        invoice: &Invoice,
    ) -> Result<(), String> {
        let _ = (ctx, user, invoice);
        Ok(())
    }
}

struct Clerk;

fn main() {
    let _ = Clerk.builder();
}
