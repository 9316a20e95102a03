use agent_core::tool;

/// Fetch a page.
#[tool(timeout_ms = -5)]
fn fetch(url: String) -> String {
    url
}

fn main() {}
