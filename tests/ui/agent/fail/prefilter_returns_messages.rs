use agent_core::{agent, LlmHistoryContext, Message};

struct Notes;

#[agent]
impl Notes {
    /// Adds two integers.
    #[tool]
    fn add(&self, a: i64, b: i64) -> i64 {
        a + b
    }

    #[hook(prefilter_llm_history)]
    fn shorten(&self, ctx: &LlmHistoryContext) -> Option<Vec<Message>> {
        Some(ctx.messages.iter().rev().take(10).rev().cloned().collect())
    }
}

fn main() {}
