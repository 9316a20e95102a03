use agent_core::tool;

/// Reads the clock.
#[tool(idempotent = true)]
fn now() -> String {
    "noon".to_owned()
}

fn main() {
    let _ = now_tool::Now;
}
